//! One `tracing` span per request, naming the method and id, and never the session id.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::support::{LATEST, TestServer, json_reply, rpc, set_header};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn each_request_gets_a_span_with_its_method_and_no_session_id() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // Other tests reach the same callsites with no subscriber at the same time.
    tracing::callsite::rebuild_interest_cache();

    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let session = client.session().expect("a session id");
    let reply = client.call_tool("echo", json!({"text": "hi"})).await;
    assert_eq!(reply.result()["structuredContent"]["echo"], "hi");
    // With the version header, a tools/call is read in one pass: the same span.
    let call = rpc(41, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}));
    let with_header = set_header(client.post_request(&call), "mcp-protocol-version", LATEST);
    assert_eq!(json_reply(client.send(with_header).await).await.result()["structuredContent"]["echo"], "hi");

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let closed: Vec<&str> = logs.lines().filter(|l| l.contains("close")).collect();
    assert!(closed.iter().any(|l| l.contains("mcp{method=initialize")), "{logs}");
    assert!(closed.iter().any(|l| l.contains("mcp{method=notifications/initialized")), "{logs}");
    assert!(closed.iter().any(|l| l.contains("mcp{method=tools/call id=")), "{logs}");
    assert!(closed.iter().any(|l| l.contains("mcp{method=tools/call id=41}")), "{logs}");
    assert!(!logs.contains(&session), "the session id reached the logs:\n{logs}");
}
