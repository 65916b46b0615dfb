//! Export and delete through the real binary: a person's data imported from the FHIR fixtures
//! and a file, exported as one Bundle, imported into an empty account, gives the same answer
//! from every health tool; the account deleted leaves nothing of theirs in the database file,
//! the object folder or the answers, and another person's data as it was.

mod common;

use std::path::Path;

use common::{clean_command, fresh_data_dir};
use serde_json::{Value, json};

fn run(data_dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = clean_command()
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("RUST_LOG", "error")
        .output()
        .expect("run the binary");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

fn call(data_dir: &Path, user: &str, tool: &str, arguments: &Value) -> Value {
    let (_, out, _) = run(data_dir, &["tools", "call", tool, &arguments.to_string(), "--user", user]);
    let result: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    result["structuredContent"].clone()
}

/// Every health tool's answer for `user`, with what may differ between two accounts (the
/// subject's id and label) taken out.
fn answers(data_dir: &Path, user: &str) -> Vec<(String, Value)> {
    let profile = call(data_dir, user, "get_user_health_profile", &json!({}));
    let names: Vec<String> = profile["latest"]
        .as_array()
        .map(|latest| latest.iter().filter_map(|v| v["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    assert!(!names.is_empty(), "the fixtures have values: {profile}");
    let calls = [
        ("get_user_health_profile", json!({})),
        ("family_health", json!({"count": 500})),
        ("search_health_indicators", json!({"keywords": ["cholesterol", "glucose", "weight", "pressure"]})),
        ("fetch_health_data", json!({"indicators": names, "limit": 1000})),
    ];
    calls
        .into_iter()
        .map(|(tool, arguments)| {
            let mut answer = call(data_dir, user, tool, &arguments);
            if let Some(fields) = answer.as_object_mut() {
                fields.remove("subject");
            }
            (tool.to_owned(), answer)
        })
        .collect()
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle.as_bytes())
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if holds(&std::fs::read(&path).unwrap_or_default(), needle) {
            found.push(path.display().to_string());
        }
    }
    found
}

#[test]
fn an_export_imports_into_a_new_account_with_the_same_answers_and_a_deleted_account_leaves_nothing() {
    let data_dir = fresh_data_dir("export-delete");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fhir");
    let (ada, bob, carol) = ("ada-7f3e9c", "bob-2d81aa", "carol-5b0c4e");
    for fixture in ["synthea_patient.json", "hl7_examples.json"] {
        let path = fixtures.join(fixture);
        let (code, out, err) = run(&data_dir, &["import", "fhir", path.to_str().unwrap(), "--user", ada]);
        assert!(code == 0 || out.contains("stored"), "{out}{err}");
    }
    // A file of Ada's, with a value only it holds, and Carol's own data beside.
    let known = "Quokkaberry";
    let csv = data_dir.join("watch.csv");
    std::fs::write(&csv, format!("time,indicator,value,unit\n2026-01-05T07:00:00Z,{known},61,bpm\n")).unwrap();
    let (code, out, err) = run(&data_dir, &["import", "csv", csv.to_str().unwrap(), "--user", ada]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(&data_dir, &["import", "csv", csv.to_str().unwrap(), "--user", carol]);
    assert_eq!(code, 0, "{out}{err}");
    let upload = call(
        &data_dir,
        ada,
        "upload_file",
        &json!({"filename": "note.txt", "content_base64": "UXVva2thYmVycnkgbm90ZQ=="}),
    );

    // Export, then import into an empty account.
    let export = data_dir.join("ada-export.json");
    let (code, out, err) = run(&data_dir, &["export", "--user", ada, "--out", export.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let bundle: Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).expect("the export is JSON");
    assert_eq!((bundle["resourceType"].as_str(), bundle["type"].as_str()), (Some("Bundle"), Some("collection")));
    let entries = bundle["entry"].as_array().unwrap();
    assert_eq!(entries[0]["resource"]["resourceType"], "Patient");
    assert_eq!(entries[0]["resource"]["id"], ada);
    if let Some(key) = upload["file_key"].as_str() {
        let document = entries.iter().find(|e| e["resource"]["id"] == key).expect("the file is in the export");
        assert_eq!(document["resource"]["resourceType"], "DocumentReference");
        assert!(
            document["resource"]["content"][0]["attachment"]["url"].as_str().unwrap().contains("sig"),
            "{document}"
        );
    }
    let (code, out, err) = run(&data_dir, &["export", "--user", ada, "--out", export.to_str().unwrap()]);
    assert_ne!(code, 0, "an existing file is not overwritten: {out}{err}");
    let (code, out, err) = run(&data_dir, &["import", "fhir", export.to_str().unwrap(), "--user", bob]);
    assert!(code == 0 || out.contains("stored"), "{out}{err}");
    assert_eq!(answers(&data_dir, bob), answers(&data_dir, ada), "the same answers from every health tool");
    // What once needed the rest of its bundle came back whole: the MedicationRequest naming a
    // Medication of its bundle, and the lipid panel's results referenced by `urn:uuid:`.
    let profile = call(&data_dir, bob, "get_user_health_profile", &json!({}));
    for kind in ["medications", "immunizations", "procedures", "reports"] {
        assert!(profile[kind].as_array().is_some_and(|list| !list.is_empty()), "{kind}: {profile}");
    }
    assert_eq!(profile["medications"].as_array().unwrap().len(), 4, "{profile}");
    assert!(profile["medications"].to_string().contains("Oxycodone"), "named by its Medication: {profile}");
    assert!(profile["reports"].to_string().contains("214.3 mg/dL"), "a report's results have values: {profile}");
    let written = serde_json::to_string(&bundle).unwrap();
    assert!(written.contains("\"#exported-medication\"") && written.contains("\"urn:uuid:"), "{written}");

    // A wrong confirmation deletes nothing.
    let (code, _, err) = run(&data_dir, &["delete", "account", "--user", ada, "--confirm", bob]);
    assert_eq!(code, 2, "{err}");
    assert!(!call(&data_dir, ada, "get_user_health_profile", &json!({}))["latest"].as_array().unwrap().is_empty());
    let carol_before = answers(&data_dir, carol);

    let (code, out, err) = run(&data_dir, &["delete", "account", "--user", ada, "--confirm", ada]);
    assert_eq!(code, 0, "{out}{err}");
    let profile = call(&data_dir, ada, "get_user_health_profile", &json!({}));
    assert_eq!(profile["latest"], json!([]), "{profile}");
    assert_eq!(call(&data_dir, ada, "list_files", &json!({}))["files"], json!([]));
    std::fs::remove_file(&export).unwrap();
    std::fs::remove_file(&csv).unwrap();
    // Nothing of Ada's in any file of the data folder (the database, its WAL, the objects).
    for needle in [ada, "Quokkaberry note"] {
        assert_eq!(files_holding(&data_dir, needle), Vec::<String>::new(), "nothing holds {needle}");
    }
    assert_eq!(answers(&data_dir, carol), carol_before, "another person's data is untouched");
}

/// The same over HTTP: `GET /export` is the caller's own Bundle (a reader in their care circle
/// gets theirs, not the sharer's), `POST /delete` deletes a value, refuses an account without
/// the confirmation, and deletes it with one.
#[test]
fn export_and_delete_over_http() {
    use common::{KillOnDrop, request, server_port, start, token};
    let data_dir = fresh_data_dir("export-delete-http");
    let port = server_port();
    let _server = KillOnDrop(start(&data_dir, port));
    let (ada, bob) = ("ada-http", "bob-http");
    let (ada_token, bob_token) = (token(&data_dir, port, ada), token(&data_dir, port, bob));
    let auth = |t: &str| format!("Bearer {t}");
    let glucose = json!({"resourceType": "Observation", "id": "g1", "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0", "display": "Glucose"}]},
        "effectiveDateTime": "2024-01-02T08:00:00Z", "valueQuantity": {"value": 5.4, "unit": "mmol/L"}});
    let headers = |t: &str| {
        vec![("authorization".to_owned(), auth(t)), ("content-type".to_owned(), "application/json".to_owned())]
    };
    let send = |method: &str, path: &str, t: &str, body: &Value| {
        let owned = headers(t);
        let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let bytes = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
        let (status, _, body) = request(port, method, path, &pairs, &bytes);
        (status, String::from_utf8_lossy(&body).into_owned())
    };
    let (status, body) = send("POST", "/fhir", &ada_token, &glucose);
    assert!(status == 200 || status == 201, "{status} {body}");
    let (status, _) = send("POST", "/circle/share", &ada_token, &json!({"reader": bob}));
    let _ = status;

    let (status, body) = send("GET", "/export", &ada_token, &Value::Null);
    assert_eq!(status, 200, "{body}");
    let bundle: Value = serde_json::from_str(&body).expect("the export is JSON");
    assert!(bundle["entry"].as_array().unwrap().iter().any(|e| e["resource"]["id"] == "g1"), "{bundle}");
    let (_, body) = send("GET", "/export", &bob_token, &Value::Null);
    assert!(!body.contains("g1"), "a reader exports only their own: {body}");
    let (status, _, _) = request(port, "GET", "/export", &[], b"");
    assert_eq!(status, 401, "no caller, no export");

    let (status, body) = send("POST", "/delete", &ada_token, &json!({"kind": "value", "id": "Observation/g1"}));
    assert_eq!(status, 200, "{body}");
    let (status, _) = send("POST", "/delete", &ada_token, &json!({"kind": "value", "id": "Observation/g1"}));
    assert_eq!(status, 404, "gone already");
    let (status, body) = send("POST", "/delete", &ada_token, &json!({"kind": "account"}));
    assert_eq!(status, 400, "no confirmation, nothing deleted: {body}");
    let (status, body) = send("POST", "/delete", &ada_token, &json!({"kind": "teapot"}));
    assert_eq!(status, 400, "{body}");
    let (status, body) = send("POST", "/delete", &ada_token, &json!({"kind": "account", "confirm": ada}));
    assert_eq!(status, 200, "{body}");
    let (_, body) = send("GET", "/export", &ada_token, &Value::Null);
    assert!(!body.contains("g1"), "{body}");
}
