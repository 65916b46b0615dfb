//! The embedding example, driven as a client would: MCP at `/mcp`, the application's own route
//! beside it, both over the same state.

use std::process::Command;
use std::sync::Arc;

use example_embed_axum::{Notes, app};
use mirobody_mcp::axum::body::Body;
use mirobody_mcp::axum::http::Method;
use mirobody_mcp::http::HttpOptions;
use mirobody_mcp::http::Mounted;
use mirobody_mcp::testing::{JsonReply, TestClient};
use serde_json::{Value, json};

/// What the application's own route `/notes` answers.
async fn list_notes_route(app: &Mounted) -> (u16, Value) {
    let route = TestClient::new(app.clone()).at_path("/notes");
    let reply =
        route.read_json(route.send(route.http_request(Method::GET, Body::empty())).await.unwrap()).await.unwrap();
    (reply.status.as_u16(), reply.body)
}

/// Calls a tool through the MCP endpoint at `/mcp`.
async fn call(mcp: &TestClient, name: &str, arguments: Value) -> (u16, Value) {
    let JsonReply { status, body, .. } = mcp.call_tool(name, arguments).await.unwrap();
    (status.as_u16(), body)
}

#[tokio::test]
async fn tools_and_the_applications_route_share_its_state() {
    let notes = Arc::new(Notes::default());
    let mut options = HttpOptions::default();
    options.stateless = true;
    let (app, _service) = app(Arc::clone(&notes), options);

    // The test client of the `testing` feature drives the application without sockets.
    let mcp = TestClient::new(app.clone()).at_path("/mcp");

    let (status, listed) = list_notes_route(&app).await;
    assert_eq!((status, listed), (200, json!({"notes": []})));

    let (status, added) = call(&mcp, "add_note", json!({"text": "buy milk"})).await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["result"]["structuredContent"], json!({"count": 1}), "{added}");
    call(&mcp, "add_note", json!({"text": "call the clinic"})).await;

    // The application's route sees what the tool wrote, and the tool what is there.
    let (_, listed) = list_notes_route(&app).await;
    assert_eq!(listed, json!({"notes": ["buy milk", "call the clinic"]}));
    assert_eq!(notes.all().len(), 2);
    let (_, tool_listed) = call(&mcp, "list_notes", json!({})).await;
    assert_eq!(tool_listed["result"]["structuredContent"]["notes"], listed["notes"]);

    // Bad input is the tool's clear error, and changes nothing.
    let (_, refused) = call(&mcp, "add_note", json!({"text": 7})).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(notes.all().len(), 2);
}

#[tokio::test]
async fn a_service_built_without_the_state_says_so() {
    let engine = mirobody_mcp::McpEngine::builder(Arc::new(example_embed_axum::registry())).build();
    let session = Arc::new(mirobody_mcp::session::Session::new(None));
    let message =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_notes", "arguments": {}}});
    let message = message.to_string();
    let reply = engine.handle_bytes(message.as_bytes(), &Default::default(), &session).await.unwrap();
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], "The notes are not available on this server.");
}

#[test]
fn it_is_built_without_the_application_crate() {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--locked", "-e", "normal", "-p", "example-embed-axum", "--prefix", "none"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let tree = String::from_utf8(output.stdout).unwrap();
    assert!(tree.contains("mirobody-mcp"), "{tree}");
    for absent in ["mirobody-server", "mirobody-tools", "sqlx", "redis", "clap"] {
        assert!(!tree.lines().any(|line| line.starts_with(&format!("{absent} "))), "{absent} is in the tree:\n{tree}");
    }
}
