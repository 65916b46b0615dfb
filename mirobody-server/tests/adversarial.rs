//! The real binary under attack over loopback, each test asserting the bound a limit promises
//! and that an honest signed-in client is served throughout: oversized capabilities, stalled
//! bodies, clients that never read, connection floods, session and request floods from one
//! address, subscription floods, and an endless line on stdio.
//!
//! The attacker's sockets come from 127.0.0.2 and up, the honest client's from 127.0.0.1, as
//! they would from different hosts.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

use common::{call, clean_command, fresh_data_dir, raw_post, server_port, session, start_with, token};
use serde_json::{Value, json};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

// A server that is killed when the test ends, however it ends.
struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(name: &str, env: &[(&str, &str)]) -> Server {
        let data_dir = fresh_data_dir(name);
        let port = server_port();
        let token = token(&data_dir, port, "honest");
        let child = start_with(&data_dir, port, std::process::Stdio::null(), env);
        Server { child, port, token }
    }

    // The server's resident memory now, and its peak, in KiB.
    fn memory_kib(&self) -> (u64, u64) {
        crate::common::memory_kib(self.child.id())
    }

    // The honest client: a session and a tools/call, answered correctly.
    fn assert_serves_honest_client(&self) {
        let sid = session(self.port, &self.token);
        let reply = call(self.port, &self.token, &sid, 7, "echo", json!({"text": "still here"}))
            .expect("the honest client was not answered");
        assert_eq!(reply["result"]["structuredContent"], json!({"echo": "still here"}), "{reply}");
    }
}

// A connection from `source` (127.0.0.x) to the server.
fn connect_from(source: u8, port: u16) -> std::io::Result<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    runtime
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from((Ipv4Addr::new(127, 0, 0, source), 0)))?;
            let stream = socket.connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
            stream.into_std()
        })
        .and_then(|stream| {
            stream.set_nonblocking(false)?;
            Ok(stream)
        })
}

fn status_of(reply: &str) -> u16 {
    reply.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then_some(v.trim())
    })
}

// Whether the server has closed `stream` (end of file or reset) within `within`, reading and
// dropping whatever it sent first.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn oversized_capabilities_are_not_kept() {
    let server = Server::start("adversarial-capabilities", &[]);
    // 40 anonymous initializes, each with about 3 MiB of capabilities: a million empty objects.
    let objects = vec!["{}"; 1_100_000].join(",");
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{"experimental":{{"x":[{objects}]}},"sampling":{{}}}},"clientInfo":{{"name":"{}","version":"1"}}}}}}"#,
        "n".repeat(100_000)
    );
    assert!(init.len() > 3 << 20 && init.len() < 4 << 20);
    let (before, _) = server.memory_kib();
    for n in 0..40u8 {
        let mut stream = connect_from(2 + n % 8, server.port).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        assert_eq!(status_of(&reply), 200, "{}", &reply[..reply.len().min(300)]);
        assert!(header(&reply, "mcp-session-id").is_some());
    }
    let (after, peak) = server.memory_kib();
    println!("40 initializes with 3 MiB capabilities: resident {before} -> {after} KiB, peak {peak} KiB");
    // Before: each session kept its capabilities, 2 GB for these 40.
    assert!(after.saturating_sub(before) < 64 * 1024, "resident memory grew from {before} to {after} KiB");
    assert!(peak < 256 * 1024, "peak resident memory {peak} KiB");
    server.assert_serves_honest_client();
}

#[test]
fn stalled_bodies_are_closed_within_the_body_timeout() {
    let server = Server::start(
        "adversarial-stalled",
        &[("MIROBODY_HTTP__REQUEST_BODY_TIMEOUT", "2s"), ("MIROBODY_SERVE__HEADER_READ_TIMEOUT", "2s")],
    );
    // 200 connections that send their headers, a little of the body, and then nothing.
    let mut stalled: Vec<TcpStream> = (0..200)
        .map(|n| {
            let mut stream = connect_from(2 + (n % 4) as u8, server.port).unwrap();
            write!(
                stream,
                "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
            )
            .unwrap();
            stream
        })
        .collect();
    // Served meanwhile.
    server.assert_serves_honest_client();
    let started = Instant::now();
    for stream in &mut stalled {
        assert!(closed_within(stream, Duration::from_secs(6)), "a stalled body held its connection open");
    }
    assert!(started.elapsed() < Duration::from_secs(6), "closed after {:?}", started.elapsed());
    // And the reason was said where the socket took it.
    server.assert_serves_honest_client();
}

#[test]
fn a_client_that_never_reads_is_closed_within_the_write_timeout() {
    let server = Server::start("adversarial-reader", &[("MIROBODY_SERVE__WRITE_TIMEOUT", "2s")]);
    let sid = session(server.port, &server.token);
    // Pipelined calls whose replies (3 MiB each, 24 MiB in all) the client never reads: the
    // server's writes fill the socket's buffers and wait.
    let text = "x".repeat(3 << 20);
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":text}}})
        .to_string();
    let mut stream = connect_from(2, server.port).unwrap();
    let token = &server.token;
    let started = Instant::now();
    for _ in 0..8 {
        let sent = write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer {token}\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        // The server stops reading requests while its reply waits, and then closes the
        // connection: a later write fails.
        if sent.is_err() {
            assert!(started.elapsed() < Duration::from_secs(10), "closed after {:?}", started.elapsed());
            break;
        }
    }
    std::thread::sleep(Duration::from_secs(5));
    // By now the server gave up on it: reading finds the end before all eight replies.
    let mut received = 0usize;
    let mut buffer = vec![0u8; 1 << 20];
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => received += n,
        }
    }
    assert!(received < 8 * (3 << 20), "the server kept writing to a client that did not read ({received} bytes)");
    server.assert_serves_honest_client();
}

#[test]
fn connection_floods_are_refused_at_the_door() {
    let server = Server::start("adversarial-connections", &[("MIROBODY_SERVE__MAX_CONNECTIONS_PER_ADDRESS", "50")]);
    // One address holds 50 idle connections; the next ones get 503 at once, and closed.
    let held: Vec<TcpStream> = (0..50).map(|_| connect_from(2, server.port).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..10 {
        let mut refused = connect_from(2, server.port).unwrap();
        refused.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut reply = String::new();
        let _ = refused.read_to_string(&mut reply);
        assert_eq!(status_of(&reply), 503, "{reply}");
        assert_eq!(header(&reply, "retry-after"), Some("1"));
    }
    // Another address is served meanwhile, and the held connections still work.
    server.assert_serves_honest_client();
    let mut first = held.into_iter().next().unwrap();
    write!(first, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    first.read_to_string(&mut reply).unwrap();
    assert_eq!(status_of(&reply), 200, "{reply}");
}

#[test]
fn a_request_flood_from_one_address_gets_429_with_retry_after() {
    let server = Server::start(
        "adversarial-rate",
        &[("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "5"), ("MIROBODY_HTTP__CALLER_LIMITS__BURST", "10")],
    );
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut statuses = Vec::new();
    let mut stream = connect_from(2, server.port).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for _ in 0..30 {
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{ping}",
            ping.len()
        )
        .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        let length: usize = header(&head, "content-length").unwrap().parse().unwrap();
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).unwrap();
        if status_of(&head) == 429 {
            let wait: u64 = header(&head, "retry-after").expect("Retry-After on a 429").parse().unwrap();
            assert!((1..=2).contains(&wait), "{head}");
        }
        statuses.push(status_of(&head));
    }
    // The burst goes through (a ping without a session is refused as such, not limited), then
    // the rest are over the rate.
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert!(statuses[..10].iter().all(|s| *s != 429), "{statuses:?}");
    assert!(limited >= 10, "{statuses:?}");
    // Another caller has its own rate.
    server.assert_serves_honest_client();
}

#[test]
fn anonymous_sessions_cannot_crowd_out_signed_in_ones() {
    let server = Server::start(
        "adversarial-sessions",
        &[
            ("MIROBODY_HTTP__MAX_SESSIONS", "12"),
            ("MIROBODY_HTTP__MAX_ANONYMOUS_SESSIONS", "6"),
            ("MIROBODY_HTTP__CALLER_LIMITS__MAX_SESSIONS", "3"),
        ],
    );
    let initialize = |source: u8| {
        let mut stream = connect_from(source, server.port).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{INIT}",
            INIT.len()
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        (status_of(&reply), header(&reply, "mcp-session-id").map(str::to_owned))
    };
    // One address makes ten sessions: it holds three at most, its newest.
    let from_one: Vec<String> = (0..10).map(|_| initialize(2).1.expect("a session")).collect();
    let live = |sid: &str| {
        let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        let (head, _) = raw_post_from(server.port, &[("Mcp-Session-Id", sid)], ping);
        status_of(&head) == 200
    };
    assert!(from_one[7..].iter().all(|sid| live(sid)), "its newest three live");
    assert!(from_one[..7].iter().all(|sid| !live(sid)), "its older ones went");
    // More addresses fill the anonymous share (six), then are refused with 503.
    let mut refused = 0;
    for source in 3..10 {
        match initialize(source) {
            (200, Some(_)) => {}
            (503, None) => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(refused >= 3, "the anonymous share was not kept ({refused} refused)");
    // Signed-in callers still get sessions, and are served.
    for _ in 0..3 {
        server.assert_serves_honest_client();
    }
}

// `raw_post` to /mcp from 127.0.0.1 with the protocol version set.
fn raw_post_from(port: u16, headers: &[(&str, &str)], body: &str) -> (String, String) {
    let mut all = vec![("Accept", "application/json"), ("MCP-Protocol-Version", "2025-11-25")];
    all.extend_from_slice(headers);
    raw_post(port, "/mcp", &all, body)
}

#[test]
fn subscriptions_are_bounded_per_session() {
    let server = Server::start("adversarial-subscriptions", &[]);
    let (head, _) = raw_post_from(server.port, &[], INIT);
    let sid = header(&head, "mcp-session-id").unwrap().to_owned();
    let subscribe = |n: usize| {
        let body =
            json!({"jsonrpc":"2.0","id":n,"method":"resources/subscribe","params":{"uri":format!("file:///{n}")}});
        let (_, reply) = raw_post_from(server.port, &[("Mcp-Session-Id", &sid)], &body.to_string());
        serde_json::from_str::<Value>(&reply).unwrap()
    };
    for n in 0..16 {
        assert_eq!(subscribe(n)["result"], json!({}), "subscription {n}");
    }
    let refused = subscribe(16);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("too many subscriptions"), "{refused}");
    server.assert_serves_honest_client();
}

#[test]
fn an_endless_line_on_stdio_costs_a_buffer_not_its_length() {
    use std::process::Stdio;
    let data_dir = fresh_data_dir("adversarial-stdio");
    let mut child = clean_command()
        .arg("stdio")
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let pid = child.id();
    let writer = std::thread::spawn(move || {
        // 256 MiB without a newline, then one, then a request.
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..256 {
            stdin.write_all(&chunk).unwrap();
        }
        stdin.write_all(b"\n").unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":5,"method":"ping"}}"#).unwrap();
        stdin
    });
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead;
    stdout.read_line(&mut line).unwrap();
    let error: Value = serde_json::from_str(&line).unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("too large"), "{error}");
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let pong: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(pong["id"], 5, "{pong}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    drop(writer.join().unwrap());
    let _ = child.wait();
    assert!(peak < 128 * 1024, "peak resident memory {peak} KiB for a 256 MiB line");
}

#[test]
fn many_large_arguments_at_once_are_bounded_by_the_body_budget() {
    let server = Server::start("adversarial-arguments", &[]);
    let sid = session(server.port, &server.token);
    // A signed-in caller's tools/call whose arguments are about 3.8 MiB of empty objects: the
    // worst ratio of parsed value to text that JSON allows. Twenty at once, from one caller.
    let objects = vec!["{}"; 1_300_000].join(",");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x","extra":[{objects}]}}}}}}"#
    );
    assert!(body.len() < 4 << 20);
    let token = server.token.clone();
    let port = server.port;
    let senders: Vec<_> = (0..20)
        .map(|_| {
            let (body, token, sid) = (body.clone(), token.clone(), sid.clone());
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
                write!(
                    stream,
                    "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer {token}\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
                let mut reply = String::new();
                let _ = stream.read_to_string(&mut reply);
                (status_of(&reply), header(&reply, "retry-after").map(str::to_owned))
            })
        })
        .collect();
    let replies: Vec<(u16, Option<String>)> = senders.into_iter().map(|s| s.join().unwrap()).collect();
    let (_, peak) = server.memory_kib();
    println!("20 tools/call with 3.8 MiB of empty objects at once: peak resident {peak} KiB, replies {replies:?}");
    // Refused as invalid arguments (extra is not declared) once read; the ones over the budget
    // are told to come back.
    assert!(replies.iter().all(|(status, _)| *status == 200 || *status == 503), "{replies:?}");
    assert!(replies.iter().any(|(status, _)| *status == 503), "the budget never ran out: {replies:?}");
    assert!(replies.iter().filter(|(s, _)| *s == 503).all(|(_, retry)| retry.as_deref() == Some("1")));
    assert!(peak < 1536 * 1024, "peak resident memory {peak} KiB");
    server.assert_serves_honest_client();
}

#[test]
fn an_agent_denied_the_files_tools_cannot_reach_files_as_resources() {
    let data_dir = fresh_data_dir("adversarial-agent-files");
    let port = server_port();
    let cli = |args: &[&str]| {
        let output = clean_command()
            .args(args)
            .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
            .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    // The demo user has three files; its personal URL is bound to an agent denied both tools.
    cli(&["demo"]);
    let url = cli(&["secret", "rotate", "--user", "demo", "--agent", "narrow"]);
    let path = url.trim().strip_prefix(&format!("http://127.0.0.1:{port}")).unwrap().to_owned();
    let denied = [("MIROBODY_DISALLOWED_TOOLS_NARROW", "[read_file, list_files]")];
    let child = start_with(&data_dir, port, std::process::Stdio::null(), &denied);
    let server = Server { child, port, token: token(&data_dir, port, "demo") };

    // Signed in without an agent: the files are resources.
    let sid = session(port, &server.token);
    let listed =
        common::post(port, &server.token, Some(&sid), &json!({"jsonrpc":"2.0","id":2,"method":"resources/list"}))
            .unwrap()
            .1;
    let files: Vec<String> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str().filter(|u| u.starts_with("file://")).map(str::to_owned))
        .collect();
    assert_eq!(files.len(), 3, "{listed}");

    // Through the agent's URL: neither listed nor read, and the tools are not there either.
    let (head, _) = raw_post(port, &path, &[("Accept", "application/json")], INIT);
    let agent_sid = header(&head, "mcp-session-id").expect(&head).to_owned();
    let ask = |body: Value| {
        let (_, reply) = raw_post(
            port,
            &path,
            &[("Accept", "application/json"), ("Mcp-Session-Id", &agent_sid), ("MCP-Protocol-Version", "2025-11-25")],
            &body.to_string(),
        );
        serde_json::from_str::<Value>(&reply).unwrap()
    };
    let listed = ask(json!({"jsonrpc":"2.0","id":2,"method":"resources/list"}));
    let uris = listed["result"]["resources"].as_array().expect("a listing");
    assert!(uris.iter().all(|r| !r["uri"].as_str().unwrap().starts_with("file://")), "{listed}");
    for uri in &files {
        let read = ask(json!({"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":uri}}));
        assert_eq!(read["error"]["code"], -32002, "{read}");
    }
    let call = ask(
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"file_key":"x"}}}),
    );
    assert!(call["error"]["message"].as_str().unwrap().contains("Unknown tool"), "{call}");
}
