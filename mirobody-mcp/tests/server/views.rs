//! MCP Apps views: a `ui://` resource of type `text/html;profile=mcp-app` with its `_meta.ui`
//! on the listing entry and on the contents read, a tool linked to it by `_meta.ui.resourceUri`,
//! and the extension advertised on both revisions, only by an engine that serves a view.

use std::sync::Arc;

use mirobody_core::{Registry, ResourceRegistry, Tool, ToolResult, VIEW_MIME_TYPE, View};
use mirobody_mcp::McpEngine;
use mirobody_mcp::http::HttpOptions;
use serde_json::{Value, json};

use crate::support::{LATEST, TestServer, init_params, rpc};

const PAGE: &str = "<!doctype html><title>Trend</title><div id=chart></div>";

fn with_view(views: bool) -> TestServer {
    let tool = Tool::new("trend", "Shows a trend.")
        .view("ui://charts/trend.html")
        .sync_handler(|_, _, _| ToolResult::text("a trend"));
    let registry = Registry::builder().tool(tool).build().unwrap();
    let resources = if views {
        let view = View::new("ui://charts/trend.html", "trend", PAGE).unwrap().prefers_border(true);
        ResourceRegistry::new(vec![view.connect_domains(["https://api.example.com"]).into_resource()], Vec::new())
            .unwrap()
    } else {
        ResourceRegistry::default()
    };
    TestServer::of(McpEngine::builder(Arc::new(registry)).resources(resources).build(), HttpOptions::default())
}

async fn capabilities(server: &TestServer) -> Value {
    let reply = server.client().post_json(&rpc(1, "initialize", init_params(LATEST, json!({})))).await;
    reply.result()["capabilities"].clone()
}

#[tokio::test]
async fn a_view_is_served_linked_and_advertised() {
    let server = with_view(true);
    assert_eq!(capabilities(&server).await["extensions"], json!({"io.modelcontextprotocol/ui": {}}));
    let client = server.initialized(json!({})).await;

    let tools = client.call("tools/list", json!({})).await;
    let meta = &tools.result()["tools"][0]["_meta"];
    assert_eq!(meta["ui"]["resourceUri"], "ui://charts/trend.html");
    assert_eq!(meta["ui/resourceUri"], "ui://charts/trend.html", "the older flat key too");

    let listed = client.call("resources/list", json!({})).await;
    let entry = &listed.result()["resources"][0];
    assert_eq!(entry["uri"], "ui://charts/trend.html");
    assert_eq!(entry["mimeType"], VIEW_MIME_TYPE);
    let ui = json!({"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": true});
    assert_eq!(entry["_meta"]["ui"], ui);

    let read = client.call("resources/read", json!({"uri": "ui://charts/trend.html"})).await;
    let contents = &read.result()["contents"][0];
    assert_eq!((contents["mimeType"].as_str(), contents["text"].as_str()), (Some(VIEW_MIME_TYPE), Some(PAGE)));
    assert_eq!(contents["_meta"]["ui"], ui, "the contents carry the view's settings too");
    // The same bytes for every caller: nothing of the caller is in the page.
    let again =
        server.initialized(json!({})).await.call("resources/read", json!({"uri": "ui://charts/trend.html"})).await;
    assert_eq!(again.result()["contents"], read.result()["contents"]);
}

// `server/discover` (2026-07-28), in process.
async fn discovered(server: &TestServer) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    }}});
    let session = Arc::new(mirobody_mcp::session::Session::new(None));
    let user = mirobody_core::UserInfo::anonymous();
    let reply = server.http.engine().handle_bytes(message.to_string().as_bytes(), &user, &session).await.unwrap();
    serde_json::from_slice::<Value>(&reply).unwrap()["result"]["capabilities"]["extensions"].clone()
}

#[tokio::test]
async fn only_a_service_with_a_view_advertises_the_extension() {
    assert!(capabilities(&with_view(false)).await.get("extensions").is_none());
    assert_eq!(discovered(&with_view(false)).await, json!({"io.modelcontextprotocol/tasks": {}}));
    assert_eq!(
        discovered(&with_view(true)).await,
        json!({"io.modelcontextprotocol/tasks": {}, "io.modelcontextprotocol/ui": {}})
    );
}
