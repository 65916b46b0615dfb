//! Tests of the import write path on SQLite that look at its rows: every value names its
//! import, corrections keep the earlier version in the history, runs longer than one statement
//! or one transaction, and a failed import undoing what its earlier transactions did.

use mirobody_health::fhir::{self, EntryInput, ImportItem};
use mirobody_health::import::import_fhir;
use mirobody_health::{HealthStore, RecordStore};
use serde_json::{Value, json};

use super::tests::{new_sqlite_store, sqlite_pool};
use super::{SqlStore, StoreQuotas};

fn glucose(id: &str, value: f64, version: u32) -> Value {
    json!({"resourceType": "Observation", "id": id, "status": "final", "meta": {"versionId": version.to_string()},
        "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0"}]},
        "effectiveDateTime": "2026-01-02T08:00:00Z", "valueQuantity": {"value": value, "unit": "mmol/L"}})
}

fn batch(resources: Vec<Value>) -> Value {
    let entries: Vec<Value> = resources.into_iter().map(|resource| json!({"resource": resource})).collect();
    json!({"resourceType": "Bundle", "type": "batch", "entry": entries})
}

fn items(body: &Value) -> Vec<ImportItem> {
    let request = fhir::parse_import(body).unwrap();
    request
        .entries
        .into_iter()
        .map(|entry| match entry {
            EntryInput::Item(item) => item,
            other => panic!("{other:?}"),
        })
        .collect()
}

async fn count(store: &SqlStore, sql: &str, subject: &str) -> i64 {
    sqlx::query_scalar(sql).bind(subject).fetch_one(sqlite_pool(store)).await.unwrap()
}

async fn served(store: &SqlStore, subject: &str) -> Vec<f64> {
    let series = store.series(subject, subject, "2339-0", 0, i64::MAX, 10_000).await.unwrap().unwrap();
    series.points.iter().filter_map(|p| p.value).collect()
}

#[tokio::test]
async fn every_value_names_its_import_and_corrections_keep_the_earlier_version() {
    let (_dir, store) = new_sqlite_store(2).await;
    let blood_pressure = json!({"resourceType": "Observation", "id": "bp", "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "85354-9"}]}, "effectiveDateTime": "2026-01-02",
        "component": [
            {"code": {"coding": [{"system": "http://loinc.org", "code": "8480-6"}]}, "valueQuantity": {"value": 120}},
            {"code": {"coding": [{"system": "http://loinc.org", "code": "8462-4"}]}, "valueQuantity": {"value": 80}}]});
    let condition = json!({"resourceType": "Condition", "id": "c", "code": {"text": "Asthma"}});
    let first = import_fhir(&store, "me", &batch(vec![glucose("g", 5.0, 1), blood_pressure, condition])).await;
    let first_id = first.summary.import_id.unwrap();
    for table in ["observations", "health_points", "health_records"] {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE subject = $1 AND import_id IS NOT {first_id}");
        assert_eq!(count(&store, &sql, "me").await, 0, "every row of {table} names the import");
    }
    assert_eq!(count(&store, "SELECT COUNT(*) FROM health_points WHERE subject = $1", "me").await, 3);

    let second = import_fhir(&store, "me", &batch(vec![glucose("g", 6.0, 2)])).await;
    assert_eq!(second.summary.updated, 1, "{}", second.body);
    let second_id = second.summary.import_id.unwrap();
    let point_import: i64 =
        sqlx::query_scalar("SELECT import_id FROM health_points WHERE subject = 'me' AND code = '2339-0'")
            .fetch_one(sqlite_pool(&store))
            .await
            .unwrap();
    assert_eq!(point_import, second_id, "the corrected value's points name the import that corrected it");
    let kept: (i64, Option<i64>, String, String) =
        sqlx::query_as("SELECT import_id, ended_by, reason, version_id FROM observation_history WHERE subject = 'me'")
            .fetch_one(sqlite_pool(&store))
            .await
            .unwrap();
    assert_eq!(kept, (first_id, Some(second_id), "replaced".to_owned(), "1".to_owned()), "the earlier version is kept");
    let kept_value: f64 =
        sqlx::query_scalar("SELECT value FROM health_point_history").fetch_one(sqlite_pool(&store)).await.unwrap();
    assert_eq!(kept_value, 5.0, "with its value");
    assert_eq!(served(&store, "me").await, [6.0], "reads never return the kept version");
}

#[tokio::test]
async fn long_runs_span_statements_and_transactions_and_repeats_are_corrections() {
    let (_dir, store) = new_sqlite_store(2).await;
    // More than one statement's and one transaction's worth, with `g10` sent again newer.
    let mut resources: Vec<Value> = (0..2_500).map(|i| glucose(&format!("g{i}"), f64::from(i), 1)).collect();
    resources.push(glucose("g10", 10.5, 2));
    resources.push(glucose("g11", 99.0, 1));
    let body = batch(resources);
    let items = items(&body);
    let refs: Vec<&ImportItem> = items.iter().collect();
    let created = store.import_items("me", &refs, None).await.unwrap().unwrap();
    assert_eq!(created.iter().filter(|new| **new).count(), 2_501, "2,500 created and one corrected");
    assert!(!created[2_501], "the same version again, however different, is no change");
    let values = served(&store, "me").await;
    assert_eq!(values.len(), 2_500);
    assert!(values.contains(&10.5) && !values.contains(&10.0) && values.contains(&11.0), "g10 corrected, g11 not");
    let indicator = store.indicators("me", "me").await.unwrap().unwrap();
    assert_eq!(indicator[0].count, 2_500, "the summary counts each value once");
}

#[tokio::test]
async fn a_failed_import_undoes_what_its_earlier_transactions_did() {
    let (_dir, store) = new_sqlite_store(2).await;
    let store = store.with_quotas(StoreQuotas { max_observations_per_user: 1_500, ..StoreQuotas::default() });
    let stored = import_fhir(&store, "me", &batch(vec![glucose("a", 1.0, 1)])).await;
    assert_eq!(stored.summary.created, 1);
    // A correction in the first transaction, then more new values than the quota allows.
    let mut resources = vec![glucose("a", 2.0, 2)];
    resources.extend((0..1_600).map(|i| glucose(&format!("n{i}"), 3.0, 1)));
    let refused = import_fhir(&store, "me", &batch(resources)).await;
    assert_eq!(refused.status, 413, "{}", refused.body);
    assert_eq!(served(&store, "me").await, [1.0], "the correction is undone with the rest");
    assert_eq!(count(&store, "SELECT COUNT(*) FROM observations WHERE subject = $1", "me").await, 1);
    assert_eq!(count(&store, "SELECT COUNT(*) FROM observation_history WHERE subject = $1", "me").await, 0);
    let imports = store.imports("me").await.unwrap();
    assert_eq!(imports.len(), 1, "the failed import leaves no record: {imports:?}");
}
