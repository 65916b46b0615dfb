//! Driving the real `mirobody-server` binary over loopback: start it on a data folder, mint a
//! token with its own CLI, and speak HTTP/1.1 to it with no client library in between.

#![allow(dead_code, unused_imports)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_mirobody-server");

/// The binary with no `MIROBODY_*` settings inherited from the test's environment.
pub(crate) fn clean_command() -> Command {
    let mut command = Command::new(BIN);
    for (key, _) in std::env::vars() {
        if key.starts_with("MIROBODY_") {
            command.env_remove(key);
        }
    }
    command
}

/// An empty data folder for one test's server, under the target's scratch folder.
pub(crate) fn fresh_data_dir(name: &str) -> PathBuf {
    let data_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    data_dir
}

pub(crate) use mirobody_testkit::{KillOnDrop, free_port};

// Sockets reserved by `server_port`, each until a server started on its port takes it over.
static RESERVED: std::sync::Mutex<Vec<mirobody_testkit::Listener>> = std::sync::Mutex::new(Vec::new());

/// A port for a server this test will start: bound and held here until [`start_with`] hands
/// the socket to the server, so no parallel test can take it in between. (`free_port` is for
/// outside programs that can only be told a number.)
pub(crate) fn server_port() -> u16 {
    let listener = mirobody_testkit::Listener::new();
    let port = listener.port();
    RESERVED.lock().unwrap().push(listener);
    port
}

// The reserved socket for `port`, once: a server restarted on the same port binds it itself.
fn take_reserved(port: u16) -> Option<mirobody_testkit::Listener> {
    let mut reserved = RESERVED.lock().unwrap();
    let index = reserved.iter().position(|listener| listener.port() == port)?;
    Some(reserved.swap_remove(index))
}

/// Starts the server on `port` with its data under `data_dir`, and waits until it listens.
pub(crate) fn start(data_dir: &Path, port: u16) -> Child {
    start_with(data_dir, port, Stdio::null(), &[])
}

/// Like [`start_with`], with the log (stderr) going to `server.log` in the data folder, whose
/// path comes back with the server.
pub(crate) fn start_logged(data_dir: &Path, port: u16, env: &[(&str, &str)]) -> (Child, PathBuf) {
    let log_path = data_dir.join("server.log");
    let log = std::fs::File::create(&log_path).expect("create the server log");
    (start_with(data_dir, port, log, env), log_path)
}

/// Like [`start`], with the log (stderr, at TRACE level unless `env` sets `RUST_LOG`) going to
/// `log`, and more environment variables (settings). On a port from [`server_port`] the server
/// takes over the reserved socket; otherwise it binds `port` itself. Returns once the server
/// answers `/healthz`; fails the test if it exits first.
pub(crate) fn start_with(data_dir: &Path, port: u16, log: impl Into<Stdio>, env: &[(&str, &str)]) -> Child {
    let mut command = clean_command();
    command
        .args(["--bind", &format!("127.0.0.1:{port}"), "serve"])
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("RUST_LOG", "trace")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(log);
    if let Some(listener) = take_reserved(port) {
        listener.hand_to(&mut command);
    }
    let mut child = command.spawn().expect("start the server");
    drop(command);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !answers_health(port) {
        if let Some(status) = child.try_wait().expect("the server's status") {
            panic!("the server exited before it answered /healthz: {status}");
        }
        assert!(Instant::now() < deadline, "the server did not answer /healthz within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

// Whether an HTTP server answers `GET /healthz` on `port` (any status: a server that answers
// is up; what it answers is the test's business).
fn answers_health(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 ")
}

/// A token for `user` minted by the server's own `token` command (same key, same audience).
pub(crate) fn token(data_dir: &Path, port: u16, user: &str) -> String {
    scoped_token(data_dir, port, user, &[])
}

/// A token from `mirobody-server token --scope <scope>...`.
pub(crate) fn scoped_token(data_dir: &Path, port: u16, user: &str, scopes: &[&str]) -> String {
    let output = clean_command()
        .args(["token", "--user", user, "--ttl", "3600"])
        .args(scopes.iter().flat_map(|scope| ["--scope", scope]))
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .expect("mint a token");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A JSON-RPC POST to `/mcp` with a bearer token; `None` when the server is gone.
pub(crate) fn post(port: u16, token: &str, session: Option<&str>, body: &Value) -> Option<(String, Value)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    // As long as `request` waits: a call that imports a file can take seconds on a loaded
    // 2-core machine, and a server that is gone answers at once either way.
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let body = body.to_string();
    let session = session.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer {token}\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let (head, payload) = reply.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    Some((head.to_owned(), serde_json::from_str(payload).ok()?))
}

/// The resident memory of process `pid` now and its peak, in KiB (`VmRSS`, `VmHWM`); zeros
/// when it is gone.
pub(crate) fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Initializes and returns the session id.
pub(crate) fn session(port: u16, token: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"durability","version":"1"}}});
    let (head, _) = post(port, token, None, &init).expect("initialize");
    head.lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|s| s.trim().to_owned()))
        .expect("a session id")
}

/// The HTTP status of a `tools/list` on MCP session `sid` as the holder of `token`: 200 while
/// the session lives, 404 once it ended.
pub(crate) fn mcp_status(port: u16, token: &str, sid: &str) -> u16 {
    let auth = format!("Bearer {token}");
    let headers = [
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).to_string();
    request(port, "POST", "/mcp", &headers, body.as_bytes()).0
}

/// A `tools/call`.
pub(crate) fn call(port: u16, token: &str, session: &str, id: u64, tool: &str, arguments: Value) -> Option<Value> {
    let request = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":arguments}});
    post(port, token, Some(session), &request).map(|(_, reply)| reply)
}

/// A raw HTTP/1.1 POST with any headers; the status line, headers and body.
pub(crate) fn raw_post(port: u16, path: &str, headers: &[(&str, &str)], body: &str) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head =
        format!("POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    write!(stream, "{head}Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    (head.to_owned(), body.to_owned())
}

/// A raw HTTP/1.1 request with any method, headers and bytes; the status, the head and the
/// body.
pub(crate) fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let split = reply.windows(4).position(|w| w == b"\r\n\r\n").map_or(reply.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&reply[..split]).into_owned();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut body = reply[split..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = unchunk(&body);
    }
    (status, head, body)
}

// The payload of a chunked body.
fn unchunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = body.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&body[..line_end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = line_end + 2;
        out.extend_from_slice(&body[start..start + size]);
        body = &body[start + size + 2..];
    }
    out
}

/// A `tools/call`'s structured result, or its error text as `{"error": text}`.
pub(crate) fn tool(port: u16, token: &str, session: &str, tool: &str, arguments: Value) -> Value {
    let reply = call(port, token, session, 9, tool, arguments).expect("a reply");
    let result = &reply["result"];
    if result["isError"] == true {
        return json!({"error": result["content"][0]["text"]});
    }
    result["structuredContent"].clone()
}

/// The markers `recall_memory` does not find, each asked through `port` on one of `sessions` in
/// turn: acknowledged writes that were lost.
pub(crate) fn unrecalled(port: u16, token: &str, sessions: &[String], markers: &[String]) -> Vec<String> {
    let mut missing = Vec::new();
    for (i, marker) in markers.iter().enumerate() {
        let sid = &sessions[i % sessions.len()];
        let reply = call(port, token, sid, i as u64 + 1, "recall_memory", json!({"query": marker, "top_k": 1}))
            .expect("recall answers");
        let found = reply["result"]["structuredContent"]["memories"][0]["text"].as_str().unwrap_or_default();
        if !found.contains(marker.as_str()) {
            missing.push(marker.clone());
        }
    }
    missing
}

/// Fails the test when any of `acknowledged` writes is `missing`, naming the first ten.
pub(crate) fn assert_none_lost(missing: &[String], acknowledged: usize) {
    assert!(
        missing.is_empty(),
        "{} of {acknowledged} acknowledged memories were lost: {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
}
