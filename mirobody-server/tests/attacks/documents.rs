//! Hostile documents and import bodies against the real binary: a 592-byte PDF that used to
//! kill the process, a double-deflated one that took it to 2 GB, fan-outs that pinned both
//! extraction threads forever, and FHIR bodies whose tree would be many times their size.

use std::time::{Duration, Instant};

use mirobody_testkit::hostile;
use serde_json::{Value, json};

use crate::common::{session, tool};
use crate::harness::Server;

/// The most the server's own resident memory may reach during these attacks, in KiB: its
/// readers run in children, and an import body is refused before it becomes a tree.
const PEAK_KIB: u64 = 256 * 1024;

// Tight reader limits, so that each attack ends within seconds.
const LIMITS: [(&str, &str); 3] = [
    ("MIROBODY_EXTRACTION__CPU_TIME", "3"),
    ("MIROBODY_EXTRACTION__DEADLINE", "10s"),
    ("MIROBODY_EXTRACTION__MEMORY_MIB", "512"),
];

// `user`'s files as list_files shows them.
fn files(server: &Server, token: &str) -> Vec<Value> {
    let sid = session(server.port, token);
    let listed = tool(server.port, token, &sid, "list_files", json!({}));
    listed["files"].as_array().cloned().unwrap_or_else(|| panic!("{listed}"))
}

fn upload(server: &Server, token: &str, name: &str, bytes: &[u8]) -> Value {
    let bearer = format!("Bearer {token}");
    let path = format!("/files?filename={name}");
    let started = Instant::now();
    let (status, _, body) = crate::common::request(
        server.port,
        "POST",
        &path,
        &[("Authorization", &bearer), ("Content-Type", "application/pdf")],
        bytes,
    );
    assert_eq!(status, 201, "{name}: {}", String::from_utf8_lossy(&body));
    // Answered once stored: reading it is not the upload's business.
    assert!(started.elapsed() < Duration::from_secs(10), "{name} took {:?} to be answered", started.elapsed());
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn hostile_pdfs_cost_their_reader_only() {
    let mut server = Server::start("attack-documents-pdf", &LIMITS);
    let mallory = server.token_for("mallory");
    let attacks = [
        ("self-drawing.pdf", hostile::self_drawing_form_pdf()),
        ("bomb.pdf", hostile::deflate_bomb_pdf(3 << 30)),
        ("fan-out-1.pdf", hostile::fan_out_pdf(14, 10)),
        ("fan-out-2.pdf", hostile::fan_out_pdf(14, 10)),
    ];
    assert!(attacks[0].1.len() < 1024, "the self-drawing PDF is {} bytes", attacks[0].1.len());
    for round in 0..2 {
        for (name, pdf) in &attacks {
            let uploaded = upload(&server, &mallory, name, pdf);
            assert_eq!(uploaded["text_pending"], true, "round {round}: {uploaded}");
        }
        // The honest user is served while the readers are busy with Mallory's files.
        server.assert_serves_honest_user();
    }
    // Every hostile file is settled without text (poppler, where it reads PDFs, finds none in
    // the self-drawing one; pdf-extract's child dies of it), the others unreadable and saying
    // why; none is left waiting.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        server.assert_alive();
        let listed = files(&server, &mallory);
        let waiting = listed.iter().filter(|f| f.get("text").is_some()).count();
        if waiting == 0 {
            assert_eq!(listed.len(), attacks.len() * 2);
            for file in &listed {
                assert_eq!(file["has_text"], false, "{file}");
                let unreadable = file["text_error"].as_str().is_some_and(|why| !why.is_empty());
                assert!(unreadable || file["filename"] == "self-drawing.pdf", "{file}");
            }
            break;
        }
        assert!(Instant::now() < deadline, "{waiting} files still waiting: {listed:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    // An honest document after all that is read, by the same readers.
    let honest = upload(&server, &server.token, "labs.pdf", &hostile::text_pdf("Glucose 5.4 mmol/L"));
    let sid = session(server.port, &server.token);
    let read = tool(server.port, &server.token, &sid, "read_file", json!({"file_key": honest["file_key"]}));
    assert!(read["content"].as_str().is_some_and(|text| text.contains("Glucose 5.4")), "{read}");
    server.assert_alive();
    let (_, peak) = server.memory_kib();
    eprintln!("the server's peak resident memory: {peak} KiB");
    assert!(peak < PEAK_KIB, "the server's peak resident memory was {peak} KiB");
    let log = std::fs::read_to_string(&server.log).unwrap_or_default();
    assert!(!log.contains("stack backtrace") && !log.contains("panicked"), "a parser's panic reached the log");
}

#[test]
fn import_bodies_are_refused_by_their_shape_before_they_are_parsed() {
    let mut server = Server::start("attack-documents-fhir", &[]);
    let mallory = server.token_for("mallory");
    let bearer = format!("Bearer {mallory}");
    let headers = [("Authorization", bearer.as_str()), ("Content-Type", "application/fhir+json")];

    // Just under the body limit: millions of empty entries, once a 1.2 GB tree.
    let head = r#"{"resourceType":"Bundle","type":"batch","entry":["#;
    let count = (16 * 1024 * 1024 - head.len() - 64) / 3;
    let mut empties = String::with_capacity(head.len() + count * 3 + 2);
    empties.push_str(head);
    for i in 0..count {
        empties.push_str(if i == 0 { "{}" } else { ",{}" });
    }
    empties.push_str("]}");
    let (status, _, body) = crate::common::request(server.port, "POST", "/fhir", &headers, empties.as_bytes());
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("10000"), "{}", String::from_utf8_lossy(&body));

    // One Observation with 300,000 components, once inserted row by row in one transaction.
    let component = r#"{"code":{"text":"x"},"valueQuantity":{"value":1}}"#;
    let observation = format!(
        r#"{{"resourceType":"Observation","status":"final","code":{{"text":"panel"}},"effectiveDateTime":"2026-01-01T00:00:00Z","component":[{}]}}"#,
        vec![component; 300_000].join(",")
    );
    let (status, _, body) =
        crate::common::request(server.port, "POST", "/fhir/Observation", &headers, observation.as_bytes());
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    server.assert_serves_honest_user();
    let (_, peak) = server.memory_kib();
    eprintln!("the server's peak resident memory: {peak} KiB");
    assert!(peak < PEAK_KIB, "the server's peak resident memory was {peak} KiB");
}

#[test]
fn a_large_import_leaves_the_writer_to_others_between_its_transactions() {
    let mut server = Server::start("attack-documents-writer", &[]);
    let mallory = server.token_for("mallory");
    let bearer = format!("Bearer {mallory}");
    // 10,000 Observations, the most one request takes, each with ten components.
    let entries: Vec<Value> = (0..10_000)
        .map(|i| {
            let components: Vec<Value> = (0..10)
                .map(|c| json!({"code": {"text": format!("c{c}")}, "valueQuantity": {"value": c, "unit": "1"}}))
                .collect();
            json!({"resource": {"resourceType": "Observation", "id": format!("o{i}"), "status": "final",
                "code": {"text": "panel"}, "effectiveDateTime": "2026-01-01T00:00:00Z", "component": components}})
        })
        .collect();
    let bundle = json!({"resourceType": "Bundle", "type": "batch", "entry": entries}).to_string();
    let port = server.port;
    let importer = std::thread::spawn(move || {
        crate::common::request(
            port,
            "POST",
            "/fhir",
            &[("Authorization", &bearer), ("Content-Type", "application/fhir+json")],
            bundle.as_bytes(),
        )
    });
    // While it runs, the honest user's writes all succeed.
    let sid = session(server.port, &server.token);
    for i in 0..20 {
        let reply = tool(server.port, &server.token, &sid, "remember", json!({"text": format!("note {i}")}));
        assert!(reply.get("error").is_none(), "remember {i} failed during the import: {reply}");
    }
    let (status, _, body) = importer.join().unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    server.assert_alive();
}

#[test]
fn what_requests_take_in_memory_together_is_bounded() {
    // A budget of 1 MiB for the bodies being handled and what they are parsed into.
    let mut server = Server::start("attack-documents-memory", &[("MIROBODY_UPLOADS__MAX_INFLIGHT_BYTES", "1048576")]);
    let mallory = server.token_for("mallory");
    let bearer = format!("Bearer {mallory}");
    // 600 KB of JSON whose tree would take several times that: more than the whole budget.
    let entries: Vec<Value> = (0..2_000)
        .map(|i| {
            json!({"resource": {"resourceType": "Patient", "id": format!("p{i}"), "active": true,
            "name": [{"family": "Doe", "given": ["Jane", "Q"]}], "gender": "female", "birthDate": "1970-01-01"}})
        })
        .collect();
    let bundle = json!({"resourceType": "Bundle", "type": "batch", "entry": entries}).to_string();
    let (status, _, body) = crate::common::request(
        server.port,
        "POST",
        "/fhir",
        &[("Authorization", &bearer), ("Content-Type", "application/fhir+json")],
        bundle.as_bytes(),
    );
    let said = String::from_utf8_lossy(&body);
    assert_eq!(status, 413, "{said}");
    assert!(said.contains("more memory"), "{said}");
    // A file that fits is stored, and an ordinary import too.
    server.assert_serves_honest_user();
    let small = json!({"resourceType": "Bundle", "type": "batch", "entry": [{"resource": {"resourceType": "Observation",
        "status": "final", "code": {"text": "Glucose"}, "valueQuantity": {"value": 5.4, "unit": "mmol/L"},
        "effectiveDateTime": "2026-01-01T08:00:00Z"}}]});
    let (status, _, body) = crate::common::request(
        server.port,
        "POST",
        "/fhir",
        &[("Authorization", &bearer), ("Content-Type", "application/fhir+json")],
        small.to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    // A file whose copies pass the budget is refused before its body is read:
    // `fair_shares::an_upload_over_the_memory_budget_is_refused_before_its_body_is_read`.
}
