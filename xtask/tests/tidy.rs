//! Tidy rules over the workspace:
//!
//! - a Rust file under a member crate's `src/` opens with a `//!` module doc comment on its
//!   first line;
//! - no Rust file of a member crate is over 800 lines;
//! - ARCHITECTURE.md, a map and not an inventory, names inside backticks every crate of the
//!   workspace (by package name or folder) and every folder of the repository's top level
//!   (`benches/`, `.ci/`, ...) and of a folder of crates (`examples/embed-axum`), not every file.
//!
//! Skipped: `target/`, the trybuild fixtures under `tests/macros_ui/`, and `fixtures/` folders;
//! for the map, `.git` and the folders the root `.gitignore` names.
//! All failures are gathered and reported together, each naming its file.
//!
//! And no two modules (files) of mirobody-mcp or mirobody-server import from each other, as
//! ARCHITECTURE.md states for the engine (see `xtask::imports` for what counts as an import),
//! but for a folder's `mod.rs` and the files directly in it: a folder is one module whose
//! parts use its items (`super::`) while it routes to them; the other library crates' pairs
//! are printed, not refused.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The longest a Rust file may be.
const MAX_LINES: usize = 800;

/// The library crates, whose imports are read.
const LIBRARY_CRATES: &[&str] = &[
    "mirobody-core",
    "mirobody-schema",
    "mirobody-macros",
    "mirobody-auth",
    "mirobody-tools",
    "mirobody-mcp",
    "mirobody-server",
];

/// The crates in which no two modules may import each other. The other library crates are
/// read too, and their pairs printed (`--nocapture` shows them), but not refused.
const NO_MUTUAL_IMPORTS: &[&str] = &["mirobody-mcp", "mirobody-server"];

/// Whether one of two files (under `src/`) is the module the other is declared in: a folder's
/// `mod.rs` (or `lib.rs`) and a file or folder directly inside it.
fn parent_and_child(a: &str, b: &str) -> bool {
    let parent_of = |path: &str| -> String {
        let path = path.strip_suffix("/mod.rs").map_or(path, |folder| folder);
        match path.rfind('/') {
            Some(slash) => format!("{}/mod.rs", &path[..slash]),
            None => "lib.rs".to_owned(),
        }
    };
    parent_of(a) == b || parent_of(b) == a
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

#[test]
fn tidy() {
    let root = xtask::workspace_root();
    let mut failures = Vec::new();
    let mut seen = BTreeSet::new();
    for crate_dir in members(&root) {
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
        }
    }
    assert!(failures.is_empty(), "tidy found {} problem(s):\n  {}\n", failures.len(), failures.join("\n  "));
}

/// What ARCHITECTURE.md puts in backticks: each inline code span, trimmed, without a trailing
/// `/` (so `testkit/` and `testkit` are one name). Fenced code blocks are not spans.
fn code_spans(text: &str) -> BTreeSet<String> {
    let mut spans = BTreeSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            let span = span.trim().trim_end_matches('/');
            if !span.is_empty() {
                spans.insert(span.to_owned());
            }
        }
    }
    spans
}

/// The `[package] name` of the crate in `dir`, if it has a Cargo.toml with one.
fn package_name(dir: &Path) -> Option<String> {
    let manifest: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?.parse().ok()?;
    Some(manifest.get("package")?.get("name")?.as_str()?.to_owned())
}

/// The plain folder names the root `.gitignore` lists (`target/`, `/results/`): folders that
/// are not part of the repository, so not of its map.
fn ignored_folders(root: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root.join(".gitignore")).unwrap_or_default();
    text.lines()
        .map(|line| line.trim().trim_start_matches('/').trim_end_matches('/'))
        .filter(|name| !name.is_empty() && !name.starts_with(['#', '!']) && !name.contains(['/', '*', '?', '[']))
        .map(str::to_owned)
        .collect()
}

/// The folders directly in `dir`, sorted.
fn subfolders(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.is_dir())
        .collect();
    found.sort();
    found
}

/// A path relative to `root`, with `/` between its parts whatever the platform.
fn relative_name(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative.components().filter_map(|c| c.as_os_str().to_str()).collect::<Vec<_>>().join("/")
}

/// What the map of the workspace at `root` leaves out, one line each: a member crate named
/// neither by its package name nor by its folder, and a folder not named by its path. The
/// folders are those of the top level (but `.git` and the ignored ones) and, in a top-level
/// folder that is not itself a crate, each folder that is one (`examples/embed-axum`).
fn map_omissions(root: &Path, architecture: &str) -> Vec<String> {
    let named = code_spans(architecture);
    let mut omissions = Vec::new();
    for crate_dir in members(root) {
        let folder = relative_name(root, &crate_dir);
        let package = package_name(&crate_dir).unwrap_or_else(|| folder.clone());
        if !named.contains(&package) && !named.contains(&folder) {
            omissions.push(format!(
                "crate `{package}` (in `{folder}/`) is named neither by its package name nor its folder"
            ));
        }
    }
    let ignored = ignored_folders(root);
    let mut folders = Vec::new();
    for top in subfolders(root) {
        let name = relative_name(root, &top);
        if name == ".git" || ignored.contains(&name) {
            continue;
        }
        if !top.join("Cargo.toml").is_file() {
            folders.extend(subfolders(&top).into_iter().filter(|dir| dir.join("Cargo.toml").is_file()));
        }
        folders.push(top);
    }
    folders.sort();
    for folder in folders {
        let name = relative_name(root, &folder);
        if !named.contains(&name) {
            omissions.push(format!("folder `{name}/` is not named"));
        }
    }
    omissions
}

#[test]
fn architecture_names_every_crate_and_folder() {
    let root = xtask::workspace_root();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let omissions = map_omissions(&root, &architecture);
    assert!(
        omissions.is_empty(),
        "ARCHITECTURE.md leaves out {} crate(s) or folder(s) (name each in backticks: a crate by \
         its package name or folder, a folder by its path):\n  {}\n",
        omissions.len(),
        omissions.join("\n  ")
    );
}

/// The map rule on a small workspace made for it (`tests/fixtures/map`): its ARCHITECTURE.md
/// leaves out one crate and one folder of crates, and names no module file, which is no fault.
#[test]
fn a_map_missing_a_crate_fails_and_one_naming_all_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join("map");
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read the fixture's map");
    assert_eq!(
        map_omissions(&root, &architecture),
        [
            "crate `fixture-tools` (in `tools/`) is named neither by its package name nor its folder",
            "folder `examples/demo/` is not named",
            "folder `tools/` is not named",
        ]
    );
    let completed = format!("{architecture}\nAlso `fixture-tools` in `tools/`, and `examples/demo/`.\n");
    assert_eq!(map_omissions(&root, &completed), Vec::<String>::new());
}

/// A pair of files importing from each other, with what each imports from the other.
fn describe_pair(imports: &xtask::Imports, a: &str, b: &str) -> String {
    let paths = |from: &str, to: &str| {
        let written = imports.get(from).and_then(|imported| imported.get(to));
        written.map(|w| w.iter().map(String::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()
    };
    format!("{a} <-> {b}\n      {a} imports {}\n      {b} imports {}", paths(a, b), paths(b, a))
}

#[test]
fn no_two_modules_import_each_other() {
    let root = xtask::workspace_root();
    let mut failures = Vec::new();
    for &crate_name in LIBRARY_CRATES {
        let imports = match xtask::imports(crate_name, &root.join(crate_name)) {
            Ok(imports) => imports,
            Err(e) => {
                failures.push(format!("{crate_name}: cannot read its modules: {e}"));
                continue;
            }
        };
        let pairs = xtask::mutual_imports(&imports);
        let enforced = NO_MUTUAL_IMPORTS.contains(&crate_name);
        let (refused, accepted): (Vec<_>, Vec<_>) =
            pairs.iter().partition(|(a, b)| enforced && !parent_and_child(a, b));
        if !accepted.is_empty() {
            let described: Vec<String> = accepted.iter().map(|(a, b)| describe_pair(&imports, a, b)).collect();
            let why = if enforced { "a folder and its parts" } else { "not enforced" };
            eprintln!(
                "{crate_name}: modules importing each other ({why}), under src/:\n    {}",
                described.join("\n    ")
            );
        }
        if !refused.is_empty() {
            let described: Vec<String> = refused.iter().map(|(a, b)| describe_pair(&imports, a, b)).collect();
            failures.push(format!("{crate_name} (under src/):\n    {}", described.join("\n    ")));
        }
    }
    assert!(
        failures.is_empty(),
        "modules that import each other (move what both need into a module below both, or merge them):\n  {}\n",
        failures.join("\n  ")
    );
}

/// The import graph on a small crate made for it (`tests/fixtures/imports`): re-exports, a
/// glob, groups and renames, paths in code, inline and `doc(hidden)` modules, and `cfg(test)`.
#[test]
fn import_graph_follows_the_rules() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join("imports");
    let imports = xtask::imports("imports", &dir).expect("read the imports crate");
    let edges: Vec<String> =
        imports.iter().flat_map(|(from, to)| to.keys().map(move |to| format!("{from} -> {to}"))).collect();
    let expected = [
        "a.rs -> b.rs",
        "a.rs -> p/service.rs",
        "c.rs -> b.rs",
        "c.rs -> d.rs",
        "d.rs -> c.rs",
        "hidden.rs -> a.rs",
        "lib.rs -> d.rs",
        "lib.rs -> p/service.rs",
        "p/child.rs -> p/mod.rs",
        "p/mod.rs -> p/child.rs",
        "p/mod.rs -> p/service.rs",
        "p/service.rs -> b.rs",
    ];
    assert_eq!(edges, expected, "the imports crate's import graph");
    let pairs = xtask::mutual_imports(&imports);
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(pairs, [("c.rs", "d.rs"), ("p/child.rs", "p/mod.rs")]);
}

#[test]
fn a_folder_and_its_parts_are_told_apart_from_siblings() {
    assert!(parent_and_child("transport/http/mod.rs", "transport/http/body.rs"));
    assert!(parent_and_child("session/store.rs", "session/mod.rs"));
    assert!(parent_and_child("protocol/rev_2026_07_28/mod.rs", "protocol/mod.rs"));
    assert!(parent_and_child("jsonrpc.rs", "lib.rs"));
    assert!(!parent_and_child("transport/connection.rs", "transport/serve.rs"), "siblings");
    assert!(!parent_and_child("transport/http/body.rs", "transport/mod.rs"), "a grandparent");
    assert!(!parent_and_child("protocol/service.rs", "protocol/rev_2026_07_28/mod.rs"), "an uncle");
}
