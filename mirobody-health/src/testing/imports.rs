//! The `imports` family of the store contract suite.

use serde_json::{Value, json};

use crate::fhir::{self, EntryInput, ImportItem};
use crate::import::{import_csv, import_fhir};
use crate::prelude::*;
use crate::store::HealthData;
use crate::text::parse_time_ms;

use super::support::{batch, condition, observation, ok, unique_id};

const FAMILY: &str = "imports";
const GLUCOSE: &str = "2339-0";

/// Imports: what [`import_fhir`] and [`import_csv`] store through
/// [`RecordStore::import_items`](crate::RecordStore::import_items), each source id once per person,
/// read back through `observations`, `indicators`, `series`, `latest_values` and `health_records`,
/// a value read from an uploaded file naming it, with the reference range and interpretation its
/// source gave; and
/// [`RecordStore::add_observations`](crate::RecordStore::add_observations), all or nothing.
///
/// Panics, naming the family and the promise, at the first one the store breaks.
pub async fn imports(store: &dyn HealthData) {
    fhir_bundles_are_stored_once_per_person(store).await;
    csv_rows_are_stored_once(store).await;
    added_observations_are_stored_once_and_all_or_nothing(store).await;
    values_keep_the_file_they_were_read_from(store).await;
    values_keep_their_source_range_and_interpretation(store).await;
}

/// Glucose in two units, a condition, a medication with its dosage, an allergy, an
/// immunization, and a Patient to skip.
fn bundle() -> Value {
    batch(vec![
        observation("a", GLUCOSE, 5.4, "mmol/L", "2026-01-01T08:00:00Z"),
        observation("b", GLUCOSE, 99.0, "mg/dL", "2026-02-01T08:00:00Z"),
        observation("c", GLUCOSE, 6.0, "mmol/L", "2026-03-01T08:00:00Z"),
        condition("d", "Asthma"),
        json!({"resourceType": "MedicationStatement", "id": "e", "status": "active",
            "medicationCodeableConcept": {"text": "Metformin"}, "effectiveDateTime": "2025-06-01T00:00:00Z",
            "dosage": [{"text": "500 mg twice a day"}]}),
        json!({"resourceType": "AllergyIntolerance", "id": "f", "code": {"text": "Penicillin"}}),
        json!({"resourceType": "Immunization", "id": "g", "status": "completed",
            "vaccineCode": {"text": "Influenza"}, "occurrenceDateTime": "2025-10-01T00:00:00Z"}),
        json!({"resourceType": "Patient", "id": "p"}),
    ])
}

fn ms(time: &str) -> i64 {
    parse_time_ms(time)
        .unwrap_or_else(|| panic!("store contract `{FAMILY}`: the store answered a time that is not RFC 3339: {time}"))
}

async fn fhir_bundles_are_stored_once_per_person(store: &dyn HealthData) {
    let (subject, other) = (unique_id("imports-subject"), unique_id("imports-other"));
    let records: &dyn RecordStore = store;
    let first = import_fhir(records, &subject, &bundle()).await;
    let counts = (first.status, first.summary.created, first.summary.unchanged, first.summary.skipped);
    assert_eq!(
        counts,
        (200, 7, 0, 1),
        "store contract `{FAMILY}`: a first import creates every resource: {}",
        first.body
    );
    let again = import_fhir(records, &subject, &bundle()).await;
    let counts = (again.status, again.summary.created, again.summary.unchanged);
    assert_eq!(
        counts,
        (200, 0, 7),
        "store contract `{FAMILY}`: importing the same source ids again changes nothing: {}",
        again.body
    );
    let theirs = import_fhir(records, &other, &bundle()).await;
    assert_eq!(
        theirs.summary.created, 7,
        "store contract `{FAMILY}`: another person's import of the same source ids is new for them: {}",
        theirs.body
    );

    let page =
        ok(FAMILY, "observations", store.observations(&subject, &subject, 10).await).expect("one's own observations");
    assert_eq!(page.total, 3, "store contract `{FAMILY}`: observations after importing three twice");
    let newest = page.observations.first().map(|o| o["valueQuantity"]["value"].clone());
    assert_eq!(
        newest,
        Some(json!(6.0)),
        "store contract `{FAMILY}`: observations come newest first: {:?}",
        page.observations
    );

    let mut indicators =
        ok(FAMILY, "indicators", store.indicators(&subject, &subject).await).expect("one's own indicators");
    indicators.retain(|i| i.code == GLUCOSE);
    indicators.sort_by(|a, b| a.unit.cmp(&b.unit));
    let units: Vec<(Option<&str>, u64)> = indicators.iter().map(|i| (i.unit.as_deref(), i.count)).collect();
    assert_eq!(
        units,
        [(Some("mg/dL"), 1), (Some("mmol/L"), 2)],
        "store contract `{FAMILY}`: one indicator per code and unit, each value once"
    );
    let mmol = &indicators[1];
    let span = (ms(&mmol.first), ms(&mmol.last));
    assert_eq!(
        span,
        (ms("2026-01-01T08:00:00Z"), ms("2026-03-01T08:00:00Z")),
        "store contract `{FAMILY}`: an indicator's first and last times: {mmol:?}"
    );

    series_reads_a_range(store, &subject).await;

    let latest = ok(FAMILY, "latest_values", store.latest_values(&subject, &subject).await).expect("one's own values");
    let glucose: Vec<_> = latest.iter().filter(|p| p.code == GLUCOSE).collect();
    assert_eq!(glucose.len(), 1, "store contract `{FAMILY}`: one latest value per code: {latest:?}");
    assert_eq!(
        (glucose[0].value, glucose[0].unit.as_deref()),
        (Some(6.0), Some("mmol/L")),
        "store contract `{FAMILY}`: the latest value is the newest"
    );

    let records =
        ok(FAMILY, "health_records", store.health_records(&subject, &subject).await).expect("one's own records");
    let mut kinds: Vec<(&str, &str)> = records.iter().map(|r| (r.kind.as_str(), r.display.as_str())).collect();
    kinds.sort();
    let expected = [
        ("allergy", "Penicillin"),
        ("condition", "Asthma"),
        ("immunization", "Influenza"),
        ("medication", "Metformin"),
    ];
    assert_eq!(kinds, expected, "store contract `{FAMILY}`: the records imported, each once");
    let medication = records.iter().find(|r| r.kind == "medication").map(|r| &r.detail);
    assert_eq!(
        medication,
        Some(&Some(json!({"dosage": "500 mg twice a day"}))),
        "store contract `{FAMILY}`: a record's detail reads back as imported"
    );
}

/// The values of a range, `[start, end)`, the newest `limit` of them, oldest first.
async fn series_reads_a_range(store: &dyn HealthData, subject: &str) {
    let series = |start: &'static str, end: &'static str, limit| async move {
        let (start, end) = (ms(start), ms(end));
        ok(FAMILY, "series", store.series(subject, subject, GLUCOSE, start, end, limit).await)
            .expect("one's own series")
    };
    let all = series("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z", 10).await;
    let values: Vec<Option<f64>> = all.points.iter().map(|p| p.value).collect();
    assert_eq!(
        values,
        [Some(5.4), Some(99.0), Some(6.0)],
        "store contract `{FAMILY}`: a series is every value, oldest first"
    );
    assert!(!all.truncated, "store contract `{FAMILY}`: a series within its limit is not truncated");
    assert_eq!(all.points[1].unit.as_deref(), Some("mg/dL"), "store contract `{FAMILY}`: a value keeps its unit");
    let newest = series("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z", 2).await;
    let times: Vec<i64> = newest.points.iter().map(|p| ms(&p.time)).collect();
    assert_eq!(
        times,
        [ms("2026-02-01T08:00:00Z"), ms("2026-03-01T08:00:00Z")],
        "store contract `{FAMILY}`: a limited series is the newest values, oldest first"
    );
    assert!(newest.truncated, "store contract `{FAMILY}`: a series that left values out says so");
    let february = series("2026-02-01T08:00:00Z", "2026-03-01T08:00:00Z", 10).await;
    let values: Vec<Option<f64>> = february.points.iter().map(|p| p.value).collect();
    assert_eq!(values, [Some(99.0)], "store contract `{FAMILY}`: a range includes its start and excludes its end");
}

async fn csv_rows_are_stored_once(store: &dyn HealthData) {
    let subject = unique_id("imports-csv");
    let csv =
        "time,indicator,value,unit\n2026-01-02T08:00:00Z,heart rate,72,bpm\n2026-01-03T08:00:00Z,heart rate,75,bpm\n";
    let records: &dyn RecordStore = store;
    let first = import_csv(records, &subject, csv).await;
    assert_eq!(
        (first.status, first.summary.created),
        (200, 2),
        "store contract `{FAMILY}`: a CSV's rows are created: {}",
        first.body
    );
    let again = import_csv(records, &subject, csv).await;
    assert_eq!(
        (again.summary.created, again.summary.unchanged),
        (0, 2),
        "store contract `{FAMILY}`: the same CSV again changes nothing: {}",
        again.body
    );
    let indicators =
        ok(FAMILY, "indicators", store.indicators(&subject, &subject).await).expect("one's own indicators");
    assert_eq!(indicators.len(), 1, "store contract `{FAMILY}`: one indicator from the CSV: {indicators:?}");
    let code = &indicators[0].code;
    let series =
        ok(FAMILY, "series", store.series(&subject, &subject, code, 0, i64::MAX, 10).await).expect("one's own series");
    let values: Vec<Option<f64>> = series.points.iter().map(|p| p.value).collect();
    assert_eq!(values, [Some(72.0), Some(75.0)], "store contract `{FAMILY}`: the CSV's values read back");
}

async fn added_observations_are_stored_once_and_all_or_nothing(store: &dyn HealthData) {
    let subject = unique_id("imports-added");
    let one = observation("x1", GLUCOSE, 5.0, "mmol/L", "2026-04-01T08:00:00Z");
    let two = observation("x2", GLUCOSE, 5.1, "mmol/L", "2026-04-02T08:00:00Z");
    // `resourceType` may be left out.
    let mut three = observation("x3", GLUCOSE, 5.2, "mmol/L", "2026-04-03T08:00:00Z");
    three.as_object_mut().map(|o| o.remove("resourceType"));
    let ids = ok(FAMILY, "add_observations", store.add_observations(&subject, &[one.clone(), two.clone()]).await);
    assert!(
        ids.len() == 2 && ids[0] != ids[1],
        "store contract `{FAMILY}`: add_observations gives an id per new observation: {ids:?}"
    );
    let ids = ok(FAMILY, "add_observations", store.add_observations(&subject, &[one, two, three]).await);
    assert_eq!(ids.len(), 1, "store contract `{FAMILY}`: add_observations gives the ids of the new ones only: {ids:?}");

    let valid = observation("x4", GLUCOSE, 5.3, "mmol/L", "2026-04-04T08:00:00Z");
    let no_code = json!({"resourceType": "Observation", "id": "x5", "effectiveDateTime": "2026-04-05T08:00:00Z",
        "valueQuantity": {"value": 1.0, "unit": "u"}});
    let refused = store.add_observations(&subject, &[valid, no_code]).await;
    assert!(
        refused.is_err(),
        "store contract `{FAMILY}`: add_observations stored an observation with no code: {refused:?}"
    );
    let page =
        ok(FAMILY, "observations", store.observations(&subject, &subject, 10).await).expect("one's own observations");
    assert_eq!(
        page.total, 3,
        "store contract `{FAMILY}`: a refused add_observations stores nothing, not even its valid ones"
    );
    let series = ok(FAMILY, "series", store.series(&subject, &subject, GLUCOSE, 0, i64::MAX, 10).await)
        .expect("one's own series");
    assert_eq!(series.points.len(), 3, "store contract `{FAMILY}`: added observations feed the series: {series:?}");
}

/// `import_items` with a file: its values name the file in `series` and `latest_values`.
async fn values_keep_the_file_they_were_read_from(store: &dyn HealthData) {
    let (subject, file_key) = (unique_id("imports-file"), unique_id("imports-lab.pdf"));
    let body = batch(vec![observation("l1", GLUCOSE, 5.5, "mmol/L", "2026-05-01T08:00:00Z")]);
    let request = fhir::parse_import(&body).expect("the suite's own bundle parses");
    let items: Vec<&ImportItem> = request
        .entries
        .iter()
        .filter_map(|entry| match entry {
            EntryInput::Item(item) => Some(item),
            _ => None,
        })
        .collect();
    let created = ok(FAMILY, "import_items", store.import_items(&subject, &items, Some(&file_key)).await);
    assert_eq!(created, Ok(vec![true]), "store contract `{FAMILY}`: import_items of one new observation");
    let again = ok(FAMILY, "import_items", store.import_items(&subject, &items, Some(&file_key)).await);
    assert_eq!(again, Ok(vec![false]), "store contract `{FAMILY}`: import_items of the same source id again");
    let series = ok(FAMILY, "series", store.series(&subject, &subject, GLUCOSE, 0, i64::MAX, 10).await);
    let files: Vec<Option<String>> = series.into_iter().flat_map(|s| s.points).map(|p| p.file_key).collect();
    assert_eq!(files, [Some(file_key.clone())], "store contract `{FAMILY}`: a value read from a file names it");
    let latest = ok(FAMILY, "latest_values", store.latest_values(&subject, &subject).await).unwrap_or_default();
    let files: Vec<Option<String>> = latest.into_iter().map(|p| p.file_key).collect();
    assert_eq!(files, [Some(file_key)], "store contract `{FAMILY}`: a latest value read from a file names it");
}

async fn values_keep_their_source_range_and_interpretation(store: &dyn HealthData) {
    let subject = unique_id("imports-range");
    let mut judged = observation("r1", GLUCOSE, 6.3, "mmol/L", "2026-05-01T08:00:00Z");
    judged["referenceRange"] = json!([{"low": {"value": 3.1, "unit": "mmol/L"}, "high": {"value": 6.2, "unit": "mmol/L"},
        "text": "3.1-6.2 mmol/L"}]);
    judged["interpretation"] = json!([{"coding": [{"code": "H"}]}]);
    let plain = observation("r2", GLUCOSE, 5.0, "mmol/L", "2026-04-01T08:00:00Z");
    let records: &dyn crate::RecordStore = store;
    let imported = import_fhir(records, &subject, &batch(vec![judged, plain])).await;
    assert_eq!(imported.summary.created, 2, "store contract `{FAMILY}`: two observations with and without a range");
    let series = ok(FAMILY, "series", store.series(&subject, &subject, GLUCOSE, 0, i64::MAX, 10).await);
    let points = series.map(|s| s.points).unwrap_or_default();
    /// A range's low, high, unit and text, and the interpretation.
    type Kept = (Option<f64>, Option<f64>, Option<String>, Option<String>, Option<String>);
    let kept: Vec<Kept> = points
        .iter()
        .map(|p| {
            let range = p.range.as_ref();
            (
                range.and_then(|r| r.low),
                range.and_then(|r| r.high),
                range.and_then(|r| r.unit.clone()),
                range.and_then(|r| r.text.clone()),
                p.interpretation.clone(),
            )
        })
        .collect();
    let expected = [
        (None, None, None, None, None),
        (Some(3.1), Some(6.2), Some("mmol/L".into()), Some("3.1-6.2 mmol/L".into()), Some("H".into())),
    ];
    assert_eq!(kept, expected, "store contract `{FAMILY}`: a value keeps the range and interpretation its source gave");
    let latest = ok(FAMILY, "latest_values", store.latest_values(&subject, &subject).await).unwrap_or_default();
    let latest: Vec<(Option<f64>, Option<String>)> =
        latest.iter().map(|p| (p.range.as_ref().and_then(|r| r.high), p.interpretation.clone())).collect();
    assert_eq!(
        latest,
        [(Some(6.2), Some("H".into()))],
        "store contract `{FAMILY}`: a latest value keeps its source's range and interpretation"
    );
}
