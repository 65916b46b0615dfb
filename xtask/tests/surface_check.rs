//! The surface check: no public item of a workspace crate names a type that has no public path
//! (a `pub struct` of a private module in a public function's signature, a field, a bound).
//! The syn lister of `public_api.rs` cannot see this, as it does not resolve names; rustc's
//! `unnameable_types` lint, set in the root Cargo.toml's `[workspace.lints.rust]`, does, and
//! CI's `cargo clippy --workspace --all-targets -- -D warnings` turns its warnings into a
//! failure. (A type that is not `pub` at all in such a place is `private_interfaces`, warned
//! by default.)
//!
//! This test proves the check on a crate made for it (`tests/fixtures/leak`), built with the
//! workspace's own lint table and `-D warnings` as CI builds: it fails naming the leaked
//! types, and passes once they are re-exported.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LINT: &str = "unnameable_types";

/// The root Cargo.toml's `[workspace.lints]` table.
fn workspace_lints() -> toml::Table {
    let root = xtask::workspace_root().join("Cargo.toml");
    let manifest = std::fs::read_to_string(&root).unwrap_or_else(|e| panic!("read {}: {e}", root.display()));
    let manifest: toml::Table = manifest.parse().expect("parse the root Cargo.toml");
    manifest
        .get("workspace")
        .and_then(|w| w.get("lints"))
        .and_then(toml::Value::as_table)
        .cloned()
        .expect("the root Cargo.toml has a [workspace.lints] table")
}

/// The fixture crate copied under cargo's scratch folder for integration tests (so it leaves
/// no Cargo.lock or target/ in the source tree), its manifest given the workspace's lints.
fn fixture_with_workspace_lints() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join("leak");
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("surface-check").join("leak");
    std::fs::create_dir_all(copy.join("src")).expect("create the fixture's copy");
    let manifest = std::fs::read_to_string(source.join("Cargo.toml")).expect("read the fixture's Cargo.toml");
    let mut lints = toml::Table::new();
    lints.insert("lints".into(), toml::Value::Table(workspace_lints()));
    let lints = toml::to_string(&lints).expect("write the lint table");
    std::fs::write(copy.join("Cargo.toml"), format!("{manifest}\n{lints}")).expect("write the fixture's Cargo.toml");
    std::fs::copy(source.join("src").join("lib.rs"), copy.join("src").join("lib.rs"))
        .expect("copy the fixture's lib.rs");
    copy
}

/// `cargo check` of the fixture as CI's clippy step builds the workspace: warnings denied.
fn check(fixture: &Path, features: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(fixture)
        .args(["check", "--lib", "--quiet", "--message-format=short"])
        .env("CARGO_TARGET_DIR", fixture.join("target"))
        .env("CARGO_TERM_COLOR", "never")
        .env("RUSTFLAGS", "-D warnings")
        // Flags from the outer build would replace RUSTFLAGS.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    command.output().expect("run cargo check on the fixture")
}

#[test]
fn workspace_sets_the_lint() {
    let lints = workspace_lints();
    let level = lints.get("rust").and_then(|rust| rust.get(LINT));
    let level = level.and_then(|level| level.as_str().or_else(|| level.get("level")?.as_str()));
    assert!(
        matches!(level, Some("warn" | "deny" | "forbid")),
        "[workspace.lints.rust] in the root Cargo.toml must set {LINT} to warn or deny, not {level:?}"
    );
}

#[test]
fn check_fails_on_a_leak_and_passes_without() {
    let fixture = fixture_with_workspace_lints();

    let leaky = check(&fixture, &[]);
    let stderr = String::from_utf8_lossy(&leaky.stderr);
    assert!(!leaky.status.success(), "a public function returning private::Leak must fail the check:\n{stderr}");
    for leaked in ["Leak", "Wire"] {
        assert!(
            stderr.contains(&format!("`{leaked}` is reachable but cannot be named")),
            "the check names {leaked}:\n{stderr}"
        );
    }

    let named = check(&fixture, &["named"]);
    assert!(
        named.status.success(),
        "with the types re-exported the check passes:\n{}",
        String::from_utf8_lossy(&named.stderr)
    );
}
