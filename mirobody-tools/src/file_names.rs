//! The names uploads are kept under: what a person sees in `list_files` and what a model reads.
//! A name is shown as it is spelled, so nothing in it may make it read as another: bidi
//! controls (`lab-results` + U+202E + `fdp.exe` would show as `lab-resultsexe.pdf`),
//! zero-width characters, line breaks.

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// The longest file name kept, in characters.
pub const MAX_FILENAME_CHARS: usize = 255;

// Characters that change how the rest of a name is shown without being seen themselves:
// controls (Cc), format characters (Cf: bidi embeddings, overrides and isolates, the
// left-to-right and right-to-left marks, zero-width spaces and joiners, the byte-order mark,
// the soft hyphen), and the line and paragraph separators (Zl, Zp).
fn is_hidden(c: char) -> bool {
    matches!(
        c.general_category(),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    )
}

/// The name to keep for an upload: its last path segment, without control, format and
/// line or paragraph separator characters, in Unicode normal form C (so a name typed on one system
/// matches the same name typed on another), at most [`MAX_FILENAME_CHARS`] characters;
/// `upload` when nothing is left.
pub fn clean_filename(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    // Filtered before composing: a character removed between a letter and its accent would
    // otherwise keep them apart.
    let cleaned: String = last.chars().filter(|&c| !is_hidden(c)).nfc().take(MAX_FILENAME_CHARS).collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() || cleaned == "." || cleaned == ".." { "upload".to_owned() } else { cleaned.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_lose_paths_and_control_characters() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\Users\\me\\lab.pdf"), "lab.pdf");
        assert_eq!(clean_filename("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(clean_filename(".."), "upload");
        assert_eq!(clean_filename(""), "upload");
        assert_eq!(clean_filename(&"x".repeat(400)).chars().count(), MAX_FILENAME_CHARS);
    }

    #[test]
    fn a_right_to_left_override_cannot_disguise_an_extension() {
        assert_eq!(clean_filename("lab-results\u{202E}fdp.exe"), "lab-resultsfdp.exe");
        // Embeddings, isolates and marks, each of them.
        let bidi = ['\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}'];
        for c in bidi.into_iter().chain(['\u{200E}', '\u{200F}', '\u{061C}']) {
            assert_eq!(clean_filename(&format!("a{c}b.pdf")), "ab.pdf", "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn zero_width_characters_and_separators_are_removed() {
        assert_eq!(clean_filename("re\u{200B}port\u{200C}\u{200D}\u{FEFF}.pdf"), "report.pdf");
        assert_eq!(clean_filename("soft\u{AD}hyphen.txt"), "softhyphen.txt");
        assert_eq!(clean_filename("one\u{2028}two\u{2029}three.txt"), "onetwothree.txt");
        assert_eq!(clean_filename("\u{202E}\u{2028}"), "upload");
    }

    #[test]
    fn names_are_kept_in_normal_form_c() {
        // "é" typed as e + combining acute (macOS file names) becomes the one character.
        assert_eq!(clean_filename("re\u{301}sume\u{301}.pdf"), "r\u{E9}sum\u{E9}.pdf");
        // A hidden character between the letter and its accent does not keep them apart.
        assert_eq!(clean_filename("e\u{200B}\u{301}.txt"), "\u{E9}.txt");
        // Other scripts and emoji are kept as they are.
        assert_eq!(clean_filename("血液検査 🩸.pdf"), "血液検査 🩸.pdf");
        assert_eq!(clean_filename("تحليل.pdf"), "تحليل.pdf");
    }
}
