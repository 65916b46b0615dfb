//! `render_chart` under attack: anonymous callers draw 20,000-point charts in a loop. The
//! drawing runs on the bounded blocking pool (one turn for every anonymous caller together),
//! never on the async workers, so the honest user's `/healthz` and `echo` are answered quickly
//! throughout (each within 2 s, where drawing on the workers took `/healthz` to 2.5 s with
//! eight such callers), and the process stays up.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{call, request, session};
use crate::harness::Server;

const ATTACKERS: usize = 8;
const POINTS: usize = 20_000;
const ATTACK: Duration = Duration::from_secs(12);
const BOUND: Duration = Duration::from_secs(2);

// A JSON-RPC POST to `/mcp` with no credentials; the head and the body, or `None` when the
// server did not answer.
fn anonymous_post(port: u16, session: Option<&str>, body: &Value) -> Option<(String, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let body = body.to_string();
    let session = session.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n{session}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let (head, payload) = reply.split_once("\r\n\r\n")?;
    Some((head.to_owned(), payload.to_owned()))
}

fn anonymous_session(port: u16) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "attacker", "version": "1"}}});
    let (head, _) = anonymous_post(port, None, &init).expect("initialize");
    let sid = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|s| s.trim().to_owned()))
        .unwrap_or_else(|| panic!("no session: {head}"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    anonymous_post(port, Some(&sid), &initialized);
    sid
}

// A line chart of `POINTS` values: the largest drawing an anonymous caller may ask for.
fn large_chart() -> Value {
    let data: Vec<i64> = (0..POINTS).map(|i| 60 + ((i * 7919) % 80) as i64).collect();
    json!({"xAxis": {"type": "category"}, "yAxis": {"type": "value"},
           "series": [{"name": "Heart rate", "type": "line", "data": data}]})
}

#[test]
fn anonymous_renders_in_a_loop_leave_the_honest_user_served() {
    // Many addresses behind the attack: the per-address bounds would otherwise stop it early.
    let mut server = Server::start(
        "attack-render",
        &[
            ("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "0"),
            ("MIROBODY_HTTP__CALLER_LIMITS__MAX_CALLS", "0"),
            ("MIROBODY_HTTP__CALLER_LIMITS__MAX_SESSIONS", "0"),
            ("MIROBODY_SERVE__MAX_CONNECTIONS_PER_ADDRESS", "0"),
        ],
    );
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));
    let (drawn, busy) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let chart = Arc::new(large_chart());
    let attackers: Vec<_> = (0..ATTACKERS)
        .map(|i| {
            let (stop, drawn, busy, chart) = (Arc::clone(&stop), Arc::clone(&drawn), Arc::clone(&busy), Arc::clone(&chart));
            std::thread::spawn(move || {
                let sid = anonymous_session(port);
                let mut id = 1;
                while !stop.load(Ordering::Relaxed) {
                    id += 1;
                    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "render_chart", "arguments": {"option": &*chart, "title": format!("attack {i}")}}});
                    let Some((_, body)) = anonymous_post(port, Some(&sid), &call) else { continue };
                    if body.contains("image/png") {
                        drawn.fetch_add(1, Ordering::Relaxed);
                    } else if body.contains("busy") {
                        busy.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();

    // The honest user, all through the attack.
    let sid = session(port, &server.token);
    let started = Instant::now();
    let (mut slowest_health, mut slowest_echo, mut rounds) = (Duration::ZERO, Duration::ZERO, 0u64);
    while started.elapsed() < ATTACK {
        let asked = Instant::now();
        let (status, _, body) = request(port, "GET", "/healthz", &[], b"");
        slowest_health = slowest_health.max(asked.elapsed());
        assert_eq!((status, body.as_slice()), (200, &b"ok"[..]), "/healthz during the attack");
        let asked = Instant::now();
        let reply = call(port, &server.token, &sid, 100 + rounds, "echo", json!({"text": "still here"}))
            .expect("the honest echo was answered");
        slowest_echo = slowest_echo.max(asked.elapsed());
        assert_eq!(reply["result"]["structuredContent"], json!({"echo": "still here"}), "{reply}");
        rounds += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for attacker in attackers {
        attacker.join().unwrap();
    }
    let (drawn, busy) = (drawn.load(Ordering::Relaxed), busy.load(Ordering::Relaxed));
    println!(
        "render attack: {ATTACKERS} anonymous callers, {drawn} charts drawn, {busy} refused as busy; honest user: \
         {rounds} rounds, slowest /healthz {slowest_health:?}, slowest echo {slowest_echo:?}"
    );
    assert!(drawn > 0, "the attack drew charts (the test exercised what it says)");
    assert!(slowest_health < BOUND, "/healthz took {slowest_health:?} during the attack");
    assert!(slowest_echo < BOUND, "echo took {slowest_echo:?} during the attack");
    server.assert_serves_honest_user();
}
