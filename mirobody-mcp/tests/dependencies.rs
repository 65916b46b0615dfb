//! The library is what an application embeds to serve MCP: it must compile none of what the
//! application (mirobody-server) brings for its own sake, the databases, cache, object store,
//! rasteriser, CLI parser, allocator and YAML reader.

use std::collections::BTreeSet;
use std::process::Command;

/// Crates the library's normal dependency tree must not hold (names, or name prefixes with `*`).
const NOT_IN_THE_LIBRARY: [&str; 11] = [
    "sqlx*",
    "redis",
    "object_store",
    "resvg",
    "clap",
    "tikv-jemallocator",
    "serde_yaml*",
    "mirobody-health",
    "mirobody-store",
    "mirobody-tools",
    "mirobody-server",
];

// The crates in `package`'s normal dependency tree, by name.
fn dependencies(package: &str) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--locked", "-p", package, "-e", "normal", "--prefix", "none"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo tree: {}", String::from_utf8_lossy(&output.stderr));
    let tree = String::from_utf8(output.stdout).expect("cargo tree prints UTF-8");
    tree.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect()
}

fn holds(crates: &BTreeSet<String>, pattern: &str) -> Vec<String> {
    match pattern.strip_suffix('*') {
        Some(prefix) => crates.iter().filter(|c| c.starts_with(prefix)).cloned().collect(),
        None => crates.iter().filter(|c| *c == pattern).cloned().collect(),
    }
}

#[test]
fn the_library_compiles_none_of_the_applications_dependencies() {
    let library = dependencies("mirobody-mcp");
    assert!(library.contains("hyper") && library.contains("mirobody-core"), "{library:?}");
    let found: Vec<String> = NOT_IN_THE_LIBRARY.iter().flat_map(|pattern| holds(&library, pattern)).collect();
    assert!(found.is_empty(), "mirobody-mcp depends on {found:?}");
    // The check can fail: the application holds every one of them.
    let application = dependencies("mirobody-server");
    for pattern in &NOT_IN_THE_LIBRARY[..7] {
        assert!(!holds(&application, pattern).is_empty(), "the application no longer holds {pattern}");
    }
    println!("crates compiled: mirobody-mcp {}, mirobody-server {}", library.len(), application.len());
}
