//! A PDF's text laid out from where each character is drawn: lines from baselines, a space
//! wherever drawn text leaves a gap (so words of separate text blocks never run together),
//! right-to-left lines put back in reading order, form values beside their labels and a marker
//! line before each page.
//!
//! pdf-extract interprets the content streams and hands each character here with its position
//! ([`OutputDev`]); its own plain-text output adds a space only after a forward move within one
//! text object and keeps characters in drawing order, which for Arabic and Hebrew is visual
//! order: the letters of each word come out reversed.

use std::collections::BTreeMap;

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};
use unicode_bidi::{BidiClass, BidiInfo, Level, bidi_class};

use super::pdf_forms::FieldValue;

/// A gap wider than this fraction of the font size between two characters is a space:
/// narrower ones are kerning. pdftotext and pdf-extract use the same figure.
const SPACE_GAP: f64 = 0.1;
/// Two characters whose baselines are closer than this fraction of the font size share a line.
const SAME_BASELINE: f64 = 0.5;
/// A character drawn over the previous one by up to this fraction of the font size still
/// follows it (tight kerning); further back it starts a new piece.
const OVERLAP: f64 = 0.5;

/// Collects the characters pdf-extract draws and writes each page's lines into [`Self::text`].
pub(super) struct LaidOut<'a> {
    /// The text so far: each page's marker line, its lines, a blank line.
    text: String,
    /// Whether any page had a character other than whitespace.
    has_text: bool,
    /// The lines of the page being drawn, in drawing order.
    lines: Vec<Line>,
    /// Bytes held in `lines`: with `text`, what the budget bounds.
    held: usize,
    /// The most bytes of text kept; characters past it are dropped.
    budget: usize,
    /// Filled-in form fields, by page number.
    fields: &'a BTreeMap<u32, Vec<FieldValue>>,
    page: u32,
}

/// Characters drawn along one baseline, in pieces separated by gaps or spaces.
struct Line {
    /// The unit vector of the text's direction (1, 0 for horizontal text).
    direction: (f64, f64),
    /// The baseline's distance from the origin, across `direction`.
    across: f64,
    size: f64,
    pieces: Vec<Piece>,
    /// Where the last character drawn starts and ends, along `direction`.
    last_start: f64,
    last_end: f64,
    /// Whether the next character, if adjacent, continues the last piece (no space was drawn).
    open: bool,
    /// Adjacent characters drawn after (forward) or before (backward) the previous one: a line
    /// drawn backward is right-to-left text already in reading order.
    forward: u32,
    backward: u32,
}

/// A run of characters with no gap between them: a word, or words with no space drawn.
struct Piece {
    start: f64,
    end: f64,
    text: String,
}

impl<'a> LaidOut<'a> {
    /// An empty layout keeping at most `budget` bytes, with these form values to place.
    pub(super) fn new(fields: &'a BTreeMap<u32, Vec<FieldValue>>, budget: usize) -> Self {
        LaidOut { text: String::new(), has_text: false, lines: Vec::new(), held: 0, budget, fields, page: 0 }
    }

    /// The text laid out, or None when no page had any.
    pub(super) fn into_text(self) -> Option<String> {
        self.has_text.then_some(self.text)
    }

    /// Places each form value of the page beside its label: after the last piece of the line
    /// at the field's height that ends left of it; a value with no such line gets a line of
    /// its own, named by the field.
    fn place_fields(&mut self) {
        let fields = self.fields;
        let Some(fields) = fields.get(&self.page) else { return };
        for field in fields {
            let [left, bottom, _, top] = field.rect;
            let middle = (bottom + top) / 2.0;
            let tolerance = (top - bottom).abs() / 2.0 + 2.0;
            // The horizontal line whose baseline is nearest the field's middle, within its height.
            let line = self
                .lines
                .iter_mut()
                .filter(|line| line.direction.0 > 0.99 && (line.across - middle).abs() <= tolerance)
                .min_by(|a, b| (a.across - middle).abs().total_cmp(&(b.across - middle).abs()));
            self.held += field.value.len() + 1;
            let Some(line) = line else {
                self.lines.push(Line::of_text(field.alone.clone()));
                continue;
            };
            // After the piece ending furthest right that still ends left of the field.
            let at = line
                .pieces
                .iter()
                .enumerate()
                .filter(|(_, piece)| piece.end <= left + line.size * SPACE_GAP)
                .max_by(|a, b| a.1.end.total_cmp(&b.1.end))
                .map_or(0, |(index, _)| index + 1);
            line.pieces.insert(at, Piece { start: left, end: left, text: field.value.clone() });
        }
    }
}

impl Line {
    /// A line holding `text` alone, placed nowhere in particular.
    fn of_text(text: String) -> Line {
        Line {
            direction: (1.0, 0.0),
            across: f64::NAN,
            size: 0.0,
            pieces: vec![Piece { start: 0.0, end: 0.0, text }],
            last_start: 0.0,
            last_end: 0.0,
            open: false,
            forward: 0,
            backward: 0,
        }
    }

    /// The line as read: its pieces joined by spaces, right-to-left text in reading order.
    fn read(&self) -> String {
        let mut text = String::new();
        for piece in &self.pieces {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&piece.text);
        }
        if self.backward > self.forward { text } else { reading_order(text) }
    }
}

/// `visual`, a line as drawn from left to right, in reading (logical) order.
///
/// A line with no right-to-left letters is left alone. Otherwise the Unicode bidirectional
/// algorithm is run on the visual line as though it were logical: it reverses right-to-left
/// runs and the order of runs, which undoes a visual layout (numbers and Latin words inside
/// Arabic stay left to right). The paragraph direction is the direction most of the line's
/// letters have.
pub(super) fn reading_order(visual: String) -> String {
    let (mut rtl, mut ltr) = (0usize, 0usize);
    for c in visual.chars() {
        match bidi_class(c) {
            BidiClass::R | BidiClass::AL => rtl += 1,
            BidiClass::L => ltr += 1,
            _ => {}
        }
    }
    if rtl == 0 {
        return visual;
    }
    let level = if rtl >= ltr { Level::rtl() } else { Level::ltr() };
    let info = BidiInfo::new(&visual, Some(level));
    let Some(paragraph) = info.paragraphs.first() else { return visual };
    info.reorder_line(paragraph, paragraph.range.clone()).into_owned()
}

/// Arabic presentation forms (the shaped letters some PDFs map their glyphs to) as the letters
/// they shape: what a search for a word finds. Other characters are kept as they are.
fn base_letters(drawn: &str) -> std::borrow::Cow<'_, str> {
    use unicode_normalization::UnicodeNormalization;
    let shaped = |c: char| matches!(c, '\u{FB50}'..='\u{FDFF}' | '\u{FE70}'..='\u{FEFF}');
    if drawn.chars().any(shaped) {
        drawn.chars().flat_map(|c| if shaped(c) { c.nfkc().collect::<Vec<_>>() } else { vec![c] }).collect()
    } else {
        drawn.into()
    }
}

impl OutputDev for LaidOut<'_> {
    fn begin_page(&mut self, page_num: u32, _: &MediaBox, _: Option<(f64, f64, f64, f64)>) -> Result<(), OutputError> {
        self.page = page_num;
        self.lines.clear();
        self.held = 0;
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        self.place_fields();
        if self.text.len() > self.budget {
            return Ok(());
        }
        self.text.push_str(&crate::pages::marker(self.page as usize));
        self.text.push('\n');
        for line in self.lines.drain(..) {
            let read = line.read();
            self.has_text |= !read.trim().is_empty();
            self.text.push_str(&read);
            self.text.push('\n');
        }
        self.text.push('\n');
        self.held = 0;
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        drawn: &str,
    ) -> Result<(), OutputError> {
        if drawn.is_empty() || self.text.len() + self.held > self.budget {
            return Ok(());
        }
        let scale = trm.m11.hypot(trm.m12);
        let direction = if scale > 1e-9 { (trm.m11 / scale, trm.m12 / scale) } else { (1.0, 0.0) };
        let size = font_size.abs() * (scale * trm.m21.hypot(trm.m22)).sqrt();
        let size = if size.is_finite() && size > 1e-6 { size } else { 1.0 };
        let (x, y) = (trm.m31, trm.m32);
        let along = x * direction.0 + y * direction.1;
        let across = y * direction.0 - x * direction.1;
        let advance = width * font_size.abs() * scale;
        if !(along.is_finite() && across.is_finite() && advance.is_finite()) {
            return Ok(());
        }
        let blank = drawn.chars().all(char::is_whitespace);
        let same_line = self.lines.last().is_some_and(|line| {
            line.direction.0 * direction.0 + line.direction.1 * direction.1 > 0.99
                && (across - line.across).abs() < SAME_BASELINE * size.max(line.size)
        });
        if !same_line {
            if blank {
                return Ok(());
            }
            self.lines.push(Line {
                direction,
                across,
                size,
                pieces: Vec::new(),
                last_start: along,
                last_end: along,
                open: false,
                forward: 0,
                backward: 0,
            });
        }
        let Some(line) = self.lines.last_mut() else { return Ok(()) };
        let end = along + advance;
        if blank {
            // A drawn space ends the piece: what follows is another word.
            line.open = false;
            line.last_start = along;
            line.last_end = end;
            return Ok(());
        }
        let gap_after = along - line.last_end;
        let gap_before = line.last_start - end;
        let follows = |gap: f64| gap <= SPACE_GAP * size && gap >= -OVERLAP * size;
        let drawn = base_letters(drawn);
        match line.pieces.last_mut() {
            Some(piece) if line.open && (follows(gap_after) || follows(gap_before)) => {
                if follows(gap_after) {
                    line.forward += 1;
                } else {
                    line.backward += 1;
                }
                piece.text.push_str(&drawn);
                piece.start = piece.start.min(along);
                piece.end = piece.end.max(end);
            }
            _ => line.pieces.push(Piece { start: along, end, text: drawn.to_string() }),
        }
        self.held += drawn.len() + 1;
        line.size = line.size.max(size);
        line.open = true;
        line.last_start = along;
        line.last_end = end;
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::extract::{ContentKind, extract_text};
    use lopdf::{Document, Object, ObjectId, Stream, dictionary};

    /// A PDF with one page per content stream in `pages`, with the fonts `/F1` (Helvetica) and
    /// `/F2` (a composite font whose codes are the UTF-16 code units of the characters, as a
    /// subsetting writer's ToUnicode maps them: Arabic and Hebrew included); `edit` gets the
    /// document and the pages' ids before it is saved.
    pub(in super::super) fn pdf_of(pages: &[String], edit: impl FnOnce(&mut Document, &[ObjectId])) -> Vec<u8> {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let helvetica =
            doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let to_unicode = doc.add_object(Stream::new(dictionary! {}, UTF16_CMAP.as_bytes().to_vec()));
        let descriptor = doc.add_object(dictionary! {
            "Type" => "FontDescriptor", "FontName" => "NotoNaskhArabic", "Flags" => 32,
            "FontBBox" => vec![0.into(), (-300).into(), 1000.into(), 900.into()], "ItalicAngle" => 0,
            "Ascent" => 900, "Descent" => -300, "CapHeight" => 700, "StemV" => 80,
        });
        let cid_font = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "CIDFontType2", "BaseFont" => "NotoNaskhArabic",
            "CIDSystemInfo" => dictionary! { "Registry" => Object::string_literal("Adobe"),
                "Ordering" => Object::string_literal("Identity"), "Supplement" => 0 },
            "FontDescriptor" => descriptor, "DW" => 500,
        });
        let composite = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type0", "BaseFont" => "NotoNaskhArabic",
            "Encoding" => "Identity-H", "DescendantFonts" => vec![cid_font.into()], "ToUnicode" => to_unicode,
        });
        let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => helvetica, "F2" => composite } });
        let mut page_ids = Vec::new();
        for content in pages {
            let content = doc.add_object(Stream::new(dictionary! {}, content.as_bytes().to_vec()));
            page_ids
                .push(doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => content }));
        }
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages",
                "Kids" => page_ids.iter().map(|id| Object::from(*id)).collect::<Vec<_>>(),
                "Count" => i64::try_from(page_ids.len()).unwrap(),
                "Resources" => resources,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        edit(&mut doc, &page_ids);
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).expect("PDF saves");
        bytes
    }

    /// A ToUnicode CMap mapping each two-byte code to the same UTF-16 code unit.
    const UTF16_CMAP: &str = "/CIDInit /ProcSet findresource begin 12 dict begin begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Adobe-Identity-UCS def /CMapType 2 def
1 begincodespacerange <0000> <FFFF> endcodespacerange
3 beginbfrange <0020> <007E> <0020> <0590> <05FF> <0590> <0600> <06FF> <0600> endbfrange
endcmap CMapName currentdict /CMap defineresource pop end end";

    /// `text` shown with `/F2` at (x, y): each character's UTF-16 code unit, as a hex string.
    pub(in super::super) fn composite_text(x: u32, y: u32, text: &str) -> String {
        let hex: String = text.encode_utf16().map(|unit| format!("{unit:04X}")).collect();
        format!("BT /F2 12 Tf {x} {y} Td <{hex}> Tj ET\n")
    }

    /// `text` shown with `/F1` (Helvetica) at (x, y).
    pub(in super::super) fn latin_text(x: u32, y: u32, text: &str) -> String {
        format!("BT /F1 12 Tf {x} {y} Td ({text}) Tj ET\n")
    }

    fn text_of(pdf: &[u8]) -> String {
        extract_text(ContentKind::Pdf, pdf).unwrap().expect("the PDF has text")
    }

    /// The lines of a page's text, less its marker and blank lines.
    fn lines_of(text: &str) -> Vec<&str> {
        text.lines().filter(|line| !line.is_empty() && crate::pages::marked_page(line).is_none()).collect()
    }

    #[test]
    fn arabic_drawn_in_visual_order_reads_in_logical_order() {
        // What a PDF writer draws for the line "ضغط الدم 120/80" (blood pressure): glyphs left
        // to right, so the logical text reversed, the number left to right inside it.
        let logical = "ضغط الدم 120/80";
        let visual: String = "120/80 ".chars().chain("ضغط الدم".chars().rev()).collect();
        let hebrew_visual: String = "לחץ דם".chars().rev().collect();
        let pdf = pdf_of(
            &[composite_text(72, 700, &visual)
                + &composite_text(72, 680, &hebrew_visual)
                + &latin_text(72, 660, "Glucose 5.4 mmol/L")],
            |_, _| {},
        );
        assert_eq!(lines_of(&text_of(&pdf)), [logical, "לחץ דם", "Glucose 5.4 mmol/L"]);
    }

    #[test]
    fn arabic_drawn_right_to_left_is_already_in_reading_order() {
        // A writer that places each glyph itself, right to left, in logical order: kept as it is.
        let word = "الدم";
        let glyphs: String = word
            .encode_utf16()
            .enumerate()
            .map(|(i, unit)| format!("1 0 0 1 {} 700 Tm <{unit:04X}> Tj ", 200 - 6 * i))
            .collect();
        let pdf = pdf_of(&[format!("BT /F2 12 Tf {glyphs}ET\n")], |_, _| {});
        assert_eq!(lines_of(&text_of(&pdf)), [word]);
    }

    #[test]
    fn adjacent_text_blocks_are_separated() {
        // Table cells drawn right cell first, then left, on one baseline; a value right after
        // its label in a block of its own; a block touching the last one continues its word.
        let pdf = pdf_of(
            &[latin_text(200, 700, "5.4")
                + &latin_text(72, 700, "Glucose")
                + &latin_text(72, 680, "HbA1c:")
                + &latin_text(115, 680, "5.9")
                + "BT /F1 12 Tf 72 660 Td [(Chol) -20 (esterol)] TJ ET\n"
                + "BT /F1 12 Tf 72 640 Td [(LDL) -2000 (2.1)] TJ ET\n"],
            |_, _| {},
        );
        let text = text_of(&pdf);
        assert_eq!(lines_of(&text), ["5.4 Glucose", "HbA1c: 5.9", "Cholesterol", "LDL 2.1"], "{text:?}");
    }

    #[test]
    fn each_page_starts_with_its_marker() {
        let pages = [latin_text(72, 700, "Glucose 5.4"), String::new(), latin_text(72, 700, "HbA1c 5.9 %")];
        let text = text_of(&pdf_of(&pages, |_, _| {}));
        assert_eq!(text, "--- page 1 ---\nGlucose 5.4\n\n--- page 2 ---\n\n--- page 3 ---\nHbA1c 5.9 %");
        let paged = crate::pages::pages(&text);
        assert_eq!(paged.iter().map(|page| page.0).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(text[paged[2].1.clone()].contains("HbA1c 5.9 %"));
        // Pages with no text at all: no text, as before.
        assert_eq!(extract_text(ContentKind::Pdf, &pdf_of(&[String::new(), String::new()], |_, _| {})).unwrap(), None);
    }

    /// A filled-in form: labels in the page, values in widget annotations.
    pub(in super::super) fn filled_form() -> Vec<u8> {
        let content = latin_text(72, 700, "Name:")
            + &latin_text(300, 700, "Date:")
            + &latin_text(72, 670, "Allergies:")
            + &latin_text(72, 640, "Smoker")
            + &latin_text(72, 610, "Sex:")
            + &latin_text(140, 610, "female")
            + &latin_text(220, 610, "male")
            + &latin_text(72, 580, "Notes:");
        pdf_of(&[content], |doc, pages| {
            let text_field = |doc: &mut Document, name: &str, rect: [i64; 4], value: Object| {
                doc.add_object(dictionary! {
                    "Type" => "Annot", "Subtype" => "Widget", "FT" => "Tx", "T" => Object::string_literal(name),
                    "Rect" => rect.iter().map(|n| Object::Integer(*n)).collect::<Vec<_>>(), "V" => value, "P" => pages[0],
                })
            };
            let utf16: Vec<u8> =
                [0xFE, 0xFF].into_iter().chain("Amina Ḥaddad".encode_utf16().flat_map(u16::to_be_bytes)).collect();
            let name = text_field(
                doc,
                "patient_name",
                [115, 695, 280, 715],
                Object::String(utf16, lopdf::StringFormat::Hexadecimal),
            );
            let date = text_field(doc, "date", [335, 695, 450, 715], Object::string_literal("2026-03-01"));
            let allergies = text_field(
                doc,
                "allergies",
                [140, 665, 400, 685],
                Object::String(b"Penicillin,\r\nlatex".to_vec(), lopdf::StringFormat::Hexadecimal),
            );
            let notes = text_field(doc, "notes", [120, 575, 400, 595], Object::string_literal(""));
            let smoker = doc.add_object(dictionary! {
                "Type" => "Annot", "Subtype" => "Widget", "FT" => "Btn", "T" => Object::string_literal("smoker"),
                "Rect" => vec![130.into(), 636.into(), 142.into(), 648.into()], "V" => "Yes", "AS" => "Yes",
            });
            // A radio group: one field, a widget per option, the chosen one's state its value.
            let sex = doc.new_object_id();
            let option = |doc: &mut Document, left: i64, state: &str| {
                doc.add_object(dictionary! {
                    "Type" => "Annot", "Subtype" => "Widget", "Parent" => sex, "AS" => state,
                    "Rect" => vec![left.into(), 606.into(), (left + 12).into(), 618.into()],
                })
            };
            let female = option(doc, 124, "female");
            let male = option(doc, 204, "Off");
            doc.objects.insert(
                sex,
                Object::Dictionary(dictionary! {
                    "FT" => "Btn", "T" => Object::string_literal("sex"), "V" => "female",
                    "Kids" => vec![female.into(), male.into()],
                }),
            );
            let annots: Vec<Object> =
                [name, date, allergies, notes, smoker, female, male].into_iter().map(Object::from).collect();
            doc.get_object_mut(pages[0]).unwrap().as_dict_mut().unwrap().set("Annots", annots);
            let fields: Vec<Object> =
                [name, date, allergies, notes, smoker, sex].into_iter().map(Object::from).collect();
            let form = doc.add_object(dictionary! { "Fields" => fields });
            let root = doc.trailer.get(b"Root").unwrap().as_reference().unwrap();
            doc.get_object_mut(root).unwrap().as_dict_mut().unwrap().set("AcroForm", form);
        })
    }

    #[test]
    fn filled_in_form_values_appear_beside_their_labels() {
        let text = text_of(&filled_form());
        assert_eq!(
            lines_of(&text),
            [
                "Name: Amina Ḥaddad Date: 2026-03-01",
                "Allergies: Penicillin, latex",
                "Smoker [x]",
                "Sex: [x] female male",
                "Notes:",
            ],
            "{text:?}"
        );
    }

    #[test]
    fn a_value_with_no_label_near_it_gets_a_line_named_by_its_field() {
        let pdf = pdf_of(&[latin_text(72, 700, "Visit summary")], |doc, pages| {
            let field = doc.add_object(dictionary! {
                "Type" => "Annot", "Subtype" => "Widget", "FT" => "Tx", "T" => Object::string_literal("weight_kg"),
                "Rect" => vec![72.into(), 400.into(), 200.into(), 420.into()], "V" => Object::string_literal("70"),
            });
            let check = doc.add_object(dictionary! {
                "Type" => "Annot", "Subtype" => "Widget", "FT" => "Btn", "TU" => Object::string_literal("Fasting"),
                "T" => Object::string_literal("f1"), "Rect" => vec![72.into(), 300.into(), 84.into(), 312.into()],
                "V" => "Yes", "AS" => "Yes",
            });
            doc.get_object_mut(pages[0])
                .unwrap()
                .as_dict_mut()
                .unwrap()
                .set("Annots", vec![field.into(), check.into()]);
        });
        assert_eq!(lines_of(&text_of(&pdf)), ["Visit summary", "weight_kg: 70", "Fasting: Yes"]);
    }

    #[test]
    fn visual_arabic_is_put_in_reading_order_and_latin_is_left_alone() {
        // "مرحبا 123" drawn as an RTL paragraph: the number on the left, the word reversed.
        let visual: String = "123 ".chars().chain("مرحبا".chars().rev()).collect();
        assert_eq!(reading_order(visual), "مرحبا 123");
        assert_eq!(reading_order("Glucose 5.4 mmol/L".to_owned()), "Glucose 5.4 mmol/L");
        // Hebrew too; a Latin line quoting one Hebrew word keeps its own order.
        let visual: String = "שלום".chars().rev().collect();
        assert_eq!(reading_order(visual.clone()), "שלום");
        assert_eq!(reading_order(format!("Patient name {visual} today")), "Patient name שלום today");
    }

    #[test]
    fn presentation_forms_become_letters() {
        // ﻣﺮﺣﺒﺎ: the shaped forms of مرحبا.
        assert_eq!(base_letters("\u{FEE3}\u{FEAE}\u{FEA3}\u{FE92}\u{FE8E}"), "مرحبا");
        assert_eq!(base_letters("m\u{B2} \u{FB01}"), "m\u{B2} \u{FB01}");
    }
}
