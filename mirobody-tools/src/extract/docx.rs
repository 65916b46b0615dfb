//! Text from a Word (.docx) file, read by hand from the `word/document.xml` in its zip.
//!
//! Written by hand because no well-kept crate extracts plain text from .docx: the maintained
//! ones build a whole document model to write or convert files, and plain text needs only one
//! streaming pass over one XML entry, which `zip` and `quick-xml` give us with bounded memory.

use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesRef, Event};
use zip::ZipArchive;

use super::{ExtractError, MAX_TEXT_BYTES, UTF8_BOM};

/// The zip entry that holds a Word document's body.
const DOCUMENT_XML: &str = "word/document.xml";

/// The most of `word/document.xml` read after decompression: a zip bomb stops here.
pub(super) const MAX_XML_BYTES: u64 = 64 * 1024 * 1024;

/// Whether `bytes` are a zip archive with a `word/document.xml` entry.
pub(super) fn is_docx(bytes: &[u8]) -> bool {
    // Only zips that start with a local file header, so text is never parsed as a zip.
    bytes.starts_with(b"PK\x03\x04")
        && ZipArchive::new(Cursor::new(bytes)).is_ok_and(|archive| archive.index_for_name(DOCUMENT_XML).is_some())
}

/// The text of the Word document in `bytes`, one line per paragraph; `Ok(None)` when it has none.
pub(super) fn extract(bytes: &[u8]) -> Result<Option<String>, ExtractError> {
    let mut archive = ZipArchive::new(Cursor::new(bytes))
        .map_err(|err| ExtractError::Damaged(format!("it is not a readable zip archive: {err}")))?;
    let entry = archive
        .by_name(DOCUMENT_XML)
        .map_err(|err| ExtractError::Damaged(format!("its {DOCUMENT_XML} cannot be opened: {err}")))?;
    // The declared size refuses an honest big entry at once; `read_capped` holds against a lying one.
    if entry.size() > MAX_XML_BYTES {
        return Err(ExtractError::TooLarge);
    }
    let reserve = entry.size();
    let xml = read_capped(entry, MAX_XML_BYTES, reserve)?;
    let text = text_of_document_xml(&xml)?;
    Ok((!text.trim().is_empty()).then_some(text))
}

/// All of `reader`, or [`ExtractError::TooLarge`] once it yields more than `limit` bytes;
/// `reserve` (at most `limit`) is allocated up front.
fn read_capped(reader: impl Read, limit: u64, reserve: u64) -> Result<Vec<u8>, ExtractError> {
    let reserve = usize::try_from(reserve.min(limit)).unwrap_or(0);
    let mut xml = Vec::with_capacity(reserve.saturating_add(1));
    // One byte past the limit tells "exactly at the limit" from "over it".
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut xml)
        .map_err(|err| ExtractError::Damaged(format!("its {DOCUMENT_XML} cannot be decompressed: {err}")))?;
    if xml.len() as u64 > limit { Err(ExtractError::TooLarge) } else { Ok(xml) }
}

/// The text of a WordprocessingML body: `w:t` text, a tab for `w:tab`, a newline for `w:br`
/// and `w:cr` and at the end of each `w:p`, and each table as a Markdown table (see
/// [`Body`]); at most a little over [`MAX_TEXT_BYTES`].
fn text_of_document_xml(xml: &[u8]) -> Result<String, ExtractError> {
    let xml = std::str::from_utf8(xml.strip_prefix(UTF8_BOM).unwrap_or(xml))
        .map_err(|_| ExtractError::Damaged(format!("its {DOCUMENT_XML} is not UTF-8")))?;
    let malformed =
        |err: quick_xml::Error| ExtractError::Damaged(format!("its {DOCUMENT_XML} is not valid XML: {err}"));
    let mut reader = Reader::from_str(xml);
    let mut body = Body::default();
    // Inside a `w:t`, whose text is the document's.
    let mut in_text = false;
    // Depth inside `w:r`: a `w:tab` there is a tab character, elsewhere (`w:tabs`) a tab stop.
    let mut run_depth = 0usize;
    // Depth inside `mc:Fallback`, which repeats for old readers what its `mc:Choice` holds.
    let mut fallback_depth = 0usize;
    // Word binds the WordprocessingML namespace to `w` (so do LibreOffice, Google Docs and
    // docx writers); matching qualified names spares a namespace-resolving reader.
    while body.len() <= MAX_TEXT_BYTES {
        match reader.read_event().map_err(malformed)? {
            Event::Start(start) => {
                if fallback_depth > 0 || start.name().as_ref() == b"mc:Fallback" {
                    fallback_depth += 1;
                    continue;
                }
                match start.name().as_ref() {
                    b"w:t" => in_text = true,
                    b"w:r" => run_depth += 1,
                    b"w:tab" if run_depth > 0 => body.push_str("\t"),
                    b"w:br" | b"w:cr" => body.line_break(),
                    b"w:tbl" => body.start_table(),
                    b"w:tr" => body.start_row(),
                    b"w:tc" => body.start_cell(),
                    _ => {}
                }
            }
            Event::Empty(empty) if fallback_depth == 0 => match empty.name().as_ref() {
                b"w:tab" if run_depth > 0 => body.push_str("\t"),
                b"w:br" | b"w:cr" | b"w:p" => body.line_break(),
                b"w:gridSpan" => body.span_cell(&empty),
                _ => {}
            },
            Event::End(end) => {
                if fallback_depth > 0 {
                    fallback_depth -= 1;
                    continue;
                }
                match end.name().as_ref() {
                    b"w:t" => in_text = false,
                    b"w:r" => run_depth = run_depth.saturating_sub(1),
                    b"w:p" => body.line_break(),
                    b"w:tc" => body.end_cell(),
                    b"w:tr" => body.end_row(),
                    b"w:tbl" => body.end_table(),
                    _ => {}
                }
            }
            Event::Text(chunk) if in_text && fallback_depth == 0 => {
                body.push_str(&chunk.xml10_content().map_err(|err| malformed(err.into()))?);
            }
            Event::CData(chunk) if in_text && fallback_depth == 0 => {
                body.push_str(&chunk.decode().map_err(|err| malformed(err.into()))?);
            }
            Event::GeneralRef(reference) if in_text && fallback_depth == 0 => {
                body.push_str(&resolve_reference(&reference).map_err(malformed)?);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut text = body.text;
    let kept = text.trim_end().len();
    text.truncate(kept);
    Ok(text)
}

/// The text of a document's body as it is read, tables as Markdown tables: a line per row,
/// cells between `|`, a `| --- |` line under the first row (Markdown's header separator, and
/// Word's first row is almost always the header), a blank line before and after. A cell's
/// paragraphs are one line of it; a table inside a cell is read into that cell, its cells
/// separated by spaces. A cell spanning columns (`w:gridSpan`) is followed by empty ones, so
/// each row has as many cells as the grid.
#[derive(Default)]
struct Body {
    text: String,
    /// How many tables the reader is inside: only the outermost one makes rows.
    table_depth: usize,
    /// The cells of the outermost table's current row so far.
    row: Vec<String>,
    /// The current cell's text, and how many grid columns it spans.
    cell: String,
    span: usize,
    /// The rows of the outermost table written so far.
    rows: usize,
    /// Bytes held in `row` and `cell`, bounded with `text`.
    held: usize,
}

impl Body {
    /// The bytes read so far, held or written.
    fn len(&self) -> usize {
        self.text.len() + self.held
    }

    fn push_str(&mut self, text: &str) {
        if self.table_depth == 0 {
            self.text.push_str(text);
        } else {
            self.held += text.len();
            self.cell.push_str(text);
        }
    }

    /// A paragraph's end or a line break: a new line, or a space inside a table's cell.
    fn line_break(&mut self) {
        if self.table_depth == 0 { self.text.push('\n') } else { self.push_str(" ") }
    }

    fn start_table(&mut self) {
        self.table_depth += 1;
        if self.table_depth == 1 {
            self.rows = 0;
            // Markdown starts a table only after a blank line.
            if !self.text.is_empty() && !self.text.ends_with("\n\n") {
                self.text.push_str(if self.text.ends_with('\n') { "\n" } else { "\n\n" });
            }
        }
    }

    fn start_row(&mut self) {
        if self.table_depth == 1 {
            self.row.clear();
        }
    }

    fn start_cell(&mut self) {
        if self.table_depth == 1 {
            self.cell.clear();
            self.span = 1;
        }
    }

    /// A `w:gridSpan`: how many grid columns the outermost table's current cell spans.
    fn span_cell(&mut self, element: &quick_xml::events::BytesStart<'_>) {
        if self.table_depth != 1 {
            return;
        }
        let columns = element
            .attributes()
            .flatten()
            .find(|attribute| attribute.key.as_ref() == b"w:val")
            .and_then(|attribute| std::str::from_utf8(&attribute.value).ok()?.trim().parse::<usize>().ok());
        // A Word table has at most 63 columns.
        self.span = columns.unwrap_or(1).clamp(1, 64);
    }

    fn end_cell(&mut self) {
        match self.table_depth {
            0 => {}
            1 => {
                let words: Vec<&str> = self.cell.split_whitespace().collect();
                // A `|` in a cell would end it early.
                self.row.push(words.join(" ").replace('|', "\\|"));
                self.row.extend(std::iter::repeat_n(String::new(), self.span - 1));
                self.cell.clear();
            }
            _ => self.push_str(" "),
        }
    }

    fn end_row(&mut self) {
        if self.table_depth != 1 {
            return;
        }
        let columns = self.row.len();
        if columns == 0 {
            return;
        }
        for cell in self.row.drain(..) {
            self.text.push_str("| ");
            self.text.push_str(&cell);
            self.text.push(' ');
        }
        self.text.push_str("|\n");
        if self.rows == 0 {
            self.text.push_str(&"| --- ".repeat(columns));
            self.text.push_str("|\n");
        }
        self.rows += 1;
        self.held = 0;
    }

    fn end_table(&mut self) {
        match self.table_depth {
            0 => {}
            1 => {
                self.table_depth = 0;
                self.text.push('\n');
            }
            _ => {
                self.table_depth -= 1;
                self.push_str(" ");
            }
        }
    }
}

/// The text an entity or character reference (`&amp;`, `&#x2264;`) stands for.
fn resolve_reference(reference: &BytesRef<'_>) -> Result<String, quick_xml::Error> {
    if let Some(ch) = reference.resolve_char_ref()? {
        return Ok(ch.to_string());
    }
    let name = reference.decode()?;
    // document.xml declares no entities of its own; keep an unknown one as written.
    Ok(resolve_predefined_entity(&name).map_or_else(|| format!("&{name};"), str::to_owned))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, Instant};
    use zip::write::SimpleFileOptions;
    use zip::{CompressionMethod, ZipWriter};

    /// A real .docx written by `docx-rs`, one paragraph per item of `paragraphs`.
    pub(in super::super) fn build_docx(paragraphs: &[&str]) -> Vec<u8> {
        let mut docx = docx_rs::Docx::new();
        for paragraph in paragraphs {
            docx = docx.add_paragraph(docx_rs::Paragraph::new().add_run(docx_rs::Run::new().add_text(*paragraph)));
        }
        let mut out = Cursor::new(Vec::new());
        docx.build().pack(&mut out).expect("docx packs");
        out.into_inner()
    }

    /// A zip archive of `entries`, deflated.
    pub(in super::super) fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        for (name, content) in entries {
            zip.start_file(*name, options).expect("entry starts");
            zip.write_all(content).expect("entry writes");
        }
        zip.finish().expect("zip finishes").into_inner()
    }

    /// A .docx-shaped zip whose `word/document.xml` has `body` inside `w:body`.
    fn docx_with_body(body: &str) -> Vec<u8> {
        let xml = format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"
  xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><w:body>{body}</w:body></w:document>"#
        );
        zip_of(&[("[Content_Types].xml", b"<Types/>"), (DOCUMENT_XML, xml.as_bytes())])
    }

    #[test]
    fn paragraphs_of_a_real_docx_come_out_on_separate_lines() {
        let bytes = build_docx(&["Glucose 5.4 mmol/L", "HbA1c 5.9 % & rising"]);
        let text = super::super::extract_text(super::super::ContentKind::Docx, &bytes).unwrap().expect("has text");
        let lines: Vec<&str> = text.lines().filter(|line| !line.is_empty()).collect();
        assert_eq!(lines, ["Glucose 5.4 mmol/L", "HbA1c 5.9 % & rising"], "{text:?}");
    }

    #[test]
    fn tabs_breaks_references_and_fallbacks_are_handled() {
        let bytes = docx_with_body(concat!(
            r#"<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>"#,
            r#"<w:r><w:t>Weight</w:t><w:tab/><w:t xml:space="preserve">70 kg </w:t></w:r>"#,
            r#"<w:r><w:br/><w:t>a &lt; b &amp;&#x2264; c</w:t></w:r></w:p>"#,
            r#"<w:p/>"#,
            r#"<w:p><w:r><mc:AlternateContent><mc:Choice><w:t>shape text</w:t></mc:Choice>"#,
            r#"<mc:Fallback><w:p><w:r><w:t>shape text</w:t></w:r></w:p></mc:Fallback></mc:AlternateContent>"#,
            r#"<w:instrText>PAGE</w:instrText></w:r></w:p>"#,
        ));
        let text = extract(&bytes).unwrap().unwrap();
        assert_eq!(text, "Weight\t70 kg \na < b &≤ c\n\nshape text");
    }

    /// A real .docx written by `docx-rs`: a paragraph, a table of `rows`, a paragraph.
    pub(in super::super) fn docx_with_table(rows: &[&[&str]]) -> Vec<u8> {
        use docx_rs::{Docx, Paragraph, Run, Table, TableCell, TableRow};
        let table = Table::new(
            rows.iter()
                .map(|row| {
                    TableRow::new(
                        row.iter()
                            .map(|cell| {
                                TableCell::new().add_paragraph(Paragraph::new().add_run(Run::new().add_text(*cell)))
                            })
                            .collect(),
                    )
                })
                .collect(),
        );
        let docx = Docx::new()
            .add_paragraph(Paragraph::new().add_run(Run::new().add_text("Lipid panel")))
            .add_table(table)
            .add_paragraph(Paragraph::new().add_run(Run::new().add_text("Fasting sample.")));
        let mut out = Cursor::new(Vec::new());
        docx.build().pack(&mut out).expect("docx packs");
        out.into_inner()
    }

    #[test]
    fn a_table_of_a_real_docx_is_a_markdown_table_one_row_a_line() {
        let bytes =
            docx_with_table(&[&["Test", "Result", "Unit"], &["LDL", "2.1", "mmol/L"], &["HDL", "1.4", "mmol/L"]]);
        let text = super::super::extract_text(super::super::ContentKind::Docx, &bytes).unwrap().expect("has text");
        assert_eq!(
            text,
            "Lipid panel\n\n| Test | Result | Unit |\n| --- | --- | --- |\n| LDL | 2.1 | mmol/L |\n\
             | HDL | 1.4 | mmol/L |\n\nFasting sample."
        );
    }

    #[test]
    fn cells_keep_to_their_row_whatever_they_hold() {
        // Two paragraphs and a pipe in a cell, a cell spanning two columns, a table in a cell.
        let cell = |content: &str| format!("<w:tc>{content}</w:tc>");
        let para = |text: &str| format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>");
        let row = |cells: &[String]| format!("<w:tr>{}</w:tr>", cells.concat());
        let nested = format!("<w:tbl>{}</w:tbl>", row(&[cell(&para("inner a")), cell(&para("inner b"))]));
        let body = format!(
            "{}<w:tbl><w:tblGrid/>{}{}{}</w:tbl>",
            para("Before"),
            row(&[cell(&para("Drug")), cell(&para("Dose")), cell(&para("When"))]),
            row(&[cell(&(para("Metformin") + &para("500 mg"))), cell(&para("a|b")), cell(&(para("x") + &nested))]),
            row(&[
                "<w:tc><w:tcPr><w:gridSpan w:val=\"2\"/></w:tcPr><w:p><w:r><w:t>Spans two</w:t></w:r></w:p></w:tc>"
                    .to_owned(),
                cell(&para("last")),
            ]),
        );
        let text = extract(&docx_with_body(&body)).unwrap().unwrap();
        assert_eq!(
            text,
            "Before\n\n| Drug | Dose | When |\n| --- | --- | --- |\n| Metformin 500 mg | a\\|b | x inner a inner b |\n\
             | Spans two |  | last |"
        );
    }

    #[test]
    fn a_docx_with_no_text_has_none() {
        assert!(extract(&build_docx(&[])).unwrap().is_none());
    }

    #[test]
    fn a_zip_without_a_document_is_not_a_docx() {
        let zip = zip_of(&[("xl/workbook.xml", b"<workbook/>")]);
        assert!(!is_docx(&zip));
        assert!(matches!(extract(&zip), Err(ExtractError::Damaged(_))));
        assert!(is_docx(&build_docx(&["x"])));
    }

    #[test]
    fn broken_xml_is_damaged() {
        let zip = zip_of(&[(DOCUMENT_XML, b"<w:document><w:body><w:p></w:body>")]);
        let err = extract(&zip).unwrap_err();
        assert!(matches!(err, ExtractError::Damaged(_)), "{err:?}");
    }

    #[test]
    fn a_huge_document_xml_is_too_large_and_refused_quickly() {
        let zeros = vec![0u8; 65 * 1024 * 1024];
        let zip = zip_of(&[(DOCUMENT_XML, &zeros)]);
        drop(zeros);
        assert!(zip.len() < 1024 * 1024, "deflated to {} bytes", zip.len());
        let started = Instant::now();
        assert!(matches!(extract(&zip), Err(ExtractError::TooLarge)));
        assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    }

    #[test]
    fn reading_stops_at_the_limit_whatever_the_declared_size() {
        // A lying entry: declares nothing, yields without end.
        let err = read_capped(std::io::repeat(b'x'), 1024, 0).unwrap_err();
        assert!(matches!(err, ExtractError::TooLarge));
        assert_eq!(read_capped(&[b'x'; 1024][..], 1024, u64::MAX).unwrap().len(), 1024);
    }
}
