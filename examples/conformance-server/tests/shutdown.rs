//! SIGTERM stops the server gracefully: a call in flight still gets its answer, an idle GET
//! stream does not hold the shutdown up, then the process exits cleanly.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

fn post(port: u16, session: Option<&str>, body: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let session = session.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read");
    reply
}

// The fixture, its port, and an initialized session on it.
fn started_with_a_session() -> (support::Fixture, u16, String) {
    let fixture = support::Fixture::start();
    let port: u16 = fixture.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp").parse().unwrap();
    let init = post(
        port,
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    let session = init
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|s| s.trim().to_owned()))
        .expect("a session id");
    (fixture, port, session)
}

#[test]
fn sigterm_lets_the_call_in_flight_finish() {
    let (mut fixture, port, session) = started_with_a_session();

    // test_tool_with_progress takes about 150 ms.
    let call = std::thread::spawn(move || {
        post(
            port,
            Some(&session),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{}}}"#,
        )
    });
    std::thread::sleep(Duration::from_millis(50));
    let status = Command::new("kill").args(["-TERM", &fixture.pid().to_string()]).status().expect("kill");
    assert!(status.success());

    let reply = call.join().expect("the call thread");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("Tool with progress executed successfully"), "the call in flight was answered: {reply}");
    let exit = fixture.wait_for_exit(Duration::from_secs(10)).expect("the server exits after SIGTERM");
    assert!(exit.success(), "clean exit, got {exit}");
}

#[test]
fn sigterm_is_not_held_up_by_an_open_get_stream() {
    let (mut fixture, port, session) = started_with_a_session();
    // The stream clients keep open for server messages, idle.
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n"
    )
    .expect("write");
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).expect("the stream's head");
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"), "a GET stream is open");

    let status = Command::new("kill").args(["-TERM", &fixture.pid().to_string()]).status().expect("kill");
    assert!(status.success());
    let exit = fixture.wait_for_exit(Duration::from_secs(10)).expect("the server exits with a GET stream open");
    assert!(exit.success(), "clean exit, got {exit}");
}
