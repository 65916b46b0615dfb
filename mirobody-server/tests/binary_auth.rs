//! Identity through the real binary: bearer tokens, the 401 challenge, personal MCP URLs
//! (create, 409, rotate, revoke), credentials refused in query strings, the protected resource
//! metadata, and no token or secret in the server's log.

mod common;

use common::{fresh_data_dir, raw_post, scoped_token, server_port, start, start_logged, token};
use serde_json::{Value, json};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const WHOAMI: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(": ")?;
        n.eq_ignore_ascii_case(name).then_some(v.trim())
    })
}

fn status(head: &str) -> u16 {
    head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

// Initializes on `path` with `headers`, then calls whoami on the session: the second reply.
fn whoami(port: u16, path: &str, headers: &[(&str, &str)]) -> (String, String) {
    let (head, body) = raw_post(port, path, headers, INIT);
    assert_eq!(status(&head), 200, "{head}\n{body}");
    let sid = header(&head, "mcp-session-id").expect("a session").to_owned();
    let mut with_session: Vec<(&str, &str)> = headers.to_vec();
    with_session.push(("Mcp-Session-Id", &sid));
    raw_post(port, path, &with_session, WHOAMI)
}

#[test]
fn identity_end_to_end() {
    let data_dir = fresh_data_dir("binary-auth");
    let port = server_port();
    let token = token(&data_dir, port, "alice");
    let (mut server, log_path) = start_logged(&data_dir, port, &[]);
    let bearer = format!("Bearer {token}");
    let base = format!("http://127.0.0.1:{port}");

    // Anonymous: the auth tool is refused with the MCP challenge.
    let (head, body) = whoami(port, "/mcp", &[]);
    assert_eq!(status(&head), 401, "{head}\n{body}");
    let challenge = header(&head, "www-authenticate").expect("a challenge");
    assert!(
        challenge.contains(&format!(r#"resource_metadata="{base}/.well-known/oauth-protected-resource"#)),
        "{challenge}"
    );
    // The scopes to ask for, as the auth layer's own 401s name them (the default `mcp`).
    assert!(challenge.contains(r#"scope="mcp""#), "{challenge}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], -32001);

    // A bearer token: the tool runs as its subject.
    let (head, body) = whoami(port, "/mcp", &[("Authorization", &bearer)]);
    assert_eq!(status(&head), 200, "{head}\n{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["result"]["structuredContent"]["authenticated"], true);

    // A forged token: 401 invalid_token at once.
    let (head, _) = raw_post(port, "/mcp", &[("Authorization", "Bearer abc.def.ghi")], INIT);
    assert_eq!(status(&head), 401);
    assert!(header(&head, "www-authenticate").unwrap().contains(r#"error="invalid_token""#));

    // A personal URL needs a token with the personal URL scope: a plain one gets 403.
    let (head, body) = raw_post(port, "/personal/mcp", &[("Authorization", &bearer)], "");
    assert_eq!(status(&head), 403, "{head}\n{body}");
    let challenge = header(&head, "www-authenticate").expect("a challenge");
    assert!(challenge.contains(r#"error="insufficient_scope""#), "{challenge}");
    assert!(challenge.contains(r#"scope="mcp:personal_url""#), "{challenge}");
    let scoped = scoped_token(&data_dir, port, "alice", &["mcp:personal_url"]);
    let bearer = format!("Bearer {scoped}");

    // A personal URL: made once, then 409, then rotated.
    let (head, body) = raw_post(port, "/personal/mcp", &[("Authorization", &bearer)], "");
    assert_eq!(status(&head), 200, "{head}\n{body}");
    let first = serde_json::from_str::<Value>(&body).unwrap()["data"]["url"].as_str().unwrap().to_owned();
    // The secret before a last `/mcp`: clients that infer the transport from the path take it.
    assert!(first.starts_with(&format!("{base}/mcp/")) && first.ends_with("/mcp"), "{first}");
    let first_path = first.trim_start_matches(&base).to_owned();
    let (head, body) = whoami(port, &first_path, &[]);
    assert_eq!(status(&head), 200, "the secret URL identifies the user with no header: {body}");
    assert_eq!(status(&raw_post(port, "/personal/mcp", &[("Authorization", &bearer)], "").0), 409);
    let (head, body) = raw_post(port, "/personal/mcp?rotate=true", &[("Authorization", &bearer)], "");
    assert_eq!(status(&head), 200, "{body}");
    let second = serde_json::from_str::<Value>(&body).unwrap()["data"]["url"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    assert_eq!(status(&raw_post(port, &first_path, &[], INIT).0), 401, "the rotated-away URL is dead");
    let secret = mirobody_auth::PersonalUrl::secret_of(&second).unwrap().to_owned();
    let old_shape = format!("/mcp/{secret}");
    assert_eq!(status(&whoami(port, &old_shape, &[]).0), 200, "the older shape, without the last /mcp, still works");
    assert_eq!(status(&whoami(port, "/mcp", &[("X-MCP-Secret", &secret)]).0), 200, "the secret as a header");

    // Credentials in a query string are refused, never honoured.
    let (head, _) = raw_post(port, &format!("/mcp?secret={secret}"), &[], INIT);
    assert_eq!(status(&head), 400);
    let (head, _) = raw_post(port, &format!("/mcp?access_token={token}"), &[], INIT);
    assert_eq!(status(&head), 400);

    // The protected resource metadata, at the root and path-inserted.
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let output = std::process::Command::new("curl").args(["-s", &format!("{base}{path}")]).output().unwrap();
        let document: Value = serde_json::from_slice(&output.stdout).unwrap_or(json!(null));
        assert_eq!(document["resource"], format!("{base}/mcp"), "{path}");
    }

    // Revoked: the URL stops working.
    let request = std::process::Command::new("curl")
        .args(["-s", "-X", "DELETE", "-H", &format!("Authorization: {bearer}"), &format!("{base}/personal/mcp")])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&request.stdout).contains("true"), "{}", String::from_utf8_lossy(&request.stdout));
    assert_eq!(status(&raw_post(port, "/mcp", &[("X-MCP-Secret", &secret)], INIT).0), 401);

    server.kill().unwrap();
    server.wait().unwrap();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("caller resolved") && log.contains("personal MCP URL issued"), "the TRACE log was captured");
    for (what, needle) in [
        ("the token", token.as_str()),
        ("the scoped token", scoped.as_str()),
        ("the first secret", first_path.trim_start_matches("/mcp/")),
        ("the second secret", secret.as_str()),
    ] {
        assert!(!log.contains(needle), "{what} reached the log");
    }
    let _ = std::fs::remove_dir_all(&data_dir);
}

#[test]
fn the_secret_cli_takes_an_expiry_within_bounds() {
    let data_dir = fresh_data_dir("binary-secret-expiry");
    let port = server_port();
    let secret = |args: &[&str]| {
        common::clean_command()
            .arg("secret")
            .args(args)
            .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
            .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
            .output()
            .unwrap()
    };
    for bad in ["59", "31536001", "soon"] {
        let output = secret(&["create", "--user", "bob", "--expires-in", bad]);
        assert!(!output.status.success(), "--expires-in {bad} accepted");
        assert!(String::from_utf8_lossy(&output.stderr).contains("--expires-in"), "{output:?}");
    }
    let output = secret(&["create", "--user", "bob", "--expires-in", "3600"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let url = String::from_utf8(output.stdout).unwrap();
    assert!(url.trim().starts_with(&format!("http://127.0.0.1:{port}/mcp/")), "{url}");
    let output = secret(&["rotate", "--user", "bob", "--expires-in", "60"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!secret(&["revoke", "--user", "bob", "--expires-in", "60"]).status.success());
    assert!(secret(&["revoke", "--user", "bob"]).status.success());
    let _ = std::fs::remove_dir_all(&data_dir);
}

#[test]
fn resources_list_shows_the_callers_own_uploads_only() {
    let data_dir = fresh_data_dir("binary-resources");
    let port = server_port();
    let demo = common::clean_command()
        .arg("demo")
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    assert!(demo.status.success(), "{}", String::from_utf8_lossy(&demo.stderr));
    let printed = String::from_utf8_lossy(&demo.stdout);
    assert!(printed.contains(&format!("http://127.0.0.1:{port}/upload/")), "the demo prints an upload link: {printed}");
    let mut server = start(&data_dir, port);
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{}}"#;
    let uris = |user: Option<&str>| -> Vec<String> {
        let bearer = user.map(|u| format!("Bearer {}", token(&data_dir, port, u)));
        let headers: Vec<(&str, &str)> = bearer.iter().map(|b| ("Authorization", b.as_str())).collect();
        let (head, _) = raw_post(port, "/mcp", &headers, INIT);
        let sid = header(&head, "mcp-session-id").unwrap().to_owned();
        let mut with_session = headers.clone();
        with_session.push(("Mcp-Session-Id", &sid));
        let (_, body) = raw_post(port, "/mcp", &with_session, list);
        let reply: Value = serde_json::from_str(&body).unwrap();
        reply["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap().to_owned()).collect()
    };
    let demo_uris = uris(Some("demo"));
    assert!(demo_uris.contains(&"info://server".to_owned()), "{demo_uris:?}");
    assert_eq!(
        demo_uris.iter().filter(|u| u.starts_with("file://up-")).count(),
        3,
        "the demo's uploads: {demo_uris:?}"
    );
    // A binary upload comes back as a signed, expiring URL that the server itself serves.
    let bearer = format!("Bearer {}", token(&data_dir, port, "demo"));
    let (head, _) = raw_post(port, "/mcp", &[("Authorization", &bearer)], INIT);
    let sid = header(&head, "mcp-session-id").unwrap().to_owned();
    let list_files = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_files","arguments":{}}}"#;
    let (_, body) = raw_post(port, "/mcp", &[("Authorization", &bearer), ("Mcp-Session-Id", &sid)], list_files);
    let listed: Value = serde_json::from_str(&body).unwrap();
    let files = listed["result"]["structuredContent"]["files"].as_array().unwrap().clone();
    let png = files.iter().find(|f| f["mime"] == "image/png").unwrap_or_else(|| panic!("{body}"))["file_key"].clone();
    let read = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"file_key":png}}});
    let (_, body) = raw_post(port, "/mcp", &[("Authorization", &bearer), ("Mcp-Session-Id", &sid)], &read.to_string());
    let reply: Value = serde_json::from_str(&body).unwrap();
    let url = reply["result"]["structuredContent"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("a signed URL: {body}"))
        .to_owned();
    assert!(url.starts_with(&format!("http://127.0.0.1:{port}/files/")), "{url}");
    let fetched = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", &url])
        .output()
        .unwrap();
    let fetched = String::from_utf8_lossy(&fetched.stdout).to_string();
    assert!(fetched.starts_with("200 ") && !fetched.ends_with(" 0"), "the signed URL serves the file: {fetched}");
    let tampered = url.replace("signature=", "signature=0");
    let refused = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", &tampered])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&refused.stdout), "403", "a tampered signature is refused");

    let other = uris(Some("someone-else"));
    assert!(!other.iter().any(|u| u.starts_with("file://")), "another user sees none of them: {other:?}");
    let anonymous = uris(None);
    assert!(!anonymous.iter().any(|u| u.starts_with("file://")), "{anonymous:?}");
    server.kill().unwrap();
    server.wait().unwrap();
    let _ = std::fs::remove_dir_all(&data_dir);
}
