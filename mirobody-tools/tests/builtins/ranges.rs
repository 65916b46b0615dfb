//! Reference ranges and flags from real-shaped data: HL7's glucose example (its laboratory's
//! range, 3.1-6.2 mmol/L, and its `H`) and a Synthea patient's lipid panel (no range, as Synthea
//! writes none) imported, then read through `fetch_health_data` and `get_user_health_profile`:
//! the source's range and interpretation come back, the catalog's range stands in where the
//! source gave none and says so, and every flag agrees with the range shown beside it. On
//! SQLite and, when the machine has it, PostgreSQL.

use mirobody_health::RecordStore;
use mirobody_health::import::import_fhir;
use serde_json::{Value, json};

use crate::support::Env;

const SYNTHEA: &str = include_str!("../../../mirobody-server/tests/fixtures/fhir/synthea_patient.json");
const HL7: &str = include_str!("../../../mirobody-server/tests/fixtures/fhir/hl7_examples.json");

/// Both fixtures, imported as `user`'s.
pub(crate) async fn import_fixtures(env: &Env, user: &str) {
    let store: &dyn RecordStore = env.backends.sql().as_ref();
    for fixture in [SYNTHEA, HL7] {
        let body: Value = serde_json::from_str(fixture).unwrap();
        let answer = import_fhir(store, user, &body).await;
        assert!(answer.status < 300 && answer.summary.created > 0, "{:?}", answer.body);
    }
}

/// The series of `code` in a `fetch_health_data` answer.
fn series<'a>(answer: &'a Value, code: &str) -> &'a Value {
    let indicators = answer["indicators"].as_object().unwrap();
    indicators.values().find(|s| s["code"] == code).unwrap_or_else(|| panic!("no {code} in {answer}"))
}

/// The flag a value has against `range` (bounds inclusive), as the tools spell it.
fn flag_against(value: f64, range: &Value) -> &'static str {
    if range["low"].as_f64().is_some_and(|low| value < low) {
        "low"
    } else if range["high"].as_f64().is_some_and(|high| value > high) {
        "high"
    } else {
        "normal"
    }
}

async fn ranges_and_interpretations_come_back(env: Env) {
    import_fixtures(&env, "ramon").await;
    let ramon = env.user("ramon").await;

    // HL7's glucose: the laboratory's range and its `H`, the flag following it.
    let answer = ramon.tool("fetch_health_data", json!({"indicators": ["15074-8"]})).await.ok().clone();
    let glucose = series(&answer, "15074-8");
    assert_eq!(
        glucose["reference_range"],
        json!({"low": 3.1, "high": 6.2, "unit": "mmol/L", "origin": "source"}),
        "the source's range, not the catalog's 3.9-5.5: {answer}"
    );
    let point = &glucose["data"][0];
    assert_eq!((point["value"].as_f64(), point["interpretation"].as_str()), (Some(6.3), Some("H")), "{answer}");
    assert_eq!(point["flag"], "high");
    assert_eq!(point["flag"], flag_against(6.3, &glucose["reference_range"]), "the flag agrees with the range");
    assert!(point.get("reference_range").is_none(), "the value's range is the series': {point}");

    // In mg/dL: the value and the laboratory's range converted alike, still the source's.
    let answer = ramon.tool("fetch_health_data", json!({"indicators": ["15074-8"], "unit": "mg/dL"})).await;
    let converted = series(answer.ok(), "15074-8");
    let range = &converted["reference_range"];
    assert_eq!((range["origin"].as_str(), range["unit"].as_str()), (Some("source"), Some("mg/dL")), "{range}");
    let (low, high) = (range["low"].as_f64().unwrap(), range["high"].as_f64().unwrap());
    assert!((low - 3.1 * 18.016).abs() < 0.1 && (high - 6.2 * 18.016).abs() < 0.1, "{range}");
    let point = &converted["data"][0];
    assert_eq!(point["original"], json!({"value": 6.3, "unit": "mmol/l"}), "as the source spelt it: {point}");
    let value = point["value"].as_f64().unwrap();
    assert!((value - 6.3 * 18.016).abs() < 0.1, "{point}");
    assert_eq!((point["flag"].as_str(), point["interpretation"].as_str()), (Some("high"), Some("H")));
    assert_eq!(point["flag"], flag_against(value, range));

    // Synthea's lipids: no range at the source, so the catalog's, marked as the catalog's, and
    // each flag the one that range gives.
    let answer = ramon.tool("fetch_health_data", json!({"indicators": ["2093-3", "18262-6", "2085-9"]})).await;
    let answer = answer.ok();
    let mut flags = Vec::new();
    for code in ["2093-3", "18262-6", "2085-9"] {
        let lipid = series(answer, code);
        let range = &lipid["reference_range"];
        assert_eq!((range["origin"].as_str(), range["unit"].as_str()), (Some("catalog"), Some("mg/dL")), "{lipid}");
        let point = &lipid["data"][0];
        assert!(point.get("interpretation").is_none(), "Synthea gave none: {point}");
        assert_eq!(point["flag"], flag_against(point["value"].as_f64().unwrap(), range), "{lipid}");
        flags.push(point["flag"].as_str().unwrap().to_owned());
    }
    assert_eq!(flags, ["high", "high", "normal"], "214.3 total and 131.2 LDL are high, 48.9 HDL is not low");

    // The profile's latest values carry the same.
    let profile = ramon.tool("get_user_health_profile", json!({})).await.ok().clone();
    let latest = profile["latest"].as_array().unwrap();
    let of = |code: &str| latest.iter().find(|v| v["code"] == code).unwrap_or_else(|| panic!("{code}: {profile}"));
    let glucose = of("15074-8");
    assert_eq!((glucose["flag"].as_str(), glucose["interpretation"].as_str()), (Some("high"), Some("H")));
    assert_eq!(glucose["reference_range"]["origin"], "source");
    assert_eq!(glucose["reference_range"]["high"], 6.2);
    let cholesterol = of("2093-3");
    assert_eq!(
        (cholesterol["flag"].as_str(), cholesterol["reference_range"]["origin"].as_str()),
        (Some("high"), Some("catalog"))
    );
}

#[tokio::test]
async fn source_ranges_and_interpretations_come_back_on_sqlite() {
    ranges_and_interpretations_come_back(Env::sqlite().await).await;
}

#[tokio::test]
async fn source_ranges_and_interpretations_come_back_on_postgres() {
    let Some(env) = Env::postgres("source_ranges_and_interpretations_come_back_on_postgres").await else {
        return;
    };
    ranges_and_interpretations_come_back(env).await;
}

/// A correction moves a value to the history and undoing it brings it back: its range and
/// interpretation with it.
#[tokio::test]
async fn a_value_restored_from_the_history_keeps_its_range() {
    let env = Env::sqlite().await;
    let store: &dyn RecordStore = env.backends.sql().as_ref();
    let first = json!({"resourceType": "Observation", "id": "g1", "status": "final", "meta": {"versionId": "1"},
        "code": {"coding": [{"system": "http://loinc.org", "code": "2345-7"}]},
        "effectiveDateTime": "2026-01-05T08:00:00Z", "valueQuantity": {"value": 48, "unit": "mg/dL"},
        "referenceRange": [{"low": {"value": 65, "unit": "mg/dL"}, "high": {"value": 110, "unit": "mg/dL"}}],
        "interpretation": [{"coding": [{"code": "LL"}]}]});
    assert_eq!(import_fhir(store, "ida", &first).await.summary.created, 1);
    let mut second = first.clone();
    second["meta"]["versionId"] = json!("2");
    second["valueQuantity"]["value"] = json!(85);
    second["interpretation"] = json!([{"coding": [{"code": "N"}]}]);
    assert_eq!(import_fhir(store, "ida", &second).await.summary.updated, 1);
    let ida = env.user("ida").await;
    let now = ida.tool("fetch_health_data", json!({"indicators": ["2345-7"]})).await.ok().clone();
    let point = &series(&now, "2345-7")["data"][0];
    assert_eq!((point["value"].as_f64(), point["flag"].as_str()), (Some(85.0), Some("normal")), "{now}");
    // Undo the correction: the first version, critical low, is served again.
    let imports = store.imports("ida").await.unwrap();
    let newest = imports.iter().map(|i| i.id).max().unwrap();
    assert!(store.delete_import("ida", newest).await.unwrap().is_some());
    let back = ida.tool("fetch_health_data", json!({"indicators": ["2345-7"]})).await.ok().clone();
    let glucose = series(&back, "2345-7");
    let point = &glucose["data"][0];
    assert_eq!((point["value"].as_f64(), point["interpretation"].as_str()), (Some(48.0), Some("LL")), "{back}");
    assert_eq!(point["flag"], "critical_low", "LL is critical");
    assert_eq!(glucose["reference_range"], json!({"low": 65.0, "high": 110.0, "unit": "mg/dL", "origin": "source"}));
}
