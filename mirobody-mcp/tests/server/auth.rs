//! Auth over HTTP: 401 and 403 challenges for auth and scoped tools and resources, callers
//! identified by a `UserInfo` request extension, and hiding auth tools from anonymous listings.

use http::StatusCode;
use mirobody_core::UserInfo;
use mirobody_mcp::McpOptions;
use mirobody_mcp::http::HttpOptions;
use serde_json::json;

use crate::support::{AUTH_TOOLS, TOOL_NAMES, TestServer, handler_runs, json_reply, rpc, set_header};

const METADATA: &str = "https://mcp.example.com/.well-known/oauth-protected-resource";

fn with_metadata() -> HttpOptions {
    let mut options = HttpOptions::default();
    options.resource_metadata_url = Some(METADATA.into());
    options
}

#[tokio::test]
async fn an_anonymous_call_of_an_auth_tool_gets_401_and_the_handler_does_not_run() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call_tool("whoami", json!({"tag": "auth-anonymous"})).await;

    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply.header("www-authenticate"), "Bearer");
    assert_eq!(reply.error_code(), -32001);
    assert!(reply.error_message().contains("whoami"), "{}", reply.body);
    assert!(reply.body["id"].is_i64(), "the JSON-RPC id is kept: {}", reply.body);
    assert_eq!(handler_runs("auth-anonymous"), 0, "the handler must not run");
}

#[tokio::test]
async fn the_401_challenge_names_the_resource_metadata() {
    let server = TestServer::with_http(with_metadata());
    let client = server.initialized(json!({})).await;
    let reply = client.call_tool("whoami", json!({"tag": "auth-metadata"})).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    let challenge = reply.header("www-authenticate");
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(&format!(r#"resource_metadata="{METADATA}""#)), "{challenge}");
    assert_eq!(handler_runs("auth-metadata"), 0);
}

#[tokio::test]
async fn the_401_challenge_names_the_scopes_to_ask_for() {
    let mut options = with_metadata();
    options.challenge_scopes = vec!["mcp".into(), "health:read".into()];
    let server = TestServer::with_http(options);
    let client = server.initialized(json!({})).await;
    let reply = client.call_tool("whoami", json!({"tag": "auth-scopes"})).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        reply.header("www-authenticate"),
        format!(r#"Bearer resource_metadata="{METADATA}", scope="mcp health:read""#)
    );
    assert_eq!(handler_runs("auth-scopes"), 0);
}

#[tokio::test]
async fn a_json_only_client_gets_the_same_401() {
    let server = TestServer::with_http(with_metadata());
    let client = server.initialized(json!({})).await;
    let call = rpc(1, "tools/call", json!({"name": "whoami", "arguments": {"tag": "auth-json-only"}}));
    let request = set_header(client.post_request(&call), "accept", "application/json");
    let reply = json_reply(client.send(request).await).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert!(reply.header("www-authenticate").contains("resource_metadata="));
    assert_eq!(reply.error_code(), -32001);
    assert_eq!(handler_runs("auth-json-only"), 0);
}

#[tokio::test]
async fn an_authenticated_caller_runs_the_auth_tool() {
    let server = TestServer::new();
    let client = server.initialized_as(UserInfo::authenticated("u1"), json!({})).await;
    let reply = client.call_tool("whoami", json!({"tag": "auth-ok"})).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("www-authenticate"), "");
    assert_eq!(reply.result()["structuredContent"], json!({"user": "u1"}));
    assert_eq!(handler_runs("auth-ok"), 1);
}

#[tokio::test]
async fn a_token_without_the_scope_gets_403_insufficient_scope() {
    let server = TestServer::with_http(with_metadata());
    let client = server.initialized_as(UserInfo::authenticated("u1").with_scopes(["health:write"]), json!({})).await;
    let reply = client.call_tool("scoped", json!({"tag": "scope-missing"})).await;

    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let challenge = reply.header("www-authenticate");
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(r#"error="insufficient_scope""#), "{challenge}");
    assert!(challenge.contains(r#"scope="health:read""#), "{challenge}");
    assert!(challenge.contains(&format!(r#"resource_metadata="{METADATA}""#)), "{challenge}");
    assert_eq!(reply.error_code(), -32001);
    assert!(reply.error_message().contains("health:read"), "{}", reply.body);
    assert_eq!(handler_runs("scope-missing"), 0);
}

#[tokio::test]
async fn the_403_challenge_is_well_formed_without_metadata() {
    let server = TestServer::new();
    let client = server.initialized_as(UserInfo::authenticated("u1"), json!({})).await;
    let reply = client.call_tool("scoped", json!({"tag": "scope-no-metadata"})).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(reply.header("www-authenticate"), r#"Bearer error="insufficient_scope", scope="health:read""#);
}

#[tokio::test]
async fn a_token_with_the_scope_runs_the_scoped_tool() {
    let server = TestServer::new();
    let client = server.initialized_as(UserInfo::authenticated("u1").with_scopes(["health:read"]), json!({})).await;
    let reply = client.call_tool("scoped", json!({"tag": "scope-ok"})).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.result()["structuredContent"], json!({"user": "u1", "scoped": true}));
    assert_eq!(handler_runs("scope-ok"), 1);
}

#[tokio::test]
async fn an_anonymous_call_of_a_scoped_tool_gets_401() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call_tool("scoped", json!({"tag": "scope-anonymous"})).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert!(reply.header("www-authenticate").starts_with("Bearer"));
    assert_eq!(handler_runs("scope-anonymous"), 0);
}

#[tokio::test]
async fn auth_tools_are_listed_to_everyone_by_default() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call("tools/list", json!({})).await;
    let names: Vec<&str> =
        reply.result()["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
}

#[tokio::test]
async fn hidden_auth_tools_are_left_out_of_anonymous_listings_only() {
    for page_size in [100, 2] {
        let options = crate::support::with(|o: &mut McpOptions| {
            o.page_size = page_size;
            o.hide_auth_tools_from_anonymous = true;
        });
        let server = TestServer::with(options, HttpOptions::default());
        let anonymous = server.initialized(json!({})).await;
        let authenticated = server.initialized_as(UserInfo::authenticated("u1"), json!({})).await;

        let public: Vec<&str> = TOOL_NAMES.iter().copied().filter(|n| !AUTH_TOOLS.contains(n)).collect();
        assert_eq!(list_all(&anonymous).await, public, "anonymous, page size {page_size}");
        assert_eq!(list_all(&authenticated).await, TOOL_NAMES, "authenticated, page size {page_size}");
    }
}

async fn list_all(client: &crate::support::Client) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..=TOOL_NAMES.len() {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let reply = client.call("tools/list", params).await;
        let result = reply.result();
        names.extend(result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match result["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return names,
        }
    }
    panic!("pagination does not end: {names:?}");
}

#[tokio::test]
async fn an_auth_resource_needs_an_authenticated_reader() {
    let server = TestServer::with_http(with_metadata());
    let client = server.initialized(json!({})).await;
    let anonymous = client.call("resources/read", json!({"uri": "test://private"})).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert!(anonymous.header("www-authenticate").contains("resource_metadata="));
    assert_eq!(anonymous.error_code(), -32001);

    let reader = server.initialized_as(UserInfo::authenticated("u1"), json!({})).await;
    let read = reader.call("resources/read", json!({"uri": "test://private"})).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.result()["contents"][0]["text"], "private text");
}
