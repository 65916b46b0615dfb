//! Units through the tools: a year of glucose from a clinic (serum, mg/dL) and a meter (blood,
//! mmol/L) asked for in each unit is one series whose every value keeps its original, compared
//! with golden answers under `tests/golden/answers/`; values in a unit no scale knows stay
//! apart; search finds Chinese names and Synthea's codes by their common names.
//! `UPDATE_GOLDEN=1 cargo test -p mirobody-tools --test builtins units` rewrites the answers.

use std::path::PathBuf;

use mirobody_health::prelude::*;
use serde_json::{Value, json};

use crate::support::Env;

fn observation(code: &str, display: &str, value: f64, unit: &str, time: &str) -> Value {
    json!({
        "resourceType": "Observation",
        "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": display}]},
        "valueQuantity": {"value": value, "unit": unit},
        "effectiveDateTime": time,
    })
}

/// Alice's glucose: the clinic's serum values in mg/dL (one spelled `mg/dl`), her meter's in
/// mmol/L, and one value in a unit nothing converts.
async fn glucose_from_two_sources(env: &Env) {
    let clinic = "Glucose [Mass/volume] in Serum or Plasma";
    let meter = "Glucose [Moles/volume] in Blood";
    let values = [
        observation("2345-7", clinic, 92.0, "mg/dL", "2026-01-10T09:00:00Z"),
        observation("15074-8", meter, 5.4, "mmol/L", "2026-02-01T07:30:00Z"),
        observation("15074-8", meter, 7.9, "mmol/L", "2026-03-01T07:30:00Z"),
        observation("2345-7", clinic, 131.0, "mg/dl", "2026-04-12T09:00:00Z"),
        observation("15074-8", meter, 3.1, "mmol/L", "2026-05-01T07:30:00Z"),
        observation("15074-8", meter, 0.9, "g/L", "2026-06-01T07:30:00Z"),
        observation("2345-7", clinic, 99.0, "mg/dL", "2026-07-20T09:00:00Z"),
    ];
    env.backends.sql().add_observations("alice", &values).await.unwrap();
}

fn golden(name: &str, answer: &Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/answers").join(format!("{name}.json"));
    let rendered = serde_json::to_string_pretty(answer).unwrap() + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(kept, rendered, "{} differs; UPDATE_GOLDEN=1 rewrites it after review", path.display());
}

#[tokio::test]
async fn mixed_unit_glucose_is_one_series_in_each_unit() {
    let env = Env::sqlite().await;
    glucose_from_two_sources(&env).await;
    let alice = env.user("alice").await;

    let mut flags_per_unit = Vec::new();
    for (unit, key) in [("mg/dL", "mg_dl"), ("mmol/L", "mmol_l")] {
        let reply = alice.tool("fetch_health_data", json!({"indicators": ["glucose"], "unit": unit})).await;
        let answer = reply.ok().clone();
        golden(&format!("glucose_in_{key}"), &answer);
        let merged = &answer["indicators"][format!("glucose ({unit})")];
        assert_eq!(merged["count"], 6, "every source's convertible value: {answer}");
        assert_eq!(merged["codes"], json!(["2345-7", "15074-8"]));
        let times: Vec<&str> = merged["data"].as_array().unwrap().iter().map(|p| p["time"].as_str().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "oldest first across sources: {times:?}");
        for point in merged["data"].as_array().unwrap() {
            assert_eq!(point["unit"], unit);
            if let Some(original) = point.get("original") {
                assert_ne!(original["unit"], unit, "an original is kept only where the value was converted");
            }
        }
        assert_eq!(merged["reference_range"]["origin"], "catalog");
        let flags: Vec<Value> = merged["data"].as_array().unwrap().iter().map(|p| p["flag"].clone()).collect();
        flags_per_unit.push(flags);
        // The g/L value is no unit glucose's scale knows: apart, never mixed in.
        assert_eq!(answer["not_converted"], json!(["Glucose [Moles/volume] in Blood (g/L), not converted"]));
    }

    assert_eq!(flags_per_unit[0], flags_per_unit[1], "a value's flag does not depend on the unit asked for");

    let mg = alice.tool("fetch_health_data", json!({"indicators": ["血糖"], "unit": "mg/dl"})).await;
    let data = mg.ok()["indicators"]["glucose (mg/dL)"]["data"].as_array().unwrap().clone();
    // 5.4 mmol/L is 97.29 mg/dL (molar mass 180.16), normal; 7.9 is 142.3, high; 3.1 is 55.8, low.
    let meter: Vec<(f64, &str, f64)> = data
        .iter()
        .filter(|p| p["code"] == "15074-8")
        .map(|p| (p["value"].as_f64().unwrap(), p["flag"].as_str().unwrap(), p["original"]["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(meter, [(97.2864, "normal", 5.4), (142.326, "high", 7.9), (55.8496, "low", 3.1)]);

    // Without a unit: a series per code and unit, spellings of mg/dL one series, each flagged.
    let plain = alice.tool("fetch_health_data", json!({"indicators": ["glucose"]})).await;
    golden("glucose_by_unit", plain.ok());
    let clinic = &plain.ok()["indicators"]["Glucose [Mass/volume] in Serum or Plasma"];
    assert_eq!((clinic["unit"].as_str(), clinic["count"].as_u64()), (Some("mg/dL"), Some(3)), "{}", plain.ok());
    let flags: Vec<&str> = clinic["data"].as_array().unwrap().iter().map(|p| p["flag"].as_str().unwrap()).collect();
    assert_eq!(flags, ["normal", "high", "normal"]);
}

#[tokio::test]
async fn a_unit_is_checked_and_never_mixes_kinds() {
    let env = Env::sqlite().await;
    glucose_from_two_sources(&env).await;
    let weights = [
        observation("29463-7", "Body weight", 70.0, "kg", "2026-01-01T08:00:00Z"),
        observation("29463-7", "Body weight", 160.0, "lbs", "2026-02-01T08:00:00Z"),
    ];
    env.backends.sql().add_observations("alice", &weights).await.unwrap();
    let alice = env.user("alice").await;

    let unknown = alice.tool("fetch_health_data", json!({"indicators": ["glucose"], "unit": "furlongs"})).await;
    assert!(unknown.tool_error().contains("'unit' must be a unit"), "{}", unknown.tool_error());
    let long = alice.tool("fetch_health_data", json!({"indicators": ["glucose"], "unit": "x".repeat(10_000)})).await;
    assert!(long.tool_error().len() < 400, "the error quotes a bounded part: {}", long.tool_error());
    let wrong_kind = alice.tool("fetch_health_data", json!({"indicators": ["glucose"], "unit": "kg"})).await;
    assert!(wrong_kind.tool_error().contains("converts to 'kg'"), "{}", wrong_kind.tool_error());

    // Weight in pounds, glucose left as it is: one kind converted, the other listed apart.
    let both = alice.tool("fetch_health_data", json!({"indicators": ["weight", "glucose"], "unit": "lb"})).await;
    let answer = both.ok();
    let pounds = &answer["indicators"]["Body weight ([lb_av])"];
    let values: Vec<f64> = pounds["data"].as_array().unwrap().iter().map(|p| p["value"].as_f64().unwrap()).collect();
    assert_eq!(values, [154.324, 160.0], "70 kg is 154.32 lb (0.45359237 kg exactly): {answer}");
    assert_eq!(pounds["data"][0]["original"], json!({"value": 70.0, "unit": "kg"}));
    assert!(pounds["data"][1].get("original").is_none(), "lbs is the unit asked for, only spelled otherwise");
    let apart = answer["not_converted"].as_array().unwrap();
    assert!(apart.iter().any(|n| n == "Glucose [Mass/volume] in Serum or Plasma"), "{answer}");

    // The merged series keeps the newest `limit` values.
    let limited =
        alice.tool("fetch_health_data", json!({"indicators": ["glucose"], "unit": "mmol/L", "limit": 2})).await;
    let merged = &limited.ok()["indicators"]["glucose (mmol/L)"];
    assert_eq!((merged["count"].as_u64(), merged["truncated"].as_bool()), (Some(2), Some(true)));
    assert_eq!(merged["data"][1]["time"], "2026-07-20T09:00:00Z");
}

#[tokio::test]
async fn search_finds_chinese_names_and_synthea_codes() {
    let env = Env::sqlite().await;
    let values = [
        observation(
            "33914-3",
            "Glomerular filtration rate/1.73 sq M.predicted",
            88.0,
            "mL/min/{1.73_m2}",
            "2026-01-01T08:00:00Z",
        ),
        observation("6299-2", "Urea nitrogen [Mass/volume] in Blood", 14.0, "mg/dL", "2026-01-01T08:00:00Z"),
        observation("2093-3", "Cholesterol [Mass/volume] in Serum or Plasma", 190.0, "mg/dL", "2026-01-01T08:00:00Z"),
        observation("8480-6", "Systolic blood pressure", 121.0, "mm[Hg]", "2026-01-01T08:00:00Z"),
    ];
    env.backends.sql().add_observations("alice", &values).await.unwrap();
    let alice = env.user("alice").await;
    for (keyword, code) in [
        ("eGFR", "33914-3"),
        ("估算肾小球滤过率", "33914-3"),
        ("BUN", "6299-2"),
        ("尿素氮", "6299-2"),
        ("总胆固醇", "2093-3"),
        ("胆固醇", "2093-3"),
        ("血压", "8480-6"),
        ("收缩压", "8480-6"),
    ] {
        let found = alice.tool("search_health_indicators", json!({"keywords": [keyword]})).await;
        assert_eq!(found.ok()["indicators"][0]["code"], code, "{keyword}: {}", found.ok());
    }
    let found = alice.tool("search_health_indicators", json!({"keywords": ["egfr"]})).await;
    assert_eq!(found.ok()["indicators"][0]["chinese_name"], "估算肾小球滤过率");
    let fetched = alice.tool("fetch_health_data", json!({"indicators": ["收缩压"]})).await;
    let systolic = &fetched.ok()["indicators"]["Systolic blood pressure"];
    assert_eq!(systolic["data"][0]["flag"], "high", "121 is above the AHA's normal");
}
