//! Reading a doc comment: the tool's description and its parameters' descriptions.
//!
//! The rules, fixed here and shown in the crate docs:
//!
//! - The description is every line before the first section header, each trimmed, blank lines
//!   dropped, joined with a single space (so a wrapped paragraph reads as one line, and two
//!   paragraphs as two sentences in a row).
//! - Google-style headers are whole lines, case-insensitive: `Args:` `Arg:` `Arguments:`
//!   `Argument:` `Params:` `Param:` `Parameters:` `Parameter:` open the parameter section;
//!   `Returns:` `Return:` `Results:` `Result:` and the other Google headers (`Raises:`,
//!   `Examples:`, `Note:`, ...) open a section that is dropped.
//! - A rustdoc heading (`# Arguments`, `## Parameters`, ...) opens the parameter section in the
//!   rustdoc style; any other heading (`# Returns`, `# Examples`, `# Errors`) is dropped.
//! - In a Google section, `name: text` (or `name (type): text`) starts a parameter; a more
//!   indented line, or a line at the same indentation that is not `name: text`, continues it.
//!   In a rustdoc section, `* \`name\` - text` (or `- name: text`) starts one and any other line
//!   continues it. A parameter's lines are joined with a single space.
//! - Nothing inside a fenced code block is a header.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

use crate::ctxt::Ctxt;

/// One line of a doc comment, with the span of the attribute it came from.
pub(crate) struct DocLine {
    pub(crate) text: String,
    pub(crate) span: Span,
}

/// A parameter described in the doc comment.
pub(crate) struct DocArg {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) span: Span,
}

/// What a doc comment says.
#[derive(Default)]
pub(crate) struct Doc {
    /// The lines before the first header, joined with spaces.
    pub(crate) description: String,
    /// The first non-blank line, the description used with a verbatim input schema.
    pub(crate) first_line: String,
    /// The parameters described, in order.
    pub(crate) args: Vec<DocArg>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Description,
    Args(Style),
    Dropped,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Google,
    Rustdoc,
}

const ARGS_HEADERS: &[&str] =
    &["args:", "arg:", "arguments:", "argument:", "params:", "param:", "parameters:", "parameter:"];

const DROPPED_HEADERS: &[&str] = &[
    "returns:",
    "return:",
    "results:",
    "result:",
    "raises:",
    "raise:",
    "yields:",
    "yield:",
    "examples:",
    "example:",
    "note:",
    "notes:",
    "warning:",
    "warnings:",
    "warns:",
    "see also:",
    "todo:",
    "references:",
    "attributes:",
    "errors:",
    "panics:",
    "safety:",
    "keyword args:",
    "keyword arguments:",
    "other parameters:",
];

const RUSTDOC_ARGS_HEADINGS: &[&str] =
    &["arguments", "argument", "args", "arg", "parameters", "parameter", "params", "param"];

/// The lines of an item's doc comments. A doc attribute that is not a string literal
/// (`#[doc = include_str!(..)]`) cannot be read by a macro and is an error.
pub(crate) fn lines(attrs: &[Attribute], cx: &Ctxt) -> Vec<DocLine> {
    let mut out = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        let Meta::NameValue(nv) = &attr.meta else { continue };
        match &nv.value {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => {
                let value = s.value();
                out.extend(value.split('\n').map(|text| DocLine { text: text.to_owned(), span: attr.span() }));
            }
            _ => cx.error_spanned_by(
                attr,
                "#[tool] reads the tool's description from doc comments at compile time and cannot \
                 read this one: write the description as `///` comments",
            ),
        }
    }
    out
}

/// Reads the description and the parameter descriptions; malformed parameter lines are errors.
pub(crate) fn parse(lines: &[DocLine], cx: &Ctxt) -> Doc {
    let mut doc = Doc::default();
    let mut description: Vec<&str> = Vec::new();
    let mut section = Section::Description;
    let mut in_fence = false;
    let mut base_indent: Option<usize> = None;
    let mut current: Option<(usize, Vec<String>)> = None;

    let finish = |doc: &mut Doc, current: &mut Option<(usize, Vec<String>)>| {
        if let Some((index, parts)) = current.take() {
            doc.args[index].description = parts.join(" ");
        }
    };

    for line in lines {
        let trimmed = line.text.trim();
        let fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if !in_fence
            && !fence
            && let Some(next) = header(trimmed)
        {
            finish(&mut doc, &mut current);
            section = next;
            base_indent = None;
            continue;
        }
        let fenced = in_fence || fence;
        if fence {
            in_fence = !in_fence;
        }
        if trimmed.is_empty() {
            continue;
        }
        match section {
            Section::Description => description.push(trimmed),
            Section::Dropped => {}
            Section::Args(style) => {
                let entry = if fenced {
                    None
                } else {
                    match style {
                        Style::Google => google_entry(trimmed),
                        Style::Rustdoc => rustdoc_entry(trimmed),
                    }
                };
                let indent = line.text.len() - line.text.trim_start().len();
                let starts_entry = match (style, entry.is_some(), base_indent) {
                    (Style::Rustdoc, is_entry, _) => is_entry,
                    (Style::Google, true, None) => true,
                    (Style::Google, true, Some(base)) => indent <= base,
                    (Style::Google, false, _) => false,
                };
                if starts_entry {
                    let (name, text) = entry.unwrap_or_default();
                    finish(&mut doc, &mut current);
                    if base_indent.is_none() {
                        base_indent = Some(indent);
                    }
                    doc.args.push(DocArg { name: name.to_owned(), description: String::new(), span: line.span });
                    let parts = if text.is_empty() { Vec::new() } else { vec![text.to_owned()] };
                    current = Some((doc.args.len() - 1, parts));
                    continue;
                }
                match (&mut current, style) {
                    (Some((index, _)), Style::Google) if base_indent.is_some_and(|base| indent < base) => {
                        let name = doc.args[*index].name.clone();
                        cx.error_at(
                            line.span,
                            format!(
                                "this line is less indented than the parameters above it, so it is neither a \
                                 parameter nor part of `{name}`'s description: indent it to continue `{name}`, \
                                 or move it above the `Args:` header"
                            ),
                        );
                    }
                    (Some((_, parts)), _) => parts.push(trimmed.to_owned()),
                    (None, Style::Google) => cx.error_at(
                        line.span,
                        format!(
                            "expected `name: description` to start the parameter section, found `{trimmed}`: \
                             the section lists each parameter as `name: description`"
                        ),
                    ),
                    (None, Style::Rustdoc) => cx.error_at(
                        line.span,
                        format!(
                            "expected a list item such as ``* `name` - description`` in the `# Arguments` \
                             section, found `{trimmed}`"
                        ),
                    ),
                }
            }
        }
    }
    finish(&mut doc, &mut current);
    doc.first_line = description.first().map(|s| (*s).to_owned()).unwrap_or_default();
    doc.description = description.join(" ");
    doc
}

fn header(trimmed: &str) -> Option<Section> {
    let lower = trimmed.to_ascii_lowercase();
    if ARGS_HEADERS.contains(&lower.as_str()) {
        return Some(Section::Args(Style::Google));
    }
    if DROPPED_HEADERS.contains(&lower.as_str()) {
        return Some(Section::Dropped);
    }
    let hashes = lower.len() - lower.trim_start_matches('#').len();
    if (1..=6).contains(&hashes) {
        let rest = &lower[hashes..];
        if rest.starts_with(char::is_whitespace) && !rest.trim().is_empty() {
            let title = rest.trim().trim_end_matches(':').trim_end();
            return Some(if RUSTDOC_ARGS_HEADINGS.contains(&title) {
                Section::Args(Style::Rustdoc)
            } else {
                Section::Dropped
            });
        }
    }
    None
}

fn is_ident(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `name: text` or `name (type): text`, the name optionally in backticks.
fn google_entry(trimmed: &str) -> Option<(&str, &str)> {
    let (head, text) = trimmed.split_once(':')?;
    let head = head.trim();
    let name = match head.find('(') {
        Some(open) if head.ends_with(')') => head[..open].trim_end(),
        Some(_) => return None,
        None => head,
    };
    let name = name.strip_prefix('`').and_then(|n| n.strip_suffix('`')).unwrap_or(name);
    let name = name.strip_prefix("r#").unwrap_or(name);
    is_ident(name).then_some((name, text.trim()))
}

/// ``* `name` - text``, `- name: text`, and the like.
fn rustdoc_entry(trimmed: &str) -> Option<(&str, &str)> {
    let rest = trimmed.strip_prefix(['*', '-', '+'])?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim_start();
    let (name, after) = match rest.strip_prefix('`') {
        Some(quoted) => {
            let end = quoted.find('`')?;
            (&quoted[..end], &quoted[end + 1..])
        }
        None => {
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    let name = name.strip_prefix("r#").unwrap_or(name);
    if !is_ident(name) {
        return None;
    }
    let after = after.trim_start();
    if after.is_empty() {
        return Some((name, ""));
    }
    let text = after.strip_prefix(['-', ':', '\u{2013}', '\u{2014}'])?;
    Some((name, text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Doc, Option<String>) {
        let lines: Vec<DocLine> =
            text.lines().map(|l| DocLine { text: l.to_owned(), span: Span::call_site() }).collect();
        let cx = Ctxt::new();
        let doc = parse(&lines, &cx);
        (doc, cx.check().err().map(|e| e.to_string()))
    }

    fn args(doc: &Doc) -> Vec<(&str, &str)> {
        doc.args.iter().map(|a| (a.name.as_str(), a.description.as_str())).collect()
    }

    #[test]
    fn description_is_joined_with_spaces_and_stops_at_the_first_header() {
        let (doc, err) = read(
            " Count readings at or above a goal.\n Call query_health_indicators first.\n\n Second paragraph.\n\n Args:\n     goal: The goal.\n\n         More about the goal.\n",
        );
        assert_eq!(err, None);
        assert_eq!(
            doc.description,
            "Count readings at or above a goal. Call query_health_indicators first. Second paragraph."
        );
        assert_eq!(doc.first_line, "Count readings at or above a goal.");
        assert_eq!(args(&doc), [("goal", "The goal. More about the goal.")]);
    }

    #[test]
    fn google_args_with_continuations_types_and_case_insensitive_headers() {
        let (doc, err) = read(
            " Do it.\n\n PARAMETERS:\n     indicator (str): The exact indicator name,\n         from query_health_indicators.\n     days: How far back to look.\n     e.g. 30 for a month.\n Returns:\n     A count.\n",
        );
        assert_eq!(err, None);
        assert_eq!(
            args(&doc),
            [
                ("indicator", "The exact indicator name, from query_health_indicators."),
                ("days", "How far back to look. e.g. 30 for a month."),
            ]
        );
    }

    #[test]
    fn other_google_headers_end_the_args_section() {
        for header in ["Raises:", "Examples:", "Note:", "returns:", "Results:"] {
            let (doc, err) = read(&format!(" Do it.\n Args:\n     a: The a.\n {header}\n     b: not a param.\n"));
            assert_eq!(err, None, "{header}");
            assert_eq!(args(&doc), [("a", "The a.")], "{header}");
        }
    }

    #[test]
    fn rustdoc_arguments_section() {
        let (doc, err) = read(
            " Do it.\n\n # Arguments\n\n * `text` - The text to echo back.\n   It may be empty.\n * count: How many times.\n - `r#type` \u{2013} The type.\n\n # Returns\n\n * `nothing` - dropped.\n",
        );
        assert_eq!(err, None);
        assert_eq!(doc.description, "Do it.");
        assert_eq!(
            args(&doc),
            [("text", "The text to echo back. It may be empty."), ("count", "How many times."), ("type", "The type.")]
        );
    }

    #[test]
    fn any_heading_ends_the_description_but_hashes_in_code_do_not() {
        let (doc, err) = read(" Do it.\n ```\n # let hidden = 1;\n ```\n # Examples\n more\n");
        assert_eq!(err, None);
        assert_eq!(doc.description, "Do it. ``` # let hidden = 1; ```");
    }

    #[test]
    fn malformed_sections_are_errors() {
        let (_, err) = read(" Do it.\n Args:\n     just prose\n");
        assert!(err.unwrap().contains("expected `name: description`"));
        let (_, err) = read(" Do it.\n Args:\n     a: The a.\n dedented prose\n");
        assert!(err.unwrap().contains("less indented"));
        let (_, err) = read(" Do it.\n # Arguments\n intro\n");
        assert!(err.unwrap().contains("list item"));
    }

    #[test]
    fn no_doc() {
        let (doc, err) = read("");
        assert_eq!(err, None);
        assert_eq!(doc.description, "");
    }
}
