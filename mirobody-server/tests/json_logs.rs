//! `log_format: json` through the real binary: every line the server and its commands log is
//! a JSON object, a request's lines carry its `request_id` (and the `traceparent`'s trace id),
//! and no line holds a credential or a health value, at the most verbose level.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::{KillOnDrop, clean_command, fresh_data_dir, request, server_port};
use serde_json::{Value, json};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const JSON: (&str, &str) = ("MIROBODY_LOG_FORMAT", "json");

// Runs a command with JSON logs at TRACE; its stdout and its log (stderr).
fn run(data_dir: &Path, port: u16, args: &[&str], stdin: &str) -> (String, String) {
    let mut child = clean_command()
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env(JSON.0, JSON.1)
        .env("RUST_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    assert!(output.status.success(), "{args:?}: {}", text(&output.stderr));
    (text(&output.stdout), text(&output.stderr))
}

// An MCP POST with extra headers; the reply's head and JSON body.
fn mcp(port: u16, path: &str, headers: &[(&str, &str)], body: &Value) -> (String, Value) {
    let mut all = vec![("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    let (status, head, body) = request(port, "POST", path, &all, body.to_string().as_bytes());
    assert!(status == 200 || status == 202, "{head} {}", String::from_utf8_lossy(&body));
    (head, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[test]
fn json_logs_carry_request_ids_and_no_secret_or_health_value() {
    let data_dir = fresh_data_dir("json-logs");
    let port = server_port();
    let mut logs = String::new();
    let (demo, log) = run(&data_dir, port, &["demo"], "");
    logs.push_str(&log);
    let token = demo.lines().skip_while(|line| !line.starts_with("Access token")).nth(1).unwrap().trim().to_owned();
    let personal = demo.lines().skip_while(|line| !line.starts_with("Personal MCP URL")).nth(1).unwrap().trim();
    let personal_path = personal.split_once(&format!("{port}")).unwrap().1.to_owned();
    let secret = personal_path.trim_start_matches("/mcp/").trim_end_matches("/mcp").to_owned();
    assert!(token.len() > 40 && secret.len() > 20, "{demo}");
    let password = "correct-horse-battery-staple-42";
    let (_, log) = run(
        &data_dir,
        port,
        &["user", "add", "--email", "ops@example.com", "--id", "demo", "--password-stdin"],
        password,
    );
    logs.push_str(&log);

    let log_path = data_dir.join("server.log");
    let log_file = std::fs::File::create(&log_path).unwrap();
    let server = KillOnDrop(common::start_with(&data_dir, port, log_file, &[JSON]));

    // A session over the bearer token, one request with the client's ids.
    let bearer = format!("Bearer {token}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "logs", "version": "1"}}});
    let traceparent = format!("00-{TRACE_ID}-00f067aa0ba902b7-01");
    let (head, _) = mcp(
        port,
        "/mcp",
        &[("authorization", &bearer), ("x-request-id", "client-id-1"), ("traceparent", &traceparent)],
        &init,
    );
    assert_eq!(header(&head, "x-request-id"), Some("client-id-1"), "{head}");
    let session = header(&head, "mcp-session-id").expect("a session").to_owned();
    let auth = [("authorization", bearer.as_str()), ("mcp-session-id", session.as_str())];
    let (head, _) = mcp(port, "/mcp", &auth, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let made = header(&head, "x-request-id").expect("an id is made when none is given");
    assert!(made.len() == 32 && made != "client-id-1", "{made}");
    let (head, _) = mcp(
        port,
        "/mcp",
        &[auth[0], auth[1], ("x-request-id", "bad id\"")],
        &json!({"jsonrpc": "2.0",
        "method": "notifications/initialized"}),
    );
    assert_ne!(header(&head, "x-request-id"), Some("bad id\""), "{head}");
    let calls = [
        ("get_user_health_profile", json!({})),
        ("fetch_health_data", json!({"indicators": ["BP", "heart rate"], "member": "Mom"})),
        ("recall_memory", json!({"query": "allergy"})),
        ("remember", json!({"text": "Takes zolmitriptan-marker-7731 for migraines", "kind": "fact"})),
        ("list_files", json!({})),
    ];
    for (id, (tool, arguments)) in calls.iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": id + 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        let (_, reply) = mcp(port, "/mcp", &auth, &call);
        assert!(reply["result"]["isError"] != true, "{tool}: {reply}");
    }
    // The personal URL, and an import with a value of its own.
    let list = json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {"name": "get_user_health_profile", "arguments": {}}});
    let (head, _) = mcp(port, &personal_path, &[], &init);
    let personal_session = header(&head, "mcp-session-id").expect("a session").to_owned();
    let (_, reply) = mcp(port, &personal_path, &[("mcp-session-id", &personal_session)], &list);
    assert!(reply["result"]["isError"] != true, "{reply}");
    let observation = json!({"resourceType": "Observation", "code": {"text": "Body weight"},
        "effectiveDateTime": "2026-02-01T07:00:00Z", "valueQuantity": {"value": 83.4567, "unit": "kg"}});
    let (status, head, _) = request(
        port,
        "POST",
        "/fhir",
        &[("authorization", &bearer), ("content-type", "application/fhir+json")],
        observation.to_string().as_bytes(),
    );
    assert!(status < 300, "{head}");
    // Signing in with the account's password, rightly and wrongly.
    let (_, head, page) = request(port, "GET", "/signin", &[], b"");
    let page = String::from_utf8_lossy(&page);
    let csrf = page.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("a csrf");
    let cookies: Vec<&str> = head
        .lines()
        .filter_map(|line| line.strip_prefix("set-cookie: ").or_else(|| line.strip_prefix("Set-Cookie: ")))
        .map(|cookie| cookie.split(';').next().unwrap())
        .collect();
    let cookie = cookies.join("; ");
    for (attempt, expected) in [(password, 303), ("wrong-password-9911", 401)] {
        let form = format!("email=ops%40example.com&password={attempt}&csrf={csrf}");
        let headers = [("content-type", "application/x-www-form-urlencoded"), ("cookie", cookie.as_str())];
        let (status, head, _) = request(port, "POST", "/signin", &headers, form.as_bytes());
        assert_eq!(status, expected, "{head}");
    }
    drop(server);
    let served = std::fs::read_to_string(&log_path).unwrap();
    // The import over HTTP runs in a task of its own, still in its request's span.
    let imports: Vec<&str> = served.lines().filter(|line| line.contains("INSERT INTO observations")).collect();
    assert!(!imports.is_empty(), "the import's statements are logged at TRACE");
    for line in imports {
        assert!(line.contains("\"request_id\""), "{line}");
    }
    logs.push_str(&served);

    let mut request_lines = 0;
    let mut traced = 0;
    for line in logs.lines().filter(|line| !line.trim().is_empty()) {
        let parsed: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(parsed["timestamp"].is_string() && parsed["level"].is_string(), "{line}");
        let spans = parsed["spans"].as_array().cloned().unwrap_or_default();
        if let Some(request) = spans.iter().find(|span| span["name"] == "request") {
            request_lines += 1;
            assert!(request["request_id"].as_str().is_some_and(|id| !id.is_empty()), "{line}");
            if request["request_id"] == "client-id-1" {
                assert_eq!(request["trace_id"], TRACE_ID, "{line}");
                traced += 1;
            }
        }
    }
    assert!(request_lines > 10 && traced > 0, "{request_lines} request lines, {traced} traced:\n{logs}");

    let forbidden = [
        token.as_str(),
        secret.as_str(),
        password,
        "wrong-password-9911",
        "Mild asthma",
        "Salbutamol",
        "enicillin",
        "half marathon",
        "sore left knee",
        "Triglycerides",
        "cholesterol",
        "zolmitriptan",
        "83.4567",
        "Ann Demo",
    ];
    for value in forbidden {
        let found = logs.lines().find(|line| line.contains(value));
        assert!(found.is_none(), "the logs hold {value:?}: {}", found.unwrap_or_default());
    }
}

#[test]
fn an_unknown_log_format_stops_the_start_naming_it() {
    let output = clean_command().args(["tools", "list"]).env(JSON.0, "xml").output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("log_format") && err.contains("json"), "{err}");
}
