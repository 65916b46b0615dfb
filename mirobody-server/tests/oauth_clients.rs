//! People connect real MCP clients through the server's own sign-in: the official Python and
//! TypeScript SDKs' OAuth clients, from nothing (a 401, the metadata, registration, sign-in and
//! consent in headless Chromium, `whoami` as that person, a refresh, a revocation on the
//! access page, then a refusal), and the official conformance package's authorization-server
//! scenarios, with Chromium completing the sign-in and consent page it prints.
//!
//! Set-up (Chromium, playwright-core, the TypeScript SDK, a Python virtualenv with `mcp`, the
//! conformance package under Node 22) happens here; what cannot be set up is reported SKIPPED,
//! or fails the test under `MIROBODY_REQUIRE_EXTERNAL=1`.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

const EMAIL: &str = "ana@example.com";
const PASSWORD: &str = "a long enough password for ana";

fn browser_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser"))
}

fn clients_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients"))
}

fn peers() -> mirobody_testkit::Peers {
    mirobody_testkit::Peers::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("external"))
}

// Runs `set_up`, or reports the test skipped (failing under MIROBODY_REQUIRE_EXTERNAL=1).
fn or_skip<T>(what: &str, set_up: Result<T, String>) -> Option<T> {
    match set_up {
        Ok(value) => Some(value),
        Err(why) if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") => {
            panic!("{what} could not be set up, and MIROBODY_REQUIRE_EXTERNAL=1 requires it: {why}")
        }
        Err(why) => {
            println!("SKIPPED: {what}: {why}");
            None
        }
    }
}

fn browser() -> Result<(), String> {
    let output = Command::new("bash").arg("setup.sh").current_dir(browser_dir()).output().map_err(|e| e.to_string())?;
    if output.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()) }
}

/// A server whose access tokens last 2 s (no leeway), with one account made by the operator's
/// own command.
struct Server {
    port: u16,
    _child: KillOnDrop,
    account_id: String,
    data_dir: std::path::PathBuf,
}

impl Server {
    /// Whether the account's own memories hold `marker`: asked with a token for the account's
    /// id from the operator's `token` command, so the OAuth client is proved to have acted as
    /// that person and no other.
    fn account_remembers(&self, marker: &str) -> bool {
        let token = token(&self.data_dir, self.port, &self.account_id);
        let sid = session(self.port, &token);
        unrecalled(self.port, &token, &[sid], &[marker.to_owned()]).is_empty()
    }
}

fn server(name: &str) -> Server {
    let data_dir = fresh_data_dir(name);
    let port = server_port();
    let env = [
        ("MIROBODY_OAUTH__ACCESS_TOKEN_TTL", "2"),
        ("MIROBODY_AUTH__LEEWAY", "0"),
        ("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "0"),
    ];
    let mut add = clean_command()
        .args(["user", "add", "--email", EMAIL, "--name", "Ana", "--password-stdin"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run user add");
    writeln!(add.stdin.take().unwrap(), "{PASSWORD}").unwrap();
    let added = add.wait_with_output().unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let listed = clean_command()
        .args(["user", "list"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .output()
        .expect("run user list");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let account_id = listed
        .lines()
        .find(|line| line.contains(EMAIL))
        .and_then(|line| line.split_whitespace().find(|word| word.starts_with("u_")))
        .unwrap_or_else(|| panic!("user list shows no id for {EMAIL}: {listed}"))
        .to_owned();
    let (child, _log) = start_logged(&data_dir, port, &env);
    Server { port, _child: KillOnDrop(child), account_id, data_dir }
}

fn last_json(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|_| panic!("no JSON: {stdout}"))
}

#[test]
fn the_python_sdk_signs_in_refreshes_and_is_refused_once_revoked() {
    let Some(()) = or_skip("the Python SDK OAuth test", browser()) else { return };
    let Some(venv) = or_skip("the Python SDK OAuth test", peers().python_venv("mcp-2.3", &["mcp==2.3.0"])) else {
        return;
    };
    let server = server("oauth-python");
    let base = format!("http://127.0.0.1:{}", server.port);
    // 2026-07-28 (no sessions), then 2025-11-25, whose session, made before the 401, goes on
    // as the person's once they signed in.
    for (mode, version) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let marker = format!("marker-python-{mode}-7f3a");
        let output = Command::new(venv.join("python"))
            .arg(clients_dir().join("oauth_client.py"))
            .args([format!("{base}/mcp"), EMAIL.into(), PASSWORD.into(), "node".into()])
            .arg(browser_dir())
            .arg(format!("{base}/account"))
            .args([marker.as_str(), mode])
            .output()
            .expect("run the Python client");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("OAUTH-PYTHON-OK"),
            "{mode}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report = last_json(&stdout);
        assert_eq!(report["protocol_version"], version, "{report}");
        assert_eq!(report["whoami"]["authenticated"], true, "{report}");
        assert!(server.account_remembers(&marker), "the client acted as the person: {report}");
        assert_eq!(report["iss"], base, "{report}");
        assert!(report["consent_text"].as_str().unwrap().contains("Python SDK test client"), "{report}");
        assert!(report["tokens_seen"].as_u64().unwrap() >= 2, "{report}");
        assert_eq!(report["revoke"]["apps_left"], 0, "{report}");
        assert!(report["after_revoke"].is_string(), "{report}");
    }
}

#[test]
fn the_typescript_sdk_signs_in_refreshes_and_is_refused_once_revoked() {
    let Some(()) = or_skip("the TypeScript SDK OAuth test", browser()) else { return };
    let server = server("oauth-typescript");
    let base = format!("http://127.0.0.1:{}", server.port);
    let output = Command::new("node")
        .arg("oauth_ts_client.mjs")
        .args([format!("{base}/mcp"), EMAIL.into(), PASSWORD.into(), format!("{base}/account")])
        .arg("marker-typescript-91c2")
        .current_dir(browser_dir())
        .output()
        .expect("run the TypeScript client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("OAUTH-TS-OK"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = last_json(&stdout);
    assert_eq!(report["whoami"]["authenticated"], true, "{report}");
    assert!(server.account_remembers("marker-typescript-91c2"), "the client acted as the person: {report}");
    assert_eq!(report["iss"], base, "{report}");
    assert_eq!(report["state"], "ts-state-1", "{report}");
    assert_eq!(report["revoke"]["apps_left"], 0, "{report}");
}

#[test]
fn the_conformance_authorization_server_scenarios_pass() {
    let Some(()) = or_skip("the conformance authorization scenarios", browser()) else { return };
    let Some(node) = or_skip("the conformance authorization scenarios", peers().node22()) else { return };
    let Some(package) = or_skip(
        "the conformance authorization scenarios",
        peers().npm_package("@modelcontextprotocol/conformance@0.2.0-alpha.12"),
    ) else {
        return;
    };
    let server = server("oauth-conformance");
    let base = format!("http://127.0.0.1:{}", server.port);
    let callback_port = free_port();
    let callback = format!("http://127.0.0.1:{callback_port}/callback");
    // The client the scenarios use, registered as any client would.
    let registration = serde_json::json!({"redirect_uris": [callback], "client_name": "Conformance", "token_endpoint_auth_method": "none"});
    let (head, body) =
        raw_post(server.port, "/register", &[("Content-Type", "application/json")], &registration.to_string());
    assert!(head.starts_with("HTTP/1.1 201"), "{head}\n{body}");
    let client_id = serde_json::from_str::<Value>(&body).unwrap()["client_id"].as_str().unwrap().to_owned();

    let cli = package.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let mut child = Command::new(&node)
        .arg(&cli)
        .args(["authorization", "--url", &base, "--client-id", &client_id, "--resource", &format!("{base}/mcp")])
        .args(["--port", &callback_port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the conformance package");
    // The scenario prints the URL to open; Chromium signs in and consents, and is sent on to
    // the package's own callback server.
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            let _ = lines_tx.send(line);
        }
        all
    });
    let authorize = loop {
        let line = lines_rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the scenario prints an authorization URL");
        if line.starts_with(&format!("{base}/authorize?")) {
            break line;
        }
    };
    let browser = Command::new("node")
        .args(["oauth.mjs", "consent", &authorize, EMAIL, PASSWORD, &callback, "follow"])
        .current_dir(browser_dir())
        .output()
        .expect("run the browser");
    assert!(browser.status.success(), "{}", String::from_utf8_lossy(&browser.stderr));
    let status = child.wait().unwrap();
    let stdout = reader.join().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "the conformance scenarios failed:\n{stdout}\n{stderr}");
    for scenario in ["authorization-server-metadata-endpoint", "authorization-code-grant"] {
        assert!(stdout.contains(scenario), "{scenario} ran:\n{stdout}");
    }
    assert!(!stdout.contains("FAILURE") && !stdout.contains("✗"), "{stdout}");
}
