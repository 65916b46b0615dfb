//! The `corrections` family of the store contract suite.

use serde_json::{Value, json};

use crate::import::{ImportResponse, import_fhir};
use crate::store::{HealthData, ImportKind};

use super::support::{batch, condition, observation, ok, unique_id};

const FAMILY: &str = "corrections";
const GLUCOSE: &str = "2339-0";
const AT: &str = "2026-06-01T08:00:00Z";

/// Corrections and imports as things: a newer version of a stored resource (`meta.versionId`,
/// `meta.lastUpdated`, status `corrected`) replaces it in every read, the indicator summary
/// included, and an older one changes nothing; `entered-in-error` and a transaction's `DELETE`
/// remove it, and a bad `DELETE` refuses the whole transaction; every import is listed with
/// what it did, and deleting one removes exactly its values, serves again what it replaced
/// or removed (so the history kept it), and reaches no one else's.
///
/// Panics, naming the family and the promise, at the first one the store breaks.
pub async fn corrections(store: &dyn HealthData) {
    newer_versions_replace_and_older_ones_change_nothing(store).await;
    entered_in_error_and_delete_remove_the_value(store).await;
    a_bad_delete_refuses_the_transaction(store).await;
    deleting_an_import_undoes_exactly_it(store).await;
}

fn glucose(id: &str, value: f64, extra: Value) -> Value {
    let mut resource = observation(id, GLUCOSE, value, "mmol/L", AT);
    for (key, member) in extra.as_object().into_iter().flatten() {
        resource[key] = member.clone();
    }
    resource
}

async fn import(store: &dyn HealthData, subject: &str, resources: Vec<Value>) -> ImportResponse {
    let response = import_fhir(store, subject, &batch(resources)).await;
    assert_eq!(response.status, 200, "store contract `{FAMILY}`: an import of valid resources: {}", response.body);
    response
}

/// (updated, unchanged, created, removed) of an import.
fn counts(response: &ImportResponse) -> (usize, usize, usize, usize) {
    let s = &response.summary;
    (s.updated, s.unchanged, s.created, s.removed)
}

/// The glucose values `subject` is served (in order of value), through `series`, `observations`, `latest_values`
/// and the indicator summary, which must agree.
async fn served(store: &dyn HealthData, subject: &str) -> Vec<f64> {
    let series = ok(FAMILY, "series", store.series(subject, subject, GLUCOSE, 0, i64::MAX, 100).await)
        .expect("one's own series");
    let values: Vec<f64> = series.points.iter().filter_map(|p| p.value).collect();
    let page =
        ok(FAMILY, "observations", store.observations(subject, subject, 100).await).expect("one's own observations");
    let mut resources: Vec<f64> =
        page.observations.iter().filter_map(|o| o["valueQuantity"]["value"].as_f64()).collect();
    resources.sort_by(f64::total_cmp);
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(resources, sorted, "store contract `{FAMILY}`: observations and series serve the same values");
    let indicators = ok(FAMILY, "indicators", store.indicators(subject, subject).await).expect("one's own indicators");
    let count: u64 = indicators.iter().filter(|i| i.code == GLUCOSE).map(|i| i.count).sum();
    assert_eq!(
        count,
        values.len() as u64,
        "store contract `{FAMILY}`: the indicator summary counts the values served: {indicators:?}"
    );
    let latest = ok(FAMILY, "latest_values", store.latest_values(subject, subject).await).expect("one's own values");
    let newest = latest.iter().find(|p| p.code == GLUCOSE).and_then(|p| p.value);
    assert_eq!(newest.is_some(), !values.is_empty(), "store contract `{FAMILY}`: latest_values has the value");
    sorted
}

async fn newer_versions_replace_and_older_ones_change_nothing(store: &dyn HealthData) {
    for (name, first, newer, older) in [
        (
            "versionId",
            json!({"meta": {"versionId": "1"}}),
            json!({"meta": {"versionId": "2"}}),
            json!({"meta": {"versionId": "1"}}),
        ),
        (
            "lastUpdated",
            json!({"meta": {"lastUpdated": "2026-06-01T09:00:00Z"}}),
            json!({"meta": {"lastUpdated": "2026-06-02T09:00:00Z"}}),
            json!({"meta": {"lastUpdated": "2026-05-01T09:00:00Z"}}),
        ),
        ("status corrected", json!({}), json!({"status": "corrected"}), json!({})),
    ] {
        let subject = unique_id("corrections-version");
        let stored = import(store, &subject, vec![glucose("g", 5.0, first)]).await;
        assert_eq!(counts(&stored), (0, 0, 1, 0), "store contract `{FAMILY}`: {name}: the first version is created");
        let corrected = import(store, &subject, vec![glucose("g", 7.0, newer.clone())]).await;
        assert_eq!(
            counts(&corrected),
            (1, 0, 0, 0),
            "store contract `{FAMILY}`: {name}: a newer version replaces the stored one: {}",
            corrected.body
        );
        assert_eq!(
            served(store, &subject).await,
            [7.0],
            "store contract `{FAMILY}`: {name}: reads serve the correction"
        );
        let again = import(store, &subject, vec![glucose("g", 7.0, newer)]).await;
        assert_eq!(
            counts(&again),
            (0, 1, 0, 0),
            "store contract `{FAMILY}`: {name}: the same version again changes nothing"
        );
        let stale = import(store, &subject, vec![glucose("g", 4.0, older)]).await;
        assert_eq!(counts(&stale), (0, 1, 0, 0), "store contract `{FAMILY}`: {name}: an older version changes nothing");
        assert_eq!(served(store, &subject).await, [7.0], "store contract `{FAMILY}`: {name}: the correction stays");
    }

    // A chart record follows the same rules.
    let subject = unique_id("corrections-record");
    let mut asthma = condition("c", "Asthma");
    asthma["meta"] = json!({"versionId": "1"});
    import(store, &subject, vec![asthma.clone()]).await;
    asthma["meta"] = json!({"versionId": "2"});
    asthma["code"] = json!({"text": "Allergic asthma"});
    let corrected = import(store, &subject, vec![asthma]).await;
    assert_eq!(counts(&corrected), (1, 0, 0, 0), "store contract `{FAMILY}`: a newer record replaces the stored one");
    let records = ok(FAMILY, "health_records", store.health_records(&subject, &subject).await).expect("one's own");
    let names: Vec<&str> = records.iter().map(|r| r.display.as_str()).collect();
    assert_eq!(names, ["Allergic asthma"], "store contract `{FAMILY}`: the corrected record is served alone");
}

async fn entered_in_error_and_delete_remove_the_value(store: &dyn HealthData) {
    let subject = unique_id("corrections-removed");
    import(store, &subject, vec![glucose("e", 5.0, json!({})), glucose("d", 6.0, json!({})), condition("c", "Asthma")])
        .await;
    let in_error = import(store, &subject, vec![glucose("e", 5.0, json!({"status": "entered-in-error"}))]).await;
    assert_eq!(
        counts(&in_error),
        (0, 0, 0, 1),
        "store contract `{FAMILY}`: entered-in-error removes: {}",
        in_error.body
    );
    assert_eq!(
        served(store, &subject).await,
        [6.0],
        "store contract `{FAMILY}`: an entered-in-error value leaves every read"
    );

    let transaction = json!({"resourceType": "Bundle", "type": "transaction", "entry": [
        {"request": {"method": "DELETE", "url": "Observation/d"}},
        {"request": {"method": "DELETE", "url": "Condition/c"}},
        {"request": {"method": "DELETE", "url": "Observation/never-stored"}},
    ]});
    let deleted = import_fhir(store, &subject, &transaction).await;
    assert_eq!(
        (deleted.status, counts(&deleted)),
        (200, (0, 1, 0, 2)),
        "store contract `{FAMILY}`: a transaction's DELETE entries remove their values: {}",
        deleted.body
    );
    assert!(served(store, &subject).await.is_empty(), "store contract `{FAMILY}`: a deleted value leaves every read");
    let records = ok(FAMILY, "health_records", store.health_records(&subject, &subject).await).expect("one's own");
    assert!(records.is_empty(), "store contract `{FAMILY}`: a deleted record leaves the chart: {records:?}");
}

async fn a_bad_delete_refuses_the_transaction(store: &dyn HealthData) {
    let subject = unique_id("corrections-bad-delete");
    for (url, says) in [("Patient/1", "DELETE of a Patient is not supported"), ("Observation/a b", "must be Type/id")] {
        let transaction = json!({"resourceType": "Bundle", "type": "transaction", "entry": [
            {"resource": glucose("new", 5.0, json!({}))},
            {"request": {"method": "DELETE", "url": url}},
        ]});
        let refused = import_fhir(store, &subject, &transaction).await;
        assert_eq!(
            refused.status, 400,
            "store contract `{FAMILY}`: a bad DELETE refuses the transaction: {}",
            refused.body
        );
        assert!(
            refused.body.to_string().contains(says),
            "store contract `{FAMILY}`: the refusal says why ({says}): {}",
            refused.body
        );
    }
    assert!(
        served(store, &subject).await.is_empty(),
        "store contract `{FAMILY}`: a refused transaction stores nothing"
    );
    let imports = ok(FAMILY, "imports", store.imports(&subject).await);
    assert!(imports.is_empty(), "store contract `{FAMILY}`: a refused transaction is no import: {imports:?}");
}

async fn deleting_an_import_undoes_exactly_it(store: &dyn HealthData) {
    let (subject, other) = (unique_id("corrections-imports"), unique_id("corrections-other"));
    let first = import(
        store,
        &subject,
        vec![
            glucose("a", 5.0, json!({"meta": {"versionId": "1"}})),
            glucose("b", 5.5, json!({})),
            condition("c", "Asthma"),
        ],
    )
    .await;
    let second = import(store, &subject, vec![glucose("z", 9.0, json!({}))]).await;
    let first_id = first.summary.import_id.expect("an import has an id");
    let second_id = second.summary.import_id.expect("an import has an id");
    assert_ne!(first_id, second_id, "store contract `{FAMILY}`: each import has its own id");

    // A third corrects `a` and removes `b`; deleting it serves both as they were.
    let third = import(
        store,
        &subject,
        vec![
            glucose("a", 6.0, json!({"meta": {"versionId": "2"}})),
            glucose("b", 5.5, json!({"status": "entered-in-error"})),
        ],
    )
    .await;
    assert_eq!(
        served(store, &subject).await,
        [6.0, 9.0],
        "store contract `{FAMILY}`: the third import's corrections are served"
    );
    let listed = ok(FAMILY, "imports", store.imports(&subject).await);
    let ids: Vec<i64> = listed.iter().map(|i| i.id).collect();
    let third_id = third.summary.import_id.expect("an import has an id");
    assert_eq!(ids, [third_id, second_id, first_id], "store contract `{FAMILY}`: imports are listed newest first");
    let c = listed[0].counts;
    assert_eq!(
        (listed[0].kind, c.stored, c.updated, c.removed),
        (ImportKind::Fhir, 0, 1, 1),
        "store contract `{FAMILY}`: an import's record counts what it did: {:?}",
        listed[0]
    );
    assert_eq!((listed[2].counts.stored, listed[2].counts.skipped), (3, 0), "store contract `{FAMILY}`: {listed:?}");

    assert_eq!(
        ok(FAMILY, "delete_import", store.delete_import(&other, third_id).await),
        None,
        "store contract `{FAMILY}`: no one deletes another person's import"
    );
    let undone = ok(FAMILY, "delete_import", store.delete_import(&subject, third_id).await)
        .expect("store contract `corrections`: one's own import is deleted");
    assert_eq!(
        (undone.removed, undone.restored),
        (0, 2),
        "store contract `{FAMILY}`: deleting an import that only corrected serves the earlier versions again"
    );
    assert_eq!(
        served(store, &subject).await,
        [5.0, 5.5, 9.0],
        "store contract `{FAMILY}`: the history kept what the deleted import replaced and removed"
    );

    let gone = ok(FAMILY, "delete_import", store.delete_import(&subject, first_id).await)
        .expect("store contract `corrections`: one's own import is deleted");
    assert_eq!(gone.removed, 3, "store contract `{FAMILY}`: deleting an import removes each value it stored");
    assert_eq!(served(store, &subject).await, [9.0], "store contract `{FAMILY}`: another import's values stay");
    let records = ok(FAMILY, "health_records", store.health_records(&subject, &subject).await).expect("one's own");
    assert!(records.is_empty(), "store contract `{FAMILY}`: an import's records leave with it: {records:?}");
    assert_eq!(
        ok(FAMILY, "delete_import", store.delete_import(&subject, first_id).await),
        None,
        "store contract `{FAMILY}`: a deleted import is gone"
    );
    let ids: Vec<i64> = ok(FAMILY, "imports", store.imports(&subject).await).iter().map(|i| i.id).collect();
    assert_eq!(ids, [second_id], "store contract `{FAMILY}`: a deleted import is no longer listed");

    // Imported again, its values are new.
    let again = import(store, &subject, vec![glucose("b", 5.5, json!({}))]).await;
    assert_eq!(counts(&again), (0, 0, 1, 0), "store contract `{FAMILY}`: a deleted import's values can come back");
}
