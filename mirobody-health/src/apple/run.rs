//! One import of an export: elements read, sorted into values to store now and buckets to
//! store at the end, written in batches through [`RecordStore::import_batch`], all one import
//! of the store's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::fold::{Days, Nights};
use super::kinds::{self, Fold, HEALTHKIT, KINDS, LOINC, SLEEP, SleepState};
use super::read::{Element, ExportReader, Record, Workout};
use crate::fhir::{HealthPoint, ImportItem, NewObservation};
use crate::import::{ImportResponse, ImportSummary, TypeCounts, import_lock};
use crate::store::{ImportCounts, ImportKind, ImportSource, ItemOutcome, RecordStore};

/// Values written in one call of the store (which splits them into short transactions).
const BATCH: usize = 2_000;
/// The most elements one export may hold.
pub(super) const MAX_ELEMENTS: u64 = 200_000_000;
/// The most reasons listed in the summary; the rest are counted.
const MAX_REASONS: usize = 100;
/// The most distinct type names counted apart; the rest are counted as `other`.
const MAX_TYPE_NAMES: usize = 512;
/// The most correlation members remembered to drop their top-level copies before the store
/// sees them; past it the store's source ids still keep each once.
const MAX_REMEMBERED: usize = 1_000_000;

/// Why an import stopped before the end of the export.
enum Stop {
    /// The XML was not a whole, well-formed export (400).
    Read(String),
    /// Past a bound (413).
    Bound(String),
    /// The store refused or failed (413 for the quota, 503 otherwise).
    Store(u16, String),
}

/// Imports the `export.xml` read from `xml` as `subject`'s, writing in batches: see the
/// [module](super). The answer's summary counts what became of each type
/// ([`ImportSummary::by_type`]); its body is the same as JSON, with `complete` and, when the
/// export could not be read to its end, `error`.
///
/// Reading is blocking I/O on the caller's task, between the store's writes: call it where
/// that is fine (a command line, a blocking thread).
pub async fn import_apple_health<R: BufRead>(store: &dyn RecordStore, subject: &str, xml: R) -> ImportResponse {
    let lock = import_lock(subject);
    let _one_at_a_time = lock.lock().await;
    let mut run = Run::new(store, subject);
    let mut reader = ExportReader::new(xml);
    let mut stop = loop {
        match reader.next_element() {
            Ok(Some(element)) => {
                if let Err(stop) = run.element(element, reader.offset()).await {
                    break Some(stop);
                }
            }
            Ok(None) => break None,
            Err(e) => {
                let at = format!("at byte {} (after {} elements)", e.offset, run.elements);
                break Some(Stop::Read(format!("{} {at}", capitalised(&e.message))));
            }
        }
    };
    // What was read before an error is whole samples: kept, and said so.
    if !matches!(stop, Some(Stop::Store(..)))
        && let Err(flush_stop) = run.flush().await
    {
        stop = Some(flush_stop);
    }
    if stop.is_none()
        && let Err(end_stop) = run.finish(reader.export_ms).await
    {
        stop = Some(end_stop);
    }
    run.close().await;
    run.response(stop)
}

/// A refusal before anything was read.
pub(super) fn refused(status: u16, reason: String) -> ImportResponse {
    let body = json!({"format": "apple-health", "complete": false, "error": reason});
    ImportResponse {
        status,
        body,
        summary: ImportSummary { invalid: vec![reason], ..ImportSummary::default() },
        report_forms: Vec::new(),
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// The state of one import.
struct Run<'a> {
    store: &'a dyn RecordStore,
    subject: &'a str,
    /// Values waiting to be written, each with the number of its type in `types`.
    pending: Vec<(usize, ImportItem)>,
    types: Vec<(String, TypeCounts)>,
    type_index: HashMap<String, usize>,
    days: Days,
    nights: Nights,
    /// Source ids of correlation members and blood-pressure samples stored by this import.
    remembered: HashSet<[u8; 16]>,
    reasons: Vec<String>,
    elements: u64,
    /// The store's import, begun at the first write.
    import_id: Option<i64>,
}

impl<'a> Run<'a> {
    fn new(store: &'a dyn RecordStore, subject: &'a str) -> Self {
        Run {
            store,
            subject,
            pending: Vec::with_capacity(BATCH),
            types: Vec::new(),
            type_index: HashMap::new(),
            days: Days::default(),
            nights: Nights::default(),
            remembered: HashSet::new(),
            reasons: Vec::new(),
            elements: 0,
            import_id: None,
        }
    }

    /// The number of the counts of type `name`.
    fn type_of(&mut self, name: &str) -> usize {
        if let Some(&n) = self.type_index.get(name) {
            return n;
        }
        let name = if self.types.len() >= MAX_TYPE_NAMES { "other" } else { name };
        if let Some(&n) = self.type_index.get(name) {
            return n;
        }
        self.types.push((name.to_owned(), TypeCounts::default()));
        self.type_index.insert(name.to_owned(), self.types.len() - 1);
        self.types.len() - 1
    }

    fn counts(&mut self, n: usize) -> &mut TypeCounts {
        &mut self.types[n].1
    }

    /// A sample that cannot be read: counted, and its reason listed up to a bound.
    fn invalid(&mut self, n: usize, offset: u64, reason: String) {
        self.counts(n).invalid += 1;
        if self.reasons.len() < MAX_REASONS {
            let name = self.types[n].0.clone();
            self.reasons.push(format!("{name} at byte {offset}: {reason}"));
        }
    }

    async fn element(&mut self, element: Element, offset: u64) -> Result<(), Stop> {
        self.elements += 1;
        if self.elements > MAX_ELEMENTS {
            return Err(Stop::Bound(format!("The export has more than {MAX_ELEMENTS} elements.")));
        }
        match element {
            Element::Record(record) => self.record(record, offset)?,
            Element::Workout(workout) => self.workout(workout, offset),
            Element::Other(name) => {
                let n = self.type_of(&name);
                self.counts(n).records += 1;
                self.counts(n).skipped += 1;
            }
        }
        if self.pending.len() >= BATCH {
            self.flush().await?;
        }
        Ok(())
    }

    fn record(&mut self, record: Record, offset: u64) -> Result<(), Stop> {
        let n = self.type_of(&record.hk);
        self.counts(n).records += 1;
        let kind = kinds::kind_of(&record.hk);
        if kind.is_none() && record.hk != SLEEP {
            self.counts(n).skipped += 1;
            return Ok(());
        }
        let (Some((start_ms, offset_secs)), Some((end_ms, _))) =
            (kinds::parse_date(&record.start), kinds::parse_date(&record.end))
        else {
            let reason = format!("the dates {:?} to {:?} are not Apple's", cap(&record.start), cap(&record.end));
            self.invalid(n, offset, reason);
            return Ok(());
        };
        let Some((kind_index, kind)) = kind else {
            // Sleep: asleep stages and in bed, by night; awake is neither.
            self.counts(n).folded += 1;
            if let Some(state) = kinds::sleep_state(&record.value) {
                self.nights.add(state, start_ms, end_ms, offset_secs).map_err(bound)?;
            }
            return Ok(());
        };
        let Some(value) = record.value.trim().parse::<f64>().ok().filter(|v| v.is_finite()) else {
            self.invalid(n, offset, format!("the value {:?} is not a number", cap(&record.value)));
            return Ok(());
        };
        let (unit, value) = kinds::stored_unit(&record.unit, value);
        if kind.fold == Fold::Daily {
            self.counts(n).folded += 1;
            let day = kinds::local_day(start_ms, offset_secs);
            return self.days.add(kind_index, day, offset_secs, unit, &record.source, value).map_err(bound);
        }
        let hash = sample_hash(&[&record.hk, &record.source, &record.start, &record.end, &record.value, &record.unit]);
        let paired = record.in_correlation || record.hk.starts_with("HKQuantityTypeIdentifierBloodPressure");
        if paired && !self.remember(hash) {
            self.counts(n).duplicates += 1;
            return Ok(());
        }
        let (code, display) = kinds::code_for_unit(kind, unit);
        let system = if code.starts_with("HK") { HEALTHKIT } else { LOINC };
        let effective = effective(&record.start, &record.end);
        let resource = json!({
            "resourceType": "Observation",
            "status": "final",
            "code": {"coding": [{"system": system, "code": code, "display": display}]},
            (effective.0): effective.1,
            "valueQuantity": {"value": value, "unit": unit},
            "device": {"display": record.source},
        });
        let point = HealthPoint {
            code: code.to_owned(),
            display: display.to_owned(),
            time_ms: start_ms,
            value: Some(value),
            value_text: None,
            unit: Some(unit.to_owned()),
            range: None,
            interpretation: None,
        };
        let source_id = format!("apple#{}", hex::encode(hash));
        let item =
            NewObservation { source_id, code: code.to_owned(), time_ms: start_ms, resource, points: vec![point] };
        self.pending.push((n, ImportItem::Observation(item)));
        Ok(())
    }

    /// Whether `hash` is new to this import (remembering it).
    fn remember(&mut self, hash: [u8; 16]) -> bool {
        if self.remembered.contains(&hash) {
            return false;
        }
        if self.remembered.len() < MAX_REMEMBERED {
            self.remembered.insert(hash);
        }
        true
    }

    fn workout(&mut self, workout: Workout, offset: u64) {
        let n = self.type_of("Workout");
        self.counts(n).records += 1;
        let Some((start_ms, _)) = kinds::parse_date(&workout.start) else {
            self.invalid(n, offset, format!("the start {:?} is not Apple's date", cap(&workout.start)));
            return;
        };
        let activity = if workout.activity.is_empty() { "HKWorkoutActivityTypeOther" } else { &workout.activity };
        let name = activity.strip_prefix("HKWorkoutActivityType").unwrap_or(activity);
        let number = |pair: &Option<(String, String)>| {
            pair.as_ref().and_then(|(v, u)| Some((v.trim().parse::<f64>().ok().filter(|v| v.is_finite())?, u.clone())))
        };
        let duration = match &workout.duration {
            Some(_) => match number(&workout.duration) {
                Some(found) => Some(found),
                None => return self.invalid(n, offset, "the duration is not a number".to_owned()),
            },
            None => kinds::parse_date(&workout.end).map(|(end, _)| ((end - start_ms) as f64 / 60_000.0, "min".into())),
        };
        let mut points = Vec::new();
        let mut components = Vec::new();
        let parts = [
            (activity.to_owned(), format!("{name} workout"), duration.clone()),
            (format!("{activity}/distance"), format!("{name} workout distance"), number(&workout.distance)),
            (format!("{activity}/energy"), format!("{name} workout energy"), number(&workout.energy)),
        ];
        for (i, (code, display, value)) in parts.into_iter().enumerate() {
            let Some((value, unit)) = value else { continue };
            let quantity = json!({"value": value, "unit": unit});
            if i > 0 {
                let coding = json!({"coding": [{"system": HEALTHKIT, "code": code, "display": display}]});
                components.push(json!({"code": coding, "valueQuantity": quantity}));
            }
            points.push(HealthPoint {
                code,
                display,
                time_ms: start_ms,
                value: Some(value),
                value_text: None,
                unit: Some(unit),
                range: None,
                interpretation: None,
            });
        }
        let effective = effective(&workout.start, &workout.end);
        let mut resource = json!({
            "resourceType": "Observation",
            "status": "final",
            "code": {"coding": [{"system": HEALTHKIT, "code": activity, "display": format!("{name} workout")}]},
            (effective.0): effective.1,
            "device": {"display": workout.source},
        });
        if let Some((value, unit)) = duration {
            resource["valueQuantity"] = json!({"value": value, "unit": unit});
        }
        if !components.is_empty() {
            resource["component"] = Value::Array(components);
        }
        let duration_text = workout.duration.as_ref().map(|(v, _)| v.as_str()).unwrap_or_default();
        let hash = sample_hash(&["Workout", activity, &workout.source, &workout.start, &workout.end, duration_text]);
        let source_id = format!("apple#{}", hex::encode(hash));
        let item = NewObservation { source_id, code: activity.to_owned(), time_ms: start_ms, resource, points };
        self.pending.push((n, ImportItem::Observation(item)));
    }

    /// Writes what is waiting.
    async fn flush(&mut self) -> Result<(), Stop> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.pending);
        let items: Vec<&ImportItem> = batch.iter().map(|(_, item)| item).collect();
        let import_id = match self.import_id {
            Some(id) => id,
            None => {
                let source = ImportSource::new(ImportKind::AppleHealth);
                let id = self
                    .store
                    .begin_import(self.subject, &source)
                    .await
                    .map_err(|e| Stop::Store(503, e.to_string()))?;
                *self.import_id.insert(id)
            }
        };
        let stored = match self.store.import_batch(self.subject, import_id, &items).await {
            Ok(Ok(stored)) => stored,
            Ok(Err(quota)) => return Err(Stop::Store(413, quota.to_string())),
            Err(e) => return Err(Stop::Store(503, e.to_string())),
        };
        for ((n, _), outcome) in batch.iter().zip(stored) {
            let counts = self.counts(*n);
            // An Apple sample has no versions: it is new or already there.
            if matches!(outcome, ItemOutcome::Created | ItemOutcome::Updated) {
                counts.created += 1;
            } else {
                counts.unchanged += 1;
            }
        }
        self.pending = batch;
        self.pending.clear();
        Ok(())
    }

    /// At the end of the export: the daily totals and the nights.
    async fn finish(&mut self, export_ms: Option<i64>) -> Result<(), Stop> {
        let mut days = std::mem::take(&mut self.days);
        for total in days.totals(export_ms) {
            let kind = &KINDS[total.kind];
            let n = self.type_of(kind.hk);
            self.counts(n).other_source += total.left_out;
            if !total.complete {
                self.counts(n).not_ended += 1;
                continue;
            }
            let date = kinds::date_text(total.day);
            let (unit, source) = (days.units.get(total.unit), days.sources.get(total.source));
            let (code, display) = kinds::code_for_unit(kind, unit);
            let source_id = format!("apple#day:{}:{date}:{unit}", kind.hk);
            let item = daily(code, display, total.day, total.value, unit, source_id, Some(source));
            self.pending.push((n, item));
            if self.pending.len() >= BATCH {
                self.flush().await?;
            }
        }
        drop(days);
        let n = self.type_of(SLEEP);
        for night in std::mem::take(&mut self.nights).totals(export_ms) {
            if !night.complete {
                self.counts(n).not_ended += 1;
                continue;
            }
            let date = kinds::date_text(night.day);
            let (code, display, name) = match night.state {
                SleepState::Asleep => ("93832-4", "Sleep duration", "asleep"),
                SleepState::InBed => ("HKCategoryValueSleepAnalysisInBed", "Time in bed", "in-bed"),
            };
            let hours = (night.ms as f64 / 3_600_000.0 * 1000.0).round() / 1000.0;
            let source_id = format!("apple#night:{name}:{date}");
            self.pending.push((n, daily(code, display, night.day, hours, "h", source_id, None)));
            if self.pending.len() >= BATCH {
                self.flush().await?;
            }
        }
        self.flush().await
    }

    /// Records what the import did, if it wrote anything.
    async fn close(&self) {
        let Some(import_id) = self.import_id else { return };
        let mut counts = ImportCounts::default();
        for (_, c) in &self.types {
            counts.stored += c.created;
            counts.unchanged += c.unchanged;
            counts.skipped += c.skipped + c.folded + c.other_source + c.duplicates + c.not_ended;
            counts.invalid += c.invalid;
        }
        if let Err(e) = self.store.finish_import(self.subject, import_id, &counts).await {
            // The values are stored; only the import's counts are missing.
            tracing::warn!(error = %e, "an import's counts could not be recorded");
        }
    }

    fn response(self, stop: Option<Stop>) -> ImportResponse {
        let mut summary = ImportSummary { import_id: self.import_id, ..ImportSummary::default() };
        let (status, error) = match stop {
            None => (200, None),
            Some(Stop::Read(reason)) => (400, Some(reason)),
            Some(Stop::Bound(reason)) => (413, Some(reason)),
            Some(Stop::Store(status, reason)) => (status, Some(reason)),
        };
        let by_type: BTreeMap<String, TypeCounts> = self.types.into_iter().collect();
        for counts in by_type.values() {
            summary.created += counts.created as usize;
            summary.unchanged += counts.unchanged as usize;
            summary.skipped += counts.skipped as usize;
        }
        let invalid_count: u64 = by_type.values().map(|c| c.invalid).sum();
        if let Some(error) = &error {
            summary.invalid.push(format!(
                "{error}. The {} values stored before it are kept (importing the whole export again adds the \
                 rest, nothing twice); the daily totals and nights were not stored.",
                summary.created
            ));
        }
        summary.invalid.extend(self.reasons);
        let listed = summary.invalid.len() as u64 - u64::from(error.is_some());
        if invalid_count > listed {
            summary.invalid.push(format!("and {} more samples that could not be read", invalid_count - listed));
        }
        summary.by_type = by_type;
        let body = json!({
            "format": "apple-health",
            "import_id": summary.import_id,
            "complete": error.is_none(),
            "error": error,
            "created": summary.created,
            "unchanged": summary.unchanged,
            "skipped": summary.skipped,
            "invalid": summary.invalid,
            "by_type": summary.by_type,
        });
        ImportResponse { status, body, summary, report_forms: Vec::new() }
    }
}

/// A daily total or a night: at the day's date (00:00 UTC, so the date reads the same
/// wherever it is shown), FHIR `effectiveDateTime` the date alone.
fn daily(
    code: &str,
    display: &str,
    day: i64,
    value: f64,
    unit: &str,
    source_id: String,
    source: Option<&str>,
) -> ImportItem {
    let system = if code.starts_with("HK") { HEALTHKIT } else { LOINC };
    let mut resource = json!({
        "resourceType": "Observation",
        "status": "final",
        "code": {"coding": [{"system": system, "code": code, "display": display}]},
        "effectiveDateTime": kinds::date_text(day),
        "valueQuantity": {"value": value, "unit": unit},
    });
    if let Some(source) = source {
        resource["device"] = json!({"display": source});
    }
    let time_ms = day * 86_400_000;
    let point = HealthPoint {
        code: code.to_owned(),
        display: display.to_owned(),
        time_ms,
        value: Some(value),
        value_text: None,
        unit: Some(unit.to_owned()),
        range: None,
        interpretation: None,
    };
    ImportItem::Observation(NewObservation { source_id, code: code.to_owned(), time_ms, resource, points: vec![point] })
}

/// The FHIR `effective[x]` of Apple's start and end: a dateTime when they are the same time,
/// else a period.
fn effective(start: &str, end: &str) -> (&'static str, Value) {
    if start == end || kinds::parse_date(end).is_none() {
        ("effectiveDateTime", json!(kinds::rfc3339_local(start)))
    } else {
        let period = json!({"start": kinds::rfc3339_local(start), "end": kinds::rfc3339_local(end)});
        ("effectivePeriod", period)
    }
}

/// The first 16 bytes of the SHA-256 of `parts`, each ended by a unit separator.
fn sample_hash(parts: &[&str]) -> [u8; 16] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0x1f]);
    }
    let digest = hasher.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

fn bound(reason: String) -> Stop {
    Stop::Bound(format!("The export is past a bound of this import: {reason}."))
}

fn cap(text: &str) -> &str {
    crate::text::cap_chars(text, 40).0
}
