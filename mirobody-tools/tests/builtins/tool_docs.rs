//! The tables of built-in tools in the documents are generated from the registry, as ripgrep
//! generates its flag docs: each document holds its table between `<!-- tools:begin -->` and
//! `<!-- tools:end -->`, and this test fails when a table is not what the registry renders.
//! `UPDATE_DOCS=1 cargo test -p mirobody-tools --test builtins tool_docs` rewrites the tables.
//! A hand-written table about the tools (what each returns) sits between
//! `<!-- tool-results:begin -->` and `<!-- tool-results:end -->` and must name each tool once.

use std::path::{Path, PathBuf};

use mirobody_core::{Format, Registry};

const BEGIN: &str = "<!-- tools:begin -->";
const END: &str = "<!-- tools:end -->";
const RESULTS_BEGIN: &str = "<!-- tool-results:begin -->";
const RESULTS_END: &str = "<!-- tool-results:end -->";

/// The documents with a generated table, from the workspace root.
const DOCUMENTS: [&str; 2] = ["README.md", "mirobody-tools/README.md"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace").to_path_buf()
}

/// A description's first sentence: up to the first full stop followed by a space.
fn first_sentence(description: &str) -> &str {
    description.find(". ").map_or(description, |end| &description[..=end])
}

/// The table: each tool's name, first sentence, whether it needs a signed-in caller and
/// whether it only reads.
fn table(registry: &Registry) -> String {
    let mut out = String::from("| tool | what it does | sign-in | read-only |\n| --- | --- | --- | --- |\n");
    for tool in registry.tools() {
        let read_only = tool.spec().render(Format::Mcp)["annotations"]["readOnlyHint"] == true;
        let description = first_sentence(tool.spec().description()).replace('|', "\\|");
        let yes = |b: bool| if b { "yes" } else { "no" };
        out.push_str(&format!(
            "| `{}` | {description} | {} | {} |\n",
            tool.name(),
            yes(tool.is_auth()),
            yes(read_only)
        ));
    }
    out
}

/// The text between `begin` and `end` (the lines after `begin`'s line up to `end`'s), and
/// where it starts and ends.
fn section(document: &str, begin: &str, end: &str) -> Option<(usize, usize)> {
    let start = document.find(begin)? + begin.len();
    let start = start + document[start..].find('\n')? + 1;
    let stop = start + document[start..].find(end)?;
    Some((start, stop))
}

#[test]
fn the_tool_tables_are_what_the_registry_renders() {
    let registry = mirobody_tools::builtin_registry().expect("the built-ins register");
    let rendered = table(&registry);
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let mut stale = Vec::new();
    for document in DOCUMENTS {
        let path = workspace_root().join(document);
        let text = std::fs::read_to_string(&path).unwrap();
        let (start, stop) =
            section(&text, BEGIN, END).unwrap_or_else(|| panic!("{document} has no {BEGIN} ... {END} section"));
        if text[start..stop] == rendered {
            continue;
        }
        if update {
            std::fs::write(&path, format!("{}{rendered}{}", &text[..start], &text[stop..])).unwrap();
        } else {
            stale.push(document);
        }
    }
    assert!(
        stale.is_empty(),
        "the tool tables in {stale:?} are not what the registry renders; rerun with UPDATE_DOCS=1:\n{rendered}"
    );
}

#[test]
fn the_results_table_names_each_tool_once() {
    let registry = mirobody_tools::builtin_registry().unwrap();
    let text = std::fs::read_to_string(workspace_root().join("mirobody-tools/README.md")).unwrap();
    let (start, stop) = section(&text, RESULTS_BEGIN, RESULTS_END).expect("the results table is marked");
    let mut named: Vec<&str> =
        text[start..stop].lines().filter_map(|row| row.strip_prefix("| `")?.split('`').next()).collect();
    named.sort_unstable();
    let mut tools: Vec<&str> = registry.names().collect();
    tools.sort_unstable();
    assert_eq!(named, tools, "mirobody-tools/README.md: one row per built-in tool");
}

#[test]
fn a_section_is_found_between_its_markers() {
    let document = "intro\n<!-- tools:begin -->\n| old |\n<!-- tools:end -->\nafter\n";
    let (start, stop) = section(document, BEGIN, END).unwrap();
    assert_eq!(&document[start..stop], "| old |\n");
    assert_eq!(first_sentence("One. Two."), "One.");
    assert_eq!(first_sentence("No stop"), "No stop");
}
