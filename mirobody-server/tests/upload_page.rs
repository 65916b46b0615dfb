//! The upload page in a real browser: headless Chromium (Debian's package, driven by
//! playwright-core from npm; `tests/browser/setup.sh` installs both) opens the link the
//! `upload_link` tool made, uploads a PDF lab report, and the test reads its text back through
//! `read_file` over MCP. The page must make no request outside the server's origin.
//!
//! Without Chromium or npm the test says `SKIPPED: <why>`; with `MIROBODY_REQUIRE_EXTERNAL=1`
//! (as `.ci/run` sets) it fails instead.

mod common;

use std::path::Path;
use std::process::Command;

use common::{fresh_data_dir, server_port, session, start, token, tool};
use serde_json::{Value, json};

fn browser_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser"))
}

// Installs what the browser test needs, or says why it cannot.
fn set_up() -> Result<(), String> {
    mirobody_testkit::peers_off()?;
    let output = Command::new("bash").arg("setup.sh").current_dir(browser_dir()).output().map_err(|e| e.to_string())?;
    if output.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()) }
}

#[test]
fn a_person_uploads_a_lab_report_through_the_link_in_a_real_browser() {
    if let Err(why) = set_up() {
        if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
            panic!("the browser test could not be set up, and MIROBODY_REQUIRE_EXTERNAL=1 requires it: {why}");
        }
        println!("SKIPPED: upload page in a browser: {why}");
        return;
    }
    let data_dir = fresh_data_dir("upload-page");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start(&data_dir, port));
    let sid = session(port, &alice);
    let link = tool(port, &alice, &sid, "upload_link", json!({}));
    let url = link["url"].as_str().expect("an upload link").to_owned();

    let report = data_dir.join("lab report.pdf");
    std::fs::write(&report, include_bytes!("../../mirobody-tools/assets/lab-report.pdf")).unwrap();
    let screenshot = data_dir.join("upload.png");
    let output = Command::new("node")
        .arg("upload.mjs")
        .arg(&url)
        .arg(&report)
        .arg(&screenshot)
        .current_dir(browser_dir())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("one line of JSON");
    assert_eq!(seen["errors"], json!([]), "{seen}");
    assert_eq!(seen["other_origins"], json!([]), "the page reached no other origin: {seen}");
    let result = &seen["results"][0];
    // A PDF is answered once stored; its text is read after, and the page says so.
    assert_eq!(result["text_pending"], true, "{seen}");
    let said = result["text"].as_str().unwrap_or_default();
    assert!(said.contains("lab report.pdf") && said.contains("being read"), "{seen}");
    assert!(std::fs::metadata(&screenshot).map(|m| m.len() > 1_000).unwrap_or(false), "a screenshot was taken");

    // What the person uploaded is what the model reads.
    let read = tool(port, &alice, &sid, "read_file", json!({"file_key": result["file_key"]}));
    let content = read["content"].as_str().unwrap_or_default();
    assert!(content.contains("Glucose 5.4 mmol/L") && content.contains("Hemoglobin 14.1"), "{read}");
    assert_eq!(read["filename"], "lab report.pdf");
}

#[test]
fn a_link_that_stores_one_file_says_so_when_two_are_picked() {
    if let Err(why) = set_up() {
        if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
            panic!("the browser test could not be set up, and MIROBODY_REQUIRE_EXTERNAL=1 requires it: {why}");
        }
        println!("SKIPPED: a spent link in a browser: {why}");
        return;
    }
    let data_dir = fresh_data_dir("upload-page-spent");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start(&data_dir, port));
    let sid = session(port, &alice);
    let link = tool(port, &alice, &sid, "upload_link", json!({}));
    let url = link["url"].as_str().expect("an upload link").to_owned();
    let (first, second) = (data_dir.join("first.txt"), data_dir.join("second.txt"));
    std::fs::write(&first, "Glucose 5.4 mmol/L\n").unwrap();
    std::fs::write(&second, "Hemoglobin 14.1 g/dL\n").unwrap();

    let output = Command::new("node")
        .args(["upload_spent.mjs", &url])
        .arg(&first)
        .arg(&second)
        .current_dir(browser_dir())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("one line of JSON");
    // The first is stored; the second is not sent, and the page says why and takes no more.
    assert_eq!(seen["results"].as_array().map(Vec::len), Some(1), "{seen}");
    let errors = seen["errors"].as_array().cloned().unwrap_or_default();
    assert_eq!(errors.len(), 1, "{seen}");
    assert!(errors[0].as_str().unwrap_or_default().contains("second.txt: This link has been used"), "{seen}");
    assert!(seen["done"].as_str().unwrap_or_default().contains("ask for a new one"), "{seen}");
    assert_eq!(seen["input_disabled"], true, "{seen}");
    assert_eq!(seen["reopened"], 403, "a used link shows no page: {seen}");
    let listed = tool(port, &alice, &sid, "list_files", json!({}));
    assert_eq!(listed["files"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed["files"][0]["filename"], "first.txt");
}

#[test]
fn a_fhir_bundle_uploaded_through_the_page_says_what_was_imported() {
    if let Err(why) = set_up() {
        if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
            panic!("the browser test could not be set up, and MIROBODY_REQUIRE_EXTERNAL=1 requires it: {why}");
        }
        println!("SKIPPED: a FHIR bundle through the upload page: {why}");
        return;
    }
    let data_dir = fresh_data_dir("upload-page-fhir");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start(&data_dir, port));
    let sid = session(port, &alice);
    let link = tool(port, &alice, &sid, "upload_link", json!({}));
    let url = link["url"].as_str().expect("an upload link").to_owned();
    let bundle = data_dir.join("patient.json");
    std::fs::write(&bundle, include_bytes!("fixtures/fhir/synthea_patient.json")).unwrap();

    let output = Command::new("node").arg("upload.mjs").arg(&url).arg(&bundle).current_dir(browser_dir()).output();
    let output = output.expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("one line of JSON");
    assert_eq!(seen["errors"], json!([]), "{seen}");
    let result = &seen["results"][0];
    assert_eq!((result["imported"].as_str(), result["import_complete"].as_str()), (Some("10"), Some("true")), "{seen}");
    // The page says what was imported, and what was skipped and why.
    let said = result["text"].as_str().unwrap_or_default();
    assert!(said.contains("Imported 10 (") && said.contains("Claim: a type that is not imported"), "{seen}");
    let found = tool(port, &alice, &sid, "fetch_health_data", json!({"indicators": ["2093-3"]}));
    assert!(found.to_string().contains(result["file_key"].as_str().unwrap()), "{found}");
}
