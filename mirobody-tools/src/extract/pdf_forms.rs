//! The values of a PDF's filled-in form fields (AcroForm), with where each is drawn.
//!
//! A form's values live in its field dictionaries and are drawn by annotation appearances,
//! which no page content stream holds: a reader of page text alone keeps the labels ("Name:",
//! "Allergies:") and loses what the person wrote. Each widget annotation of a page is read
//! here, its value taken from its field (inherited through `/Parent`, PDF 32000 §12.7.3.1).

use std::collections::BTreeMap;

use pdf_extract::{Dictionary, Document, Object};

/// The most field values read from one document.
const MAX_FIELDS: usize = 10_000;
/// The most characters kept of one value.
const MAX_VALUE_CHARS: usize = 4_000;
/// How far up `/Parent` an inherited entry is looked for: a cycle stops here.
const MAX_DEPTH: usize = 32;

/// A filled-in field's value and the rectangle its widget covers on its page.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct FieldValue {
    /// The widget's rectangle: left, bottom, right, top, in default user space.
    pub(super) rect: [f64; 4],
    /// What is shown beside its label: the text or chosen options, or `[x]` for a checked box
    /// or chosen radio button.
    pub(super) value: String,
    /// The line of its own a value with no label nearby gets: the field's name (its tooltip,
    /// else its partial name), a colon and its value (a check's state by name).
    pub(super) alone: String,
}

/// Every filled-in field value of `doc`, by the number of the page its widget is on.
pub(super) fn field_values(doc: &Document) -> BTreeMap<u32, Vec<FieldValue>> {
    let mut by_page: BTreeMap<u32, Vec<FieldValue>> = BTreeMap::new();
    let mut count = 0;
    for (number, page_id) in doc.get_pages() {
        let Ok(page) = doc.get_dictionary(page_id) else { continue };
        let Some(Object::Array(annotations)) = page.get(b"Annots").ok().map(|annots| resolve(doc, annots)) else {
            continue;
        };
        for annotation in annotations {
            if count >= MAX_FIELDS {
                return by_page;
            }
            let Object::Dictionary(widget) = resolve(doc, annotation) else { continue };
            if widget.get(b"Subtype").ok().and_then(|subtype| subtype.as_name().ok()) != Some(b"Widget".as_slice()) {
                continue;
            }
            if let Some(value) = field_value(doc, widget) {
                count += 1;
                by_page.entry(number).or_default().push(value);
            }
        }
    }
    by_page
}

/// The value of the field `widget` belongs to, if it is filled in and shown by this widget.
fn field_value(doc: &Document, widget: &Dictionary) -> Option<FieldValue> {
    let rect = rectangle(doc, widget.get(b"Rect").ok()?)?;
    let kind = inherited(doc, widget, b"FT").and_then(|kind| kind.as_name().ok().map(<[u8]>::to_vec));
    // A check's state by name, for the line of its own.
    let mut state_name = None;
    let value = match (kind.as_deref(), inherited(doc, widget, b"V")?) {
        (Some(b"Sig"), _) => return None,
        (_, Object::Name(state)) => {
            // A check box or radio button: the name of its checked state, shown by the widget
            // whose appearance state it is (each radio button is a widget of one field).
            let own_state = widget.get(b"AS").ok().and_then(|state| resolve(doc, state).as_name().ok());
            if state == b"Off" || own_state.is_some_and(|own| own != state.as_slice()) {
                return None;
            }
            state_name = Some(String::from_utf8_lossy(state).into_owned());
            "[x]".to_owned()
        }
        (_, Object::Array(options)) => {
            options.iter().filter_map(|option| text(resolve(doc, option))).collect::<Vec<_>>().join(", ")
        }
        (_, other) => text(other)?,
    };
    // Multi-line text fields keep to the line of their label.
    let value: String = value.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(MAX_VALUE_CHARS).collect();
    if value.is_empty() {
        return None;
    }
    let label = [b"TU".as_slice(), b"T"]
        .into_iter()
        .find_map(|key| inherited(doc, widget, key).and_then(text))
        .unwrap_or_else(|| "Field".to_owned());
    let alone = format!("{label}: {}", state_name.as_deref().unwrap_or(&value));
    Some(FieldValue { rect, value, alone })
}

/// The entry `key` of `dict` or of the nearest ancestor field that has it, resolved.
fn inherited<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Object> {
    let mut dict = dict;
    for _ in 0..MAX_DEPTH {
        if let Ok(found) = dict.get(key) {
            return Some(resolve(doc, found));
        }
        let Object::Dictionary(parent) = resolve(doc, dict.get(b"Parent").ok()?) else { return None };
        dict = parent;
    }
    None
}

/// `object`, or what it refers to (one step, as PDF allows no reference to a reference here).
fn resolve<'a>(doc: &'a Document, object: &'a Object) -> &'a Object {
    match object {
        Object::Reference(id) => doc.get_object(*id).unwrap_or(object),
        other => other,
    }
}

/// A PDF text string (PDFDocEncoding or UTF-16 with a byte order mark) as text.
fn text(object: &Object) -> Option<String> {
    let Object::String(bytes, format) = object else { return None };
    if bytes.starts_with(b"\xFE\xFF") || bytes.starts_with(b"\xEF\xBB\xBF") {
        return pdf_extract::decode_text_string(object).ok();
    }
    // lopdf's PDFDocEncoding table drops line breaks and tabs, which part the words of a
    // multi-line field: spaces instead.
    let spaced = bytes.iter().map(|&byte| if byte < 0x20 { b' ' } else { byte }).collect();
    pdf_extract::decode_text_string(&Object::String(spaced, *format)).ok()
}

/// A rectangle array as left, bottom, right, top, whichever corners it was written with.
fn rectangle(doc: &Document, object: &Object) -> Option<[f64; 4]> {
    let Object::Array(corners) = resolve(doc, object) else { return None };
    let numbers: Vec<f64> = corners
        .iter()
        .filter_map(|corner| match resolve(doc, corner) {
            Object::Integer(n) => Some(*n as f64),
            Object::Real(n) => Some(f64::from(*n)),
            _ => None,
        })
        .collect();
    let [x1, y1, x2, y2] = numbers[..] else { return None };
    Some([x1.min(x2), y1.min(y2), x1.max(x2), y1.max(y2)])
}
