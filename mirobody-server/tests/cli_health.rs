//! The operator's commands for a person's health data, through the real binary: `import fhir`,
//! `import csv` and `circle ...`, checked by calling the health tools with `tools call`.

mod common;

use std::path::Path;
use std::process::Output;

use common::{clean_command, fresh_data_dir};
use serde_json::{Value, json};

// The exit code and what the command printed (its log goes to stderr, left out).
fn run(data_dir: &Path, args: &[&str]) -> (i32, String) {
    let output: Output = clean_command()
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("RUST_LOG", "error")
        .output()
        .expect("run the binary");
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stdout).into_owned())
}

fn call(data_dir: &Path, user: &str, tool: &str, arguments: Value) -> Value {
    let output = clean_command()
        .args(["tools", "call", tool, &arguments.to_string(), "--user", user])
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .output()
        .expect("run the binary");
    let out = String::from_utf8_lossy(&output.stdout);
    let result: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    if result["isError"] == true {
        json!({"error": result["content"][0]["text"]})
    } else {
        result["structuredContent"].clone()
    }
}

#[test]
fn imports_and_the_care_circle_from_the_command_line() {
    let data_dir = fresh_data_dir("cli-health");
    let bundle = json!({"resourceType": "Bundle", "type": "collection", "entry": [
        {"resource": {"resourceType": "Observation", "id": "w1", "code": {"coding": [{"system": "http://loinc.org",
            "code": "29463-7", "display": "Body weight"}]}, "effectiveDateTime": "2026-02-01T07:00:00Z",
            "valueQuantity": {"value": 71.8, "unit": "kg"}}},
        {"resource": {"resourceType": "Observation", "id": "bad", "code": {"text": "Weight"},
            "effectiveDateTime": "2026-02-02", "valueQuantity": {"value": "heavy"}}},
    ]});
    let fhir = data_dir.join("export.json");
    std::fs::write(&fhir, bundle.to_string()).unwrap();
    let fhir = fhir.to_str().unwrap();

    let (code, out) = run(&data_dir, &["import", "fhir", fhir, "--user", "alice"]);
    assert_eq!(code, 1, "an entry was refused: {out}");
    assert!(out.contains("1 stored, 0 already there, 0 skipped (types not imported), 1 refused"), "{out}");
    assert!(out.contains("entry 1:") && out.contains("must be a number"), "{out}");
    let (_, out) = run(&data_dir, &["import", "fhir", fhir, "--user", "alice"]);
    assert!(out.contains("0 stored, 1 already there"), "imported once: {out}");

    let csv = data_dir.join("watch.csv");
    std::fs::write(
        &csv,
        "Indicator,Time,Value,Unit\nheart rate,2026-02-01T06:00:00Z,58,bpm\nsteps,2026-02-01T23:00:00Z,9120,steps\n",
    )
    .unwrap();
    let (code, out) = run(&data_dir, &["import", "csv", csv.to_str().unwrap(), "--user", "alice"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 stored"), "{out}");
    let (code, out) = run(&data_dir, &["import", "fhir", "/no/such/file.json", "--user", "alice"]);
    assert_eq!(code, 2, "{out}");

    let found = call(&data_dir, "alice", "search_health_indicators", json!({"keywords": ["pulse", "weight", "steps"]}));
    let codes: Vec<&str> =
        found["indicators"].as_array().unwrap().iter().map(|i| i["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"29463-7") && codes.contains(&"8867-4"), "{found}");

    // The circle: bob reads alice's data only between accepting and the revocation.
    let (code, out) = run(&data_dir, &["circle", "invite", "bob", "--user", "alice", "--nickname", "Alice"]);
    assert_eq!(code, 0, "{out}");
    let id = out.trim().trim_start_matches("invitation ").to_owned();
    let (_, listed) = run(&data_dir, &["circle", "list", "--user", "bob"]);
    assert!(listed.contains("\"invites_received\"") && listed.contains("\"owner\": \"alice\""), "{listed}");
    let denied = call(&data_dir, "bob", "fetch_health_data", json!({"indicators": ["weight"], "member": "Alice"}));
    assert!(denied["error"].is_string(), "{denied}");
    let (code, out) = run(&data_dir, &["circle", "accept", &id, "--user", "carol"]);
    assert_eq!(code, 1, "not carol's to accept: {out}");
    let (code, out) = run(&data_dir, &["circle", "accept", &id, "--user", "bob"]);
    assert_eq!(code, 0, "{out}");
    let shared = call(&data_dir, "bob", "fetch_health_data", json!({"indicators": ["weight"], "member": "Alice"}));
    assert_eq!(shared["indicators"]["Body weight"]["data"][0]["value"], 71.8, "{shared}");
    let (code, out) = run(&data_dir, &["circle", "revoke", "alice", "--user", "bob"]);
    assert_eq!(code, 0, "{out}");
    let after = call(&data_dir, "bob", "fetch_health_data", json!({"indicators": ["weight"], "member": "Alice"}));
    assert!(after["error"].is_string(), "{after}");
    let (code, _) = run(&data_dir, &["circle", "revoke", "alice", "--user", "bob"]);
    assert_eq!(code, 1, "nothing left to revoke");

    // An email with no account: the invitation, and the sign-up link to hand over.
    let (code, out) = run(&data_dir, &["circle", "invite", "Dana@Example.com", "--user", "alice"]);
    assert_eq!(code, 0, "{out}");
    let link = out.lines().find_map(|line| line.split_once("): ").map(|(_, url)| url.trim())).expect(&out);
    assert!(out.starts_with("invitation ") && out.contains("sign-up link (hand it to Dana@Example.com)"), "{out}");
    let token = link.rsplit_once("/signup/").map(|(_, token)| token).expect(link);
    assert!(token.len() == 43 && !token.contains('/'), "{link}");
}

#[test]
fn an_apple_health_export_is_told_by_its_content() {
    let data_dir = fresh_data_dir("cli-apple");
    let zip = data_dir.join("export.zip");
    let generated = mirobody_health::apple::generate::write_zip(6, std::fs::File::create(&zip).unwrap()).unwrap();
    assert_eq!(generated.records, 300);
    let zip = zip.to_str().unwrap();

    let (code, out) = run(&data_dir, &["import", zip, "--user", "ana"]);
    assert_eq!(code, 0, "{out}");
    // 18 samples a day, 3 daily totals, 2 nights, a workout every other day.
    assert!(out.starts_with("141 stored, 0 already there, 12 skipped"), "{out}");
    assert!(
        out.contains("HKQuantityTypeIdentifierStepCount: 72 read, 6 stored, 0 already there, 72 in daily totals or nights, 36 of another source"),
        "{out}"
    );
    assert!(
        out.contains("HKQuantityTypeIdentifierBloodPressureSystolic: 12 read, 6 stored, 0 already there, 6 copies"),
        "{out}"
    );
    let (code, out) = run(&data_dir, &["import", "apple", zip, "--user", "ana"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("0 stored, 141 already there"), "imported once: {out}");

    let steps = call(&data_dir, "ana", "fetch_health_data", json!({"indicators": ["41950-7"]}));
    let values: Vec<f64> = steps["indicators"]
        .as_object()
        .and_then(|series| series.values().next())
        .map(|series| series["data"].as_array().unwrap().iter().map(|p| p["value"].as_f64().unwrap()).collect())
        .unwrap_or_default();
    let expected: Vec<f64> = (0..6).map(|d| mirobody_health::apple::generate::expected_steps(d) as f64).collect();
    assert_eq!(values, expected, "{steps}");

    // An XML export cut short: refused with where, the exit code 1.
    let mut xml = Vec::new();
    mirobody_health::apple::generate::write_xml(2, &mut xml).unwrap();
    let cut = data_dir.join("export.xml");
    std::fs::write(&cut, &xml[..xml.len() * 2 / 3]).unwrap();
    let (code, out) = run(&data_dir, &["import", cut.to_str().unwrap(), "--user", "ana"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("at byte") && out.contains("are kept"), "{out}");

    let (code, out) = run(&data_dir, &["import", "gpx", zip, "--user", "ana"]);
    assert_eq!(code, 2, "{out}");
}

#[test]
fn a_reports_document_and_ndjson_from_the_command_line() {
    let data_dir = fresh_data_dir("cli-forms");
    let synthea = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fhir/synthea_patient.json");
    let (code, out) = run(&data_dir, &["import", synthea, "--user", "ana"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("a report's document stored as file up-"), "{out}");
    assert!(out.contains("  Observation: 3 read, 3 stored"), "{out}");
    // Imported again: the report is there, and so is its document, once.
    let (code, out) = run(&data_dir, &["import", "fhir", synthea, "--user", "ana"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("document stored"), "{out}");
    let files = call(&data_dir, "ana", "list_files", json!({}));
    let files = files["files"].as_array().unwrap_or_else(|| panic!("{files}"));
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0]["filename"], "Lipid panel with direct LDL - Serum or Plasma.txt");

    // FHIR Bulk Data, told by its content.
    let ndjson = data_dir.join("Observation.ndjson");
    let line = |id: &str, value: u32| {
        json!({"resourceType": "Observation", "id": id, "status": "final",
               "code": {"coding": [{"system": "http://loinc.org", "code": "2345-7"}]},
               "effectiveDateTime": "2026-03-01T08:00:00Z", "valueQuantity": {"value": value, "unit": "mg/dL"}})
    };
    std::fs::write(&ndjson, format!("{}\n{}\n", line("a", 95), line("b", 101))).unwrap();
    let (code, out) = run(&data_dir, &["import", ndjson.to_str().unwrap(), "--user", "ana"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("2 stored, 0 already there"), "{out}");
}
