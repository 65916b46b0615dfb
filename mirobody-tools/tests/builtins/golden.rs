//! Golden declarations: for a few built-ins that between them use every feature of `#[tool]`
//! (a plain string, an enum with a default, arrays, optional parameters, a default from a
//! constant, auth, a view, task support, `_meta`, an annotation title, a time limit), what the
//! registry serves is compared with a checked-in file under `tests/golden/tools/`. A change to
//! the attribute or to a tool's declaration shows up here as a diff to review;
//! `UPDATE_GOLDEN=1 cargo test -p mirobody-tools --test builtins golden` rewrites the files.

use std::path::PathBuf;

use mirobody_core::{Format, Tool};
use serde_json::{Value, json};

/// The built-ins kept in golden files, and what each stands for.
const GOLDEN: [(&str, &str); 7] = [
    ("echo", "one required string, no auth"),
    ("remember", "a string restricted to values, with a default; additive"),
    ("fetch_health_data", "an array of strings, optional strings, a default from a constant, a view"),
    ("read_file", "an integer default, task support"),
    ("render_chart", "an object parameter, a time limit, optional auth"),
    ("upload_file", "_meta written inline"),
    ("ask_user", "a boolean default, an annotation title"),
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tools")
}

/// Everything a client or the registry reads of a tool's declaration: its `tools/list` entry,
/// its rendering for each model provider, and what the registry enforces.
fn declaration(tool: &Tool) -> Value {
    let mut formats = serde_json::Map::new();
    for format in Format::ALL {
        formats.insert(format.as_str().to_owned(), tool.spec().render(format));
    }
    json!({
        "auth": tool.is_auth(),
        "scopes": tool.scopes(),
        "time_limit_secs": tool.declared_time_limit().map(|limit| limit.as_secs_f64()),
        "formats": formats,
    })
}

#[test]
fn representative_builtins_declare_what_the_golden_files_hold() {
    let registry = mirobody_tools::builtin_registry().expect("the built-ins register");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut stale = Vec::new();
    for (name, _what) in GOLDEN {
        let tool = registry.get(name).unwrap_or_else(|| panic!("{name} is not a built-in any more"));
        let rendered = serde_json::to_string_pretty(&declaration(tool)).unwrap() + "\n";
        let path = golden_dir().join(format!("{name}.json"));
        if update {
            std::fs::write(&path, &rendered).unwrap();
            continue;
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        if kept != rendered {
            stale.push(format!("{name}: {}\n{rendered}", path.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "declarations differ from the golden files; review, then rerun with UPDATE_GOLDEN=1:\n{}",
        stale.join("\n")
    );
}

#[test]
fn every_golden_file_belongs_to_a_golden_builtin() {
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let name = file.strip_suffix(".json").unwrap_or(&file);
        assert!(GOLDEN.iter().any(|(kept, _)| *kept == name), "{file} is left from a tool no longer kept");
    }
}

#[test]
fn the_mcp_listing_is_each_tools_own_rendering() {
    // What `tools/list` serves is the pre-rendered entry; the golden files hold the rendering.
    let registry = mirobody_tools::builtin_registry().unwrap();
    for (tool, entry) in registry.mcp_entries() {
        let served: Value = serde_json::from_str(entry).unwrap();
        assert_eq!(served, tool.spec().render(Format::Mcp), "{}", tool.name());
    }
}
