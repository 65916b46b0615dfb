//! Text from a PDF, through `pdf-extract`, with its panics caught and its output tidied: laid
//! out by `pdf_layout.rs` with the form values of `pdf_forms.rs`, a marker line before each
//! page (`crate::pages`).

use std::panic::{self, AssertUnwindSafe};

use pdf_extract::{Document, Error as PdfError, OutputError};

use super::pdf_forms::field_values;
use super::pdf_layout::LaidOut;
use super::{ExtractError, MAX_TEXT_BYTES};

/// The text layer of the PDF in `bytes`, tidied; `Ok(None)` when there is none (a scan).
pub(super) fn extract(bytes: &[u8]) -> Result<Option<String>, ExtractError> {
    // pdf-extract (and lopdf under it) panic on some malformed files (index out of bounds,
    // unwraps, overflow); a bad upload must give an error, not bring down the worker. Nothing
    // is shared with the closure but `bytes`, so nothing is left half-updated after a panic.
    let raw = match panic::catch_unwind(AssertUnwindSafe(|| lay_out(bytes))) {
        Ok(Ok(Some(text))) => text,
        Ok(Ok(None)) => return Ok(None),
        Ok(Err(OutputError::PdfError(PdfError::Decryption(_) | PdfError::InvalidPassword))) => {
            return Err(ExtractError::Encrypted);
        }
        Ok(Err(err)) => return Err(ExtractError::Damaged(err.to_string())),
        Err(_) => return Err(ExtractError::Damaged("its structure could not be parsed".to_owned())),
    };
    let text = normalise(&raw);
    Ok((!text.is_empty()).then_some(text))
}

/// The document's pages laid out, each after its marker line; None when no page has text.
fn lay_out(bytes: &[u8]) -> Result<Option<String>, OutputError> {
    let mut doc = Document::load_mem(bytes)?;
    if doc.is_encrypted() {
        // Readable without a password when only the owner's is set, as pdf-extract does.
        doc.decrypt("")?;
    }
    let fields = field_values(&doc);
    let mut laid_out = LaidOut::new(&fields, MAX_TEXT_BYTES);
    pdf_extract::output_doc(&doc, &mut laid_out)?;
    Ok(laid_out.into_text())
}

/// pdftotext's output, whose pages each end with a form feed, with a marker line before each
/// page instead (as [`extract`] writes them), tidied as [`normalise`] does; empty when no
/// page has text.
pub(super) fn poppler_pages(raw: &str) -> String {
    let mut pages: Vec<&str> = raw.split('\u{c}').collect();
    // The last page's form feed leaves nothing after it (or what a cut answer kept).
    if pages.len() > 1 && pages.last().is_some_and(|last| last.trim().is_empty()) {
        pages.pop();
    }
    if pages.iter().all(|page| page.trim().is_empty()) {
        return String::new();
    }
    let mut text = String::with_capacity(raw.len() + pages.len() * 20);
    for (index, page) in pages.iter().enumerate() {
        text.push_str(&crate::pages::marker(index + 1));
        text.push('\n');
        text.push_str(page);
        text.push_str("\n\n");
    }
    normalise(&text)
}

/// `raw` with each line's trailing whitespace trimmed, at most two blank lines in a row, no
/// blank lines at either end, no NUL characters (which databases refuse in text), typographic
/// ligatures spelled out, and words hyphenated across a line break joined again: what a search
/// for "specific" or "discovered" finds (poppler's `pdftotext` does both; pdf-extract neither).
pub(super) fn normalise(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut blank_run = 0usize;
    for line in raw.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            // Leading blank lines and runs past two are dropped.
            if out.is_empty() || blank_run > 2 {
                continue;
            }
        } else {
            blank_run = 0;
            // "discov-" then "ered": one word again. Only a letter, a hyphen and a lowercase
            // letter: "-5" and "COVID-" before "19" stay as they are.
            if line.starts_with(|c: char| c.is_lowercase()) && ends_in_hyphenated_word(&out) {
                out.truncate(out.len() - "-\n".len());
            }
        }
        for c in line.chars() {
            match ligature(c) {
                Some(spelled) => out.push_str(spelled),
                None if c == '\0' => {}
                None => out.push(c),
            }
        }
        out.push('\n');
    }
    let kept = out.trim_end().len();
    out.truncate(kept);
    out
}

/// Whether `text` ends with a letter, a hyphen and a line break.
fn ends_in_hyphenated_word(text: &str) -> bool {
    let mut end = text.chars().rev();
    matches!((end.next(), end.next(), end.next()), (Some('\n'), Some('-'), Some(c)) if c.is_alphabetic())
}

/// The letters of a Latin typographic ligature (U+FB00 to U+FB06), which fonts draw for "fi",
/// "fl" and the like. A table rather than NFKC, which would also rewrite "m²" as "m2".
fn ligature(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{FB00}' => "ff",
        '\u{FB01}' => "fi",
        '\u{FB02}' => "fl",
        '\u{FB03}' => "ffi",
        '\u{FB04}' => "ffl",
        '\u{FB05}' | '\u{FB06}' => "st",
        _ => return None,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object, Stream, dictionary};

    /// A one-page PDF drawing `lines` in Helvetica (a Type1 standard font), one line each, or a
    /// blank page when `lines` is empty.
    pub(in super::super) fn build_pdf(lines: &[&str]) -> Vec<u8> {
        build(lines, |_| {})
    }

    /// [`build_pdf`] with `edit` applied to the document before it is saved.
    fn build(lines: &[&str], edit: impl FnOnce(&mut Document)) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dictionary! {
            "Type" => "Font",
            "Subtype" => "Type1",
            "BaseFont" => "Helvetica",
        });
        let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
        let mut operations = Vec::new();
        if !lines.is_empty() {
            operations.push(Operation::new("BT", vec![]));
            operations.push(Operation::new("Tf", vec!["F1".into(), 12.into()]));
            operations.push(Operation::new("TL", vec![16.into()]));
            operations.push(Operation::new("Td", vec![72.into(), 720.into()]));
            for line in lines {
                operations.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
                operations.push(Operation::new("T*", vec![]));
            }
            operations.push(Operation::new("ET", vec![]));
        }
        let content = Content { operations }.encode().expect("content encodes");
        let content_id = doc.add_object(Stream::new(dictionary! {}, content));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages",
                "Kids" => vec![page_id.into()],
                "Count" => 1,
                "Resources" => resources_id,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            }),
        );
        let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog_id);
        edit(&mut doc);
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).expect("PDF saves");
        bytes
    }

    #[test]
    fn text_of_a_real_pdf_is_extracted_line_by_line() {
        let bytes = build_pdf(&["Glucose 5.4 mmol/L", "HbA1c 5.9 %"]);
        let text = super::super::extract_text(super::super::ContentKind::Pdf, &bytes).unwrap().expect("has text");
        let glucose = text.find("Glucose 5.4 mmol/L").unwrap_or_else(|| panic!("no glucose in {text:?}"));
        let hba1c = text.find("HbA1c 5.9 %").unwrap_or_else(|| panic!("no HbA1c in {text:?}"));
        assert!(glucose < hba1c);
        assert!(text[glucose..hba1c].contains('\n'), "the two lines run together: {text:?}");
        assert_eq!(text, text.trim(), "blank lines at the ends are dropped");
    }

    #[test]
    fn a_page_without_text_has_no_text() {
        assert!(extract(&build_pdf(&[])).unwrap().is_none());
    }

    #[test]
    fn a_truncated_pdf_is_damaged() {
        let bytes = build_pdf(&["Glucose 5.4 mmol/L", "HbA1c 5.9 %"]);
        let err = extract(&bytes[..bytes.len() / 2]).unwrap_err();
        assert!(matches!(err, ExtractError::Damaged(_)), "{err:?}");
    }

    #[test]
    fn random_bytes_after_the_header_are_damaged() {
        let mut state: u32 = 7;
        let mut bytes = b"%PDF-1.4\n".to_vec();
        bytes.extend((0..4096).map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        }));
        let err = extract(&bytes).unwrap_err();
        assert!(matches!(err, ExtractError::Damaged(_)), "{err:?}");
        assert!(err.to_string().contains("damaged"));
    }

    #[test]
    fn a_pdf_that_makes_pdf_extract_panic_is_damaged() {
        // A page whose font reference leads nowhere: pdf-extract `expect`s the object.
        let bytes = build(&["Glucose 5.4 mmol/L"], |doc| {
            doc.objects.retain(|_, object| object.type_name().ok() != Some(b"Font".as_slice()));
        });
        let err = extract(&bytes).unwrap_err();
        assert!(matches!(&err, ExtractError::Damaged(why) if why.contains("structure")), "{err:?}");
    }

    #[test]
    fn a_password_protected_pdf_says_so() {
        let bytes = build(&["Glucose 5.4 mmol/L"], |doc| {
            // The standard security handler keys on the file identifier.
            let id = Object::string_literal(b"0123456789abcdef".to_vec());
            doc.trailer.set("ID", vec![id.clone(), id]);
            let version = lopdf::EncryptionVersion::V2 {
                document: doc,
                owner_password: "owner",
                user_password: "secret",
                key_length: 128,
                permissions: lopdf::Permissions::default(),
            };
            let state = lopdf::EncryptionState::try_from(version).expect("encryption state");
            doc.encrypt(&state).expect("PDF encrypts");
        });
        let err = extract(&bytes).unwrap_err();
        assert!(matches!(err, ExtractError::Encrypted), "{err:?}");
        assert!(err.to_string().contains("password"));
    }

    #[test]
    fn normalise_trims_lines_and_collapses_blank_runs() {
        let raw = "\n\n  Title  \t\n\n\n\n\n\nBody\r\nline 2 \n\n\n\u{0}end\n\n\n";
        assert_eq!(normalise(raw), "  Title\n\n\nBody\nline 2\n\n\nend");
        assert_eq!(normalise(" \n\t\n"), "");
    }

    #[test]
    fn normalise_spells_out_ligatures_and_joins_hyphenated_words() {
        assert_eq!(normalise("e\u{FB03}cient \u{FB01}le, m\u{B2}"), "efficient file, m\u{B2}");
        assert_eq!(normalise("was discov-\nered here"), "was discovered here");
        // Not a hyphenated word: a number, a name before a capital, a hyphen alone.
        assert_eq!(normalise("range 4-\n5 mmol"), "range 4-\n5 mmol");
        assert_eq!(normalise("COVID-\n19"), "COVID-\n19");
        assert_eq!(normalise("Smith-\nJones"), "Smith-\nJones");
        assert_eq!(normalise("-\nthen"), "-\nthen");
    }
}
