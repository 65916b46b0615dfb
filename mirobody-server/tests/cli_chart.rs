//! The whole chart through the real binary over SQLite: a Synthea-shaped patient and HL7's
//! example resources imported with `import fhir`, every resource then either found through the
//! tools or counted as skipped, the command's exit code following its summary, and a report's
//! inline document stored as the person's file when imported through `POST /fhir`.

mod common;

use std::path::Path;

use common::{clean_command, fresh_data_dir, request, server_port, session, start_with, token, tool};
use serde_json::{Value, json};

const SYNTHEA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fhir/synthea_patient.json");
const HL7: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fhir/hl7_examples.json");

// The exit code and what the command printed.
fn run(data_dir: &Path, args: &[&str]) -> (i32, String) {
    let output = clean_command()
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("RUST_LOG", "error")
        .output()
        .expect("run the binary");
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stdout).into_owned())
}

fn call(data_dir: &Path, tool: &str, arguments: Value) -> Value {
    let output = clean_command()
        .args(["tools", "call", tool, &arguments.to_string(), "--user", "ramon"])
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .output()
        .expect("run the binary");
    let out = String::from_utf8_lossy(&output.stdout);
    let result: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_ne!(result["isError"], true, "{result}");
    result["structuredContent"].clone()
}

/// The names listed under `key` of the profile.
fn names<'a>(profile: &'a Value, key: &str) -> Vec<&'a str> {
    profile[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key}: {profile}"))
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect()
}

/// What a resource is called, as the importer names it: its concept's text, else the first
/// coding's display, else code.
fn label(concept: &Value) -> Option<String> {
    concept["text"].as_str().map(str::to_owned).or_else(|| {
        let coding = &concept["coding"][0];
        coding["display"].as_str().or(coding["code"].as_str()).map(str::to_owned)
    })
}

#[test]
fn every_resource_of_the_fixtures_is_found_or_skipped() {
    let data_dir = fresh_data_dir("cli-chart");
    let (code, out) = run(&data_dir, &["import", "fhir", SYNTHEA, "--user", "ramon"]);
    assert_eq!(code, 0, "nothing refused: {out}");
    assert!(out.contains("10 stored, 0 already there, 4 skipped (types not imported), 0 refused"), "{out}");
    let (code, out) = run(&data_dir, &["import", "fhir", HL7, "--user", "ramon"]);
    assert_eq!(code, 0, "the HL7 examples, the contained Medication too: {out}");
    assert!(out.contains("7 stored, 0 already there, 2 skipped (types not imported), 0 refused"), "{out}");
    // Imported again: nothing is stored twice.
    for file in [SYNTHEA, HL7] {
        let (code, out) = run(&data_dir, &["import", "fhir", file, "--user", "ramon"]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("0 stored"), "{out}");
    }

    let profile = call(&data_dir, "get_user_health_profile", json!({}));
    // The statin is current, so it comes first; the stopped and completed ones after it.
    let medications = names(&profile, "medications");
    assert_eq!(medications[..2], ["atorvastatin 80 MG Oral Tablet", "Tylenol PM"], "{profile}");
    assert_eq!(profile["medications"][0]["status"], "active");
    assert_eq!(profile["medications"][0]["dosage"], "Take one tablet daily");
    assert!(medications.contains(&"Oral Form Oxycodone (product)"), "by Medication/id: {medications:?}");
    assert_eq!(names(&profile, "conditions")[0], "Hyperlipidemia", "active first: {profile}");
    assert_eq!(profile["counts"]["medication"], 4);
    let lipids =
        profile["reports"].as_array().unwrap().iter().find(|r| r["name"].as_str().unwrap().starts_with("Lipid"));
    let lipids = lipids.unwrap_or_else(|| panic!("{profile}"));
    assert_eq!(
        lipids["results"][1],
        json!({"source_id": "Observation/o2",
        "name": "Cholesterol in LDL [Mass/volume] in Serum or Plasma by Direct assay", "value": "131.2 mg/dL"})
    );
    assert_eq!(lipids["attachments"][0]["content_type"], "text/plain");

    // Every resource: a record in the profile, an Observation's indicator, or one of the
    // types counted as skipped above.
    let indicators = call(&data_dir, "fetch_health_data", json!({"indicators": ["cholesterol", "glucose"]}));
    let mut skipped = 0;
    for file in [SYNTHEA, HL7] {
        let bundle: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        for entry in bundle["entry"].as_array().unwrap() {
            let r = &entry["resource"];
            let (key, name) = match r["resourceType"].as_str().unwrap() {
                "Condition" => ("conditions", label(&r["code"])),
                "MedicationRequest" | "MedicationStatement" => ("medications", None),
                "Immunization" => ("immunizations", label(&r["vaccineCode"])),
                "Procedure" => ("procedures", label(&r["code"])),
                "DiagnosticReport" => ("reports", label(&r["code"])),
                "Observation" => {
                    let display = r["code"]["coding"][0]["display"].as_str().unwrap();
                    assert!(indicators.to_string().contains(display), "{display}: {indicators}");
                    continue;
                }
                _ => {
                    skipped += 1;
                    continue;
                }
            };
            if let Some(name) = name {
                assert!(names(&profile, key).contains(&name.as_str()), "{name} in {key}: {profile}");
            }
        }
    }
    assert_eq!(skipped, 6, "Patient, Encounter, Claim, ExplanationOfBenefit, Medication, Patient");
}

#[test]
fn the_exit_code_follows_the_summary() {
    let data_dir = fresh_data_dir("cli-chart-exit");
    let patient = data_dir.join("patient.json");
    std::fs::write(&patient, json!({"resourceType": "Patient", "id": "p1"}).to_string()).unwrap();
    let (code, out) = run(&data_dir, &["import", "fhir", patient.to_str().unwrap(), "--user", "ramon"]);
    assert_eq!(code, 0, "a skip is no refusal: {out}");
    assert!(out.contains("0 stored, 0 already there, 1 skipped (types not imported), 0 refused"), "{out}");
    let bad = data_dir.join("bad.json");
    std::fs::write(&bad, json!({"resourceType": "Procedure", "status": "completed"}).to_string()).unwrap();
    let (code, out) = run(&data_dir, &["import", "fhir", bad.to_str().unwrap(), "--user", "ramon"]);
    assert_eq!(code, 1, "refused: {out}");
    assert!(out.contains("1 refused") && out.contains("Procedure.code is missing"), "{out}");
}

#[test]
fn a_reports_document_becomes_the_persons_file() {
    let data_dir = fresh_data_dir("chart-forms");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &[]));
    let bearer = format!("Bearer {alice}");
    let headers = [("Authorization", bearer.as_str()), ("Content-Type", "application/fhir+json")];
    let sid = session(port, &alice);
    let synthea = std::fs::read(SYNTHEA).unwrap();
    for round in 0..2 {
        let (status, _, body) = request(port, "POST", "/fhir", &headers, &synthea);
        assert_eq!(status, 200, "round {round}: {}", String::from_utf8_lossy(&body));
    }
    // Stored once, though imported twice; its text read as an upload's is.
    let listed = tool(port, &alice, &sid, "list_files", json!({}));
    let files = listed["files"].as_array().unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(files.len(), 1, "{listed}");
    let name = "Lipid panel with direct LDL - Serum or Plasma.txt";
    assert_eq!(files[0]["filename"], name, "{listed}");
    let read = tool(port, &alice, &sid, "read_file", json!({"file_key": files[0]["file_key"]}));
    assert!(read["content"].as_str().unwrap_or_default().contains("LDL cholesterol 131 mg/dL"), "{read}");
    let profile = tool(port, &alice, &sid, "get_user_health_profile", json!({}));
    assert_eq!(profile["reports"][0]["attachments"][0]["filename"], name, "{profile}");
}
