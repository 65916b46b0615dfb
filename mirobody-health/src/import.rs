//! Importing a person's health data: FHIR R4 (a Bundle of any importable type, or one
//! resource) and a wearable's CSV export, into the store the health queries read.
//!
//! Everything is stored as the authenticated person's, whatever a resource's `subject` says.
//! A `transaction` is all or nothing; a `batch` (and a `collection` or `searchset`) keeps its
//! valid entries and reports each invalid one by index. A resource imported twice (the same
//! source id) is stored once; a newer version of it replaces the stored one, and one marked
//! `entered-in-error` or named by a `DELETE` entry takes it away. Each request is one import of
//! the store's ([`RecordStore::begin_import`]), whose id the summary carries.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use serde::Serialize;
use serde_json::Value;

use crate::fhir::{self, EntryInput, EntryOutcome, ImportRequest, RequestKind};
use crate::store::{ImportCounts, ImportKind, ImportSource, ItemOutcome, RecordStore};

/// What an import answers: the HTTP status and the FHIR body (an `OperationOutcome`, or a
/// `batch-response` / `transaction-response` Bundle), with the counts for a command line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ImportResponse {
    /// The HTTP status.
    pub status: u16,
    /// The FHIR response body.
    pub body: Value,
    /// What happened, counted.
    pub summary: ImportSummary,
    /// The documents of the reports this import stored (`presentedForm` sent inline), for the
    /// caller to store as the person's files: a report already stored brings none again.
    #[serde(skip)]
    pub report_forms: Vec<fhir::ReportForm>,
}

/// What an import did, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImportSummary {
    /// The store's id of this import, which every value it stored names; `None` when nothing
    /// was imported (a request refused whole).
    pub import_id: Option<i64>,
    /// Resources stored.
    pub created: usize,
    /// Resources that replaced an earlier version stored under the same source id.
    pub updated: usize,
    /// Stored values taken away (`entered-in-error`, a `DELETE` entry).
    pub removed: usize,
    /// Resources already stored before (the same source id, the same or an older version),
    /// left as they were; removals of values not stored.
    pub unchanged: usize,
    /// Resources of a type that is not imported (Patient, Encounter, ...).
    pub skipped: usize,
    /// Entries refused, each as `entry N: reason` (0-based N; for CSV, `line N: reason`).
    pub invalid: Vec<String>,
    /// What became of each type's entries: for FHIR and CSV by resource type (at most
    /// [`MAX_TYPE_NAMES`] names, the rest as `other`), for an Apple Health export by HealthKit
    /// type (`Workout` and other elements by name).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_type: BTreeMap<String, TypeCounts>,
}

/// What an Apple Health import did with the samples of one type. Every sample read is in
/// exactly one of the counts after `records`, or, folded into a daily total or a night, in
/// `folded` (and the stored totals in `created` / `unchanged`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TypeCounts {
    /// Elements of this type read.
    pub records: u64,
    /// Values stored (samples, or daily totals and nights for the types folded into them).
    pub created: u64,
    /// Values stored by an earlier import (the same source id), left as they were.
    pub unchanged: u64,
    /// Values stored by an earlier import that this one's newer version replaced.
    pub updated: u64,
    /// Values stored by an earlier import that this one removed (`entered-in-error`, `DELETE`).
    pub removed: u64,
    /// Samples added into a daily total or a night rather than stored one by one.
    pub folded: u64,
    /// Of those, samples of another source on a day whose total is one source's (a phone's
    /// and a watch's steps for the same minutes are not added together).
    pub other_source: u64,
    /// Copies of a `Correlation`'s member at the top level (blood pressure), stored once.
    pub duplicates: u64,
    /// Daily totals and nights not stored because they had not ended when the export was
    /// made (the next export brings them whole).
    pub not_ended: u64,
    /// Elements of a type that is not imported.
    pub skipped: u64,
    /// Samples that could not be read (a value that is not a number, a date that is not
    /// Apple's), each also in [`ImportSummary::invalid`] up to a bound.
    pub invalid: u64,
}

/// A JSON import body whose shape has been checked ([`CheckedJson::check`]), with what parsing
/// it will cost.
#[derive(Clone, Copy, Debug)]
pub struct CheckedJson<'a> {
    bytes: &'a [u8],
    values: usize,
}

/// About what one JSON value takes once parsed into a tree, in bytes (a `serde_json::Value`, its
/// share of its map or array, and its key).
const PARSED_BYTES_PER_VALUE: usize = 48;

impl<'a> CheckedJson<'a> {
    /// Checks the shape of `bytes` in one pass that builds nothing: more than 10,000 entries,
    /// an array of more than 1,000 items inside a resource, a string over 4 MiB, more than
    /// 2,000,000 values or nesting past 64 levels is refused with 413, anything not JSON with
    /// 400, as the import's answer.
    // The refusal is the answer itself, made once per request: boxing it would buy nothing.
    #[allow(clippy::result_large_err)]
    pub fn check(bytes: &'a [u8]) -> Result<Self, ImportResponse> {
        fhir::shape::check(bytes)
            .map(|values| CheckedJson { bytes, values })
            .map_err(|(status, reason)| refused(status, vec![(None, reason)]))
    }

    /// The memory parsing and importing it takes, about: its bytes and its tree.
    pub fn parse_cost(&self) -> usize {
        self.bytes.len().saturating_add(self.values.saturating_mul(PARSED_BYTES_PER_VALUE))
    }
}

/// Imports the checked JSON `body` of `POST /fhir` (a Bundle or one resource) or, with
/// `observation_only`, of `POST /fhir/Observation`, as `subject`'s.
pub async fn import_fhir_checked(
    store: &dyn RecordStore,
    subject: &str,
    body: CheckedJson<'_>,
    observation_only: bool,
) -> ImportResponse {
    let body: Value = match serde_json::from_slice(body.bytes) {
        Ok(body) => body,
        Err(e) => return refused(400, vec![(None, format!("The body is not JSON: {e}."))]),
    };
    if observation_only {
        import_fhir_observation(store, subject, &body).await
    } else {
        import_fhir(store, subject, &body).await
    }
}

/// [`CheckedJson::check`], then [`import_fhir_checked`].
pub async fn import_fhir_json(
    store: &dyn RecordStore,
    subject: &str,
    body: &[u8],
    observation_only: bool,
) -> ImportResponse {
    match CheckedJson::check(body) {
        Ok(checked) => import_fhir_checked(store, subject, checked, observation_only).await,
        Err(refusal) => refusal,
    }
}

/// Imports a FHIR Bundle or resource as `subject`'s (`POST /fhir`).
pub async fn import_fhir(store: &dyn RecordStore, subject: &str, body: &Value) -> ImportResponse {
    match fhir::parse_import(body) {
        Ok(request) => run(store, subject, request, ImportKind::Fhir).await,
        Err(reason) => refused(400, vec![(None, reason)]),
    }
}

/// Imports one FHIR Observation as `subject`'s (`POST /fhir/Observation`).
pub async fn import_fhir_observation(store: &dyn RecordStore, subject: &str, body: &Value) -> ImportResponse {
    match fhir::parse_observation(body) {
        Ok(request) => run(store, subject, request, ImportKind::Fhir).await,
        Err(reason) => refused(400, vec![(None, reason)]),
    }
}

/// Imports a wearable's CSV export (columns time, indicator, value and optionally unit, in
/// any order) as `subject`'s: every valid row is kept, each bad one reported by line.
pub async fn import_csv(store: &dyn RecordStore, subject: &str, text: &str) -> ImportResponse {
    match fhir::parse_csv(text) {
        Ok(request) => run(store, subject, request, ImportKind::Csv).await,
        Err(reason) => refused(400, vec![(None, reason)]),
    }
}

pub(crate) fn refused(status: u16, issues: Vec<(Option<usize>, String)>) -> ImportResponse {
    let invalid = issues
        .iter()
        .map(|(index, reason)| match index {
            Some(i) => format!("entry {i}: {reason}"),
            None => reason.clone(),
        })
        .collect();
    let (status, body) = fhir::operation_outcome(status, &issues);
    let summary = ImportSummary { invalid, ..ImportSummary::default() };
    ImportResponse { status, body, summary, report_forms: Vec::new() }
}

/// One import at a time per person in this process: a failed import deletes what it wrote,
/// which another import of the same resources running beside it would have counted as already
/// there. Entries live while an import holds them.
static IMPORTING: LazyLock<Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>> = LazyLock::new(Mutex::default);

/// The lock of `subject`'s imports in this process.
pub(crate) fn import_lock(subject: &str) -> Arc<tokio::sync::Mutex<()>> {
    let mut locks = IMPORTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(lock) = locks.get(subject).and_then(Weak::upgrade) {
        return lock;
    }
    locks.retain(|_, lock| lock.strong_count() > 0);
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    locks.insert(subject.to_owned(), Arc::downgrade(&lock));
    lock
}

async fn run(store: &dyn RecordStore, subject: &str, request: ImportRequest, kind: ImportKind) -> ImportResponse {
    let lock = import_lock(subject);
    let _one_at_a_time = lock.lock().await;
    let invalid: Vec<(Option<usize>, String)> = request
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, entry)| match entry {
            EntryInput::Invalid(reason) => Some((Some(i), reason.clone())),
            _ => None,
        })
        .collect();
    if request.kind == RequestKind::Transaction && !invalid.is_empty() {
        // All or nothing: one bad entry and none is stored.
        return refused(400, invalid);
    }
    let items: Vec<&fhir::ImportItem> = request
        .entries
        .iter()
        .filter_map(|entry| match entry {
            EntryInput::Item(item) => Some(item),
            _ => None,
        })
        .collect();
    let import_id = match store.begin_import(subject, &ImportSource::new(kind)).await {
        Ok(id) => id,
        Err(e) => return refused(503, vec![(None, e.to_string())]),
    };
    let stored = match store.import_batch(subject, import_id, &items).await {
        Ok(Ok(stored)) => Ok(stored),
        Ok(Err(quota)) => Err((413, quota.to_string())),
        Err(e) => Err((503, e.to_string())),
    };
    let stored = match stored {
        Ok(stored) => stored,
        Err((status, reason)) => {
            // Nothing of it was stored: its record goes too (best effort; the refusal stands).
            if let Err(e) = store.delete_import(subject, import_id).await {
                tracing::warn!(error = %e, "an empty import's record could not be deleted");
            }
            return refused(status, vec![(None, reason)]);
        }
    };
    let mut stored = stored.into_iter();
    let mut summary = ImportSummary { import_id: Some(import_id), ..ImportSummary::default() };
    let mut counts = ImportCounts::default();
    let mut report_forms = Vec::new();
    let outcomes: Vec<EntryOutcome> = request
        .entries
        .into_iter()
        .enumerate()
        .map(|(i, entry)| match entry {
            EntryInput::Item(item) => {
                let outcome = stored.next().unwrap_or(ItemOutcome::Unchanged);
                counts.add(outcome);
                let by_type = summary.by_type.entry(type_name(&item).to_owned()).or_default();
                by_type.records += 1;
                match outcome {
                    ItemOutcome::Created | ItemOutcome::Updated => {
                        if let fhir::ImportItem::Record(record) = &item {
                            report_forms.extend(fhir::report_forms(record));
                        }
                        if outcome == ItemOutcome::Created {
                            by_type.created += 1;
                            summary.created += 1;
                            EntryOutcome::Created
                        } else {
                            by_type.updated += 1;
                            summary.updated += 1;
                            EntryOutcome::Updated
                        }
                    }
                    ItemOutcome::Removed => {
                        by_type.removed += 1;
                        summary.removed += 1;
                        EntryOutcome::Removed
                    }
                    ItemOutcome::Unchanged => {
                        by_type.unchanged += 1;
                        summary.unchanged += 1;
                        EntryOutcome::Unchanged
                    }
                }
            }
            EntryInput::Skipped { resource_type } => {
                summary.skipped += 1;
                counts.skipped += 1;
                count_skipped(&mut summary.by_type, &resource_type);
                EntryOutcome::Skipped { resource_type }
            }
            EntryInput::Invalid(reason) => {
                summary.invalid.push(format!("entry {i}: {reason}"));
                counts.invalid += 1;
                EntryOutcome::Invalid(reason)
            }
        })
        .collect();
    if let Err(e) = store.finish_import(subject, import_id, &counts).await {
        // The values are stored; only the import's counts are missing.
        tracing::warn!(error = %e, "an import's counts could not be recorded");
    }
    let (status, body) = fhir::response(request.kind, &outcomes);
    ImportResponse { status, body, summary, report_forms }
}

/// The most resource types a FHIR or CSV import counts apart in [`ImportSummary::by_type`].
pub const MAX_TYPE_NAMES: usize = 64;

/// The resource type an item is counted under.
fn type_name(item: &fhir::ImportItem) -> &'static str {
    match item {
        fhir::ImportItem::Observation(_) => "Observation",
        fhir::ImportItem::Record(record) => record.kind.resource_type(),
        fhir::ImportItem::Remove(removal) => match removal.target {
            fhir::Target::Observation => "Observation",
            fhir::Target::Record(kind) => kind.resource_type(),
        },
    }
}

/// Counts a skipped entry under its type (a name the file chose: bounded).
fn count_skipped(by_type: &mut BTreeMap<String, TypeCounts>, resource_type: &str) {
    let capped = crate::text::cap_chars(resource_type, 64).0;
    let name = if by_type.contains_key(capped) || by_type.len() < MAX_TYPE_NAMES { capped } else { "other" };
    let counts = by_type.entry(name.to_owned()).or_default();
    counts.records += 1;
    counts.skipped += 1;
}
