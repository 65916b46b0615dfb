//! A person's health data in and out, through the real binary: uploads (raw, multipart, by
//! personal secret), FHIR imports, the health queries over MCP, the care circle over HTTP, and
//! upload links (single use, revocable, naming no one). Each refusal is checked to have stored
//! nothing.

mod common;

use common::{fresh_data_dir, request, server_port, session, start_with, token, tool};
use serde_json::{Value, json};

/// A one-page lab report, made as `mirobody-tools/assets/README.md` says.
const LAB_PDF: &[u8] = include_bytes!("../../mirobody-tools/assets/lab-report.pdf");

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

fn files(port: u16, token: &str, sid: &str) -> Vec<Value> {
    tool(port, token, sid, "list_files", json!({}))["files"].as_array().cloned().unwrap_or_default()
}

#[test]
fn uploads_are_checked_stored_and_read_back() {
    let data_dir = fresh_data_dir("uploads");
    let port = server_port();
    let (alice, bob) = (token(&data_dir, port, "alice"), token(&data_dir, port, "bob"));
    let key = "ab".repeat(32);
    let env = [
        ("MIROBODY_UPLOADS__MAX_FILE_BYTES", "200000"),
        ("MIROBODY_UPLOADS__MAX_FILES_PER_USER", "4"),
        ("MIROBODY_BACKENDS__FILE_ENCRYPTION_KEY", key.as_str()),
    ];
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &env));
    let bearer = format!("Bearer {alice}");
    let sid = session(port, &alice);

    // A raw text body with its name in the query.
    let text = "Glucose 5.4 mmol/L\nHbA1c 5.9 %\n";
    let (status, _, body) = request(
        port,
        "POST",
        "/files?filename=labs%20march.txt",
        &[("Authorization", &bearer), ("Content-Type", "text/plain")],
        text.as_bytes(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let uploaded = json_of(&body);
    assert_eq!(
        (uploaded["filename"].as_str(), uploaded["mime"].as_str()),
        (Some("labs march.txt"), Some("text/plain"))
    );
    assert_eq!((uploaded["size"].as_u64(), uploaded["has_text"].as_bool()), (Some(text.len() as u64), Some(true)));
    let read = tool(port, &alice, &sid, "read_file", json!({"file_key": uploaded["file_key"]}));
    assert_eq!(read["content"], text);
    // At rest, neither the file nor its text is readable.
    let stored = std::fs::read_dir(data_dir.join("files")).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap());
    let stored: Vec<Vec<u8>> = stored.collect();
    assert_eq!(stored.len(), 2, "the file and its text");
    assert!(stored.iter().all(|bytes| !bytes.windows(7).any(|w| w == b"Glucose")), "encrypted at rest");

    // A PDF in a multipart body, named .txt: its type comes from its content.
    let boundary = "XyZb0undary";
    let mut multipart = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nignored\r\n--{boundary}\r\n\
         Content-Disposition: form-data; name=\"file\"; filename=\"report.txt\"\r\nContent-Type: text/plain\r\n\r\n"
    )
    .into_bytes();
    multipart.extend_from_slice(LAB_PDF);
    multipart.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let (status, _, body) =
        request(port, "POST", "/files", &[("Authorization", &bearer), ("Content-Type", &content_type)], &multipart);
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let pdf = json_of(&body);
    // Answered once stored: its text is read after, in a sandboxed child, and read_file waits
    // for it.
    assert_eq!((pdf["mime"].as_str(), pdf["text_pending"].as_bool()), (Some("application/pdf"), Some(true)));
    let read = tool(port, &alice, &sid, "read_file", json!({"file_key": pdf["file_key"]}));
    let content = read["content"].as_str().unwrap_or_default();
    assert!(content.contains("Glucose") && content.contains("5.4"), "{read}");
    let listed = files(port, &alice, &sid);
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|f| f["has_text"] == true), "{listed:?}");

    // Refusals: each is clear, and nothing is stored.
    let elf = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00";
    let refusals: [(&[u8], &str, u16, &str); 3] = [
        (elf, "/files?filename=tool.pdf", 415, "PDF"),
        (b"", "/files?filename=empty.txt", 400, "empty"),
        (&[b'a'; 200_001], "/files?filename=big.txt", 413, "larger than"),
    ];
    for (bytes, path, want, says) in refusals {
        let (status, _, body) = request(port, "POST", path, &[("Authorization", &bearer)], bytes);
        let error = json_of(&body)["error"].as_str().unwrap_or_default().to_owned();
        assert_eq!(status, want, "{path}: {error}");
        assert!(error.contains(says), "{path}: {error}");
    }
    let (status, head, _) = request(port, "POST", "/files?filename=a.txt", &[], b"anonymous");
    assert_eq!(status, 401, "{head}");
    assert!(head.to_ascii_lowercase().contains("www-authenticate: bearer"), "{head}");
    assert_eq!(files(port, &alice, &sid).len(), 2, "a refused upload stores nothing");

    // The quota: two more fit, the fifth is refused and the four stay.
    for i in 0..2 {
        let path = format!("/files?filename=n{i}.md");
        let (status, _, _) = request(port, "POST", &path, &[("Authorization", &bearer)], b"# note\n");
        assert_eq!(status, 201);
    }
    let (status, _, body) = request(port, "POST", "/files?filename=n5.md", &[("Authorization", &bearer)], b"# five\n");
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    assert!(json_of(&body)["error"].as_str().unwrap().contains("delete some"));
    assert_eq!(files(port, &alice, &sid).len(), 4);

    // Another person cannot read them, nor see them.
    let bob_sid = session(port, &bob);
    let stolen = tool(port, &bob, &bob_sid, "read_file", json!({"file_key": uploaded["file_key"]}));
    assert!(stolen["error"].as_str().unwrap_or_default().contains("not found"), "{stolen}");
    assert!(files(port, &bob, &bob_sid).is_empty());

    // A personal MCP URL's secret in the X-MCP-Secret header uploads as its owner.
    let output = common::clean_command()
        .args(["secret", "create", "--user", "bob"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    let url = String::from_utf8(output.stdout).unwrap();
    let secret = mirobody_auth::PersonalUrl::secret_of(&url).unwrap().to_owned();
    let (status, _, body) =
        request(port, "POST", "/files?filename=bp.csv", &[("X-MCP-Secret", &secret)], b"time,indicator,value\n");
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json_of(&body)["mime"], "text/csv");
    assert_eq!(files(port, &bob, &bob_sid).len(), 1);
}

fn glucose(id: &str, value: Value, time: &str) -> Value {
    json!({"resourceType": "Observation", "id": id, "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0", "display": "Glucose"}]},
        "subject": {"reference": "Patient/someone-else"},
        "effectiveDateTime": time, "valueQuantity": {"value": value, "unit": "mmol/L"}})
}

fn bundle(kind: &str, resources: Vec<Value>) -> Vec<u8> {
    let entries: Vec<Value> = resources.into_iter().map(|r| json!({"resource": r})).collect();
    json!({"resourceType": "Bundle", "type": kind, "entry": entries}).to_string().into_bytes()
}

#[test]
fn fhir_imports_feed_the_health_queries() {
    let data_dir = fresh_data_dir("fhir");
    let port = server_port();
    let (alice, bob) = (token(&data_dir, port, "alice"), token(&data_dir, port, "bob"));
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &[]));
    let bearer = format!("Bearer {alice}");
    let headers = [("Authorization", bearer.as_str()), ("Content-Type", "application/fhir+json")];
    let sid = session(port, &alice);

    // Nothing yet: said plainly, with how to add data, but no link: one is made only when the
    // person asks for it.
    let empty = tool(port, &alice, &sid, "search_health_indicators", json!({"keywords": ["blood sugar"]}));
    assert_eq!(empty["indicators"], json!([]));
    let message = empty["message"].as_str().unwrap();
    assert!(message.contains("no data") && message.contains("upload_link"), "{empty}");
    assert!(empty.get("upload_url").is_none() && !empty.to_string().contains("/upload/"), "{empty}");

    // A transaction with one bad entry stores nothing.
    let bad = bundle(
        "transaction",
        vec![glucose("g1", json!(5.4), "2026-03-01T08:00:00Z"), glucose("g2", json!("5.9"), "2026-03-02T08:00:00Z")],
    );
    let (status, _, body) = request(port, "POST", "/fhir", &headers, &bad);
    let outcome = json_of(&body);
    assert_eq!((status, outcome["resourceType"].as_str()), (400, Some("OperationOutcome")), "{outcome}");
    assert!(outcome.to_string().contains("Bundle.entry[1]"), "{outcome}");
    let none = tool(port, &alice, &sid, "search_health_indicators", json!({"keywords": ["glucose"]}));
    assert_eq!(none["indicators"], json!([]), "the transaction stored nothing");

    // A batch keeps the valid entries and reports each other one by index.
    let bp = json!({"resourceType": "Observation", "id": "bp1", "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "85354-9", "display": "Blood pressure panel"}]},
        "effectiveDateTime": "2026-03-03T09:00:00Z",
        "component": [
            {"code": {"coding": [{"system": "http://loinc.org", "code": "8480-6", "display": "Systolic blood pressure"}]}, "valueQuantity": {"value": 128, "unit": "mmHg"}},
            {"code": {"coding": [{"system": "http://loinc.org", "code": "8462-4", "display": "Diastolic blood pressure"}]}, "valueQuantity": {"value": 82, "unit": "mmHg"}}]});
    let condition = json!({"resourceType": "Condition", "id": "c1", "code": {"text": "Type 2 diabetes"},
        "clinicalStatus": {"coding": [{"code": "active"}]}, "onsetDateTime": "2024-05-01"});
    let allergy = json!({"resourceType": "AllergyIntolerance", "id": "a1", "code": {"text": "Penicillin"}});
    let medication = json!({"resourceType": "MedicationStatement", "id": "m1", "status": "active",
        "medicationCodeableConcept": {"text": "Metformin 500 mg"}});
    let entries = vec![
        glucose("g1", json!(5.4), "2026-03-01T08:00:00Z"),
        glucose("g2", json!(6.1), "2026-04-01T08:00:00Z"),
        json!({"resourceType": "Patient", "id": "p1"}),
        json!({"resourceType": "Observation", "id": "nocode", "effectiveDateTime": "2026-03-01"}),
        bp,
        condition,
        allergy,
        medication,
    ];
    let (status, _, body) = request(port, "POST", "/fhir", &headers, &bundle("batch", entries.clone()));
    let response = json_of(&body);
    assert_eq!((status, response["type"].as_str()), (200, Some("batch-response")), "{response}");
    let statuses: Vec<&str> =
        response["entry"].as_array().unwrap().iter().map(|e| e["response"]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses[..4], ["201 Created", "201 Created", "422 Unprocessable Entity", "400 Bad Request"]);
    assert!(statuses[4..].iter().all(|s| *s == "201 Created"), "{statuses:?}");
    // The same bundle again: nothing is duplicated.
    let (_, _, body) = request(port, "POST", "/fhir", &headers, &bundle("batch", entries));
    let again = json_of(&body);
    assert_eq!(again["entry"][0]["response"]["status"], "200 OK", "{again}");
    // One Observation on its own.
    let (status, _, body) = request(
        port,
        "POST",
        "/fhir/Observation",
        &headers,
        glucose("g3", json!(5.0), "2026-05-01").to_string().as_bytes(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let (status, _, _) = request(port, "POST", "/fhir/Observation", &headers, b"{not json");
    assert_eq!(status, 400);

    // The queries see it, by common names too.
    let found = tool(port, &alice, &sid, "search_health_indicators", json!({"keywords": ["blood sugar", "BP"]}));
    let codes: Vec<&str> =
        found["indicators"].as_array().unwrap().iter().map(|i| i["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"2339-0") && codes.contains(&"8480-6") && codes.contains(&"8462-4"), "{found}");
    let glucose_entry = found["indicators"].as_array().unwrap().iter().find(|i| i["code"] == "2339-0").unwrap().clone();
    assert_eq!(glucose_entry["count"], 3, "{glucose_entry}");
    let series = tool(
        port,
        &alice,
        &sid,
        "fetch_health_data",
        json!({"indicators": ["glucose"], "start_time": "2026-03-01", "end_time": "2026-04-30"}),
    );
    let data = &series["indicators"]["Glucose"]["data"];
    assert_eq!(data.as_array().map(Vec::len), Some(2), "{series}");
    assert_eq!((data[0]["value"].as_f64(), data[1]["value"].as_f64()), (Some(5.4), Some(6.1)));
    assert_eq!(data[0]["unit"], "mmol/L");
    let profile = tool(port, &alice, &sid, "get_user_health_profile", json!({}));
    assert_eq!(profile["conditions"][0]["name"], "Type 2 diabetes", "{profile}");
    assert_eq!(profile["medications"][0]["name"], "Metformin 500 mg");
    assert_eq!(profile["allergies"][0]["name"], "Penicillin");
    let latest_glucose = profile["latest"].as_array().unwrap().iter().find(|l| l["code"] == "2339-0").unwrap().clone();
    assert_eq!(latest_glucose["value"], 5.0);

    // Bob sees none of it: not by naming alice, not by asking for his own.
    let bob_sid = session(port, &bob);
    let denied = tool(port, &bob, &bob_sid, "fetch_health_data", json!({"indicators": ["glucose"], "member": "alice"}));
    assert!(denied["error"].as_str().unwrap_or_default().contains("No circle member"), "{denied}");
    let own = tool(port, &bob, &bob_sid, "get_user_health_profile", json!({}));
    assert_eq!((own["latest"].clone(), own["conditions"].clone()), (json!([]), json!([])), "{own}");
}

#[test]
fn the_care_circle_is_managed_and_revocation_holds_at_once() {
    let data_dir = fresh_data_dir("circle");
    let port = server_port();
    let (alice, bob, carol) =
        (token(&data_dir, port, "alice"), token(&data_dir, port, "bob"), token(&data_dir, port, "carol"));
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &[]));
    let auth = |t: &str| format!("Bearer {t}");
    let (a, b, c) = (auth(&alice), auth(&bob), auth(&carol));
    let json_headers =
        |bearer: &str| vec![("Authorization", bearer.to_owned()), ("Content-Type", "application/json".to_owned())];
    let post = |bearer: &str, path: &str, body: &str| {
        let headers = json_headers(bearer);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let (status, _, body) = request(port, "POST", path, &headers, body.as_bytes());
        (status, json_of(&body))
    };
    let glucose_body = bundle("batch", vec![glucose("g1", json!(5.4), "2026-03-01T08:00:00Z")]);
    let (status, _, _) = request(port, "POST", "/fhir", &[("Authorization", &a)], &glucose_body);
    assert_eq!(status, 200);

    // Alice invites bob; carol cannot accept it, bob can.
    let (status, invite) = post(&a, "/circle/invites", r#"{"invitee": "bob", "nickname": "Alice"}"#);
    assert_eq!(status, 201, "{invite}");
    let id = invite["id"].as_i64().unwrap();
    let (status, _) = post(&a, "/circle/invites", r#"{"invitee": "alice"}"#);
    assert_eq!(status, 400, "nobody invites themselves");
    let (status, _) = post(&c, &format!("/circle/invites/{id}/accept"), "");
    assert_eq!(status, 404);
    let bob_sid = session(port, &bob);
    let before = tool(port, &bob, &bob_sid, "fetch_health_data", json!({"indicators": ["glucose"], "member": "Alice"}));
    assert!(before["error"].is_string(), "not before accepting: {before}");
    let (status, accepted) = post(&b, &format!("/circle/invites/{id}/accept"), "");
    assert_eq!((status, accepted["owner"].as_str()), (200, Some("alice")), "{accepted}");
    let shared = tool(port, &bob, &bob_sid, "fetch_health_data", json!({"indicators": ["glucose"], "member": "Alice"}));
    assert_eq!(shared["indicators"]["Glucose"]["data"][0]["value"], 5.4, "{shared}");
    let (status, _, body) = request(port, "GET", "/circle", &[("Authorization", &a)], b"");
    assert_eq!(status, 200);
    assert_eq!(json_of(&body)["my_readers"][0]["user_id"], "bob");

    // Alice ends it: bob's very next read is refused.
    let (status, _, body) = request(port, "DELETE", "/circle/members/bob", &[("Authorization", &a)], b"");
    assert_eq!((status, json_of(&body)["revoked"].as_bool()), (200, Some(true)));
    let after = tool(port, &bob, &bob_sid, "fetch_health_data", json!({"indicators": ["glucose"], "member": "Alice"}));
    assert!(after["error"].is_string(), "{after}");

    // A personal URL's secret may not widen the circle; bad bodies are refused.
    let output = common::clean_command()
        .args(["secret", "create", "--user", "alice"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    let url = String::from_utf8(output.stdout).unwrap();
    let secret = mirobody_auth::PersonalUrl::secret_of(&url).unwrap().to_owned();
    let (status, _, _) =
        request(port, "POST", "/circle/invites", &[("X-MCP-Secret", &secret)], br#"{"invitee":"carol"}"#);
    assert_eq!(status, 403);
    let (status, _) = post(&a, "/circle/invites", r#"{"invitee": "carol", "admin": true}"#);
    assert_eq!(status, 400);
    let (status, _, _) = request(port, "POST", "/circle/invites", &[], br#"{"invitee":"carol"}"#);
    assert_eq!(status, 401);
}

// The path of the link `upload_link` makes, checked to name no one.
fn new_link(port: u16, token: &str, sid: &str) -> String {
    let link = tool(port, token, sid, "upload_link", json!({}));
    let url = link["url"].as_str().unwrap_or_else(|| panic!("{link}")).to_owned();
    assert!(!url.contains("alice"), "the link names no one: {url}");
    url.strip_prefix(&format!("http://127.0.0.1:{port}")).unwrap().to_owned()
}

#[test]
fn an_upload_link_stores_one_file_as_its_user() {
    let data_dir = fresh_data_dir("upload-link");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &[]));
    let sid = session(port, &alice);
    let link = tool(port, &alice, &sid, "upload_link", json!({}));
    assert_eq!((link["uses"].as_u64(), link["expires_in"].as_u64()), (Some(1), Some(900)), "{link}");
    let path = new_link(port, &alice, &sid);

    // Showing the page takes no use.
    for _ in 0..2 {
        let (status, head, page) = request(port, "GET", &path, &[], b"");
        assert_eq!(status, 200);
        let head = head.to_ascii_lowercase();
        assert!(
            head.contains("content-security-policy: default-src 'none'")
                && head.contains("referrer-policy: no-referrer"),
            "{head}"
        );
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("<input") && !page.contains(&path), "the page is the same for every link");
    }

    // A file refused for its content does not burn the link.
    let elf = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00";
    let (status, _, _) = request(port, "POST", &format!("{path}?filename=tool.pdf"), &[], elf);
    assert_eq!(status, 415);

    let (status, head, body) = request(
        port,
        "POST",
        &format!("{path}?filename=notes.md"),
        &[("Content-Type", "text/markdown")],
        b"# Notes\nslept 7h\n",
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    assert!(head.to_ascii_lowercase().contains("upload-link-uses-left: 0"), "{head}");
    let listed = files(port, &alice, &sid);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["filename"], "notes.md");

    // Used: the page and a second upload are refused, and nothing more is stored.
    let (status, _, body) = request(port, "POST", &format!("{path}?filename=again.md"), &[], b"again");
    assert_eq!(status, 403);
    assert!(json_of(&body)["error"].as_str().unwrap().contains("has been used"), "{}", String::from_utf8_lossy(&body));
    let (status, _, page) = request(port, "GET", &path, &[], b"");
    assert_eq!(status, 403);
    assert!(String::from_utf8_lossy(&page).contains("ask for a new one"));
    // Not a link at all.
    let last = if path.ends_with('A') { 'B' } else { 'A' };
    let tampered = format!("{}{last}", &path[..path.len() - 1]);
    let (status, _, _) = request(port, "POST", &format!("{tampered}?filename=x.txt"), &[], b"x");
    assert_eq!(status, 403);
    assert_eq!(files(port, &alice, &sid).len(), 1);
}

#[test]
fn upload_links_expire_and_are_revoked() {
    let data_dir = fresh_data_dir("upload-link-end");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let env = [("MIROBODY_UPLOADS__LINK_TTL", "2"), ("MIROBODY_UPLOADS__LINK_USES", "2")];
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &env));
    let sid = session(port, &alice);
    let bearer = format!("Bearer {alice}");

    // Revoked by whoever holds it.
    let held = new_link(port, &alice, &sid);
    let (status, _, _) = request(port, "DELETE", &held, &[], b"");
    assert_eq!(status, 204);
    let (status, _, body) = request(port, "POST", &format!("{held}?filename=a.txt"), &[], b"a");
    assert_eq!(status, 403);
    assert!(json_of(&body)["error"].as_str().unwrap().contains("revoked"));

    // All of a person's, by the person signed in (and only with credentials).
    let (one, two) = (new_link(port, &alice, &sid), new_link(port, &alice, &sid));
    let (status, _, _) = request(port, "DELETE", "/upload", &[], b"");
    assert_eq!(status, 401);
    let (status, _, body) = request(port, "DELETE", "/upload", &[("Authorization", &bearer)], b"");
    assert_eq!((status, json_of(&body)["revoked"].as_u64()), (200, Some(2)));
    for path in [&one, &two] {
        let (status, _, _) = request(port, "GET", path, &[], b"");
        assert_eq!(status, 403);
    }
    // By the model, when the person asks.
    let three = new_link(port, &alice, &sid);
    assert_eq!(tool(port, &alice, &sid, "upload_link", json!({"revoke_all": true}))["revoked"], 1);
    let (status, _, _) = request(port, "POST", &format!("{three}?filename=a.txt"), &[], b"a");
    assert_eq!(status, 403);

    // Two uses when so configured, until it expires.
    let path = new_link(port, &alice, &sid);
    let (status, head, _) = request(port, "POST", &format!("{path}?filename=one.txt"), &[], b"one");
    assert_eq!(status, 201);
    assert!(head.to_ascii_lowercase().contains("upload-link-uses-left: 1"), "{head}");
    std::thread::sleep(std::time::Duration::from_millis(3_100));
    let (status, _, body) = request(port, "POST", &format!("{path}?filename=late.txt"), &[], b"late");
    assert_eq!(status, 403);
    assert!(json_of(&body)["error"].as_str().unwrap().contains("expired"));
    let (status, _, _) = request(port, "GET", &path, &[], b"");
    assert_eq!(status, 403);
    assert_eq!(files(port, &alice, &sid).len(), 1);
}

#[test]
fn upload_link_settings_of_zero_are_refused() {
    let data_dir = fresh_data_dir("upload-link-zero");
    for (key, setting) in
        [("MIROBODY_UPLOADS__LINK_USES", "link_uses"), ("MIROBODY_UPLOADS__MAX_LINKS_PER_USER", "max_links_per_user")]
    {
        let output = common::clean_command()
            .args(["tools", "list"])
            .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
            .env(key, "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{key}: {stderr}");
        assert!(stderr.contains(&format!("uploads.{setting} must be at least 1")), "{key}: {stderr}");
    }
}

#[test]
fn a_body_that_never_finishes_is_cut_off_at_the_deadline() {
    use std::io::{Read, Write};
    let data_dir = fresh_data_dir("upload-slow");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let env = [("MIROBODY_HTTP__REQUEST_BODY_TIMEOUT", "1")];
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &env));
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let started = std::time::Instant::now();
    write!(
        stream,
        "POST /files?filename=slow.txt HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {alice}\r\n\
         Content-Length: 100000\r\n\r\nonly a little"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "cut off near the deadline");
    let sid = session(port, &alice);
    assert!(files(port, &alice, &sid).is_empty(), "nothing stored");
}

#[test]
fn uploads_beyond_the_concurrent_bound_are_told_to_come_back() {
    use std::io::Write;
    let data_dir = fresh_data_dir("upload-busy");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    // No minimum pace: it would cut the stalled body below (after 10 s) while the next waits.
    let env = [
        ("MIROBODY_UPLOADS__MAX_CONCURRENT", "1"),
        ("MIROBODY_HTTP__REQUEST_BODY_TIMEOUT", "60"),
        ("MIROBODY_UPLOADS__MIN_BODY_BYTES_PER_SEC", "0"),
    ];
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &env));
    // One upload whose body never ends holds the only turn.
    let mut stalled = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stalled,
        "POST /files?filename=slow.txt HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {alice}\r\n\
         Content-Length: 100000\r\n\r\nstarted"
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The next waits its turn, then is told to come back rather than held (or buffered) forever.
    let started = std::time::Instant::now();
    let (status, head, body) = request(port, "POST", "/fhir", &[("Authorization", &format!("Bearer {alice}"))], b"{}");
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));
    assert!(head.to_ascii_lowercase().contains("retry-after: 5"), "{head}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(9), "it waited for a turn first");
    drop(stalled);
}
