//! The Streamable HTTP rules: status codes for notifications and responses, Content-Type,
//! Accept, the protocol version header, body size, bad JSON, batches, and DNS-rebinding
//! protection (Host and Origin).

use http::{Method, Request, StatusCode};
use mirobody_mcp::http::HttpOptions;
use serde_json::{Value, json};

use crate::support::{
    LATEST, TestServer, body_bytes, header_str, init_params, json_reply, notification, remove_header, rpc, set_header,
};

#[tokio::test]
async fn notifications_get_202_with_an_empty_body() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for note in [
        notification("notifications/initialized", json!({})),
        notification("notifications/cancelled", json!({"requestId": 12345, "reason": "nothing runs"})),
        notification("notifications/roots/list_changed", json!({})),
    ] {
        let response = client.post(&note).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "{note}");
        assert!(body_bytes(response).await.is_empty(), "202 has no body: {note}");
    }
}

#[tokio::test]
async fn a_response_nobody_waits_for_gets_400_with_its_id() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.post_json(&json!({"jsonrpc": "2.0", "id": "nobody-asked", "result": {}})).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.error_code(), -32600);
    assert_eq!(reply.body["id"], "nobody-asked");
}

#[tokio::test]
async fn a_content_type_other_than_json_gets_415() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let ping = rpc(1, "ping", json!({}));

    let text = set_header(client.post_request(&ping), "content-type", "text/plain");
    let reply = json_reply(client.send(text).await).await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(reply.error_code(), -32000);

    let missing = remove_header(client.post_request(&ping), "content-type");
    assert_eq!(client.send(missing).await.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let with_charset = set_header(client.post_request(&ping), "content-type", "application/json; charset=utf-8");
    assert_eq!(client.send(with_charset).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn an_accept_without_json_or_sse_gets_406() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let ping = rpc(1, "ping", json!({}));

    let html = set_header(client.post_request(&ping), "accept", "text/html");
    let reply = json_reply(client.send(html).await).await;
    assert_eq!(reply.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(reply.error_code(), -32000);

    let json_only = set_header(client.post_request(&ping), "accept", "application/json");
    let reply = json_reply(client.send(json_only).await).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.result(), &json!({}));
}

#[tokio::test]
async fn an_unsupported_protocol_version_header_gets_400() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let ping = rpc(1, "ping", json!({}));

    let bad = set_header(client.post_request(&ping), "mcp-protocol-version", "1999-01-01");
    let reply = json_reply(client.send(bad).await).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.error_message().contains("1999-01-01"), "{}", reply.body);

    let good = set_header(client.post_request(&ping), "mcp-protocol-version", "2025-11-25");
    assert_eq!(client.send(good).await.status(), StatusCode::OK);

    // Any supported version is accepted on the session (the 0.1.16 conformance suite sends
    // 2025-03-26 on follow-up requests of a 2025-11-25 session).
    let older = set_header(client.post_request(&ping), "mcp-protocol-version", "2025-03-26");
    assert_eq!(client.send(older).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413_with_a_json_rpc_error() {
    let server = TestServer::with_http(crate::support::with(|o: &mut HttpOptions| o.max_body_bytes = 1024));
    let client = server.initialized(json!({})).await;

    let big =
        client.post_request(&rpc(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(2000)}})));
    let reply = json_reply(client.send(big).await).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.body["jsonrpc"], "2.0");
    assert!(reply.body["error"]["code"].is_i64(), "{}", reply.body);
    assert!(reply.error_message().contains("1024"), "the limit is named: {}", reply.body);

    let small = client.call_tool("echo", json!({"text": "x".repeat(500)})).await;
    assert_eq!(small.status, StatusCode::OK);
}

#[tokio::test]
async fn malformed_json_gets_400_with_a_parse_error_and_a_null_id() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = json_reply(client.send(client.request(Method::POST, r#"{"jsonrpc":"2.0","id":1,"#)).await).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.error_code(), -32700);
    assert!(reply.body.as_object().unwrap().contains_key("id"), "the id is present: {}", reply.body);
    assert_eq!(reply.body["id"], Value::Null);
}

#[tokio::test]
async fn a_batch_gets_400_invalid_request() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let batch = json!([rpc(1, "ping", json!({})), rpc(2, "ping", json!({}))]);
    let reply = client.post_json(&batch).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.error_code(), -32600);

    let empty = client.post_json(&json!([])).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    assert_eq!(empty.error_code(), -32600);
}

#[tokio::test]

async fn an_array_shaped_like_the_envelope_is_not_a_request() {
    // serde lets a struct be read from a sequence of its fields in order, so this array reads
    // as {"jsonrpc":"2.0","id":1,"method":"ping"}. JSON-RPC requires an object; a top-level
    // array is a batch, which 2025-11-25 forbids.
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.post_json(&json!(["2.0", 1, "ping", null, null, null])).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "got {}", reply.body);
    assert_eq!(reply.error_code(), -32600);
}

#[tokio::test]
async fn invalid_requests_get_400_invalid_request() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for (message, id) in [
        (json!({"jsonrpc": "2.0", "id": null, "method": "ping"}), Value::Null),
        (json!({"jsonrpc": "1.0", "id": 7, "method": "ping"}), json!(7)),
        (json!({"id": 8, "method": "ping"}), json!(8)),
        (json!({"jsonrpc": "2.0", "id": 9}), json!(9)),
        (json!({"jsonrpc": "2.0", "id": "r", "result": {}, "error": {"code": 1, "message": "x"}}), json!("r")),
        (json!("ping"), Value::Null),
    ] {
        let reply = client.post_json(&message).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{message}");
        assert_eq!(reply.error_code(), -32600, "{message}");
        assert_eq!(reply.body["id"], id, "{message}");
    }
}

#[tokio::test]
async fn a_foreign_host_gets_403() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for method in [Method::POST, Method::GET, Method::DELETE] {
        let request = set_header(
            client.request(method.clone(), rpc(1, "ping", json!({})).to_string()),
            "host",
            "evil.example.com",
        );
        let reply = json_reply(client.send(request).await).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{method}");
        assert_eq!(reply.error_code(), -32000, "{method}");
    }
    let no_host = remove_header(client.post_request(&rpc(1, "ping", json!({}))), "host");
    assert_eq!(client.send(no_host).await.status(), StatusCode::FORBIDDEN);
    assert_eq!(server.http.sessions().len(), 1, "the refused DELETE left the session alone");
}

#[tokio::test]
async fn local_hosts_with_ports_are_accepted() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for host in ["localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST", "127.0.0.1"] {
        let request = set_header(client.post_request(&rpc(1, "ping", json!({}))), "host", host);
        assert_eq!(client.send(request).await.status(), StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn a_foreign_origin_gets_403_and_a_local_one_passes() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let ping = rpc(1, "ping", json!({}));

    for origin in ["http://evil.example.com", "http://localhost.evil.example.com", "null"] {
        let request = set_header(client.post_request(&ping), "origin", origin);
        let reply = json_reply(client.send(request).await).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{origin}");
        assert_eq!(reply.error_code(), -32000, "{origin}");
    }
    for origin in ["http://localhost:3000", "http://127.0.0.1", "https://localhost"] {
        let request = set_header(client.post_request(&ping), "origin", origin);
        assert_eq!(client.send(request).await.status(), StatusCode::OK, "{origin}");
    }
}

#[tokio::test]
async fn allowed_origins_admit_a_listed_origin() {
    let options =
        crate::support::with(|o: &mut HttpOptions| o.allowed_origins = vec!["https://app.example.com".into()]);
    let server = TestServer::with_http(options);
    let client = server.initialized(json!({})).await;
    let ping = rpc(1, "ping", json!({}));
    let listed = set_header(client.post_request(&ping), "origin", "https://app.example.com");
    assert_eq!(client.send(listed).await.status(), StatusCode::OK);
    let other_case = set_header(client.post_request(&ping), "origin", "HTTPS://App.Example.COM");
    assert_eq!(client.send(other_case).await.status(), StatusCode::OK, "origins compare without case");
    let other = set_header(client.post_request(&ping), "origin", "https://other.example.com");
    assert_eq!(client.send(other).await.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_wildcard_host_list_accepts_any_host() {
    let server = TestServer::with_http(crate::support::with(|o: &mut HttpOptions| o.allowed_hosts = vec!["*".into()]));
    let client = server.client();
    let init = set_header(
        client.post_request(&rpc(1, "initialize", crate::support::init_params("2025-11-25", json!({})))),
        "host",
        "mcp.example.com",
    );
    let reply = json_reply(client.send(init).await).await;
    assert_eq!(reply.status, StatusCode::OK);
    let client = client.on_session(Some(reply.header("mcp-session-id")));
    let ping = set_header(client.post_request(&rpc(2, "ping", json!({}))), "host", "evil.example.com:443");
    assert_eq!(client.send(ping).await.status(), StatusCode::OK);

    // Any host, but not any browser origin: only the host's own origin passes.
    let same_origin = set_header(
        set_header(client.post_request(&rpc(3, "ping", json!({}))), "host", "mcp.example.com"),
        "origin",
        "https://mcp.example.com",
    );
    assert_eq!(client.send(same_origin).await.status(), StatusCode::OK);
    let cross_origin = set_header(
        set_header(client.post_request(&rpc(4, "ping", json!({}))), "host", "mcp.example.com"),
        "origin",
        "https://evil.example.com",
    );
    assert_eq!(client.send(cross_origin).await.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_full_session_store_refuses_new_sessions_with_503() {
    let server = TestServer::with_http(crate::support::with(|o: &mut HttpOptions| o.max_sessions = 1));
    let first = server.initialized(json!({})).await;
    let client = server.client();
    let reply = json_reply(
        client
            .send(client.post_request(&rpc(1, "initialize", crate::support::init_params("2025-11-25", json!({})))))
            .await,
    )
    .await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(reply.error_message().contains("too many active sessions"), "{}", reply.body);
    assert_eq!(first.call("ping", json!({})).await.status, StatusCode::OK, "the session in use survives");
}

#[tokio::test]
async fn a_session_belongs_to_the_caller_that_opened_it() {
    let server = TestServer::new();
    let mine = server.initialized_as(mirobody_core::UserInfo::authenticated("u1"), json!({})).await;
    let stranger = mine.as_user(mirobody_core::UserInfo::authenticated("u2"));
    assert_eq!(stranger.call("ping", json!({})).await.status, StatusCode::NOT_FOUND);
    let anonymous = mine.as_user(mirobody_core::UserInfo::anonymous());
    assert_eq!(anonymous.call("ping", json!({})).await.status, StatusCode::NOT_FOUND);
    assert_eq!(stranger.send(stranger.request(http::Method::DELETE, "")).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(mine.call("ping", json!({})).await.status, StatusCode::OK);
}

#[tokio::test]
async fn an_anonymous_session_becomes_its_first_signed_in_callers() {
    // A client connects without credentials, meets a 401 on a call that needs a person, signs
    // in and goes on in the same session: it is theirs from then on, and no one else's.
    let server = TestServer::new();
    let anonymous = server.initialized(json!({})).await;
    let ana = anonymous.as_user(mirobody_core::UserInfo::authenticated("ana"));
    assert_eq!(ana.call("ping", json!({})).await.status, StatusCode::OK);
    assert_eq!(anonymous.call("ping", json!({})).await.status, StatusCode::NOT_FOUND, "no longer anonymous");
    let bo = anonymous.as_user(mirobody_core::UserInfo::authenticated("bo"));
    assert_eq!(bo.call("ping", json!({})).await.status, StatusCode::NOT_FOUND, "claimed once, by ana");
    assert_eq!(bo.send(bo.request(http::Method::DELETE, "")).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(ana.call("ping", json!({})).await.status, StatusCode::OK);
    // Ended, it leaves nothing counted in the anonymous callers' share.
    assert_eq!(ana.send(ana.request(http::Method::DELETE, "")).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(server.http.sessions().anonymous(), 0);
    assert!(server.http.sessions().is_empty());
}

#[tokio::test]
async fn other_http_methods_are_not_allowed() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for method in [Method::PUT, Method::PATCH, Method::HEAD, Method::OPTIONS] {
        let response = client.send(client.request(method.clone(), "{}")).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(header_str(response.headers(), "allow"), "GET, POST, DELETE", "{method}");
    }
}

#[tokio::test]
async fn mounted_in_front_of_a_router_the_endpoint_and_the_other_routes_both_answer() {
    use mirobody_mcp::axum::{Router, body::Body, routing::get};
    use tower::ServiceExt;

    let server = TestServer::new();
    let app = server.http.mount("/mcp", Router::new().route("/healthz", get(|| async { "ok" })));
    let send = |request: Request<Body>| app.clone().oneshot(request);
    let empty = |method: Method, path: &str| Request::builder().method(method).uri(path).body(Body::empty()).unwrap();

    let init = rpc(1, "initialize", init_params(LATEST, json!({})));
    let post = Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(init.to_string()))
        .unwrap();
    let reply = json_reply(send(post).await.unwrap()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.result()["protocolVersion"], LATEST);
    assert!(!reply.header("mcp-session-id").is_empty());

    let health = send(empty(Method::GET, "/healthz")).await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    assert_eq!(body_bytes(health).await, "ok");
    // Only the exact path is the endpoint; everything else is the router's.
    for path in ["/mcp/", "/mcpx", "/mc", "/other"] {
        assert_eq!(send(empty(Method::POST, path)).await.unwrap().status(), StatusCode::NOT_FOUND, "{path}");
    }
    let put = send(empty(Method::PUT, "/mcp")).await.unwrap();
    assert_eq!(put.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(header_str(put.headers(), "allow"), "GET, POST, DELETE");
    // GET is the endpoint's too: without a session it is refused by the endpoint, not the router.
    let get_stream = Request::get("/mcp").header("host", "localhost").header("accept", "text/event-stream");
    let refused = json_reply(send(get_stream.body(Body::empty()).unwrap()).await.unwrap()).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.error_message().contains("Mcp-Session-Id"), "{}", refused.body);
}

#[tokio::test]
async fn a_2026_discovery_probe_without_meta_is_refused_without_a_session() {
    // server/discover is a 2026-07-28 request, served statelessly (tests/server/rev_2026_07_28.rs); one
    // without the per-request `_meta` is invalid params, and opens no session.
    let server = TestServer::new();
    let client = server.client();
    let probe =
        set_header(client.post_request(&rpc(1, "server/discover", json!({}))), "mcp-protocol-version", "2026-07-28");
    let reply = json_reply(client.send(probe).await).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.error_code(), -32602);
    assert_eq!(reply.body["id"], 1);
    assert!(server.http.sessions().is_empty());
}

#[tokio::test]
async fn tool_calls_are_answered_alike_with_or_without_the_protocol_version_header() {
    // With the header, a tools/call is read in one pass; without it, through the envelope.
    let server = TestServer::new();
    let user = mirobody_core::UserInfo::authenticated("alice");
    let client = server.initialized_as(user, json!({})).await;
    let calls = [
        json!({"name": "echo", "arguments": {"text": "hi \"there\""}}),
        json!({"name": "echo", "arguments": {"text": "odd meta"}, "_meta": "x"}),
        json!({"name": "echo"}),
        json!({"name": "echo", "arguments": {"text": 5}}),
        json!({"name": "echo", "arguments": [1]}),
        json!({"name": "nope", "arguments": {}}),
        json!({"name": 5}),
        json!({"arguments": {}}),
        json!({"name": "whoami", "arguments": {"tag": "alike"}}),
        json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "t-1"}}),
        json!({"name": "panic", "arguments": {}}),
    ];
    let sessions = [client.clone(), client.on_session(None), client.on_session(Some("no-such-session"))];
    for (params, client) in calls.iter().flat_map(|params| sessions.iter().map(move |client| (params, client))) {
        let message = rpc(9, "tools/call", params.clone());
        let plain = client.send(client.post_request(&message)).await;
        let with_header = set_header(client.post_request(&message), "mcp-protocol-version", LATEST);
        let one_pass = client.send(with_header).await;
        assert_eq!(plain.status(), one_pass.status(), "{params}");
        assert_eq!(header_str(plain.headers(), "content-type"), header_str(one_pass.headers(), "content-type"));
        let (plain, one_pass) = (body_bytes(plain).await, body_bytes(one_pass).await);
        assert!(!plain.is_empty(), "{params}");
        assert_eq!(String::from_utf8_lossy(&plain), String::from_utf8_lossy(&one_pass), "{params}");
    }
}
