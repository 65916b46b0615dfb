//! Uploads that are health data. A file [`detect`](mirobody_health::formats::detect) tells is
//! FHIR (a Bundle or one resource, JSON), FHIR Bulk Data NDJSON, a CSV of measurements or an
//! Apple Health export is stored as any upload is (the source, under a key made from its
//! content, so the same file uploaded again is stored once), then imported as the person's data,
//! each value linked to the file; [`ImportReport`] says what was imported, what was skipped and
//! why, and what was refused. Any other file is a document, stored and read as before.
//!
//! Bounds: the file is within the upload limit (`uploads.max_file_bytes`, which an Apple
//! export's zip must fit too); FHIR JSON within the importer's shape bounds and 10,000 entries,
//! NDJSON and CSV within 10,000 resources or rows; an Apple export's XML is streamed out of the
//! zip (never whole in memory) within 200,000,000 elements; and every import within
//! [`Uploader::with_import_time`] (default ten minutes), past which reading stops and the
//! answer says so. The import runs on a blocking thread to its end, whoever hangs up.

use std::collections::BTreeMap;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mirobody_health::formats::{self, DataFormat, FromFile};
use mirobody_health::import::{self, ImportResponse};
use mirobody_health::{HealthData, RecordStore};
use serde::Serialize;

use crate::uploads::Uploader;

/// The most reasons [`ImportReport`] lists, skipped and refused each; the rest are counted.
pub const MAX_LISTED: usize = 20;
/// How long an import may read, by default.
pub const DEFAULT_IMPORT_TIME: Duration = Duration::from_secs(600);

/// What importing an uploaded file did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImportReport {
    /// What the file was: `fhir-bundle`, `fhir-resource`, `fhir-ndjson`, `csv`,
    /// `apple-health-zip` or `apple-health-xml`.
    pub format: &'static str,
    /// Whether the whole file was read and what it holds stored as counted (false: see
    /// `error`).
    pub complete: bool,
    /// Values and records stored.
    pub imported: u64,
    /// Those already stored by an earlier import (the same file, or the same data in
    /// another), left as they were.
    pub already_there: u64,
    /// The counts by resource type (FHIR, CSV) or HealthKit type (Apple).
    pub by_type: BTreeMap<String, TypeReport>,
    /// What was not imported though it was read, by reason, at most [`MAX_LISTED`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// Entries, rows or samples refused, each with why, at most [`MAX_LISTED`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// How many were refused, listed or not.
    pub refused_count: u64,
    /// Why the file, or what followed a point in it, was not imported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The documents of the reports imported (`presentedForm`), stored as the person's files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub report_files: Vec<String>,
    /// All of it in a sentence or two, for a person.
    pub message: String,
}

/// What became of one type's entries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TypeReport {
    /// Stored.
    pub imported: u64,
    /// Stored before, left as they were.
    pub already_there: u64,
    /// Not imported (a type that is not, or folded into a daily total, or a copy).
    pub skipped: u64,
    /// Refused as unreadable.
    pub refused: u64,
}

/// Entries skipped for one reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Skipped {
    /// Why.
    pub reason: String,
    /// How many.
    pub count: u64,
}

/// The memory importing `bytes` holds beyond the bytes themselves, about: for health data a
/// copy of the file and what its parse builds (a JSON tree, rows as resources, an Apple
/// import's batch and buckets); nothing for a document.
pub fn import_memory(bytes: &[u8]) -> usize {
    /// An Apple import's batch of values and its day and night buckets, about.
    const APPLE_WORKING_SET: usize = 32 << 20;
    /// A CSV row or NDJSON line as the resource it becomes, about.
    const PER_ROW: usize = 2_048;
    let rows = || bytes.iter().filter(|b| **b == b'\n').count().min(mirobody_health::fhir::MAX_ENTRIES);
    let parsed = match formats::detect_bytes(bytes) {
        DataFormat::Other => return 0,
        DataFormat::FhirBundle | DataFormat::FhirResource => {
            import::CheckedJson::check(bytes).map_or(0, |checked| checked.parse_cost())
        }
        DataFormat::FhirNdjson => bytes.len().saturating_mul(4).saturating_add(rows().saturating_mul(PER_ROW)),
        DataFormat::MeasurementsCsv => rows().saturating_mul(PER_ROW),
        _ => APPLE_WORKING_SET,
    };
    bytes.len().saturating_add(parsed)
}

impl Uploader {
    /// Stores `bytes` as `owner`'s file, as [`store`](Self::store) does, and when its content is
    /// health data imports it as theirs, linked to the file: the answer's
    /// [`import`](crate::uploads::Uploaded::import) says what happened. A file that is not is a
    /// document, stored and read exactly as `store` does.
    pub async fn store_and_import(
        &self,
        owner: &str,
        filename: &str,
        declared: Option<&str>,
        bytes: Vec<u8>,
    ) -> Result<crate::uploads::Uploaded, crate::uploads::UploadError> {
        let format = formats::detect_bytes(&bytes);
        if !format.is_data() || bytes.len() as u64 > self.limits().max_file_bytes {
            return self.store(owner, filename, declared, bytes).await;
        }
        let mut uploaded = self.store_data(owner, filename, declared, bytes.clone(), format).await?;
        let response = self.import(owner, &uploaded.file_key, format, bytes).await;
        let mut report = ImportReport::from_response(format, &response);
        for stored in self.store_report_forms(owner, &response.report_forms).await {
            match stored {
                Ok(file) => report.report_files.push(file.file_key),
                Err(why) => push_bounded(&mut report.refused, why),
            }
        }
        report.message = report.sentence();
        tracing::info!(
            owner,
            file_key = uploaded.file_key,
            format = format.name(),
            imported = report.imported,
            already_there = report.already_there,
            refused = report.refused_count,
            complete = report.complete,
            "upload imported"
        );
        uploaded.import = Some(report);
        Ok(uploaded)
    }

    /// Runs the import of `bytes` as `owner`'s from `file_key` on a blocking thread, to its end.
    async fn import(&self, owner: &str, file_key: &str, format: DataFormat, bytes: Vec<u8>) -> ImportResponse {
        let store: Arc<dyn HealthData> = self.backends().health();
        let (owner, file_key) = (owner.to_owned(), file_key.to_owned());
        let deadline = Instant::now() + self.import_time();
        let runtime = tokio::runtime::Handle::current();
        let run = tokio::task::spawn_blocking(move || {
            runtime.block_on(async move {
                let from_file = FromFile::new(store.as_ref() as &dyn RecordStore, &file_key);
                run_import(&from_file, &owner, format, bytes, deadline).await
            })
        });
        run.await.unwrap_or_else(|_| failed("The import failed; upload the file again."))
    }
}

async fn run_import(
    store: &FromFile<'_>,
    owner: &str,
    format: DataFormat,
    bytes: Vec<u8>,
    deadline: Instant,
) -> ImportResponse {
    if Instant::now() >= deadline {
        return failed(&time_up());
    }
    match format {
        DataFormat::FhirBundle | DataFormat::FhirResource => {
            import::import_fhir_json(store, owner, &bytes, false).await
        }
        DataFormat::FhirNdjson => formats::import_ndjson(store, owner, &bytes).await,
        DataFormat::MeasurementsCsv => match std::str::from_utf8(&bytes) {
            Ok(text) => import::import_csv(store, owner, text).await,
            Err(e) => failed(&format!("The CSV is not UTF-8 text: {e}.")),
        },
        DataFormat::AppleZip => {
            let file = Deadline { inner: io::Cursor::new(bytes), deadline };
            mirobody_health::apple::import_apple_health_zip(store, owner, file).await
        }
        DataFormat::AppleXml => {
            let file = Deadline { inner: io::Cursor::new(bytes), deadline };
            mirobody_health::apple::import_apple_health(store, owner, BufReader::with_capacity(1 << 16, file)).await
        }
        _ => failed("The file is not health data this server imports."),
    }
}

fn time_up() -> String {
    "The import took longer than this server allows and stopped".to_owned()
}

/// An answer for an import that did not run.
fn failed(reason: &str) -> ImportResponse {
    formats::refusal(400, reason.to_owned())
}

/// A reader that fails once its deadline has passed: what bounds the time of an Apple import,
/// whose reading stops there with an error saying where (the samples stored before are kept).
struct Deadline<R> {
    inner: R,
    deadline: Instant,
}

impl<R: Read> Read for Deadline<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if Instant::now() >= self.deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, time_up()));
        }
        self.inner.read(buf)
    }
}

impl<R: Seek> Seek for Deadline<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl ImportReport {
    /// The report of `response`, an import of a file of `format`.
    fn from_response(format: DataFormat, response: &ImportResponse) -> Self {
        let summary = &response.summary;
        // A lone resource of a type not imported answers 422 and refuses nothing.
        let whole_refused = response.status >= 400 && summary.skipped == 0;
        let stopped = response.body.get("error").and_then(|e| e.as_str()).map(str::to_owned);
        let mut report = ImportReport {
            format: format.name(),
            complete: response.status < 400 || !whole_refused,
            imported: summary.created as u64,
            already_there: summary.unchanged as u64,
            ..ImportReport::default()
        };
        let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
        for (name, counts) in &summary.by_type {
            let skipped = counts.skipped + counts.folded + counts.duplicates + counts.not_ended;
            let entry = TypeReport {
                imported: counts.created,
                already_there: counts.unchanged,
                skipped,
                refused: counts.invalid,
            };
            for (n, why) in [
                (counts.skipped, format!("{name}: a type that is not imported")),
                (counts.folded, format!("{name}: added into daily totals or nights")),
                (counts.duplicates, format!("{name}: copies of a blood pressure reading, stored once")),
                (counts.not_ended, format!("{name}: days or nights not over when the export was made")),
            ] {
                if n > 0 {
                    *reasons.entry(why).or_default() += n;
                }
            }
            report.by_type.insert(name.clone(), entry);
        }
        let mut reasons: Vec<Skipped> = reasons.into_iter().map(|(reason, count)| Skipped { reason, count }).collect();
        reasons.sort_by_key(|s| std::cmp::Reverse(s.count));
        reasons.truncate(MAX_LISTED);
        report.skipped = reasons;
        let mut listed: Vec<&String> = summary.invalid.iter().collect();
        if let Some(stop) = stopped {
            // The importer's first reason is the stop, with what was kept before it.
            report.complete = false;
            let first = listed.first().filter(|reason| reason.starts_with(stop.as_str()));
            report.error = Some(first.map_or(stop, |reason| (*reason).clone()));
            listed.retain(|reason| report.error.as_ref().is_none_or(|error| *reason != error));
        } else if whole_refused {
            report.complete = false;
            report.error = match listed[..] {
                [one] => {
                    let one = one.clone();
                    listed.clear();
                    Some(one)
                }
                _ => Some(format!(
                    "Nothing was imported: {} entries are invalid, and a transaction is all or nothing.",
                    listed.len()
                )),
            };
        }
        let counted: u64 = summary.by_type.values().map(|c| c.invalid).sum();
        report.refused_count = counted.max(listed.len() as u64);
        for reason in listed {
            // A CSV's rows are named by line: the entry number says nothing more.
            let by_line = reason
                .split_once(": ")
                .filter(|(entry, rest)| entry.starts_with("entry ") && rest.starts_with("line "));
            push_bounded(&mut report.refused, by_line.map_or(reason.as_str(), |(_, rest)| rest).to_owned());
        }
        report
    }

    /// The report in words.
    fn sentence(&self) -> String {
        let mut out = match self.imported {
            0 => "Nothing new was imported".to_owned(),
            n => {
                let types: Vec<String> = self
                    .by_type
                    .iter()
                    .filter(|(_, c)| c.imported > 0)
                    .take(8)
                    .map(|(name, c)| format!("{name} {}", c.imported))
                    .collect();
                format!("Imported {n} ({})", types.join(", "))
            }
        };
        if self.already_there > 0 {
            out.push_str(&format!("; {} were already there", self.already_there));
        }
        let skipped: u64 = self.skipped.iter().map(|s| s.count).sum();
        if skipped > 0 {
            out.push_str(&format!("; {skipped} skipped ({})", self.skipped[0].reason));
        }
        if self.refused_count > 0 {
            out.push_str(&format!("; {} refused ({})", self.refused_count, self.refused.first().map_or("", |r| r)));
        }
        out.push('.');
        if let Some(error) = &self.error {
            out.push_str(&format!(" The file could not be imported whole: {error}"));
        }
        if !self.report_files.is_empty() {
            out.push_str(&format!(" {} report documents were stored as files.", self.report_files.len()));
        }
        out
    }
}

fn push_bounded(list: &mut Vec<String>, reason: String) {
    if list.len() < MAX_LISTED {
        list.push(mirobody_health::text::cap_chars(&reason, 500).0.to_owned());
    }
}
