//! A person adds a passkey on the access page and signs in with it, through the real binary
//! and headless Chromium with a virtual authenticator (`browser/passkeys.mjs`): signed in with
//! the password, a passkey is added; signed out, the passkey alone signs in as that person;
//! removed, it signs in no more. The server's public URL is `http://localhost:<port>`, as
//! WebAuthn needs a secure context and a domain for its relying party.
//!
//! What cannot be set up (Chromium, playwright-core) is reported SKIPPED, or fails the test
//! under `MIROBODY_REQUIRE_EXTERNAL=1`.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

const EMAIL: &str = "pia@example.com";
const PASSWORD: &str = "a long enough password for pia";

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
    println!("SKIPPED: passkeys in a browser: {why}");
    false
}

#[test]
fn a_passkey_is_added_signs_in_and_once_removed_signs_in_no_more() {
    if !browser_ready() {
        return;
    }
    let data_dir = fresh_data_dir("passkeys-browser");
    let port = server_port();
    let base = format!("http://localhost:{port}");
    let mut add = clean_command()
        .args(["user", "add", "--email", EMAIL, "--name", "Pia", "--password-stdin"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", &base)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run user add");
    writeln!(add.stdin.take().unwrap(), "{PASSWORD}").unwrap();
    let added = add.wait_with_output().unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let env = [("MIROBODY_PUBLIC_BASE_URL", base.as_str()), ("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "0")];
    let (child, log) = start_logged(&data_dir, port, &env);
    let _server = KillOnDrop(child);

    let output = Command::new("node")
        .args(["passkeys.mjs", &base, EMAIL, PASSWORD])
        .current_dir(browser_dir())
        .output()
        .expect("run the browser");
    let server_log = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        output.status.success(),
        "{}\n--- server log (passkey lines) ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        server_log().lines().filter(|l| l.contains("passkey") || l.contains("WARN")).collect::<Vec<_>>().join("\n")
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("no JSON from the browser: {stdout}"));
    assert!(result["added"].as_str().unwrap().contains("Test laptop"), "{result}");
    assert!(result["signed_in_as"].as_str().unwrap().contains(EMAIL), "{result}");
    assert!(!result["used"].as_str().unwrap().contains("Last used never"), "{result}");
    assert_eq!(result["removed"], true, "{result}");
    assert_eq!(result["refused"], "That passkey could not be verified here.", "{result}");
    assert_eq!(result["problems"], serde_json::json!([]), "no script error or CSP violation: {result}");
    let log = server_log();
    assert!(log.contains("passkey added") && log.contains("signed in with a passkey"), "the server noted both");
}
