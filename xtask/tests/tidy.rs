//! Tidy rules over every Rust file of the workspace's member crates:
//!
//! - a file under a crate's `src/` opens with a `//!` module doc comment on its first line;
//! - no file is over 800 lines;
//! - every module file under `src/` of a library crate is named in ARCHITECTURE.md, inside
//!   backticks (`name.rs`, `name/`, `name` or a path with it as a component).
//!
//! Skipped: `target/`, the trybuild fixtures under `tests/macros_ui/`, and `fixtures/` folders.
//! All failures are gathered and reported together, each naming its file.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The longest a Rust file may be.
const MAX_LINES: usize = 800;

/// The crates whose modules ARCHITECTURE.md must name.
const LIBRARY_CRATES: &[&str] = &[
    "mirobody-core",
    "mirobody-schema",
    "mirobody-macros",
    "mirobody-auth",
    "mirobody-tools",
    "mirobody-mcp",
    "mirobody-server",
];

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// The member directories listed in the root Cargo.toml's `[workspace] members`
/// (a trailing `/*` stands for every subdirectory with a Cargo.toml).
fn members(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read the root Cargo.toml");
    let manifest: toml::Table = manifest.parse().expect("parse the root Cargo.toml");
    let members = manifest
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .expect("the root Cargo.toml has [workspace] members");
    let mut dirs = Vec::new();
    for member in members {
        let member = member.as_str().expect("a workspace member is a string");
        if let Some(parent) = member.strip_suffix("/*") {
            let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(parent))
                .expect("read a members glob's folder")
                .filter_map(|entry| Some(entry.ok()?.path()))
                .filter(|dir| dir.join("Cargo.toml").is_file())
                .collect();
            found.sort();
            dirs.extend(found);
        } else {
            dirs.push(root.join(member));
        }
    }
    dirs
}

/// Whether a folder, given by its path relative to the crate, is left out of the walk.
fn skipped_dir(relative: &Path) -> bool {
    let names: Vec<&str> = relative.components().filter_map(|c| c.as_os_str().to_str()).collect();
    names.iter().any(|&name| name == "target" || name == "fixtures")
        || names.windows(2).any(|pair| pair == ["tests", "macros_ui"])
}

/// Every `.rs` file under `dir`, in a fixed order, with the skipped folders left out.
fn rust_files(crate_dir: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|entry| Some(entry.ok()?.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            let relative = path.strip_prefix(crate_dir).unwrap_or(&path);
            if !skipped_dir(relative) {
                rust_files(crate_dir, &path, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The words ARCHITECTURE.md puts in backticks, split into path components: every run of
/// letters, digits, `_`, `-` and `.` inside an inline code span (so `a/b.rs`, `a::b` and
/// `f(a)` give `a`, `b.rs`, `b`, `f`). Fenced code blocks are not spans and are left out.
fn architecture_words(text: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for (index, span) in line.split('`').enumerate() {
            if index % 2 == 0 {
                continue;
            }
            for word in span.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
                let word = word.trim_end_matches('.');
                if !word.is_empty() {
                    words.insert(word.to_owned());
                }
            }
        }
    }
    words
}

/// The name ARCHITECTURE.md must use for a module file: its stem, or its folder's name for
/// `mod.rs`; `None` for crate roots.
fn module_name(file: &Path) -> Option<String> {
    let stem = file.file_stem()?.to_str()?;
    match stem {
        "lib" | "main" => None,
        "mod" => Some(file.parent()?.file_name()?.to_str()?.to_owned()),
        _ => Some(stem.to_owned()),
    }
}

#[test]
fn tidy() {
    let root = workspace_root();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let named = architecture_words(&architecture);
    let mut failures = Vec::new();
    let mut seen = BTreeSet::new();
    for crate_dir in members(&root) {
        let crate_name = crate_dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let is_library = LIBRARY_CRATES.contains(&crate_name.as_str());
        let mut files = Vec::new();
        rust_files(&crate_dir, &crate_dir, &mut files);
        for file in files {
            if !seen.insert(file.clone()) {
                continue;
            }
            let shown = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
            let relative = file.strip_prefix(&crate_dir).unwrap_or(&file);
            let under_src = relative.components().next() == Some(Component::Normal("src".as_ref()));
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) => {
                    failures.push(format!("{shown}: cannot be read: {e}"));
                    continue;
                }
            };
            if under_src && !text.lines().next().is_some_and(|first| first.starts_with("//!")) {
                failures.push(format!("{shown}: does not open with a `//!` module doc comment on its first line"));
            }
            let lines = text.lines().count();
            if lines > MAX_LINES {
                failures.push(format!("{shown}: {lines} lines, over the limit of {MAX_LINES}"));
            }
            if is_library
                && under_src
                && let Some(name) = module_name(relative)
                && !named.contains(&name)
                && !named.contains(&format!("{name}.rs"))
            {
                failures.push(format!(
                    "{shown}: module `{name}` is not named in ARCHITECTURE.md (as `{name}.rs`, `{name}/` or `{name}`)"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "tidy found {} problem(s):\n  {}\n", failures.len(), failures.join("\n  "));
}
