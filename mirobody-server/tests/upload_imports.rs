//! Uploads that are health data, through the real binary: a person with no data uploads a
//! FHIR bundle through an upload link's page, a CSV and NDJSON through `/files`, an Apple
//! Health export through `upload_file`, and the health tools find the values with the file as
//! their source. A file cut short or not what it claims is reported with nothing imported, an
//! upload made again stores nothing twice, a PDF is still a document, and the bounds hold.

mod common;

use base64::Engine;
use common::{fresh_data_dir, request, server_port, session, start_with, token, tool};
use serde_json::{Value, json};

const SYNTHEA: &[u8] = include_bytes!("fixtures/fhir/synthea_patient.json");
const LAB_PDF: &[u8] = include_bytes!("../../mirobody-tools/assets/lab-report.pdf");

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

fn link_path(port: u16, token: &str, sid: &str) -> String {
    let link = tool(port, token, sid, "upload_link", json!({}));
    let url = link["url"].as_str().unwrap_or_else(|| panic!("{link}")).to_owned();
    url.strip_prefix(&format!("http://127.0.0.1:{port}")).unwrap().to_owned()
}

/// The values of `indicator`'s first series, each with its file.
fn values(port: u16, token: &str, sid: &str, indicator: &str) -> Vec<Value> {
    let found = tool(port, token, sid, "fetch_health_data", json!({"indicators": [indicator]}));
    found["indicators"]
        .as_object()
        .and_then(|series| series.values().next())
        .and_then(|series| series["data"].as_array().cloned())
        .unwrap_or_default()
}

fn files(port: u16, token: &str, sid: &str) -> Vec<Value> {
    tool(port, token, sid, "list_files", json!({}))["files"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_fhir_bundle_through_an_upload_link_feeds_the_health_tools() {
    let data_dir = fresh_data_dir("upload-import-fhir");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &[]));
    let sid = session(port, &alice);

    // No data yet: the hint says what can be uploaded.
    let empty = tool(port, &alice, &sid, "fetch_health_data", json!({"indicators": ["2093-3"]}));
    let hint = empty["message"].as_str().unwrap_or_default();
    assert!(
        hint.contains("FHIR") && hint.contains("CSV") && hint.contains("export.zip") && hint.contains("upload_link"),
        "{empty}"
    );
    let (_, _, page) = request(port, "GET", &link_path(port, &alice, &sid), &[], b"");
    assert!(String::from_utf8_lossy(&page).contains("imported as your data"));

    let path = link_path(port, &alice, &sid);
    let (status, _, body) = request(port, "POST", &format!("{path}?filename=synthea.json"), &[], SYNTHEA);
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let uploaded = json_of(&body);
    let report = &uploaded["import"];
    assert_eq!(
        (report["format"].as_str(), report["complete"].as_bool()),
        (Some("fhir-bundle"), Some(true)),
        "{uploaded}"
    );
    assert_eq!(report["by_type"]["Observation"]["imported"], 3, "{report}");
    assert_eq!(report["by_type"]["Condition"]["imported"], 2, "{report}");
    assert_eq!(report["by_type"]["Patient"]["skipped"], 1, "{report}");
    let skipped = report["skipped"].as_array().unwrap();
    assert!(skipped.iter().any(|s| s["reason"] == "Claim: a type that is not imported"), "{report}");
    assert_eq!(report["refused_count"], 0, "{report}");
    assert!(report["message"].as_str().unwrap().starts_with("Imported 10 ("), "{report}");
    // The lipid panel's document is the person's file too, as POST /fhir stores it.
    assert_eq!(report["report_files"].as_array().map(Vec::len), Some(1), "{report}");
    let file_key = uploaded["file_key"].as_str().unwrap().to_owned();

    let cholesterol = values(port, &alice, &sid, "2093-3");
    assert_eq!(cholesterol.len(), 1, "{cholesterol:?}");
    assert_eq!(cholesterol[0]["file_key"], file_key.as_str(), "the upload is the value's source");
    let profile = tool(port, &alice, &sid, "get_user_health_profile", json!({}));
    assert!(profile.to_string().contains("Hyperlipidemia"), "{profile}");

    // Uploaded again: the same file, nothing stored twice.
    let path = link_path(port, &alice, &sid);
    let (status, _, body) = request(port, "POST", &format!("{path}?filename=again.json"), &[], SYNTHEA);
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let again = json_of(&body);
    assert_eq!((again["file_key"].as_str(), again["already_stored"].as_bool()), (Some(file_key.as_str()), Some(true)));
    assert_eq!((again["import"]["imported"].as_u64(), again["import"]["already_there"].as_u64()), (Some(0), Some(10)));
    assert_eq!(files(port, &alice, &sid).len(), 2, "the bundle and the report's document, once each");
    assert_eq!(values(port, &alice, &sid, "2093-3").len(), 1);

    // A transaction with bad entries stores none of its good ones, and says why.
    let observation = |value: Value| {
        json!({"resource": {"resourceType": "Observation", "status": "final",
            "code": {"coding": [{"system": "http://loinc.org", "code": "2085-9"}]},
            "effectiveDateTime": "2026-04-01", "valueQuantity": {"value": value, "unit": "mg/dL"}}})
    };
    let transaction = json!({"resourceType": "Bundle", "type": "transaction",
        "entry": [observation(json!(61)), observation(json!("high")), observation(json!("low"))]});
    let bearer = format!("Bearer {alice}");
    let (status, _, body) = request(
        port,
        "POST",
        "/files?filename=t.json",
        &[("Authorization", &bearer)],
        transaction.to_string().as_bytes(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let report = json_of(&body)["import"].clone();
    assert_eq!((report["complete"].as_bool(), report["imported"].as_u64()), (Some(false), Some(0)), "{report}");
    assert!(report["error"].as_str().unwrap().contains("2 entries are invalid"), "{report}");
    assert_eq!(report["refused"].as_array().map(Vec::len), Some(2), "{report}");
    assert_eq!(values(port, &alice, &sid, "2085-9").len(), 1, "only the bundle's HDL");
}

#[test]
fn csv_and_ndjson_through_files_and_what_is_refused() {
    let data_dir = fresh_data_dir("upload-import-csv");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let env = [("MIROBODY_UPLOADS__MAX_FILE_BYTES", "1000000")];
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &env));
    let bearer = format!("Bearer {alice}");
    let auth = [("Authorization", bearer.as_str())];
    let sid = session(port, &alice);

    // A CSV, whatever it is called: one row cannot be read and is said so.
    let csv = "Time,Indicator,Value,Unit\n2026-03-01T08:00:00Z,heart rate,61,bpm\n\
               2026-03-02T08:00:00Z,heart rate,64,bpm\nyesterday,heart rate,70,bpm\n";
    let (status, _, body) = request(port, "POST", "/files?filename=export.txt", &auth, csv.as_bytes());
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let uploaded = json_of(&body);
    let report = &uploaded["import"];
    assert_eq!((report["format"].as_str(), report["imported"].as_u64()), (Some("csv"), Some(2)), "{uploaded}");
    assert_eq!(report["refused_count"], 1, "{report}");
    assert!(report["refused"][0].as_str().unwrap().starts_with("line 4: the time"), "{report}");
    let heart = values(port, &alice, &sid, "heart rate");
    assert_eq!(heart.len(), 2, "{heart:?}");
    assert!(heart.iter().all(|v| v["file_key"] == uploaded["file_key"]), "{heart:?}");

    // NDJSON (FHIR Bulk Data), as multipart.
    let glucose = |id: &str, value: f64| {
        json!({"resourceType": "Observation", "id": id, "status": "final",
               "code": {"coding": [{"system": "http://loinc.org", "code": "2345-7", "display": "Glucose"}]},
               "effectiveDateTime": "2026-03-01T08:00:00Z",
               "valueQuantity": {"value": value, "unit": "mg/dL"}})
    };
    let ndjson = format!("{}\n{}\n{}\n", glucose("g1", 95.0), glucose("g2", 101.0), json!({"resourceType": "Patient"}));
    let boundary = "b0undary";
    let multipart = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"Observation.ndjson\"\r\n\
         Content-Type: application/fhir+ndjson\r\n\r\n{ndjson}\r\n--{boundary}--\r\n"
    );
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let headers = [("Authorization", bearer.as_str()), ("Content-Type", content_type.as_str())];
    let (status, _, body) = request(port, "POST", "/files", &headers, multipart.as_bytes());
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let uploaded = json_of(&body);
    assert_eq!(uploaded["import"]["format"], "fhir-ndjson", "{uploaded}");
    assert_eq!(uploaded["import"]["by_type"]["Observation"]["imported"], 2, "{uploaded}");
    assert_eq!(uploaded["import"]["by_type"]["Patient"]["skipped"], 1, "{uploaded}");
    let sugar = values(port, &alice, &sid, "2345-7");
    assert_eq!(sugar.len(), 2, "{sugar:?}");
    assert!(sugar.iter().all(|v| v["file_key"] == uploaded["file_key"]), "{sugar:?}");

    // Cut short: the last line is not JSON, and nothing of the file is imported.
    let cut = format!("{}\n{}", glucose("g3", 120.0), &glucose("g4", 130.0).to_string()[..40]);
    let (status, _, body) = request(port, "POST", "/files?filename=cut.ndjson", &auth, cut.as_bytes());
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let report = json_of(&body)["import"].clone();
    assert_eq!((report["complete"].as_bool(), report["imported"].as_u64()), (Some(false), Some(0)), "{report}");
    let error = report["error"].as_str().unwrap();
    assert!(error.starts_with("line 2: ") && error.contains("not JSON"), "{report}");
    // A "bundle" that is no JSON at all.
    let garbage =
        b"{\"resourceType\": \"Bundle\", \"type\": \"batch\", \"entry\": [{\"resource\": {\"resourceType\": \"Obs";
    let (status, _, body) = request(port, "POST", "/files?filename=bundle.json", &auth, garbage);
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let report = json_of(&body)["import"].clone();
    assert_eq!((report["format"].as_str(), report["complete"].as_bool()), (Some("fhir-bundle"), Some(false)));
    assert!(report["error"].as_str().unwrap().contains("not JSON"), "{report}");
    assert!(json_of(&body)["import"]["message"].as_str().unwrap().contains("could not be imported whole"));
    assert_eq!(values(port, &alice, &sid, "2345-7").len(), 2, "nothing more imported");

    // Bounds: more than 10,000 rows is refused whole; a file over the upload limit is not stored.
    let mut many = String::from("time,indicator,value\n");
    for i in 0..10_001 {
        many.push_str(&format!("2025-01-01T00:{:02}:{:02}Z,steps,{i}\n", i / 60 % 60, i % 60));
    }
    let (status, _, body) = request(port, "POST", "/files?filename=many.csv", &auth, many.as_bytes());
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let report = json_of(&body)["import"].clone();
    assert_eq!(report["imported"], 0, "{report}");
    assert!(report["error"].as_str().unwrap().contains("more than 10000 rows"), "{report}");
    let before = files(port, &alice, &sid).len();
    let huge = format!("time,indicator,value\n{}", "2025-01-01,steps,1\n".repeat(60_000));
    let (status, _, body) = request(port, "POST", "/files?filename=huge.csv", &auth, huge.as_bytes());
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    assert_eq!(files(port, &alice, &sid).len(), before, "nothing stored");

    // A PDF is a document still: stored, its text read, nothing imported.
    let (status, _, body) = request(port, "POST", "/files?filename=labs.pdf", &auth, LAB_PDF);
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let pdf = json_of(&body);
    assert!(pdf.get("import").is_none() && pdf["text_pending"] == true, "{pdf}");
    let read = tool(port, &alice, &sid, "read_file", json!({"file_key": pdf["file_key"]}));
    assert!(read["content"].as_str().unwrap_or_default().contains("Glucose 5.4 mmol/L"), "{read}");
}

#[test]
fn an_apple_health_export_through_upload_file() {
    let data_dir = fresh_data_dir("upload-import-apple");
    let port = server_port();
    let ana = token(&data_dir, port, "ana");
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &[]));
    let sid = session(port, &ana);
    let mut zip = std::io::Cursor::new(Vec::new());
    mirobody_health::apple::generate::write_zip(6, &mut zip).unwrap();
    let zip = zip.into_inner();
    let upload = |bytes: &[u8]| {
        let content = base64::engine::general_purpose::STANDARD.encode(bytes);
        tool(port, &ana, &sid, "upload_file", json!({"filename": "export.zip", "content_base64": content}))
    };

    // Cut short, a zip has no directory: it is no export, and no type taken either.
    let cut = upload(&zip[..zip.len() / 2]);
    assert!(cut["error"].as_str().unwrap_or_default().contains("not supported"), "{cut}");
    assert!(files(port, &ana, &sid).is_empty());

    let uploaded = upload(&zip);
    let report = &uploaded["import"];
    assert_eq!(
        (report["format"].as_str(), report["complete"].as_bool()),
        (Some("apple-health-zip"), Some(true)),
        "{uploaded}"
    );
    // 18 samples a day, 3 daily totals, 2 nights, a workout every other day (as the CLI import).
    assert_eq!(
        (report["imported"].as_u64(), uploaded["mime"].as_str()),
        (Some(141), Some("application/zip")),
        "{report}"
    );
    assert_eq!(report["by_type"]["HKQuantityTypeIdentifierStepCount"]["imported"], 6, "{report}");
    let skipped = report["skipped"].as_array().unwrap();
    assert!(skipped.iter().any(|s| s["reason"].as_str().unwrap().contains("not imported")), "{report}");
    let steps = values(port, &ana, &sid, "41950-7");
    assert_eq!(steps.len(), 6, "{steps:?}");
    assert!(steps.iter().all(|v| v["file_key"] == uploaded["file_key"]), "{steps:?}");

    let again = upload(&zip);
    assert_eq!((again["already_stored"].as_bool(), again["import"]["already_there"].as_u64()), (Some(true), Some(141)));
    assert_eq!(files(port, &ana, &sid).len(), 1);
}
