//! `record_health_data` through the real server, on SQLite and PostgreSQL: values read in a
//! lab report become indicator data `fetch_health_data` returns flagged with the file as their
//! source, recorded twice are stored once, and leave with the file; wrong values are refused
//! one by one with nothing stored; another person's file is refused; told values are the
//! caller's alone.

use mirobody_health::ImportKind;
use mirobody_health::prelude::*;
use mirobody_tools::erasure::{DeleteKind, delete_one};
use serde_json::{Value, json};

use crate::support::Env;
use crate::tools::upload;

const REPORT: &str = "Example Clinic - Laboratory report\nCollected: 2026-01-15\nHemoglobin 14.1 g/dL (13.5-17.5)\n\
     White cells 6.2 x10^9/L (4.5-11.0)\nPlatelets 250 x10^9/L (150-450)\nGlucose 5.4 mmol/L (3.9-5.5)\n";

/// The report's values, as a model that read it sends them.
fn report_values() -> Value {
    json!([
        {"indicator": "Hemoglobin", "value": 14.1, "unit": "g/dL", "time": "2026-01-15", "reference_low": 13.5, "reference_high": 17.5},
        {"indicator": "White cells", "code": "6690-2", "value": 6.2, "unit": "x10^9/L", "time": "2026-01-15", "reference_low": 4.5, "reference_high": 11.0},
        {"indicator": "Platelets", "value": 250, "unit": "x10^9/L", "time": "2026-01-15", "reference_low": 150, "reference_high": 450},
        {"indicator": "Glucose", "value": 5.4, "unit": "mmol/L", "time": "2026-01-15", "reference_low": 3.9, "reference_high": 5.5},
    ])
}

async fn total(env: &Env, owner: &str) -> u64 {
    env.backends.sql().observations(owner, owner, 10).await.unwrap().unwrap().total
}

async fn a_lab_reports_values_are_recorded_once_read_back_and_leave_with_the_file(env: &Env) {
    upload(env, "ada", "up-ada-lab.txt", "lab.txt", "text/plain", REPORT.as_bytes(), Some(REPORT)).await;
    let ada = env.user("ada").await;
    let arguments = json!({"values": report_values(), "file_key": "up-ada-lab.txt"});
    let reply = ada.tool("record_health_data", arguments.clone()).await;
    let answer = reply.ok().clone();
    assert_eq!((answer["recorded"].as_u64(), answer["already_recorded"].as_u64()), (Some(4), Some(0)), "{answer}");
    assert_eq!(answer["source"], json!({"file_key": "up-ada-lab.txt"}));
    let values = answer["values"].as_array().unwrap();
    let codes: Vec<&str> = values.iter().map(|v| v["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["718-7", "6690-2", "777-3", "2339-0"]);
    assert!(values.iter().all(|v| v["stored"] == "new" && v["flag"] == "normal"), "{answer}");
    assert_eq!(values[2]["unit"], "10*9/L", "the unit as its UCUM code");
    assert_eq!(total(env, "ada").await, 4);

    // fetch_health_data finds them, flagged, with the file as their source.
    let fetched = ada.tool("fetch_health_data", json!({"indicators": ["glucose", "platelets"]})).await;
    let indicators = fetched.ok()["indicators"].as_object().unwrap().clone();
    assert_eq!(indicators.len(), 2, "{indicators:?}");
    for series in indicators.values() {
        let point = &series["data"][0];
        assert_eq!(point["file_key"], "up-ada-lab.txt", "{series}");
        assert_eq!(point["flag"], "normal", "{series}");
        assert_eq!(point["time"], "2026-01-15T00:00:00Z", "{series}");
    }

    // Recorded again (spelled otherwise): nothing new, no second import.
    let imports_before = env.backends.sql().imports("ada").await.unwrap();
    assert_eq!(imports_before.len(), 1);
    assert_eq!(
        (imports_before[0].kind, imports_before[0].file_key.as_deref()),
        (ImportKind::Tool, Some("up-ada-lab.txt"))
    );
    assert_eq!(imports_before[0].via.as_deref(), Some("record_health_data"));
    assert_eq!(Some(imports_before[0].id), answer["import_id"].as_i64());
    let mut respelled = arguments.clone();
    respelled["values"][3]["unit"] = json!("MMOL/L");
    respelled["values"][3]["time"] = json!("2026-01-15T00:00:00Z");
    let again = ada.tool("record_health_data", respelled).await;
    assert_eq!((again.ok()["recorded"].as_u64(), again.ok()["already_recorded"].as_u64()), (Some(0), Some(4)));
    assert!(again.ok().get("import_id").is_none(), "{}", again.ok());
    assert_eq!(total(env, "ada").await, 4);
    assert_eq!(env.backends.sql().imports("ada").await.unwrap(), imports_before);

    // Deleting the file deletes what was recorded from it.
    let storage = env.backends.storage();
    let deleted =
        delete_one(env.backends.sql().as_ref(), storage.as_deref(), "ada", DeleteKind::File, "up-ada-lab.txt");
    assert!(deleted.await.unwrap());
    assert_eq!(total(env, "ada").await, 0);
    let fetched = ada.tool("fetch_health_data", json!({"indicators": ["glucose"]})).await;
    assert_eq!(fetched.ok()["not_found"], json!(["glucose"]), "{}", fetched.ok());
}

#[tokio::test]
async fn a_lab_reports_values_are_recorded_once_read_back_and_leave_with_the_file_on_sqlite() {
    a_lab_reports_values_are_recorded_once_read_back_and_leave_with_the_file(&Env::sqlite().await).await;
}

#[tokio::test]
async fn a_lab_reports_values_are_recorded_once_read_back_and_leave_with_the_file_on_postgres() {
    let Some(env) = Env::postgres("record_health_data on PostgreSQL").await else { return };
    a_lab_reports_values_are_recorded_once_read_back_and_leave_with_the_file(&env).await;
}

#[tokio::test]
async fn wrong_values_are_each_refused_with_why_and_nothing_is_stored() {
    let env = Env::sqlite().await;
    upload(&env, "ada", "up-ada-lab.txt", "lab.txt", "text/plain", REPORT.as_bytes(), Some(REPORT)).await;
    upload(&env, "bob", "up-bob-lab.txt", "lab.txt", "text/plain", REPORT.as_bytes(), Some(REPORT)).await;
    let ada = env.user("ada").await;
    let mut values = report_values();
    values[1]["unit"] = json!("kg");
    values[3]["unit"] = json!("mg/dL");
    let reply = ada.tool("record_health_data", json!({"values": values, "file_key": "up-ada-lab.txt"})).await;
    let error = reply.tool_error();
    assert!(error.starts_with("Nothing was recorded: 2 of 4 values are wrong."), "{error}");
    assert!(error.contains("values[1] (White cells): unit 'kg' is not one cell count is measured in"), "{error}");
    assert!(error.contains("values[3] (Glucose): 5.4 mg/dL is not a plausible"), "{error}");
    assert!(!error.contains("values[0]") && !error.contains("values[2]"), "{error}");
    assert_eq!(total(&env, "ada").await, 0);
    assert!(env.backends.sql().imports("ada").await.unwrap().is_empty(), "no import for a refused call");

    // Another person's file is no file of the caller's.
    let reply = ada.tool("record_health_data", json!({"values": report_values(), "file_key": "up-bob-lab.txt"})).await;
    assert!(reply.tool_error().contains("the user has no file 'up-bob-lab.txt'"), "{}", reply.tool_error());
    let reply = ada.tool("record_health_data", json!({"values": report_values(), "file_key": "up-nothing"})).await;
    assert!(reply.tool_error().contains("no file"), "{}", reply.tool_error());

    // Bounds: values per call, string sizes, unknown fields, an empty list; each a clear error.
    let one = json!({"indicator": "Glucose", "value": 5.4, "unit": "mmol/L", "time": "2026-01-15"});
    let too_many: Vec<Value> = (0..51).map(|_| one.clone()).collect();
    let long_name = json!({"indicator": "g".repeat(201), "value": 5.4, "unit": "mmol/L", "time": "2026-01-15"});
    let unknown_field =
        json!({"indicator": "Glucose", "value": 5.4, "unit": "mmol/L", "time": "2026-01-15", "user_id": "bob"});
    let as_text = json!({"indicator": "Glucose", "value": "5.4", "unit": "mmol/L", "time": "2026-01-15"});
    for (arguments, expected) in [
        (json!({"values": too_many}), "values"),
        (json!({"values": [long_name]}), "indicator"),
        (json!({"values": [unknown_field]}), "user_id"),
        (json!({"values": [as_text]}), "value"),
        (json!({"values": []}), "values"),
        (json!({"values": [one], "file_key": "k".repeat(513)}), "file_key"),
    ] {
        let reply = ada.tool("record_health_data", arguments.clone()).await;
        let error = if reply.body["result"]["isError"] == true {
            reply.tool_error().to_owned()
        } else {
            reply.rpc_error().1.to_owned()
        };
        assert!(error.contains(expected), "{arguments}: {error}");
    }
    assert_eq!(total(&env, "ada").await, 0);
    assert_eq!(total(&env, "bob").await, 0);
}

#[tokio::test]
async fn told_values_are_the_callers_alone_and_undone_with_their_import() {
    let env = Env::sqlite().await;
    let bob = env.user("bob").await;
    let told = json!({"values": [{"indicator": "weight", "value": 81.5, "unit": "kg", "time": "2026-02-01"}]});
    let reply = bob.tool("record_health_data", told.clone()).await;
    let answer = reply.ok().clone();
    assert_eq!((answer["recorded"].as_u64(), &answer["source"]), (Some(1), &json!("told by the user")), "{answer}");
    assert_eq!(total(&env, "bob").await, 1);
    assert_eq!(total(&env, "ada").await, 0, "written as the caller's only");
    let ada = env.user("ada").await;
    let fetched = ada.tool("fetch_health_data", json!({"indicators": ["weight"]})).await;
    assert_eq!(fetched.ok()["not_found"], json!(["weight"]));
    let fetched = bob.tool("fetch_health_data", json!({"indicators": ["weight"]})).await;
    let series = fetched.ok()["indicators"].as_object().unwrap().values().next().unwrap().clone();
    assert_eq!(series["data"][0]["value"], 81.5);
    assert!(series["data"][0].get("file_key").is_none(), "{series}");
    // The value is deletable by the id the answer gives, and the import undoes it whole.
    let id = answer["values"][0]["id"].as_str().unwrap();
    assert!(id.starts_with("Observation|urn:mirobody:recorded|person|29463-7|"), "{id}");
    let import_id = answer["import_id"].as_i64().unwrap();
    assert!(env.backends.sql().delete_import("bob", import_id).await.unwrap().is_some());
    assert_eq!(total(&env, "bob").await, 0);
    // Recorded again after, it is stored again.
    assert_eq!(bob.tool("record_health_data", told).await.ok()["recorded"], 1);
    let deleted = delete_one(env.backends.sql().as_ref(), None, "bob", DeleteKind::Value, id).await.unwrap();
    assert!(deleted);
    assert_eq!(total(&env, "bob").await, 0);
}
