//! Lifecycle and sessions: initialize, version negotiation, session ids, DELETE, stateless mode
//! and the session store.

use http::{Method, StatusCode};
use mirobody_mcp::http::HttpOptions;
use serde_json::json;

use crate::support::{LATEST, TestServer, init_params, json_reply, notification, rpc};

#[tokio::test]
async fn initialize_returns_a_visible_ascii_session_id_and_the_capabilities() {
    let server = TestServer::new();
    let reply = server.client().call("initialize", init_params(LATEST, json!({}))).await;

    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/json");
    let session = reply.header("mcp-session-id");
    assert!(session.len() >= 16, "a session id of at least 16 characters: {session:?}");
    assert!(session.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII only: {session:?}");

    let result = reply.result();
    assert_eq!(result["protocolVersion"], LATEST);
    let capabilities = &result["capabilities"];
    assert!(capabilities["tools"].is_object(), "{capabilities}");
    assert_eq!(capabilities["resources"]["subscribe"], true, "{capabilities}");
    assert!(capabilities["prompts"].is_object(), "{capabilities}");
    assert!(capabilities["logging"].is_object(), "{capabilities}");
    assert!(capabilities["completions"].is_object(), "{capabilities}");
    assert_eq!(result["serverInfo"]["name"], "mirobody");
    assert!(result["serverInfo"]["version"].is_string());
}

#[tokio::test]
async fn each_initialize_gets_a_different_session_id() {
    let server = TestServer::new();
    let a = server.initialized(json!({})).await.session().expect("a session");
    let b = server.initialized(json!({})).await.session().expect("a session");
    assert_ne!(a, b);
}

#[tokio::test]
async fn initialize_negotiates_the_protocol_version() {
    let server = TestServer::new();
    for (requested, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("1999-01-01", LATEST),
    ] {
        let reply = server.client().call("initialize", init_params(requested, json!({}))).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.result()["protocolVersion"], answered, "requested {requested}");
    }
}

#[tokio::test]
async fn a_second_initialize_on_a_session_is_refused_and_the_session_survives() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;

    let again = client.call("initialize", init_params(LATEST, json!({}))).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    assert_eq!(again.error_code(), -32600);
    assert_eq!(server.http.sessions().len(), 1, "no new session was created");

    let ping = client.call("ping", json!({})).await;
    assert_eq!(ping.status, StatusCode::OK);
    assert_eq!(ping.result(), &json!({}));
}

#[tokio::test]
async fn a_failed_initialize_leaves_no_session_behind() {
    let server = TestServer::new();
    let client = server.client();
    for params in [json!({"capabilities": {}}), json!({"protocolVersion": 5}), json!("nonsense")] {
        let reply = client.call("initialize", params.clone()).await;
        assert_eq!(reply.error_code(), -32602, "params {params}");
        assert_eq!(reply.header("mcp-session-id"), "", "no session id for params {params}");
    }
    assert!(server.http.sessions().is_empty(), "failed initializes leave no session");
}

#[tokio::test]
async fn a_request_without_a_session_id_gets_400() {
    let server = TestServer::new();
    server.initialized(json!({})).await;
    let reply = server.client().call("ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.error_code(), -32000);
    assert!(reply.body["id"].is_null());

    let note = server.client().post(&notification("notifications/initialized", json!({}))).await;
    assert_eq!(note.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_unknown_session_id_gets_404() {
    let server = TestServer::new();
    server.initialized(json!({})).await;
    let stranger = server.client().on_session(Some("0123456789abcdef0123456789abcdef"));
    let reply = stranger.call("ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.error_code(), -32001);

    let note = stranger.post(&notification("notifications/initialized", json!({}))).await;
    assert_eq!(note.status(), StatusCode::NOT_FOUND);
    let delete = stranger.send(stranger.request(Method::DELETE, "")).await;
    assert_eq!(delete.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_ends_the_session() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;

    let delete = client.send(client.request(Method::DELETE, "")).await;
    assert_eq!(delete.status(), StatusCode::NO_CONTENT);

    let reply = client.call("ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.error_code(), -32001);
    let again = client.send(client.request(Method::DELETE, "")).await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_without_a_session_id_gets_400() {
    let server = TestServer::new();
    let client = server.client();
    let delete = client.send(client.request(Method::DELETE, "")).await;
    assert_eq!(delete.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_session_store_grows_with_initialize_and_shrinks_with_delete() {
    let server = TestServer::new();
    assert_eq!(server.http.sessions().len(), 0);
    let a = server.initialized(json!({})).await;
    assert_eq!(server.http.sessions().len(), 1);
    let b = server.initialized(json!({})).await;
    assert_eq!(server.http.sessions().len(), 2);

    assert_eq!(a.send(a.request(Method::DELETE, "")).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(server.http.sessions().len(), 1);
    assert!(server.http.sessions().get(&a.session().unwrap(), None).is_none());
    assert!(server.http.sessions().get(&b.session().unwrap(), None).is_some());
    assert_eq!(b.send(b.request(Method::DELETE, "")).await.status(), StatusCode::NO_CONTENT);
    assert!(server.http.sessions().is_empty());
}

#[tokio::test]
async fn stateless_mode_has_no_sessions() {
    let server = TestServer::with_http(crate::support::with(|o: &mut HttpOptions| o.stateless = true));
    let client = server.client();

    let init = client.call("initialize", init_params(LATEST, json!({}))).await;
    assert_eq!(init.status, StatusCode::OK);
    assert_eq!(init.result()["protocolVersion"], LATEST);
    assert_eq!(init.header("mcp-session-id"), "", "no session id in stateless mode");

    let echo = client.call_tool("echo", json!({"text": "hi"})).await;
    assert_eq!(echo.status, StatusCode::OK);
    assert_eq!(echo.result()["structuredContent"]["echo"], "hi");
    let list = client.call("tools/list", json!({})).await;
    assert!(!list.result()["tools"].as_array().unwrap().is_empty());
    let note = client.post(&notification("notifications/initialized", json!({}))).await;
    assert_eq!(note.status(), StatusCode::ACCEPTED);

    for method in [Method::GET, Method::DELETE] {
        let response = client.send(client.request(method.clone(), "")).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(response.headers().get("allow").and_then(|v| v.to_str().ok()), Some("POST"));
    }
    assert!(server.http.sessions().is_empty());
}

#[tokio::test]
async fn stateless_mode_ignores_a_session_header() {
    let server = TestServer::with_http(crate::support::with(|o: &mut HttpOptions| o.stateless = true));
    let client = server.client().on_session(Some("whatever"));
    let reply = json_reply(client.post(&rpc(1, "ping", json!({}))).await).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.result(), &json!({}));
}
