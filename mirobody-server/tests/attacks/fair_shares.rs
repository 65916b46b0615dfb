//! One account taking more than its share of the routes beside `/mcp`: slow bodies holding
//! every upload turn, trickles holding theirs for the whole body deadline, and a burst of
//! care-circle invitations (400 went through in 0.14 s).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::request;
use crate::harness::Server;

// An upload of `length` bytes as `token` whose first four bytes only are sent; the connection.
fn start_upload(port: u16, token: &str, length: usize) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        stream,
        "POST /files?filename=slow.txt HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: text/plain\r\nContent-Length: {length}\r\nConnection: close\r\n\r\nslow"
    )
    .unwrap();
    stream
}

// The status and the whole answer on `stream`.
fn answer(stream: &mut TcpStream) -> (u16, String) {
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    (reply.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), reply)
}

#[test]
fn slow_bodies_of_one_account_hold_two_turns_and_are_cut_for_their_pace() {
    let mut server = Server::start("attack-fair-shares-slow", &[]);
    let greedy = server.token_for("greedy");
    let started = Instant::now();
    // Eight slow uploads at once: before, they held all eight turns and everyone else got 503.
    let attackers: Vec<_> = (0..8)
        .map(|_| {
            let (port, token) = (server.port, greedy.clone());
            std::thread::spawn(move || {
                let mut stream = start_upload(port, &token, 1 << 20);
                let (status, reply) = answer(&mut stream);
                (status, reply, started.elapsed())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    server.assert_serves_honest_user();
    let answers: Vec<_> = attackers.into_iter().map(|a| a.join().unwrap()).collect();
    let refused: Vec<_> = answers.iter().filter(|(status, ..)| *status == 429).collect();
    let cut: Vec<_> = answers.iter().filter(|(status, ..)| *status == 408).collect();
    assert_eq!((refused.len(), cut.len()), (6, 2), "{answers:#?}");
    let times: Vec<_> = answers.iter().map(|(status, _, when)| format!("{status} after {when:.1?}")).collect();
    println!("slow uploads of one account: {times:?}");
    for (_, reply, when) in &refused {
        assert!(reply.to_ascii_lowercase().contains("retry-after: 5"), "{reply}");
        // At once, not after waiting in line for a server-wide turn.
        assert!(*when < Duration::from_secs(5), "refused after {when:?}");
    }
    for (_, reply, when) in &cut {
        assert!(reply.contains("more slowly than 16384 bytes a second"), "{reply}");
        // After the grace and a window (about 10 s), well before the 30 s body deadline.
        assert!(*when >= Duration::from_secs(9) && *when < Duration::from_secs(25), "cut after {when:?}");
    }
    server.assert_alive();
}

#[test]
fn a_burst_of_invitations_is_refused_and_the_honest_user_is_served() {
    let mut server = Server::start(
        "attack-fair-shares-invitations",
        &[("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "5"), ("MIROBODY_HTTP__CALLER_LIMITS__BURST", "20")],
    );
    let bearer = format!("Bearer {}", server.token_for("greedy"));
    let headers = [("Authorization", bearer.as_str()), ("Content-Type", "application/json")];
    let started = Instant::now();
    let mut refused = 0;
    for i in 0..400 {
        let body = format!(r#"{{"invitee": "person-{i}"}}"#);
        let (status, head, reply) = request(server.port, "POST", "/circle/invites", &headers, body.as_bytes());
        if status == 429 && String::from_utf8_lossy(&reply).contains("slow down") {
            assert!(head.to_ascii_lowercase().contains("retry-after:"), "{head}");
            refused += 1;
        }
    }
    let took = started.elapsed();
    println!("invitations: {refused} of 400 refused (429) in {took:?}");
    // Through: at most the burst and the rate over the time the burst took.
    let at_most = 20 + 5 * (took.as_secs() + 1);
    assert!(400 - refused <= at_most, "{} of 400 went through in {took:?}", 400 - refused);
    assert!(refused > 200, "only {refused} of 400 refused, in {took:?}");
    // One rate across the routes and `/mcp`: the same caller's MCP request is refused too.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"greedy","version":"1"}}}"#;
    let mcp_headers = [headers[0], headers[1], ("Accept", "application/json, text/event-stream")];
    let (status, head, _) = request(server.port, "POST", "/mcp", &mcp_headers, init.as_bytes());
    assert_eq!(status, 429, "{head}");
    server.assert_serves_honest_user();
}

#[test]
fn an_upload_over_the_memory_budget_is_refused_before_its_body_is_read() {
    let mut server = Server::start("attack-fair-shares-memory", &[("MIROBODY_UPLOADS__MAX_INFLIGHT_BYTES", "100000")]);
    // 60,000 bytes declared, counted twice (the body and the copy stored): over the budget. No
    // byte of the body is sent: the answer comes from the headers alone.
    let started = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        stream,
        "POST /files?filename=big.txt HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         Content-Type: text/plain\r\nContent-Length: 60000\r\nConnection: close\r\n\r\n",
        server.token
    )
    .unwrap();
    let (status, reply) = answer(&mut stream);
    assert_eq!(status, 413, "{reply}");
    assert!(reply.contains("more memory"), "{reply}");
    assert!(started.elapsed() < Duration::from_secs(8), "answered after {:?}", started.elapsed());
    // One within the budget is stored.
    server.assert_serves_honest_user();
}
