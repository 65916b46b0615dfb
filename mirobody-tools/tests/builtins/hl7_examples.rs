//! HL7's own FHIR R4 examples (the npm package `hl7.fhir.r4.examples@4.0.1`, data nobody here
//! wrote) imported file by file, each as its own person, on SQLite: every resource of the
//! clinical types, and every `transaction`, `batch`, `collection` and `searchset` Bundle. Each
//! resource is either stored and then found through the tools (each numeric value of an
//! Observation by `fetch_health_data`, each record in `get_user_health_profile`'s counts and
//! lists) or answered as skipped or refused with a reason; importing the files again stores
//! nothing twice; and a few published facts come back exactly.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use mirobody_health::RecordStore;
use mirobody_health::import::{ImportResponse, import_fhir_json};
use serde_json::{Value, json};

use crate::support::Env;

/// The package and the folder `npm install` puts it in.
const PACKAGE: &str = "hl7.fhir.r4.examples@4.0.1";
const FOLDER: &str = "node_modules/hl7.fhir.r4.examples";

/// The resource types taken one file each.
const TYPES: [&str; 9] = [
    "Observation",
    "MedicationRequest",
    "MedicationStatement",
    "Immunization",
    "Procedure",
    "DiagnosticReport",
    "Condition",
    "AllergyIntolerance",
    "Patient",
];

/// The Bundle types the importer reads; the others (`document`, `message`, responses) are
/// refused as a whole, which one case below checks.
const BUNDLE_TYPES: [&str; 4] = ["transaction", "batch", "collection", "searchset"];

/// The clinical resources of the package that are refused, each for a reason of its own data:
/// (file, resource, the start of the reason). An Observation with no time anywhere (none of
/// its own, and no report or panel of its request with one) cannot be placed in a series; a
/// medication or procedure that names nothing cannot be listed.
const REFUSED: [(&str, &str, &str); 12] = [
    ("Bundle-bundle-example", "MedicationRequest/3123", "MedicationRequest names no medication"),
    ("Bundle-bundle-references", "Observation/123", NO_TIME),
    ("Bundle-bundle-references", "Observation/124", NO_TIME),
    ("Bundle-bundle-references", "Observation/12", NO_TIME),
    ("Bundle-bundle-references", "Observation/14", NO_TIME),
    ("Bundle-bundle-references", "Observation/14", NO_TIME),
    ("Bundle-bundle-references", "Observation/47", NO_TIME),
    ("Bundle-bundle-references", "Observation/48", NO_TIME),
    ("Observation-bmd", "Observation/bmd", NO_TIME),
    ("Observation-decimal", "Observation/decimal", NO_TIME),
    ("Observation-example-genetics-brcapat", "Observation/example-genetics-brcapat", NO_TIME),
    ("Procedure-appendectomy-narrative", "Procedure/appendectomy-narrative", "Procedure.code is missing"),
];
const NO_TIME: &str = "Observation has no time";

/// The profile's record kind of a resource type.
fn kind_of(resource_type: &str) -> Option<&'static str> {
    Some(match resource_type {
        "Condition" => "condition",
        "MedicationStatement" | "MedicationRequest" => "medication",
        "AllergyIntolerance" => "allergy",
        "Immunization" => "immunization",
        "Procedure" => "procedure",
        "DiagnosticReport" => "report",
        _ => return None,
    })
}

/// The example files to import, sorted: `(path, resource type, bundle type)`.
fn examples(dir: &Path) -> Vec<(PathBuf, String, Option<String>)> {
    let mut found = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    for name in names {
        let resource_type = name.split('-').next().unwrap_or_default().to_owned();
        let path = dir.join(&name);
        if TYPES.contains(&resource_type.as_str()) {
            found.push((path, resource_type, None));
        } else if resource_type == "Bundle" {
            let body: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let kind = body["type"].as_str().unwrap_or_default().to_owned();
            if BUNDLE_TYPES.contains(&kind.as_str()) {
                found.push((path, resource_type, Some(kind)));
            }
        }
    }
    found
}

/// What became of one resource: `created`, `updated`, `unchanged`, `removed`, `skipped` or
/// `invalid`, and the answer's reason for the last two.
type Outcome = (&'static str, String);

/// The outcome of each resource of a file's import, in entry order.
fn outcomes(answer: &ImportResponse, resources: usize) -> Vec<Outcome> {
    let body = &answer.body;
    let diagnostics = |outcome: &Value| outcome["issue"][0]["diagnostics"].as_str().unwrap_or_default().to_owned();
    if body["resourceType"] == "Bundle" {
        let entries = body["entry"].as_array().unwrap();
        assert_eq!(entries.len(), resources, "one response per entry");
        return entries
            .iter()
            .map(|entry| {
                let response = &entry["response"];
                let reason = diagnostics(&response["outcome"]);
                let status = match response["status"].as_str().unwrap() {
                    "201 Created" => "created",
                    "204 No Content" => "removed",
                    "200 OK" if reason == "updated" => "updated",
                    "200 OK" => "unchanged",
                    "422 Unprocessable Entity" => "skipped",
                    "400 Bad Request" => "invalid",
                    other => panic!("an entry answered {other}"),
                };
                (status, reason)
            })
            .collect();
    }
    if resources > 1 || answer.status >= 400 && body["issue"][0].get("expression").is_some() {
        // A Bundle refused whole (a transaction with a bad entry, a body past a bound): each
        // entry named by an issue has its own reason, the others are refused with it.
        assert!(answer.status >= 400, "a Bundle answered {}: {body}", answer.status);
        let issues = body["issue"].as_array().unwrap();
        let of = |i: usize| {
            let at = json!([format!("Bundle.entry[{i}]")]);
            issues.iter().find(|issue| issue["expression"] == at).map(|issue| diagnostics(&json!({"issue": [issue]})))
        };
        let whole = format!("refused with its Bundle: {}", diagnostics(body));
        return (0..resources).map(|i| ("invalid", of(i).unwrap_or_else(|| whole.clone()))).collect();
    }
    let reason = diagnostics(body);
    let status = match (answer.status, reason.as_str()) {
        (201, _) => "created",
        (200, "updated") => "updated",
        (200, "removed") => "removed",
        (200, _) => "unchanged",
        (422, _) => "skipped",
        (400 | 413, _) => "invalid",
        (status, _) => panic!("the import answered {status}: {body}"),
    };
    vec![(status, reason)]
}

/// Every numeric value of an Observation (its own and its components'), rounded for comparing.
fn numbers(observation: &Value) -> Vec<i64> {
    let mut values = vec![&observation["valueQuantity"]["value"]];
    if let Some(components) = observation["component"].as_array() {
        values.extend(components.iter().map(|c| &c["valueQuantity"]["value"]));
    }
    values.into_iter().filter_map(Value::as_f64).map(|v| (v * 1e6).round() as i64).collect()
}

/// The numeric values `fetch_health_data` returns for every code the profile lists.
async fn fetched_numbers(user: &crate::support::Client, profile: &Value) -> Vec<i64> {
    let mut codes: Vec<String> =
        profile["latest"].as_array().unwrap().iter().map(|v| v["code"].as_str().unwrap().to_owned()).collect();
    codes.sort();
    codes.dedup();
    let mut found = Vec::new();
    for chunk in codes.chunks(20) {
        let answer = user.tool("fetch_health_data", json!({"indicators": chunk, "limit": 1000})).await;
        for series in answer.ok()["indicators"].as_object().unwrap().values() {
            for point in series["data"].as_array().unwrap() {
                let value = point.get("original").map_or(&point["value"], |original| &original["value"]);
                if let Some(v) = value.as_f64() {
                    found.push((v * 1e6).round() as i64);
                }
            }
        }
    }
    found
}

#[tokio::test]
async fn every_hl7_example_is_stored_and_found_or_answered_with_a_reason() {
    let peers = mirobody_testkit::Peers::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("external"));
    let dir = match peers.npm_package(PACKAGE) {
        Ok(dir) => dir.join(FOLDER),
        Err(reason) => return mirobody_testkit::skip(&format!("{PACKAGE}: {reason}")),
    };
    let files = examples(&dir);
    assert!(files.len() > 150, "the package's clinical examples: {}", files.len());
    let env = Env::sqlite().await;
    let store: &dyn RecordStore = env.backends.sql().as_ref();
    // (file's type, resource's type) -> outcome -> count; reasons of skips and refusals.
    let mut tally: BTreeMap<(String, String), BTreeMap<&str, usize>> = BTreeMap::new();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut first: HashMap<String, ImportResponse> = HashMap::new();
    let mut problems: Vec<String> = Vec::new();
    // Clinical resources refused, each named: what the report lists.
    let mut refused_clinical: Vec<(String, String, String)> = Vec::new();
    for (path, file_type, bundle) in &files {
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let bytes = std::fs::read(path).unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        let resources: Vec<Value> = match bundle {
            Some(_) => body["entry"].as_array().unwrap().iter().map(|e| e["resource"].clone()).collect(),
            None => vec![body.clone()],
        };
        let answer = import_fhir_json(store, &name, &bytes, false).await;
        assert!(answer.status < 500, "{name}: {}", answer.body);
        let outcomes = outcomes(&answer, resources.len());
        let from = bundle.as_ref().map_or_else(|| file_type.clone(), |kind| format!("Bundle({kind})"));
        for (resource, (status, reason)) in resources.iter().zip(&outcomes) {
            let resource_type = resource["resourceType"].as_str().unwrap_or("(request)").to_owned();
            *tally.entry((from.clone(), resource_type.clone())).or_default().entry(status).or_default() += 1;
            if matches!(*status, "skipped" | "invalid") {
                if reason.trim().is_empty() {
                    problems.push(format!("{name}: a {status} {resource_type} without a reason"));
                }
                *reasons.entry(format!("{status} {resource_type}: {reason}")).or_default() += 1;
                if *status == "invalid" && (TYPES.contains(&resource_type.as_str()) && resource_type != "Patient") {
                    let id = resource["id"].as_str().unwrap_or("?");
                    refused_clinical.push((name.clone(), format!("{resource_type}/{id}"), reason.clone()));
                }
            } else if resource["status"] == "entered-in-error" {
                // A removal: of nothing stored before, in a file of its own.
                if !matches!(*status, "removed" | "unchanged") {
                    problems.push(format!("{name}: an entered-in-error {resource_type} {status}"));
                }
            } else if *status != "created" {
                problems.push(format!("{name}: a first import {status} {resource_type}"));
            }
        }

        // Stored means found: every record in the profile's counts and lists, every numeric
        // value of every stored Observation through `fetch_health_data`.
        let user = env.user(&name).await;
        let profile = user.tool("get_user_health_profile", json!({})).await.ok().clone();
        let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
        let mut wanted = Vec::new();
        for (resource, (status, _)) in resources.iter().zip(&outcomes) {
            if *status != "created" {
                continue;
            }
            let resource_type = resource["resourceType"].as_str().unwrap();
            if let Some(kind) = kind_of(resource_type) {
                *kinds.entry(kind).or_default() += 1;
            } else {
                assert_eq!(resource_type, "Observation", "{name}");
                wanted.extend(numbers(resource));
            }
        }
        for (kind, count) in &kinds {
            if profile["counts"][kind].as_u64() != Some(*count) {
                problems.push(format!("{name}: {count} {kind} stored, profile counts {}", profile["counts"]));
            }
        }
        for list in ["conditions", "medications", "allergies", "immunizations", "procedures", "reports"] {
            for item in profile[list].as_array().unwrap() {
                if item["name"].as_str().is_none_or(|n| n.trim().is_empty()) {
                    problems.push(format!("{name}: {list} lists one without a name: {item}"));
                }
            }
        }
        if !wanted.is_empty() {
            let found = fetched_numbers(&user, &profile).await;
            for value in &wanted {
                if !found.contains(value) {
                    problems.push(format!("{name}: {} not fetched; got {found:?}", *value as f64 / 1e6));
                }
            }
        }
        first.insert(name, answer);
    }

    // The same files again: nothing is stored twice, each stored resource is already there.
    for (path, _, _) in &files {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let again = import_fhir_json(store, name, &std::fs::read(path).unwrap(), false).await;
        let before = &first[name].summary;
        let after = &again.summary;
        assert_eq!((after.created, after.updated, after.removed), (0, 0, 0), "{name} stored twice: {:?}", again.body);
        assert_eq!(after.unchanged, before.created + before.removed + before.unchanged, "{name}: {:?}", again.body);
        assert_eq!((after.skipped, after.invalid.len()), (before.skipped, before.invalid.len()), "{name}");
    }

    println!("HL7 R4 examples ({PACKAGE}): {} files", files.len());
    for ((from, resource_type), counts) in &tally {
        println!("  {from:<24} {resource_type:<22} {counts:?}");
    }
    for (reason, count) in &reasons {
        println!("  {count:>5} x {reason}");
    }
    println!("  clinical resources refused:");
    for (file, resource, reason) in &refused_clinical {
        println!("    {file} {resource}: {reason}");
    }
    let refused: Vec<(&str, &str)> = refused_clinical.iter().map(|(f, r, _)| (f.as_str(), r.as_str())).collect();
    let expected: Vec<(&str, &str)> = REFUSED.iter().map(|(f, r, _)| (*f, *r)).collect();
    assert_eq!(refused, expected, "the clinical resources refused changed");
    for ((_, _, reason), (file, _, start)) in refused_clinical.iter().zip(REFUSED) {
        assert!(reason.starts_with(start), "{file}: {reason}");
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    published_facts(&env).await;

    // A `document` or `message` Bundle is refused whole, with the types that are read.
    let father = std::fs::read(dir.join("Bundle-father.json")).unwrap();
    let answer = import_fhir_json(store, "father", &father, false).await;
    let why = answer.body["issue"][0]["diagnostics"].as_str().unwrap();
    assert_eq!(answer.status, 400, "{why}");
    assert!(why.contains("\"document\" is not imported") && why.contains("collection"), "{why}");
}

/// Facts of the published examples, read back through the tools.
async fn published_facts(env: &Env) {
    // Observation f001: glucose 6.3 mmol/L, the laboratory's range 3.1-6.2 and its `H`.
    let user = env.user("Observation-f001").await;
    let answer = user.tool("fetch_health_data", json!({"indicators": ["15074-8"]})).await.ok().clone();
    let glucose = answer["indicators"].as_object().unwrap().values().find(|s| s["code"] == "15074-8").unwrap();
    assert_eq!(glucose["reference_range"], json!({"low": 3.1, "high": 6.2, "unit": "mmol/L", "origin": "source"}));
    let point = &glucose["data"][0];
    assert_eq!((point["value"].as_f64(), point["unit"].as_str()), (Some(6.3), Some("mmol/l")), "as spelt: {answer}");
    assert_eq!((point["interpretation"].as_str(), point["flag"].as_str()), (Some("H"), Some("high")));
    assert!(point["time"].as_str().unwrap().starts_with("2013-04-02"), "{point}");

    // MedicationStatement example001: the drug named by its contained Medication.
    let user = env.user("MedicationStatement-example001").await;
    let profile = user.tool("get_user_health_profile", json!({})).await.ok().clone();
    let medication = &profile["medications"][0];
    assert_eq!((medication["name"].as_str(), medication["status"].as_str()), (Some("Tylenol PM"), Some("active")));

    // MedicationRequest medrx0323: a TPN whose contained Medication names only ingredients.
    let user = env.user("MedicationRequest-medrx0323").await;
    let profile = user.tool("get_user_health_profile", json!({})).await.ok().clone();
    let name = profile["medications"][0]["name"].as_str().unwrap();
    assert!(name.starts_with("Clinimix 4.25/10 sulfite-free") && name.contains(" + "), "{name}");

    // The lipids Bundle: the report's four results linked to its Observations, with values.
    let user = env.user("Bundle-lipids").await;
    let profile = user.tool("get_user_health_profile", json!({})).await.ok().clone();
    let report = &profile["reports"][0];
    let results: Vec<(&str, &str)> = report["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {report}"))
        .iter()
        .map(|r| (r["source_id"].as_str().unwrap_or_default(), r["value"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(
        results,
        [
            ("Observation/cholesterol", "6.3 mmol/L"),
            ("Observation/triglyceride", "1.3 mmol/L"),
            ("Observation/hdlcholesterol", "1.3 mmol/L"),
            ("Observation/ldlcholesterol", "4.6 mmol/L"),
        ],
        "{report}"
    );
}
