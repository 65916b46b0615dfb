//! Page markers in extracted text: the line `--- page N ---` that begins each page of a PDF's
//! text, what a reader cites and what `read_file` pages by.
//!
//! A marker line rather than a form feed: a model sees it and can cite it, and it survives
//! every store and transport a text goes through. Text without markers (a Word file, a text
//! upload, text extracted before markers were written) has no pages.

use std::ops::Range;

/// What a marker line starts and ends with, around the page number.
const MARKER_START: &str = "--- page ";
const MARKER_END: &str = " ---";

/// The marker line (without its line break) that begins page `number`, counted from 1.
// Written by the PDF reader, which only the `uploads` feature builds.
#[cfg_attr(not(feature = "uploads"), allow(dead_code))]
pub(crate) fn marker(number: usize) -> String {
    format!("{MARKER_START}{number}{MARKER_END}")
}

/// The page number `line` marks, if it is a marker line.
pub(crate) fn marked_page(line: &str) -> Option<usize> {
    let digits = line.strip_prefix(MARKER_START)?.strip_suffix(MARKER_END)?;
    // At most nine digits: no PDF has a billion pages, and `parse` never overflows.
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Each page of `text` as its number and byte range, from the start of its marker line to the
/// start of the next one; empty when `text` has no markers. Text before the first marker
/// belongs to no page.
pub(crate) fn pages(text: &str) -> Vec<(usize, Range<usize>)> {
    let mut pages: Vec<(usize, Range<usize>)> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if let Some(number) = marked_page(line.trim_end_matches(['\n', '\r'])) {
            if let Some(last) = pages.last_mut() {
                last.1.end = at;
            }
            pages.push((number, at..text.len()));
        }
        at += line.len();
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_written_and_read_back() {
        assert_eq!(marker(3), "--- page 3 ---");
        assert_eq!(marked_page(&marker(3)), Some(3));
        for not_one in ["--- page  ---", "--- page 3", "--- page x ---", " --- page 3 ---", "--- page 1234567890 ---"] {
            assert_eq!(marked_page(not_one), None, "{not_one:?}");
        }
    }

    #[test]
    fn pages_run_from_their_marker_to_the_next() {
        let text = "intro\n--- page 1 ---\nGlucose\n\n--- page 2 ---\r\nHbA1c\n";
        let pages = pages(text);
        assert_eq!(pages.iter().map(|page| page.0).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(&text[pages[0].1.clone()], "--- page 1 ---\nGlucose\n\n");
        assert_eq!(&text[pages[1].1.clone()], "--- page 2 ---\r\nHbA1c\n");
        assert!(super::pages("no markers\nhere").is_empty());
    }
}
