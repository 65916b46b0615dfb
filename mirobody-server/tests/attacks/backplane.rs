//! The shared sessions' Redis, written to by someone who is not an instance: whoever reaches
//! Redis (`redis-cli publish`) hands a signed-in user's `subscriptions/listen` stream a
//! completed task, unsigned, with a made-up signature, and as a 4 MiB blob. The server shares
//! sessions on PostgreSQL and Redis, as in production; none of it reaches the stream, each is
//! counted and logged, and the user is served throughout.
//!
//! Needs `MIROBODY_TEST_POSTGRES_URL` and `MIROBODY_TEST_REDIS_URL`; skipped without them (a
//! failure with `MIROBODY_REQUIRE_EXTERNAL=1`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mirobody_testkit::{PostgresSchema, skip};
use serde_json::json;

use crate::common::{clean_command, free_port, fresh_data_dir, server_port, start_logged};
use crate::harness::Server;

fn external(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|url| !url.is_empty()).or_else(|| {
        skip(&format!("attacks::backplane: {var} is not set"));
        None
    })
}

// Opens the honest user's 2026-07-28 listen stream for their tasks, acknowledged; the open
// connection, to read what comes next.
fn listen(port: u16, token: &str) -> TcpStream {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"promptsListChanged": true},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "attacks", "version": "1"},
        },
    }})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let seen = read_for(&mut stream, Duration::from_secs(10), Some("notifications/subscriptions/acknowledged"));
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(seen.contains("notifications/subscriptions/acknowledged"), "{seen}");
    stream
}

// What the stream carries within `limit`, or until `until` shows.
fn read_for(stream: &mut TcpStream, limit: Duration, until: Option<&str>) -> String {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    let mut buffer = [0u8; 8192];
    while let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero()) {
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buffer[..n]),
        }
        if until.is_some_and(|until| String::from_utf8_lossy(&seen).contains(until)) {
            break;
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn a_publish_to_the_shared_sessions_redis_reaches_no_listen_stream() {
    let (Some(postgres), Some(redis)) = (external("MIROBODY_TEST_POSTGRES_URL"), external("MIROBODY_TEST_REDIS_URL"))
    else {
        return;
    };
    let unique = format!("attack_backplane_{}_{}", std::process::id(), free_port());
    let _schema = PostgresSchema { url: postgres.clone(), name: unique.clone() };
    // Not ending in ":", which a setting read as YAML takes for a map.
    let prefix = format!("{unique}.");
    let env = [
        ("MIROBODY_BACKENDS__DATABASE_URL", postgres.as_str()),
        ("MIROBODY_BACKENDS__DATABASE_SCHEMA", unique.as_str()),
        ("MIROBODY_BACKENDS__REDIS_URL", redis.as_str()),
        ("MIROBODY_BACKENDS__REDIS_KEY_PREFIX", prefix.as_str()),
        ("MIROBODY_REQUEST_STATE_KEY", "attack-state-key-0123456789-0123456789"),
        ("MIROBODY_BACKENDS__SIGNING_KEY", "attack-url-key-0123456789-0123456789"),
        ("MIROBODY_AUTH__HS256_SECRET", "attack-token-key-0123456789-0123456789"),
        ("RUST_LOG", "info"),
    ];
    let data_dir = fresh_data_dir("attack-backplane");
    let port = server_port();
    let (child, log) = start_logged(&data_dir, port, &env);
    // The token from the server's own CLI, under the same settings (the same key).
    let output = clean_command()
        .args(["token", "--user", "honest", "--ttl", "3600"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .envs(env)
        .output()
        .expect("mint a token");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let token = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    let mut server = Server { child, port, data_dir, log, token };
    let mut stream = listen(server.port, &server.token);

    // A completed task for the honest user, as the messages looked before they were signed,
    // then with a made-up signature, then 4 MiB of nothing.
    let forged = json!({"from": "x", "id": "1", "at": 0, "kind": "change", "change": {"kind": "task",
        "owner": "user:honest", "task": {"taskId": "t-forged", "status": "completed",
        "result": {"content": [{"type": "text", "text": "forged result"}]}}}})
    .to_string();
    let signed = format!("mbp1:{}:{forged}", "0".repeat(64));
    let blob = "A".repeat(4 << 20);
    let mut conn = redis::Client::open(redis.as_str()).unwrap().get_connection().unwrap();
    for message in [&forged, &signed, &blob] {
        let heard: i64 =
            redis::cmd("PUBLISH").arg(format!("{prefix}session-events")).arg(message).query(&mut conn).unwrap();
        assert_eq!(heard, 1, "the server listens on the channel");
    }

    let seen = read_for(&mut stream, Duration::from_secs(3), Some("t-forged"));
    assert!(!seen.contains("t-forged") && !seen.contains("notifications/tasks"), "{seen}");
    server.assert_serves_honest_user();
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(log.contains("dropped a message on the shared session backplane"), "{}", server.log_tail(20));
}
