//! The public API of each library crate, as listed by `xtask::public_api`, must match its
//! checked-in listing in `xtask/public-api/<crate>.txt`, so an API change shows in review.
//!
//! After an intended change, rewrite the listings with
//! `UPDATE_PUBLIC_API=1 cargo test -p xtask --test public_api` and commit them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The crates with a listing. `mirobody-macros` is a proc-macro crate (its API is its
/// attributes, re-exported by core) and `mirobody-server` is the application.
const CRATES: &[&str] = &[
    "mirobody-core",
    "mirobody-schema",
    "mirobody-ports",
    "mirobody-auth",
    "mirobody-oauth",
    "mirobody-health",
    "mirobody-store",
    "mirobody-tools",
    "mirobody-mcp",
];

const UPDATE_COMMAND: &str = "UPDATE_PUBLIC_API=1 cargo test -p xtask --test public_api";

fn listing_path(crate_name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("public-api").join(format!("{crate_name}.txt"))
}

/// The lines only one side has, `-` for the checked-in listing and `+` for the source, in
/// line order. Both sides are sorted sets of lines, so this is the whole difference.
fn diff(expected: &[&str], actual: &[&str]) -> String {
    let old: BTreeSet<&str> = expected.iter().copied().collect();
    let new: BTreeSet<&str> = actual.iter().copied().collect();
    let mut lines: Vec<(&str, char)> = old.difference(&new).map(|line| (*line, '-')).collect();
    lines.extend(new.difference(&old).map(|line| (*line, '+')));
    lines.sort();
    lines.iter().map(|(line, sign)| format!("{sign} {line}\n")).collect()
}

#[test]
fn public_api_matches_listing() {
    let update = std::env::var_os("UPDATE_PUBLIC_API").is_some_and(|v| !v.is_empty() && v != "0");
    let root = xtask::workspace_root();
    let mut failures = Vec::new();
    for &crate_name in CRATES {
        let lines = match xtask::public_api(crate_name, &root.join(crate_name)) {
            Ok(lines) => lines,
            Err(e) => {
                failures.push(format!("{crate_name}: cannot list the public API: {e}\n"));
                continue;
            }
        };
        let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let path = listing_path(crate_name);
        if update {
            std::fs::create_dir_all(path.parent().expect("the listing has a folder")).expect("create public-api/");
            std::fs::write(&path, &text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(checked_in) if checked_in == text => {}
            Ok(checked_in) => {
                let expected: Vec<&str> = checked_in.lines().collect();
                let actual: Vec<&str> = lines.iter().map(String::as_str).collect();
                failures.push(format!(
                    "{crate_name}: the public API differs from xtask/public-api/{crate_name}.txt \
                     (- listed, + in the source):\n{}",
                    diff(&expected, &actual)
                ));
            }
            Err(e) => failures.push(format!("{crate_name}: cannot read xtask/public-api/{crate_name}.txt: {e}\n")),
        }
    }
    assert!(
        failures.is_empty(),
        "\n{}\nIf the change is intended, update the listings with `{UPDATE_COMMAND}` and commit them.\n",
        failures.join("\n")
    );
}

/// The lister on a small crate made for it (`tests/fixtures/sample`): private modules, a
/// re-exported item and module, a glob, `#[path]`, `cfg(test)`, `doc(hidden)` and restricted
/// visibility.
#[test]
fn lister_follows_the_rules() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join("sample");
    let lines = xtask::public_api("sample", &dir).expect("list the sample crate");
    let expected = [
        "sample: #[cfg(feature = \"extra\")] pub const EXTRA: u8",
        "sample: macro_rules! exported_macro",
        "sample: pub fn top<'a, T: Clone + ?Sized>(x: &'a T, _: (u8,)) -> Option<&'a T> where T: Send",
        "sample: pub mod open",
        "sample: pub use deep::leaf;",
        "sample: pub use globbed::*;",
        "sample: pub use moved::Moved as Renamed;",
        "sample: pub use private::Exported;",
        "sample: pub use private::Trait as _;",
        "sample: pub use std::collections::HashMap;",
        "sample::deep::leaf: pub fn in_leaf() -> u8",
        "sample::globbed: pub fn from_glob()",
        "sample::moved: pub struct Moved(..) /* private fields */",
        "sample::moved::Moved: pub 0: u8",
        "sample::open: #[non_exhaustive] pub enum Choice",
        "sample::open: pub mod inner",
        "sample::open: pub struct Unit;",
        "sample::open: pub trait Speak: Send",
        "sample::open::Choice: #[non_exhaustive] C { x: i32 }",
        "sample::open::Choice: A",
        "sample::open::Choice: B(u8, String)",
        "sample::open::Speak: const LOUD: bool = ..;",
        "sample::open::Speak: fn say(&self) -> Self::Out;",
        "sample::open::Speak: fn shout(&self) { .. }",
        "sample::open::Speak: type Out;",
        "sample::open::inner: pub static COUNT: u32",
        "sample::open::inner: pub type Alias<T> = Vec<T>",
        "sample::private: pub struct Exported /* private fields */",
        "sample::private: pub trait Trait",
        "sample::private::Exported: impl Exported { pub fn new() -> Self }",
        "sample::private::Exported: pub a: u8",
    ];
    let actual: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert!(
        actual == expected,
        "the sample crate's listing differs (- expected, + listed):\n{}",
        diff(&expected, &actual)
    );
}
