//! mirobody-tools without its default features depends on none of the heavy crates its
//! `uploads` and `charts` features bring (the stores, S3, Redis, the PDF and Word readers, the
//! sandbox, the rasterizer): what an embedder who wants one tool compiles (issue 42). Read
//! from `cargo tree`, which resolves without building anything.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Crates only the `uploads` or `charts` feature may bring, by name or name prefix (`aws`
/// stands for `aws-*`).
const HEAVY: &[&str] = &[
    "mirobody-store",
    "sqlx",
    "redis",
    "object_store",
    "aws",
    "resvg",
    "pdf-extract",
    "lopdf",
    "zip",
    "quick-xml",
    "landlock",
    "rlimit",
    "infer",
];

/// The names of the crates mirobody-tools depends on, as built (`-e normal`: no build scripts'
/// or tests' dependencies), with `extra` arguments such as `--no-default-features`.
fn dependencies(extra: &[&str]) -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(root)
        .args(["tree", "-p", "mirobody-tools", "-e", "normal", "--prefix", "none", "--offline"])
        .args(extra)
        .output()
        .expect("cargo tree runs");
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .expect("cargo tree prints UTF-8")
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn heavy_among(crates: &BTreeSet<String>) -> Vec<&String> {
    crates
        .iter()
        .filter(|name| HEAVY.iter().any(|heavy| *name == heavy || name.starts_with(&format!("{heavy}-"))))
        .collect()
}

#[test]
fn the_tools_without_default_features_depend_on_no_store_and_no_document_reader() {
    let minimal = dependencies(&["--no-default-features"]);
    assert!(minimal.contains("mirobody-health") && minimal.contains("mirobody-core"), "{minimal:?}");
    let heavy = heavy_among(&minimal);
    assert!(heavy.is_empty(), "mirobody-tools --no-default-features depends on {heavy:?}");

    // The same reading of the default build finds them: the check above can fail.
    let full = dependencies(&[]);
    for expected in ["mirobody-store", "sqlx", "object_store", "resvg", "pdf-extract"] {
        assert!(full.contains(expected), "the default build has no {expected}: {full:?}");
    }
    assert!(minimal.len() * 2 < full.len(), "{} crates without features, {} with", minimal.len(), full.len());
}
