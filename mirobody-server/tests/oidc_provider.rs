//! Sign-in through a real OpenID provider: panva's certified `oidc-provider`, installed from
//! npm in the set-up (`tests/oidc/setup.sh`) and run on a loopback port, configured in the real
//! binary's `oauth.providers` (its client secret read from an environment variable). Headless
//! Chromium follows the sign-in page's button, logs in at the provider and comes back.
//!
//! Proved: an unverified email matching an account neither signs in nor links; an unknown
//! person is refused and no account is made (`allow_signup` off); a verified email matching an
//! account the operator made (`user add`) signs in as that person and links them, which the
//! access page shows. What cannot be set up (Node, npm, Chromium) is reported SKIPPED, or
//! fails the test under `MIROBODY_REQUIRE_EXTERNAL=1`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;
use serde_json::{Value, json};

const EMAIL: &str = "ana@example.com";
const CLIENT_ID: &str = "mirobody";
const CLIENT_SECRET: &str = "a client secret only the provider and the server know";

fn tests_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests"))
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

fn set_up(dir: &str) -> Result<(), String> {
    mirobody_testkit::peers_off()?;
    let output =
        Command::new("bash").arg("setup.sh").current_dir(tests_dir().join(dir)).output().map_err(|e| e.to_string())?;
    if output.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()) }
}

/// Starts the provider for mirobody on `port`; its child and issuer URL.
fn provider(port: u16, accounts: &Value, log: &Path) -> Result<(KillOnDrop, String), String> {
    let log = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let mut child = Command::new("node")
        .arg("provider.mjs")
        .args([CLIENT_ID, CLIENT_SECRET, &format!("http://127.0.0.1:{port}/signin/with/local/callback")])
        .env("OIDC_ACCOUNTS", accounts.to_string())
        .current_dir(tests_dir().join("oidc"))
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot run node: {e}"))?;
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).map_err(|e| e.to_string())?;
    // Kept open (and drained) while it runs: a closed pipe would end it at its next line.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let child = KillOnDrop(child);
    let issuer = serde_json::from_str::<Value>(&line)
        .ok()
        .and_then(|v| v["issuer"].as_str().map(str::to_owned))
        .ok_or_else(|| format!("the provider did not start: {line:?}"))?;
    Ok((child, issuer))
}

/// Signs in through the provider as `login` in a fresh browser: where it ended up, and the page.
fn sign_in(port: u16, login: &str) -> Value {
    let output = Command::new("node")
        .args(["oidc_signin.mjs", &format!("http://127.0.0.1:{port}/signin?next=/account"), "Local ID", login])
        .current_dir(tests_dir().join("browser"))
        .output()
        .expect("run node");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|_| panic!("no JSON: {stdout}"))
}

/// The emails of the accounts, as the operator's `user list` shows them.
fn accounts(data_dir: &Path) -> Vec<String> {
    let listed = clean_command()
        .args(["user", "list"])
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .output()
        .expect("run user list");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    listed.split_whitespace().filter(|word| word.contains('@')).map(str::to_owned).collect()
}

#[test]
fn a_real_openid_provider_signs_in_only_people_with_accounts() {
    let what = "sign-in through oidc-provider";
    let Some(()) = or_skip(what, set_up("oidc")) else { return };
    let Some(()) = or_skip(what, set_up("browser")) else { return };
    let data_dir = fresh_data_dir("oidc-provider");
    let port = server_port();
    let people = json!({
        "ana-sub": {"email": EMAIL, "email_verified": true, "name": "Ana"},
        "pretender": {"email": EMAIL, "email_verified": false},
        "eve-sub": {"email": "eve@example.com", "email_verified": true},
    });
    let Some((_provider, issuer)) = or_skip(what, provider(port, &people, &data_dir.join("provider.log"))) else {
        return;
    };

    // The operator's account for Ana, with a password she never uses here.
    let mut add = clean_command()
        .args(["user", "add", "--email", EMAIL, "--name", "Ana", "--password-stdin"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run user add");
    writeln!(add.stdin.take().unwrap(), "a long enough password for ana").unwrap();
    let added = add.wait_with_output().unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));

    let providers = json!([{
        "id": "local", "name": "Local ID", "issuer": issuer, "client_id": CLIENT_ID,
        "client_secret_env": "OIDC_TEST_CLIENT_SECRET",
    }]);
    let env = [
        ("MIROBODY_OAUTH__PROVIDERS", providers.to_string()),
        ("OIDC_TEST_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
        ("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "0".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (child, log) = start_logged(&data_dir, port, &env);
    let _server = KillOnDrop(child);

    // Ana's address, unverified at the provider: not Ana.
    let page = sign_in(port, "pretender");
    assert!(page["text"].as_str().unwrap().contains("did not give a verified email"), "{page}");
    assert!(!page["url"].as_str().unwrap().contains("/account"), "{page}");

    // Someone with no account here: refused, and none is made.
    let page = sign_in(port, "eve-sub");
    assert_eq!(page["title"], "No account here", "{page}");
    assert!(page["text"].as_str().unwrap().contains("eve@example.com"), "{page}");
    assert_eq!(accounts(&data_dir), [EMAIL], "no account was made");

    // Ana, verified: signed in as herself, and linked.
    let page = sign_in(port, "ana-sub");
    assert_eq!(page["url"], format!("http://127.0.0.1:{port}/account"), "{page}");
    let text = page["text"].as_str().unwrap();
    assert!(text.contains("Your account") && text.contains(EMAIL), "{page}");
    assert!(text.contains("Local ID as ana@example.com"), "the link is listed: {page}");
    // Linked: a second sign-in is her again.
    let page = sign_in(port, "ana-sub");
    assert_eq!(page["url"], format!("http://127.0.0.1:{port}/account"), "{page}");

    let log = std::fs::read_to_string(log).unwrap_or_default();
    assert!(log.contains("signed in through an OpenID provider"), "the log is the server's at trace level");
    assert!(!log.contains(CLIENT_SECRET) && !log.contains("Basic "), "the client secret is never logged");
}
