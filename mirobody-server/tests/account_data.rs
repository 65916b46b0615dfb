//! The access page's health data: a person signed in with a browser cookie downloads
//! everything (the same FHIR Bundle as `GET /export`), deletes a file and an import, and
//! deletes the account after typing their email (which ends their MCP session too). Over
//! plain HTTP: a form without the session's CSRF token (or with another session's) is refused
//! and deletes nothing, and one person's forms never reach another's file, import or data. In headless Chromium
//! (`browser/account_data.mjs`): the same steps clicked through as a person would.
//!
//! What the browser test cannot set up (Chromium, playwright-core) is reported SKIPPED, or
//! fails the test under `MIROBODY_REQUIRE_EXTERNAL=1`.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;
use serde_json::{Value, json};

const FORM: &str = "application/x-www-form-urlencoded";

struct Person {
    id: &'static str,
    email: &'static str,
    password: &'static str,
    /// An indicator name only this person's import holds.
    marker: &'static str,
}

const ADA: Person = Person {
    id: "ada-page-51c2",
    email: "ada.page@example.com",
    password: "a long enough password for ada",
    marker: "Quokkaberry",
};
const BOB: Person = Person {
    id: "bob-page-93d0",
    email: "bob.page@example.com",
    password: "a long enough password for bob",
    marker: "Wombatfruit",
};

fn cli(data_dir: &Path, args: &[&str], stdin: &str) -> String {
    let mut child = clean_command()
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the CLI");
    writeln!(child.stdin.take().unwrap(), "{stdin}").unwrap();
    let output = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{args:?}: {out}{}", String::from_utf8_lossy(&output.stderr));
    out
}

fn call(data_dir: &Path, user: &str, tool: &str, arguments: &Value) -> Value {
    let out = cli(data_dir, &["tools", "call", tool, &arguments.to_string(), "--user", user], "");
    serde_json::from_str::<Value>(&out).unwrap_or_else(|e| panic!("{e}: {out}"))["structuredContent"].clone()
}

/// What a person holds: a file's key and the CSV import's id.
struct Held {
    file: String,
    import: String,
}

/// An account with a password, an import (a CSV with the person's marker) and a file.
fn add_person(data_dir: &Path, person: &Person) -> Held {
    cli(data_dir, &["user", "add", "--email", person.email, "--id", person.id, "--password-stdin"], person.password);
    let csv = data_dir.join(format!("{}.csv", person.id));
    let rows = format!("time,indicator,value,unit\n2026-01-05T07:00:00Z,{},61,bpm\n", person.marker);
    std::fs::write(&csv, rows).unwrap();
    let imported = cli(data_dir, &["import", "csv", csv.to_str().unwrap(), "--user", person.id], "");
    let import = imported.lines().find_map(|l| l.strip_prefix("import ")).expect("the import's id").trim().to_owned();
    let note = format!("{} note", person.marker);
    let content = base64_of(note.as_bytes());
    let upload = call(data_dir, person.id, "upload_file", &json!({"filename": "note.txt", "content_base64": content}));
    Held { file: upload["file_key"].as_str().expect("a file key").to_owned(), import }
}

/// A bearer token of `user` for the server on `port`, and an MCP session opened with it.
fn mcp_session(data_dir: &Path, port: u16, user: &str) -> (String, String) {
    let output = clean_command()
        .args(["token", "--user", user, "--ttl", "3600"])
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .expect("run the CLI");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let token = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let sid = session(port, &token);
    (token, sid)
}

/// Whether the access page lists a delete button for `id`.
fn lists(page: &str, id: &str) -> bool {
    page.contains(&format!("name=\"id\" value=\"{id}\""))
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn holds_marker(data_dir: &Path, person: &Person) -> bool {
    let answer = call(data_dir, person.id, "fetch_health_data", &json!({"indicators": [person.marker]}));
    answer.to_string().contains("61")
}

fn files_of(data_dir: &Path, user: &str) -> Vec<String> {
    let files = call(data_dir, user, "list_files", &json!({}));
    files["files"].as_array().into_iter().flatten().filter_map(|f| f["file_key"].as_str().map(str::to_owned)).collect()
}

fn set_cookies(head: &str) -> Vec<String> {
    head.lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("set-cookie").then(|| value.trim().split(';').next().unwrap().to_owned())
        })
        .collect()
}

fn csrf_of(html: &str) -> String {
    html.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("a csrf").to_owned()
}

/// Signs in with the password: the status and the head of the answer.
fn try_sign_in(port: u16, person: &Person) -> (u16, String) {
    let (_, head, page) = request(port, "GET", "/signin", &[], b"");
    let csrf = csrf_of(&String::from_utf8_lossy(&page));
    let cookie = set_cookies(&head).join("; ");
    let form = format!("email={}&password={}&csrf={csrf}", encode(person.email), encode(person.password));
    let headers = [("content-type", FORM), ("cookie", cookie.as_str())];
    let (status, head, _) = request(port, "POST", "/signin", &headers, form.as_bytes());
    (status, head)
}

/// Signs in with the password; the session cookie.
fn sign_in(port: u16, person: &Person) -> String {
    let (status, head) = try_sign_in(port, person);
    assert_eq!(status, 303, "{head}");
    let session: Vec<String> = set_cookies(&head).into_iter().filter(|c| c.starts_with("mirobody_session=")).collect();
    assert_eq!(session.len(), 1, "{head}");
    session[0].clone()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// The access page's HTML for `cookie`.
fn account_page(port: u16, cookie: &str) -> String {
    let (status, head, page) = request(port, "GET", "/account", &[("cookie", cookie)], b"");
    assert_eq!(status, 200, "{head}");
    String::from_utf8_lossy(&page).into_owned()
}

/// A form POSTed with `cookie`: the status, the head and the body as text.
fn post_form(port: u16, cookie: &str, path: &str, fields: &[(&str, &str)]) -> (u16, String, String) {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect();
    let headers = [("content-type", FORM), ("cookie", cookie)];
    let (status, head, body) = request(port, "POST", path, &headers, body.join("&").as_bytes());
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

fn server(name: &str) -> (std::path::PathBuf, u16, Held, Held) {
    let data_dir = fresh_data_dir(name);
    let ada = add_person(&data_dir, &ADA);
    let bob = add_person(&data_dir, &BOB);
    (data_dir, server_port(), ada, bob)
}

const NO_LIMITS: [(&str, &str); 1] = [("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "0")];

#[test]
fn a_form_without_the_sessions_csrf_token_is_refused_and_deletes_nothing() {
    let (data_dir, port, held, _) = server("account-data-csrf");
    let (ada_file, ada_import) = (held.file, held.import);
    let _server = KillOnDrop(start_with(&data_dir, port, Stdio::null(), &NO_LIMITS));
    let (ada, bob) = (sign_in(port, &ADA), sign_in(port, &BOB));
    let bob_csrf = csrf_of(&account_page(port, &bob));
    let attempts: [(&str, Vec<(&str, &str)>); 5] = [
        ("/account/files/delete", vec![("id", ada_file.as_str())]),
        ("/account/imports/delete", vec![("id", ada_import.as_str())]),
        ("/account/export", vec![]),
        ("/account/delete", vec![]),
        ("/account/delete/confirmed", vec![("confirm", ADA.email)]),
    ];
    for (path, fields) in &attempts {
        for csrf in [None, Some(bob_csrf.as_str()), Some("forged")] {
            let mut sent = fields.clone();
            if let Some(csrf) = csrf {
                sent.push(("csrf", csrf));
            }
            let (status, _, body) = post_form(port, &ada, path, &sent);
            assert_eq!(status, 403, "{path} with {csrf:?}: {body}");
            assert!(body.contains("That form has expired") && !body.contains(ADA.marker), "{body}");
        }
        // No session at all: to the sign-in page.
        let (status, head, _) = post_form(port, "", path, fields);
        assert_eq!(status, 303, "{head}");
        assert!(head.contains("/signin"), "{head}");
    }
    assert_eq!(files_of(&data_dir, ADA.id), [ada_file.as_str()], "the file is still there");
    assert!(holds_marker(&data_dir, &ADA), "and the account with its data");
    let page = account_page(port, &ada);
    assert!(page.contains("Download everything") && lists(&page, &ada_import), "the import is listed still");
}

#[test]
fn one_persons_forms_never_reach_anothers_data() {
    let (data_dir, port, ada_held, bob_held) = server("account-data-scoped");
    let (ada_file, bob_file) = (ada_held.file, bob_held.file);
    let _server = KillOnDrop(start_with(&data_dir, port, Stdio::null(), &NO_LIMITS));
    let ada = sign_in(port, &ADA);
    let page = account_page(port, &ada);
    let csrf = csrf_of(&page);
    assert!(lists(&page, &ada_file) && !lists(&page, &bob_file), "only Ada's file is listed");
    assert!(lists(&page, &ada_held.import) && !lists(&page, &bob_held.import), "only Ada's import");
    let (status, _, body) =
        post_form(port, &ada, "/account/imports/delete", &[("csrf", &csrf), ("id", &bob_held.import)]);
    assert_eq!(status, 404, "another's import is not found: {body}");
    let (status, _, body) = post_form(port, &ada, "/account/files/delete", &[("csrf", &csrf), ("id", &bob_file)]);
    assert_eq!(status, 404, "another's file is not found: {body}");
    let long = "f".repeat(600);
    let (status, _, body) = post_form(port, &ada, "/account/files/delete", &[("csrf", &csrf), ("id", &long)]);
    assert_eq!(status, 404, "an id past the bound names nothing: {body}");
    let (status, head, export) = post_form(port, &ada, "/account/export", &[("csrf", &csrf)]);
    assert_eq!(status, 200, "{head}");
    assert!(head.to_ascii_lowercase().contains("attachment"), "{head}");
    let bundle: Value = serde_json::from_str(&export).expect("the export is JSON");
    assert_eq!(bundle["entry"][0]["resource"]["id"], ADA.id);
    assert!(export.contains(ADA.marker) && export.contains(&ada_file), "Ada's own data");
    assert!(!export.contains(BOB.marker) && !export.contains(&bob_file) && !export.contains(BOB.id), "none of Bob's");
    // Typing another person's email deletes nothing.
    let (status, _, body) =
        post_form(port, &ada, "/account/delete/confirmed", &[("csrf", &csrf), ("confirm", BOB.email)]);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("nothing was deleted"), "{body}");
    assert!(holds_marker(&data_dir, &ADA) && holds_marker(&data_dir, &BOB));
    assert_eq!(files_of(&data_dir, BOB.id), [bob_file.as_str()]);
    let bob_page = account_page(port, &sign_in(port, &BOB));
    assert!(lists(&bob_page, &bob_held.import) && lists(&bob_page, &bob_file), "Bob's are as they were");
}

#[test]
fn a_person_deletes_a_file_an_import_and_the_account_on_the_page() {
    let (data_dir, port, ada_held, bob_held) = server("account-data-delete");
    let (ada_file, bob_file) = (ada_held.file, bob_held.file);
    let _server = KillOnDrop(start_with(&data_dir, port, Stdio::null(), &NO_LIMITS));
    // Ada's MCP client, with a session open.
    let (token, mcp_session) = mcp_session(&data_dir, port, ADA.id);
    assert_eq!(mcp_status(port, &token, &mcp_session), 200);
    let ada = sign_in(port, &ADA);
    let csrf = csrf_of(&account_page(port, &ada));
    let (status, head, _) = post_form(port, &ada, "/account/files/delete", &[("csrf", &csrf), ("id", &ada_file)]);
    assert_eq!(status, 303, "{head}");
    assert!(head.contains("done=file-deleted"), "{head}");
    assert!(files_of(&data_dir, ADA.id).is_empty());
    let fields = [("csrf", csrf.as_str()), ("id", ada_held.import.as_str())];
    let (status, head, _) = post_form(port, &ada, "/account/imports/delete", &fields);
    assert_eq!(status, 303, "{head}");
    assert!(!holds_marker(&data_dir, &ADA), "the import's value is gone");
    assert!(head.contains("done=import-deleted"), "{head}");
    let (_, _, notice) = request(port, "GET", "/account?done=import-deleted", &[("cookie", &ada)], b"");
    assert!(String::from_utf8_lossy(&notice).contains("The import is deleted"), "the page says so");
    assert!(!lists(&account_page(port, &ada), &ada_held.import), "the import is listed no more");

    // The account: a confirmation first, then the email typed.
    let (status, _, body) = post_form(port, &ada, "/account/delete", &[("csrf", &csrf)]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Type your email to confirm") && body.contains(ADA.email), "{body}");
    let (status, head, body) =
        post_form(port, &ada, "/account/delete/confirmed", &[("csrf", &csrf), ("confirm", " ADA.Page@example.com ")]);
    assert_eq!(status, 200, "{head}{body}");
    assert!(body.contains("Your account is deleted"), "{body}");
    assert!(set_cookies(&head).iter().any(|c| c == "mirobody_session="), "the cookie is cleared: {head}");
    assert_eq!(mcp_status(port, &token, &mcp_session), 404, "her MCP session ended with the account");
    let (status, head, _) = request(port, "GET", "/account", &[("cookie", &ada)], b"");
    assert_eq!(status, 303, "the session ended with the account: {head}");
    let (status, head) = try_sign_in(port, &ADA);
    assert_eq!(status, 401, "the account no longer signs in: {head}");
    assert!(!holds_marker(&data_dir, &ADA) && files_of(&data_dir, ADA.id).is_empty());
    assert!(holds_marker(&data_dir, &BOB), "Bob's data is untouched");
    assert_eq!(files_of(&data_dir, BOB.id), [bob_file.as_str()]);
    let bob = sign_in(port, &BOB);
    assert!(account_page(port, &bob).contains("Download everything"), "Bob still signs in");
}

fn browser_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser"))
}

// Sets up Chromium and playwright-core, or reports the test skipped (failing under
// MIROBODY_REQUIRE_EXTERNAL=1).
fn browser_ready() -> bool {
    let set_up = mirobody_testkit::peers_off().and_then(|()| {
        let output = Command::new("bash").arg("setup.sh").current_dir(browser_dir()).output();
        match output {
            Ok(output) if output.status.success() => Ok(()),
            Ok(output) => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
            Err(e) => Err(e.to_string()),
        }
    });
    let Err(why) = set_up else { return true };
    if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
        panic!("the browser could not be set up, and MIROBODY_REQUIRE_EXTERNAL=1 requires it: {why}");
    }
    println!("SKIPPED: the account page's data in a browser: {why}");
    false
}

#[test]
fn in_a_real_browser_a_person_downloads_everything_and_deletes_their_account() {
    if !browser_ready() {
        return;
    }
    let (data_dir, port, ada_held, bob_held) = server("account-data-browser");
    let (ada_file, bob_file) = (ada_held.file, bob_held.file);
    let _server = KillOnDrop(start_with(&data_dir, port, Stdio::null(), &NO_LIMITS));
    let download = data_dir.join("download.json");
    let output = Command::new("node")
        .args(["account_data.mjs", &format!("http://127.0.0.1:{port}"), ADA.email, ADA.password])
        .arg(&download)
        .current_dir(browser_dir())
        .output()
        .expect("run the browser");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("no JSON from the browser: {stdout}"));
    assert_eq!(seen["problems"], json!([]), "no script error or CSP violation: {seen}");
    assert_eq!(seen["download_name"], "mirobody-export.json", "{seen}");
    let bundle: Value = serde_json::from_slice(&std::fs::read(&download).unwrap()).expect("the download is JSON");
    assert_eq!(bundle["resourceType"], "Bundle");
    assert_eq!(bundle["entry"][0]["resource"]["id"], ADA.id);
    let text = bundle.to_string();
    assert!(text.contains(ADA.marker) && text.contains(&ada_file) && !text.contains(BOB.marker), "Ada's only");
    assert!(seen["file_deleted"].as_str().unwrap().contains("The file is deleted"), "{seen}");
    assert!(seen["import_deleted"].as_str().unwrap().contains("The import is deleted"), "{seen}");
    assert!(seen["confirmation"].as_str().unwrap().contains(ADA.email), "{seen}");
    assert!(seen["wrong_email"].as_str().unwrap().contains("nothing was deleted"), "{seen}");
    assert!(seen["deleted"].as_str().unwrap().contains("Your account is deleted"), "{seen}");
    assert!(seen["after"].as_str().unwrap().contains("/signin"), "signed out with the account: {seen}");
    assert!(files_of(&data_dir, ADA.id).is_empty() && !holds_marker(&data_dir, &ADA), "Ada's data is gone");
    assert!(holds_marker(&data_dir, &BOB) && files_of(&data_dir, BOB.id) == [bob_file.as_str()], "Bob's is not");
}
