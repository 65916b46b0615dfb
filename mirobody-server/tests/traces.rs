//! Traces over OTLP through the real binary: a small OTLP/HTTP receiver here, the server told to
//! export to it, and a scripted MCP turn. One trace joins the HTTP request, the tool call and
//! its database operations, under the client's span from its `traceparent` (the header, else
//! `params._meta.traceparent`); the spans carry no credential, user id or health value; and
//! with two instances sharing Redis, a message between them joins the trace too.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{KillOnDrop, fresh_data_dir, request, server_port};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::{Value, json};

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const META_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const META_SPAN: &str = "b7ad6b7169203331";
const STATELESS_TRACE: &str = "5e1c2a7b9d0f4e3a8b6c1d2e3f405162";
const STATELESS_SPAN: &str = "c3d4e5f6a7b8c9d0";
const USER: &str = "user-7f3a9c";
const HEALTH_VALUE: &str = "zolmitriptan-marker-7731";

/// One span as the receiver got it.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    trace: String,
    id: String,
    parent: String,
    name: String,
    // Every attribute, as text.
    attributes: Vec<(String, String)>,
}

/// An OTLP/HTTP receiver (protobuf, `POST /v1/traces`) on a loopback port, keeping every span.
struct Receiver {
    port: u16,
    spans: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spans);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Receiver { port, spans }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }
}

// Answers the exporter's requests on one connection (it keeps it alive) until it closes.
fn serve(stream: std::net::TcpStream, kept: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        assert!(line.starts_with("POST /v1/traces "), "the exporter posts to /v1/traces: {line}");
        let mut length = 0usize;
        let mut content_type = String::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "content-type" => content_type = value.trim().to_owned(),
                _ => {}
            }
        }
        assert_eq!(content_type, "application/x-protobuf");
        assert!(length <= 16 << 20, "a batch of {length} bytes");
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let export = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP protobuf body");
        let mut spans = kept.lock().unwrap();
        for resource in export.resource_spans {
            let attributes = resource.resource.map(|r| text_attributes(&r.attributes)).unwrap_or_default();
            let service =
                attributes.iter().find(|(k, _)| k == "service.name").map(|(_, v)| v.clone()).unwrap_or_default();
            for scope in resource.scope_spans {
                for span in scope.spans {
                    spans.push(Received {
                        service: service.clone(),
                        trace: hex(&span.trace_id),
                        id: hex(&span.span_id),
                        parent: hex(&span.parent_span_id),
                        name: span.name,
                        attributes: text_attributes(&span.attributes),
                    });
                }
            }
        }
        drop(spans);
        writer
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n")
            .unwrap();
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text_attributes(attributes: &[opentelemetry_proto::tonic::common::v1::KeyValue]) -> Vec<(String, String)> {
    attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::StringValue(s)) => s.clone(),
                Some(other) => format!("{other:?}"),
                None => String::new(),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

// Stops the server as an operator does (SIGTERM), so it exports what is still waiting.
fn stop(server: KillOnDrop) {
    let mut server = server;
    let child: &mut Child = &mut server.0;
    let status = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the server did not stop within 30 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// An MCP POST; the reply's head and JSON body.
fn mcp(port: u16, headers: &[(&str, &str)], body: &Value) -> (String, Value) {
    let mut all = vec![("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    let (status, head, body) = request(port, "POST", "/mcp", &all, body.to_string().as_bytes());
    assert!(status == 200 || status == 202, "{head} {}", String::from_utf8_lossy(&body));
    (head, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn session_of(head: &str) -> String {
    head.lines()
        .find_map(|line| line.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, v)| v.trim().to_owned())
        .expect("a session")
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"traces","version":"1"}}}"#;

// The chain of parents of `span` within its trace, nearest first.
fn ancestors<'a>(spans: &'a [Received], span: &'a Received) -> Vec<&'a Received> {
    let by_id: HashMap<&str, &Received> =
        spans.iter().filter(|s| s.trace == span.trace).map(|s| (s.id.as_str(), s)).collect();
    let mut chain = Vec::new();
    let mut at = span;
    while let Some(parent) = by_id.get(at.parent.as_str()) {
        chain.push(*parent);
        at = parent;
    }
    chain
}

#[test]
fn one_turn_is_one_trace_under_the_client_s_span() {
    let receiver = Receiver::start();
    let data_dir = fresh_data_dir("traces");
    let port = server_port();
    let token = common::token(&data_dir, port, USER);
    let endpoint = receiver.endpoint();
    let env =
        [("MIROBODY_TELEMETRY__OTLP_ENDPOINT", endpoint.as_str()), ("MIROBODY_TELEMETRY__SERVICE_NAME", "traced")];
    // Logs at INFO, as a server runs: what is exported does not depend on the log level.
    let (server, _log) = {
        let mut env = env.to_vec();
        env.push(("RUST_LOG", "info"));
        let (child, log) = common::start_logged(&data_dir, port, &env);
        (KillOnDrop(child), log)
    };
    let bearer = format!("Bearer {token}");
    let (head, _) = mcp(port, &[("authorization", &bearer)], &serde_json::from_str(INIT).unwrap());
    let session = session_of(&head);
    let auth = [("authorization", bearer.as_str()), ("mcp-session-id", session.as_str())];
    mcp(port, &auth, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // The turn: the client's span in the header.
    let traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let remember = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember",
        "arguments": {"text": format!("Takes {HEALTH_VALUE} for migraines"), "kind": "fact"}}});
    let (_, reply) = mcp(port, &[auth[0], auth[1], ("traceparent", &traceparent)], &remember);
    assert!(reply["result"]["isError"] != true, "{reply}");
    // Another, its client's span in `_meta` (as MCP clients that propagate context send it).
    let meta = format!("00-{META_TRACE}-{META_SPAN}-01");
    let recall = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall_memory",
        "arguments": {"query": "migraines"}, "_meta": {"traceparent": meta}}});
    let (_, reply) = mcp(port, &auth, &recall);
    assert!(reply["result"]["isError"] != true, "{reply}");
    // The same over 2026-07-28 (stateless): the client's span in `_meta` beside what every
    // request of that revision carries.
    let stateless = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "recall_memory",
        "arguments": {"query": "migraines"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "traces", "version": "1"},
            "traceparent": format!("00-{STATELESS_TRACE}-{STATELESS_SPAN}-01")}}});
    let headers =
        [auth[0], ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "recall_memory")];
    let (_, reply) = mcp(port, &headers, &stateless);
    assert!(reply["result"]["isError"] != true, "{reply}");
    // A bad traceparent is no parent: the request still runs, in a trace of its own.
    let bad = [auth[0], auth[1], ("traceparent", "00-zz-00f067aa0ba902b7-01")];
    let (_, reply) = mcp(
        port,
        &bad,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "recall_memory", "arguments": {"query": "x"}, "_meta": {"traceparent": "nonsense"}}}),
    );
    assert!(reply["result"]["isError"] != true, "{reply}");
    // Stopped gracefully: the spans still waiting in the batch are exported on the way out.
    stop(server);

    let spans = receiver.spans();
    assert!(spans.iter().all(|s| s.service == "traced"), "the configured service name");
    // A query outside any request (a background sweep) is no trace of its own.
    assert!(spans.iter().all(|s| !s.name.starts_with("db ") || !s.parent.is_empty()), "{spans:#?}");
    let in_turn: Vec<&Received> = spans.iter().filter(|s| s.trace == CLIENT_TRACE).collect();
    let names: Vec<&str> = in_turn.iter().map(|s| s.name.as_str()).collect();
    // The HTTP request's span is the root of the server's part, its parent the client's span.
    let root = in_turn.iter().find(|s| s.name == "request").unwrap_or_else(|| panic!("no request span: {names:?}"));
    assert_eq!(root.parent, CLIENT_SPAN, "the client's span is the parent");
    let tool = in_turn.iter().find(|s| s.name == "remember").unwrap_or_else(|| panic!("no tool span: {names:?}"));
    assert!(ancestors(&spans, tool).iter().any(|s| s.id == root.id), "the tool call is within the request");
    let db = in_turn
        .iter()
        .find(|s| s.name.starts_with("db ") && ancestors(&spans, s).iter().any(|a| a.id == tool.id))
        .unwrap_or_else(|| panic!("no database span under the tool call: {names:?}"));
    let system = db.attributes.iter().find(|(k, _)| k == "db.system.name").map(|(_, v)| v.as_str());
    assert_eq!(system, Some("sqlite"), "{db:?}");
    // Every span of the server in the turn's trace descends from the client's span.
    for span in &in_turn {
        let top = ancestors(&spans, span).last().copied().unwrap_or(span);
        assert_eq!(top.parent, CLIENT_SPAN, "{span:?}");
    }

    // From `_meta`: the call's span is the client's child, the tool and its queries within it.
    let in_meta: Vec<&Received> = spans.iter().filter(|s| s.trace == META_TRACE).collect();
    let names: Vec<&str> = in_meta.iter().map(|s| s.name.as_str()).collect();
    let call = in_meta.iter().find(|s| s.name == "tools/call").unwrap_or_else(|| panic!("{names:?}"));
    assert_eq!(call.parent, META_SPAN);
    let tool = in_meta.iter().find(|s| s.name == "recall_memory").unwrap_or_else(|| panic!("{names:?}"));
    assert_eq!(tool.parent, call.id);
    assert!(in_meta.iter().any(|s| s.name.starts_with("db ") && s.parent == tool.id), "{names:?}");
    // From a 2026-07-28 request's `_meta`, the same.
    let stateless: Vec<&Received> = spans.iter().filter(|s| s.trace == STATELESS_TRACE).collect();
    let names: Vec<&str> = stateless.iter().map(|s| s.name.as_str()).collect();
    let call = stateless.iter().find(|s| s.name == "tools/call").unwrap_or_else(|| panic!("{names:?}"));
    assert_eq!(call.parent, STATELESS_SPAN);
    let tool = stateless.iter().find(|s| s.name == "recall_memory").unwrap_or_else(|| panic!("{names:?}"));
    assert_eq!(tool.parent, call.id);
    // Neither bad traceparent made a parent of anything.
    let recalls: Vec<&Received> = spans.iter().filter(|s| s.name == "recall_memory").collect();
    assert_eq!(recalls.len(), 3, "{spans:#?}");
    let unparented = recalls.iter().find(|s| s.trace != META_TRACE && s.trace != STATELESS_TRACE).unwrap();
    let top = ancestors(&spans, unparented).last().copied().unwrap();
    assert!(top.name == "request" && top.parent.is_empty(), "a trace of its own: {top:?}");

    // Nothing of the caller, the credentials or what they said travels in a span.
    let forbidden = [token.as_str(), USER, session.as_str(), HEALTH_VALUE, "migraines"];
    for span in &spans {
        for (key, value) in &span.attributes {
            for secret in forbidden {
                assert!(!value.contains(secret) && !key.contains(secret), "{secret} in {span:?}");
            }
        }
        assert!(forbidden.iter().all(|secret| !span.name.contains(secret)), "{span:?}");
    }
}

#[test]
fn a_bad_telemetry_setting_stops_the_start_naming_it() {
    let output = common::clean_command()
        .args(["tools", "list"])
        .env("MIROBODY_TELEMETRY__SAMPLING_RATIO", "2")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("telemetry.sampling_ratio"), "{err}");
}

// A variable naming an outside peer, or `None` after saying the test is skipped.
fn external(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|url| !url.is_empty()).or_else(|| {
        mirobody_testkit::skip(&format!("traces across instances: {var} is not set"));
        None
    })
}

#[test]
fn a_message_to_another_instance_joins_the_turn_s_trace() {
    let (Some(postgres), Some(redis)) = (external("MIROBODY_TEST_POSTGRES_URL"), external("MIROBODY_TEST_REDIS_URL"))
    else {
        return;
    };
    let receiver = Receiver::start();
    let unique = format!("traces_{}_{}", std::process::id(), common::free_port());
    let _schema = mirobody_testkit::PostgresSchema { url: postgres.clone(), name: unique.clone() };
    let endpoint = receiver.endpoint();
    // Two instances sharing sessions: the same database, Redis and keys.
    let shared = [
        ("MIROBODY_BACKENDS__DATABASE_URL", postgres.as_str()),
        ("MIROBODY_BACKENDS__DATABASE_SCHEMA", unique.as_str()),
        ("MIROBODY_BACKENDS__REDIS_URL", redis.as_str()),
        ("MIROBODY_BACKENDS__REDIS_KEY_PREFIX", &format!("{unique}.")),
        ("MIROBODY_REQUEST_STATE_KEY", "traces-state-key-0123456789-0123456789"),
        ("MIROBODY_BACKENDS__SIGNING_KEY", "traces-url-key-0123456789-0123456789"),
        ("MIROBODY_AUTH__HS256_SECRET", "traces-token-key-0123456789-0123456789"),
        ("MIROBODY_TELEMETRY__OTLP_ENDPOINT", endpoint.as_str()),
        ("RUST_LOG", "info"),
        // Batches go every 100 ms (the standard variable), so B's span arrives while it runs.
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    let data_dir = fresh_data_dir("traces-instances");
    let start = |name: &str| {
        let dir = data_dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let port = server_port();
        let mut env: Vec<(&str, &str)> = shared.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        env.push(("MIROBODY_TELEMETRY__SERVICE_NAME", name));
        let (child, _) = common::start_logged(&dir, port, &env);
        (KillOnDrop(child), port)
    };
    let (a, port_a) = start("instance-a");
    let (b, _port_b) = start("instance-b");
    let output = common::clean_command()
        .args(["token", "--user", USER, "--ttl", "600"])
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir.join("cli"))
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port_a}"))
        .envs(shared.iter().filter(|(k, _)| !k.starts_with("MIROBODY_TELEMETRY")).map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let token = String::from_utf8(output.stdout).unwrap().trim().to_owned();

    // The turn starts on A: the new session is announced to B through Redis.
    let traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let bearer = format!("Bearer {token}");
    mcp(port_a, &[("authorization", &bearer), ("traceparent", &traceparent)], &serde_json::from_str(INIT).unwrap());
    // B hears it, in a span of the same trace, exported within its next batch.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !receiver.spans().iter().any(|s| s.service == "instance-b" && s.name == "backplane receive") {
        assert!(Instant::now() < deadline, "B exported no span of the message within 30 s: {:#?}", receiver.spans());
        std::thread::sleep(Duration::from_millis(50));
    }
    stop(a);
    stop(b);

    let spans = receiver.spans();
    let in_turn: Vec<&Received> = spans.iter().filter(|s| s.trace == CLIENT_TRACE).collect();
    let seen: Vec<(&str, &str)> = in_turn.iter().map(|s| (s.service.as_str(), s.name.as_str())).collect();
    let root = in_turn.iter().find(|s| s.name == "request" && s.service == "instance-a").expect("A's request");
    assert_eq!(root.parent, CLIENT_SPAN);
    let publish = in_turn
        .iter()
        .find(|s| s.name == "backplane publish" && s.service == "instance-a")
        .unwrap_or_else(|| panic!("no publish on A: {seen:?}"));
    assert!(ancestors(&spans, publish).iter().any(|s| s.id == root.id), "published within the request");
    let heard = in_turn
        .iter()
        .find(|s| s.name == "backplane receive" && s.service == "instance-b")
        .unwrap_or_else(|| panic!("no receive on B: {seen:?}"));
    assert_eq!(heard.parent, publish.id, "B's span is a child of A's");
    for span in &spans {
        for (_, value) in &span.attributes {
            assert!(!value.contains(&token) && !value.contains(USER), "{span:?}");
        }
    }
}
