//! What a file to import is, told by its content ([`detect`], the one sniffer the command
//! line and the uploads share): FHIR JSON (a Bundle or one resource), FHIR Bulk Data NDJSON, a
//! CSV of measurements, an Apple Health export (feature `apple`), or none of them (a document).
//! Also the NDJSON import, and [`FromFile`], the store that links what an import writes to the
//! uploaded file it was read from.

use std::io::{self, Read, Seek};

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use serde_json::{Value, json};

use crate::fhir::{ImportItem, MAX_ENTRIES};
use crate::import::{CheckedJson, ImportResponse, import_fhir, refused};
use crate::quota::QuotaExceeded;
use crate::store::{DeletedImport, ImportCounts, ImportRecord, ImportSource, ItemOutcome, RecordStore};

/// The bytes of a file [`detect`] looks at (an Apple export's DTD comes before its root
/// element: this covers Apple's many times over).
pub const HEAD_BYTES: usize = 256 * 1024;

/// What a file is, to the importers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataFormat {
    /// A JSON object whose top-level `resourceType` is `Bundle`.
    FhirBundle,
    /// A JSON object whose top-level `resourceType` is another type: one resource.
    FhirResource,
    /// FHIR Bulk Data: one resource per line (newline-delimited JSON), more than one line.
    FhirNdjson,
    /// A CSV whose header names the columns `time`, `indicator` and `value`.
    MeasurementsCsv,
    /// An Apple Health `export.zip` (a zip with `apple_health_export/` in it).
    AppleZip,
    /// An Apple Health `export.xml` (XML whose root element is `HealthData`).
    AppleXml,
    /// None of them: a document, a picture, a zip of something else.
    Other,
}

impl DataFormat {
    /// Its name in answers: `fhir-bundle`, `fhir-resource`, `fhir-ndjson`, `csv`,
    /// `apple-health-zip`, `apple-health-xml` or `other`.
    pub fn name(self) -> &'static str {
        match self {
            DataFormat::FhirBundle => "fhir-bundle",
            DataFormat::FhirResource => "fhir-resource",
            DataFormat::FhirNdjson => "fhir-ndjson",
            DataFormat::MeasurementsCsv => "csv",
            DataFormat::AppleZip => "apple-health-zip",
            DataFormat::AppleXml => "apple-health-xml",
            DataFormat::Other => "other",
        }
    }

    /// Whether it is health data an importer reads (anything but [`DataFormat::Other`]).
    pub fn is_data(self) -> bool {
        self != DataFormat::Other
    }
}

/// What `file` is, by its content (never its name or declared type): its first
/// [`HEAD_BYTES`], and for a zip the names of its entries. `file` is left at its start.
///
/// A JSON object is FHIR when its top-level `resourceType` is in those first bytes; one that
/// is cut short or not well-formed is still FHIR then, so its import says what is wrong with it
/// rather than keep it silently as a document. Without feature `apple`, no file is an Apple
/// export.
pub fn detect<R: Read + Seek>(mut file: R) -> io::Result<DataFormat> {
    let mut head = Vec::with_capacity(HEAD_BYTES.min(64 * 1024));
    file.by_ref().take(HEAD_BYTES as u64).read_to_end(&mut head)?;
    file.rewind()?;
    if head.starts_with(b"PK\x03\x04") {
        #[cfg(feature = "apple")]
        if crate::apple::zip_is_export(&mut file) {
            file.rewind()?;
            return Ok(DataFormat::AppleZip);
        }
        file.rewind()?;
        return Ok(DataFormat::Other);
    }
    Ok(detect_text(&head))
}

/// [`detect`] for a file held in memory.
pub fn detect_bytes(bytes: &[u8]) -> DataFormat {
    detect(io::Cursor::new(bytes)).unwrap_or(DataFormat::Other)
}

/// The format of a head that is not a zip.
fn detect_text(head: &[u8]) -> DataFormat {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if head.contains(&0) {
        return DataFormat::Other;
    }
    #[cfg(feature = "apple")]
    if crate::apple::sniff(head) == Some(crate::apple::ExportKind::Xml) {
        return DataFormat::AppleXml;
    }
    let start = head.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(head.len());
    let text = &head[start..];
    if text.first() == Some(&b'{') {
        return detect_json(text);
    }
    // Text cut at HEAD_BYTES may end inside a character: the header row comes first.
    let valid = match std::str::from_utf8(text) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&text[..e.valid_up_to()]).unwrap_or_default(),
    };
    if crate::fhir::csv::names_measurements(valid) { DataFormat::MeasurementsCsv } else { DataFormat::Other }
}

/// A JSON object: NDJSON when its first line is a whole resource and another line follows,
/// else one Bundle or resource by its top-level `resourceType`.
fn detect_json(text: &[u8]) -> DataFormat {
    let first_line = text.split(|b| *b == b'\n').next().unwrap_or_default();
    let rest = &text[first_line.len()..];
    if rest.iter().any(|b| !b.is_ascii_whitespace())
        && serde_json::from_slice::<serde::de::IgnoredAny>(first_line).is_ok()
        && top_level_resource_type(first_line).is_some()
    {
        return DataFormat::FhirNdjson;
    }
    match top_level_resource_type(text).as_deref() {
        Some("Bundle") => DataFormat::FhirBundle,
        Some(_) => DataFormat::FhirResource,
        None => DataFormat::Other,
    }
}

/// The string value of the key `resourceType` of the outermost object in `json` (which may
/// be cut short), if it comes before the cut.
fn top_level_resource_type(json: &[u8]) -> Option<String> {
    let mut depth = 0usize;
    let mut at = 0;
    while at < json.len() {
        match json[at] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b'"' => {
                let end = string_end(json, at)?;
                let is_key = depth == 1 && next_non_space(json, end) == Some(b':');
                if is_key && &json[at + 1..end] == b"resourceType" {
                    let colon = end + 1 + json[end + 1..].iter().position(|b| *b == b':')?;
                    let value = colon + 1 + json[colon + 1..].iter().position(|b| !b.is_ascii_whitespace())?;
                    if json[value] != b'"' {
                        return None;
                    }
                    let value_end = string_end(json, value)?;
                    return String::from_utf8(json[value + 1..value_end].to_vec()).ok();
                }
                at = end;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The index of the quote that closes the string opening at `start`.
fn string_end(json: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while at < json.len() {
        match json[at] {
            b'\\' => at += 2,
            b'"' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

fn next_non_space(json: &[u8], quote: usize) -> Option<u8> {
    json[quote + 1..].iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// Imports FHIR Bulk Data NDJSON (one resource per line; blank lines are passed over) as
/// `subject`'s, as a `batch`: every valid resource is kept and each invalid one reported by
/// its line. A line that is not a JSON object with a `resourceType` (a file cut short, say)
/// refuses the whole file with 400, as do more than [`MAX_ENTRIES`] resources (413) and a
/// line past [`CheckedJson::check`]'s bounds; nothing is stored then.
pub async fn import_ndjson(store: &dyn RecordStore, subject: &str, bytes: &[u8]) -> ImportResponse {
    let mut entries = Vec::new();
    let mut lines = Vec::new();
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let number = index + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if entries.len() == MAX_ENTRIES {
            let reason = format!("The file has more than {MAX_ENTRIES} resources; send it in parts.");
            return refused(413, vec![(None, reason)]);
        }
        let resource: Value = match CheckedJson::check(line) {
            Ok(_) => match serde_json::from_slice(line) {
                Ok(resource) => resource,
                Err(e) => return refused(400, vec![(None, format!("line {number}: not JSON: {e}."))]),
            },
            Err(refusal) => {
                let why = refusal.summary.invalid.join("; ");
                return refused(refusal.status, vec![(None, format!("line {number}: {why}"))]);
            }
        };
        if resource.get("resourceType").and_then(Value::as_str).is_none() {
            return refused(400, vec![(None, format!("line {number}: not a FHIR resource (no resourceType)."))]);
        }
        entries.push(json!({"resource": resource}));
        lines.push(number);
    }
    let bundle = json!({"resourceType": "Bundle", "type": "batch", "entry": entries});
    let mut response = import_fhir(store, subject, &bundle).await;
    // The batch names entries by index; the file's reader knows lines.
    for reason in &mut response.summary.invalid {
        let Some(rest) = reason.strip_prefix("entry ") else { continue };
        let Some((index, why)) = rest.split_once(": ") else { continue };
        if let Some(line) = index.parse::<usize>().ok().and_then(|i| lines.get(i)) {
            *reason = format!("line {line}: {why}");
        }
    }
    response
}

/// The answer of an import refused as a whole, before it stored anything: `status` and why.
pub fn refusal(status: u16, reason: String) -> ImportResponse {
    refused(status, vec![(None, reason)])
}

/// A store whose imports are read from the uploaded file `file_key`: every value written
/// through it links to that file, its source.
pub struct FromFile<'a> {
    store: &'a dyn RecordStore,
    file_key: &'a str,
}

impl<'a> FromFile<'a> {
    /// `store`, for an import read from `file_key`.
    pub fn new(store: &'a dyn RecordStore, file_key: &'a str) -> Self {
        FromFile { store, file_key }
    }
}

#[async_trait]
impl RecordStore for FromFile<'_> {
    async fn upsert_user(&self, id: &str, display_name: Option<&str>, email: Option<&str>) -> BackendResult<()> {
        self.store.upsert_user(id, display_name, email).await
    }

    /// The import is recorded as read from this file (unless its source names one already):
    /// every value it stores links to the file.
    async fn begin_import(&self, subject: &str, source: &ImportSource) -> BackendResult<i64> {
        let file_key = source.file_key.as_deref().unwrap_or(self.file_key);
        self.store.begin_import(subject, &source.clone().with_file(Some(file_key))).await
    }

    async fn import_batch(
        &self,
        subject: &str,
        import_id: i64,
        items: &[&ImportItem],
    ) -> BackendResult<Result<Vec<ItemOutcome>, QuotaExceeded>> {
        self.store.import_batch(subject, import_id, items).await
    }

    async fn finish_import(&self, subject: &str, import_id: i64, counts: &ImportCounts) -> BackendResult<()> {
        self.store.finish_import(subject, import_id, counts).await
    }

    async fn imports(&self, subject: &str) -> BackendResult<Vec<ImportRecord>> {
        self.store.imports(subject).await
    }

    async fn delete_import(&self, subject: &str, import_id: i64) -> BackendResult<Option<DeletedImport>> {
        self.store.delete_import(subject, import_id).await
    }

    async fn add_observations(&self, subject: &str, resources: &[Value]) -> BackendResult<Vec<i64>> {
        self.store.add_observations(subject, resources).await
    }
}

#[cfg(test)]
#[path = "formats_tests.rs"]
mod tests;
