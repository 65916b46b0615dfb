//! What an upload is, decided from its bytes ([`sniff`]), and the text in it ([`extract_text`]).
//!
//! The kind comes from the content: magic numbers (the `infer` crate) for binary formats, a look
//! inside the zip for Word files, and UTF-8 validity for text. The declared Content-Type and the
//! file name only choose among the text kinds (CSV, JSON, Markdown or plain text), so a file
//! named `x.pdf` holding text is text, and `x.txt` holding a PDF is a PDF.
//!
//! The text of a PDF or Word file is read by a parser that sees untrusted bytes, so it runs in
//! a child process under limits ([`Extractor`], `sandbox.rs`; the child is `child.rs`, entered
//! through [`child_main`]). Text kinds need no parser and are read in-process.

mod child;
mod docx;
mod pdf;
mod pdf_forms;
mod pdf_layout;
mod sandbox;

pub use sandbox::{ExtractLimits, Extractor};

use std::borrow::Cow;

/// The most text [`extract_text`] returns, in bytes; longer text is cut on a char boundary.
pub(crate) const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// What an upload's bytes are. Decided from content, never from the file name alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ContentKind {
    /// A PDF document (`%PDF-`).
    Pdf,
    /// A Word document (.docx): a zip holding `word/document.xml`.
    Docx,
    /// UTF-8 text that is none of the kinds below.
    PlainText,
    /// UTF-8 text declared or named as Markdown.
    Markdown,
    /// UTF-8 text declared or named as CSV.
    Csv,
    /// UTF-8 text declared or named as JSON that parses as JSON.
    Json,
    /// A PNG, JPEG, GIF, WebP, HEIC or TIFF image: stored, but it has no text (no OCR).
    Image,
    /// A zip whose data is imported (an Apple Health export): stored, no text read.
    Archive,
}

/// An accepted upload: its kind and the MIME type to store it under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sniffed {
    /// What the bytes are.
    pub(crate) kind: ContentKind,
    /// The MIME type to store the file under, following `kind` (not the client's Content-Type).
    pub(crate) mime: &'static str,
}

/// What is accepted, in the words every refusal uses.
const ACCEPTED: &str = "PDF, Word (.docx), plain text, Markdown, CSV, JSON, NDJSON, the Health app's export.zip, and images (PNG, JPEG, GIF, WebP, HEIC, TIFF; stored without text)";

/// Why an upload is refused (Display gives a clear sentence a person can act on, naming what is allowed).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// The upload has no content (a UTF-8 byte order mark alone counts as none).
    #[error("The file is empty. Upload a file with content; accepted types are {}.", ACCEPTED)]
    Empty,
    /// The content is none of the accepted kinds.
    #[error("{}", unsupported_message(.detected.as_deref()))]
    UnsupportedType {
        /// The MIME type the magic numbers suggest, when they suggest one.
        detected: Option<String>,
    },
}

/// The sentence for [`Rejected::UnsupportedType`].
fn unsupported_message(detected: Option<&str>) -> String {
    match detected {
        // infer guessed Word from the first entries, but the zip has no readable document.
        Some(DOCX_MIME) => format!(
            "This Word file could not be opened: it looks damaged or incomplete. Accepted types are {ACCEPTED}."
        ),
        // An Apple Health export.zip is told by its entries: one cut short has none to read.
        Some("application/zip") => format!(
            "This zip is not an Apple Health export that can be read (an export.zip with \
             apple_health_export/export.xml in it, whole): it may have been cut short. This type of file is \
             not supported otherwise. Accepted types are {ACCEPTED}."
        ),
        Some(mime) => format!("This type of file ({mime}) is not supported. Accepted types are {ACCEPTED}."),
        None => format!(
            "This file's type is not recognised: it is neither UTF-8 text nor a supported format. \
             Accepted types are {ACCEPTED}."
        ),
    }
}

/// Why text could not be extracted (the file is still stored; the message is shown to the user).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The file is not a readable file of its kind; the string says what went wrong.
    #[error("The file appears to be damaged, so its text could not be read ({0}). It is stored as it is.")]
    Damaged(String),
    /// The PDF needs a password to be read.
    #[error(
        "The PDF is protected by a password, so its text could not be read. \
         Upload a copy without a password to make its text readable."
    )]
    Encrypted,
    /// The document expands to more than its reader allows (a Word file's text over 64 MiB).
    #[error(
        "The document is too large to read its text: it expands to more than {} MiB. \
         Split it into smaller files to make its text readable.",
        docx::MAX_XML_BYTES >> 20
    )]
    TooLarge,
    /// The reader ended abnormally: killed at its memory, CPU or time limit, or crashed.
    #[error(
        "The file could not be read, so it has no text: reading it went past what the server allows \
         one document. It is stored as it is."
    )]
    CouldNotRead,
}

/// The entry point of the sandboxed reader: what a program's `main` calls when started as an
/// [`Extractor`]'s child, with the arguments after its own (for `mirobody-server extract ...`,
/// those after `extract`). Returns the process's exit code.
///
/// It limits itself (address space, CPU time, no files written; Landlock where the kernel has
/// it), reads one document from stdin and writes its text to stdout.
pub fn child_main(args: &[String]) -> std::process::ExitCode {
    std::process::ExitCode::from(child::run(args))
}

pub(crate) const PDF_MIME: &str = "application/pdf";
pub(crate) const DOCX_MIME: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Classifies `bytes`. `declared` is the Content-Type the client sent (may be None or "application/octet-stream"), `filename` the name it gave.
///
/// Binary formats are recognised by content alone; `declared` and `filename` only choose among
/// the text kinds, and a JSON hint counts only when the text parses as JSON.
pub(crate) fn sniff(bytes: &[u8], declared: Option<&str>, filename: &str) -> Result<Sniffed, Rejected> {
    if bytes.is_empty() {
        return Err(Rejected::Empty);
    }
    let detected = infer::get(bytes);
    if let Some(found) = detected {
        match found.mime_type() {
            PDF_MIME => return Ok(Sniffed { kind: ContentKind::Pdf, mime: PDF_MIME }),
            // infer calls HEIC `image/heif` (its matcher looks for the `heic` brand).
            mime @ ("image/png" | "image/jpeg" | "image/gif" | "image/webp" | "image/heif" | "image/tiff") => {
                return Ok(Sniffed { kind: ContentKind::Image, mime });
            }
            _ => {}
        }
    }
    // infer's DOCX guess looks only at the first entries' names; open the zip to be sure.
    if docx::is_docx(bytes) {
        return Ok(Sniffed { kind: ContentKind::Docx, mime: DOCX_MIME });
    }
    if let Some(text) = as_text(bytes) {
        if text.is_empty() {
            return Err(Rejected::Empty);
        }
        return Ok(text_kind(text, declared, filename));
    }
    Err(Rejected::UnsupportedType { detected: detected.map(|found| found.mime_type().to_owned()) })
}

/// `bytes` as text, less a UTF-8 BOM, if they are UTF-8 without NUL bytes (which no text file has).
fn as_text(bytes: &[u8]) -> Option<&str> {
    let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    if body.contains(&0) {
        return None;
    }
    std::str::from_utf8(body).ok()
}

/// Which text kind `text` is: a specific declared type wins, then the file name's extension.
fn text_kind(text: &str, declared: Option<&str>, filename: &str) -> Sniffed {
    let hint = declared.and_then(kind_from_mime).or_else(|| kind_from_extension(filename));
    match hint {
        Some(ContentKind::Csv) => Sniffed { kind: ContentKind::Csv, mime: "text/csv" },
        Some(ContentKind::Markdown) => Sniffed { kind: ContentKind::Markdown, mime: "text/markdown" },
        // IgnoredAny checks the syntax without building a tree.
        Some(ContentKind::Json) if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() => {
            Sniffed { kind: ContentKind::Json, mime: "application/json" }
        }
        _ => Sniffed { kind: ContentKind::PlainText, mime: "text/plain" },
    }
}

/// The text kind a Content-Type names, if it names one more specific than plain text.
///
/// `text/plain` gives None so that the extension can still say `.md` or `.csv`: clients often
/// send `text/plain` for both.
fn kind_from_mime(declared: &str) -> Option<ContentKind> {
    let essence = declared.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.as_str() {
        "text/csv" | "application/csv" | "text/comma-separated-values" => Some(ContentKind::Csv),
        "text/markdown" | "text/x-markdown" => Some(ContentKind::Markdown),
        "application/json" | "text/json" => Some(ContentKind::Json),
        // application/fhir+json and other JSON-based types.
        other if other.ends_with("+json") => Some(ContentKind::Json),
        _ => None,
    }
}

/// The text kind a file name's extension names, if any.
fn kind_from_extension(filename: &str) -> Option<ContentKind> {
    let base = filename.rsplit(['/', '\\']).next().unwrap_or(filename);
    let (_, extension) = base.rsplit_once('.')?;
    match extension.to_ascii_lowercase().as_str() {
        "csv" => Some(ContentKind::Csv),
        "md" | "markdown" => Some(ContentKind::Markdown),
        "json" => Some(ContentKind::Json),
        _ => None,
    }
}

/// The text of a file of this kind: Ok(None) for images (no OCR), Ok(Some(text)) otherwise (may be empty string for a PDF with no text layer -> return None then, meaning "no text").
///
/// PDF and Word files whose text is only whitespace give `Ok(None)` too. Text kinds give their
/// text less a BOM (invalid UTF-8 replaced, NUL characters dropped, as sniffed text has neither).
/// At most MAX_TEXT_BYTES of text (cut on a char boundary). Never panics, whatever the bytes.
pub(crate) fn extract_text(kind: ContentKind, bytes: &[u8]) -> Result<Option<String>, ExtractError> {
    let text = match kind {
        ContentKind::Image | ContentKind::Archive => return Ok(None),
        ContentKind::Pdf => pdf::extract(bytes)?,
        ContentKind::Docx => docx::extract(bytes)?,
        ContentKind::PlainText | ContentKind::Markdown | ContentKind::Csv | ContentKind::Json => {
            Some(plain_text(bytes))
        }
    };
    Ok(text.map(cap))
}

/// The text of a text file: BOM stripped, and owned.
fn plain_text(bytes: &[u8]) -> String {
    let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    // Cap before copying, so a huge upload is not copied whole only to be cut.
    let body = &body[..body.len().min(MAX_TEXT_BYTES + 4)];
    let text = match String::from_utf8_lossy(body) {
        Cow::Borrowed(text) => text.to_owned(),
        Cow::Owned(text) => text,
    };
    // Databases refuse NUL in text columns.
    if text.contains('\0') { text.replace('\0', "") } else { text }
}

/// `text` cut to at most [`MAX_TEXT_BYTES`], on a char boundary.
fn cap(text: String) -> String {
    cap_to(text, MAX_TEXT_BYTES)
}

/// `text` cut to at most `max` bytes, on a char boundary.
fn cap_to(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A real 1×1 PNG (signature, IHDR, IDAT, IEND).
    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00,
        0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0, 0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF,
        0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    fn kind_of(bytes: &[u8], declared: Option<&str>, filename: &str) -> ContentKind {
        sniff(bytes, declared, filename).expect("accepted").kind
    }

    /// Bytes from a fixed linear congruential generator: not UTF-8, no magic number.
    fn noise(len: usize) -> Vec<u8> {
        let mut state: u32 = 0x2545_F491;
        (0..len)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 24) as u8
            })
            .collect()
    }

    fn assert_names_accepted_types(message: &str) {
        for accepted in ["PDF", "Word (.docx)", "plain text", "Markdown", "CSV", "JSON", "PNG", "JPEG", "HEIC", "TIFF"]
        {
            assert!(message.contains(accepted), "{message:?} does not name {accepted}");
        }
    }

    #[test]
    fn empty_and_bom_only_are_rejected_as_empty() {
        assert_eq!(sniff(b"", Some("text/plain"), "a.txt"), Err(Rejected::Empty));
        assert_eq!(sniff(UTF8_BOM, None, "a.txt"), Err(Rejected::Empty));
        assert_names_accepted_types(&Rejected::Empty.to_string());
    }

    #[test]
    fn pdf_content_wins_over_a_text_name_and_text_content_over_a_pdf_name() {
        let pdf = pdf::tests::build_pdf(&["Glucose 5.4 mmol/L"]);
        let sniffed = sniff(&pdf, Some("text/plain"), "notes.txt").unwrap();
        assert_eq!(sniffed, Sniffed { kind: ContentKind::Pdf, mime: "application/pdf" });

        let text = b"Glucose 5.4 mmol/L\n";
        let sniffed = sniff(text, Some("application/pdf"), "report.pdf").unwrap();
        assert_eq!(sniffed, Sniffed { kind: ContentKind::PlainText, mime: "text/plain" });
    }

    #[test]
    fn docx_is_recognised_from_content_alone() {
        let docx = docx::tests::build_docx(&["Blood pressure 120/80"]);
        let sniffed = sniff(&docx, Some("application/octet-stream"), "upload.bin").unwrap();
        assert_eq!(sniffed.kind, ContentKind::Docx);
        assert_eq!(sniffed.mime, DOCX_MIME);
    }

    #[test]
    fn a_zip_that_is_not_a_docx_is_rejected_even_when_named_docx() {
        let zip = docx::tests::zip_of(&[("notes.txt", b"hello")]);
        let rejected = sniff(&zip, Some(DOCX_MIME), "notes.docx").unwrap_err();
        assert_eq!(rejected, Rejected::UnsupportedType { detected: Some("application/zip".to_owned()) });
        assert_names_accepted_types(&rejected.to_string());

        // A Word file cut short loses the zip's central directory: refused, and said to be damaged.
        let docx = docx::tests::build_docx(&["Blood pressure 120/80"]);
        let rejected = sniff(&docx[..docx.len() / 2], None, "visit.docx").unwrap_err();
        assert!(matches!(rejected, Rejected::UnsupportedType { .. }));
        assert!(rejected.to_string().contains("damaged"), "{rejected}");
    }

    #[test]
    fn json_counts_only_when_it_parses() {
        let valid = br#"{"resourceType": "Observation", "value": 5.4}"#;
        assert_eq!(
            sniff(valid, None, "obs.json").unwrap(),
            Sniffed { kind: ContentKind::Json, mime: "application/json" }
        );
        assert_eq!(kind_of(valid, Some("application/fhir+json; fhirVersion=4.0"), "upload"), ContentKind::Json);
        assert_eq!(kind_of(valid, Some("application/json"), "obs.txt"), ContentKind::Json);
        // JSON content without a JSON hint is plain text.
        assert_eq!(kind_of(valid, None, "obs.txt"), ContentKind::PlainText);

        let broken = br#"{"resourceType": "Observation", "value": "#;
        assert_eq!(
            sniff(broken, Some("application/json"), "obs.json").unwrap(),
            Sniffed { kind: ContentKind::PlainText, mime: "text/plain" }
        );
        // Deep nesting is refused by serde_json's recursion limit, not by the stack.
        assert_eq!(kind_of("[".repeat(100_000).as_bytes(), None, "deep.json"), ContentKind::PlainText);
    }

    #[test]
    fn csv_and_markdown_are_picked_by_declared_type_or_extension() {
        let csv = b"date,glucose\n2024-01-01,5.4\n";
        assert_eq!(sniff(csv, None, "labs.CSV").unwrap(), Sniffed { kind: ContentKind::Csv, mime: "text/csv" });
        assert_eq!(kind_of(csv, Some("text/csv; charset=utf-8"), "labs"), ContentKind::Csv);
        // A generic declared type leaves the choice to the extension.
        assert_eq!(kind_of(csv, Some("text/plain"), "labs.csv"), ContentKind::Csv);

        let md = b"# Visit\n\n- weight 70 kg\n";
        assert_eq!(
            sniff(md, Some("application/octet-stream"), "visit.md").unwrap(),
            Sniffed { kind: ContentKind::Markdown, mime: "text/markdown" }
        );
        assert_eq!(kind_of(md, None, "dir.d/visit.markdown"), ContentKind::Markdown);
        assert_eq!(kind_of(md, Some("text/markdown"), "visit"), ContentKind::Markdown);
        assert_eq!(kind_of(md, None, "visit.md.txt"), ContentKind::PlainText);
        assert_eq!(kind_of(md, None, "visit"), ContentKind::PlainText);
    }

    #[test]
    fn bom_text_is_text_and_its_bom_is_stripped() {
        let bytes = [UTF8_BOM, "Température 37,2 °C\n".as_bytes()].concat();
        assert_eq!(kind_of(&bytes, None, "t.txt"), ContentKind::PlainText);
        let text = extract_text(ContentKind::PlainText, &bytes).unwrap().unwrap();
        assert_eq!(text, "Température 37,2 °C\n");
    }

    #[test]
    fn png_is_an_image_with_no_text() {
        let sniffed = sniff(PNG_1X1, Some("text/plain"), "scan.txt").unwrap();
        assert_eq!(sniffed, Sniffed { kind: ContentKind::Image, mime: "image/png" });
        assert!(extract_text(sniffed.kind, PNG_1X1).unwrap().is_none());
    }

    #[test]
    fn other_image_formats_are_images_with_their_mime_types() {
        let cases: [(&[u8], &str); 5] = [
            (b"\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", "image/jpeg"),
            (b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xFF\xFF\xFF\x00\x00\x00!", "image/gif"),
            (b"RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00", "image/webp"),
            (b"II*\x00\x08\x00\x00\x00\x01\x00\x00\x01\x03\x00\x01\x00", "image/tiff"),
            (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", "image/heif"),
        ];
        for (bytes, mime) in cases {
            assert_eq!(sniff(bytes, None, "photo").unwrap(), Sniffed { kind: ContentKind::Image, mime }, "{mime}");
        }
    }

    #[test]
    fn executables_random_bytes_and_utf16_are_rejected() {
        let mut elf = b"\x7FELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3E\x00".to_vec();
        elf.extend(noise(64));
        let rejected = sniff(&elf, Some("text/plain"), "notes.txt").unwrap_err();
        assert_eq!(rejected, Rejected::UnsupportedType { detected: Some("application/x-executable".to_owned()) });
        assert_names_accepted_types(&rejected.to_string());

        let rejected = sniff(&noise(4096), None, "blob").unwrap_err();
        assert_eq!(rejected, Rejected::UnsupportedType { detected: None });
        assert_names_accepted_types(&rejected.to_string());

        let utf16: Vec<u8> =
            [0xFF, 0xFE].into_iter().chain("Glucose 5.4".encode_utf16().flat_map(u16::to_le_bytes)).collect();
        assert!(matches!(sniff(&utf16, Some("text/plain"), "a.txt"), Err(Rejected::UnsupportedType { .. })));

        // Valid UTF-8 apart from a NUL byte is binary.
        assert!(matches!(sniff(b"abc\0def", None, "a.txt"), Err(Rejected::UnsupportedType { .. })));
    }

    #[test]
    fn text_is_capped_on_a_char_boundary() {
        // 'é' is two bytes and the cap is even: one leading byte shifts every boundary off the cap.
        let text = format!("x{}", "é".repeat(MAX_TEXT_BYTES / 2 + 10));
        let out = extract_text(ContentKind::PlainText, text.as_bytes()).unwrap().unwrap();
        assert_eq!(out.len(), MAX_TEXT_BYTES - 1);
        assert!(out.ends_with('é'));
        let short = cap("é".repeat(3));
        assert_eq!(short, "ééé");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn sniff_and_extract_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), name in ".{0,12}") {
            if let Ok(sniffed) = sniff(&bytes, None, &name) {
                let _ = extract_text(sniffed.kind, &bytes);
            }
            for kind in [ContentKind::Pdf, ContentKind::Docx, ContentKind::PlainText, ContentKind::Json, ContentKind::Image] {
                let _ = extract_text(kind, &bytes);
            }
        }

        #[test]
        fn bytes_after_a_pdf_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let bytes = [b"%PDF-1.4\n".as_slice(), &tail].concat();
            prop_assert_eq!(sniff(&bytes, None, "x").map(|s| s.kind), Ok(ContentKind::Pdf));
            let _ = extract_text(ContentKind::Pdf, &bytes);
        }

        #[test]
        fn damaged_real_files_never_panic(at in any::<prop::sample::Index>(), len in 1usize..64, fill in any::<u8>(), pdf in any::<bool>()) {
            let mut bytes = if pdf {
                pdf::tests::build_pdf(&["Glucose 5.4 mmol/L", "HbA1c 5.9 %"])
            } else {
                docx::tests::build_docx(&["Glucose 5.4 mmol/L", "HbA1c 5.9 %"])
            };
            let start = at.index(bytes.len());
            let end = (start + len).min(bytes.len());
            bytes[start..end].fill(fill);
            if let Ok(sniffed) = sniff(&bytes, None, "x") {
                let _ = extract_text(sniffed.kind, &bytes);
            }
            let _ = extract_text(if pdf { ContentKind::Pdf } else { ContentKind::Docx }, &bytes);
        }
    }
}
