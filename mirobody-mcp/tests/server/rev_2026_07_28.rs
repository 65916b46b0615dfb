//! MCP 2026-07-28 beside 2025-11-25 on the same endpoint: `server/discover`, the `_meta` and
//! header ladder with its statuses and codes, `Mcp-Param-*` mirroring, results with
//! `resultType`, caching hints, multi-round-trip calls (and tampered states), -32021 for a
//! missing client capability, removed methods, resource-not-found as -32602, logs only on
//! request, closing the stream cancelling the handler, keep-alives, `subscriptions/listen`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use mirobody_core::{Args, Param, Registry, Tool, ToolContext, ToolResult, Type, UserInfo};
use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_mcp::testing::{Revision, TestClient};
use mirobody_mcp::{McpEngine, McpOptions};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{self, Reply, Sse, TestServer, body_bytes, header_str, json_reply, started, stopped, within};

const REVISION: &str = "2026-07-28";

fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": REVISION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    })
}

/// A 2026-07-28 client (the `testing` one): no session, `_meta` and the mirrored headers on
/// every request.
struct MetaClient(TestClient);

impl MetaClient {
    fn new(router: Router) -> Self {
        MetaClient(TestClient::new(router).revision(Revision::Stateless2026_07_28))
    }

    fn of(server: &TestServer) -> Self {
        MetaClient(server.stateless_client())
    }

    fn with_capabilities(self, capabilities: Value) -> Self {
        MetaClient(self.0.client_capabilities(capabilities))
    }

    fn acting_as(self, user: UserInfo) -> Self {
        MetaClient(self.0.acting_as(user))
    }

    fn id(&self) -> i64 {
        self.0.next_id()
    }

    /// A POST of `body` with the standard 2026-07-28 headers for its method and name, without
    /// touching its params.
    fn raw(&self, body: &Value) -> Request<Body> {
        self.0.post_request(body)
    }

    /// A request of `method` whose params get this client's `_meta` (merged with any given).
    fn request(&self, method: &str, params: Value) -> Request<Body> {
        self.request_as(self.id(), method, params)
    }

    /// Like [`MetaClient::request`], with this id.
    fn request_as(&self, id: i64, method: &str, params: Value) -> Request<Body> {
        self.0.rpc_request(id, method, params)
    }

    async fn send(&self, request: Request<Body>) -> Response<Body> {
        self.0.send(request).await.unwrap_or_else(|e| panic!("{e}"))
    }

    async fn call(&self, method: &str, params: Value) -> Reply {
        json_reply(self.send(self.request(method, params)).await).await
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Reply {
        self.call("tools/call", json!({"name": name, "arguments": arguments})).await
    }
}

fn set(mut request: Request<Body>, name: &'static str, value: &str) -> Request<Body> {
    request.headers_mut().insert(name, HeaderValue::from_str(value).unwrap());
    request
}

fn unset(mut request: Request<Body>, name: &'static str) -> Request<Body> {
    request.headers_mut().remove(name);
    request
}

fn assert_error(reply: &Reply, status: StatusCode, code: i64, id: &Value) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.error_code(), code, "{}", reply.body);
    assert_eq!(&reply.body["id"], id, "errors carry the request id: {}", reply.body);
}

fn assert_complete(reply: &Reply) -> &Value {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let result = reply.result();
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mirobody", "{result}");
    result
}

// =============================================================================================
// A registry with what the standard test tools lack: x-mcp-header arguments, a tool that
// needs sampling, questions over several rounds
// =============================================================================================

fn runs() -> &'static AtomicUsize {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    &RUNS
}

async fn two_steps(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    runs().fetch_add(1, Ordering::SeqCst);
    let form = |field: &str| json!({"message": field, "requestedSchema": {"type": "object", "properties": {field: {"type": "string"}}}});
    let name = match ctx.request_keyed("step1", "elicitation/create", form("name")).await {
        Ok(answer) => answer["content"]["name"].as_str().unwrap_or_default().to_owned(),
        Err(e) => return ToolResult::error(e.to_string()),
    };
    match ctx.request_keyed("step2", "elicitation/create", form("color")).await {
        Ok(answer) => ToolResult::ok(json!({"name": name, "color": answer["content"]["color"]})),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

async fn summarize(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let params =
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Sum up"}}], "maxTokens": 10});
    match ctx.request("sampling/createMessage", params).await {
        Ok(answer) => ToolResult::ok(json!({"summary": answer["content"]["text"]})),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

/// mirobody-tools' `ask_user` in short (this crate's tests depend on no tools crate): one
/// question with its choices, asked by elicitation; the chosen option comes back as
/// `{"answered": true, "answer": {"selected": [choice]}}`.
async fn ask_user(args: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let options = args.get("options").cloned().unwrap_or_default();
    let params = json!({
        "message": args.str_or("question", ""),
        "requestedSchema": {"type": "object", "properties": {"choice": {"type": "string", "enum": options}}},
    });
    match ctx.request("elicitation/create", params).await {
        Ok(reply) if reply["action"] == "accept" => {
            ToolResult::ok(json!({"answered": true, "answer": {"selected": [reply["content"]["choice"]]}}))
        }
        Ok(_) => ToolResult::ok(json!({"answered": false})),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

fn extra_http() -> McpHttp {
    let registry = Registry::builder()
        .tool(
            Tool::new("route", "Runs in a region.")
                .raw_input_schema(json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "count": {"type": "integer", "x-mcp-header": "Count"},
                        "note": {"type": "string"},
                    },
                }))
                .sync_handler(|args, _, _| ToolResult::ok(Value::Object(args.into_inner()))),
        )
        .tool(Tool::new("two_steps", "Asks two things in turn.").handler(two_steps))
        .tool(
            Tool::new("summarize", "Needs the client's model.")
                .requires_client_capability("sampling")
                .handler(summarize),
        )
        .tool(
            Tool::new("ask_user", "Asks the user one multiple-choice question.")
                .param(Param::required("question", Type::String, "The question."))
                .param(Param::required("options", Type::Array, "The choices.").items(Type::String))
                .handler(ask_user),
        )
        .build()
        .unwrap();
    McpHttp::new(McpEngine::builder(Arc::new(registry)).build(), HttpOptions::default())
}

fn extra_router() -> Router {
    extra_http().router()
}

// =============================================================================================
// Discovery and statelessness
// =============================================================================================

#[tokio::test]
async fn discover_names_both_eras_and_mints_no_session() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let reply = client.send(set(client.request("server/discover", json!({})), "mcp-session-id", "bogus")).await;
    assert!(reply.headers().get("mcp-session-id").is_none(), "no session id is minted or echoed");
    let reply = json_reply(reply).await;
    let result = assert_complete(&reply);
    let versions: Vec<&str> =
        result["supportedVersions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(versions[0], REVISION);
    assert!(versions.contains(&"2025-11-25"), "{versions:?}");
    let caps = &result["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true);
    assert!(caps["prompts"].is_object() && caps["resources"].is_object(), "{caps}");
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["ttlMs"], 60_000);
    assert!(server.http.sessions().is_empty(), "a stateless request opens no session");
}

#[tokio::test]
async fn the_revision_is_chosen_per_request_on_one_endpoint() {
    let server = TestServer::new();
    let with_session = server.initialized(json!({})).await;
    let without_session = MetaClient::of(&server);
    assert_eq!(
        with_session.call_tool("echo", json!({"text": "old"})).await.result()["structuredContent"]["echo"],
        "old"
    );
    let reply = without_session.call_tool("echo", json!({"text": "new"})).await;
    assert_eq!(assert_complete(&reply)["structuredContent"]["echo"], "new");
    // The with_session reply has no resultType: that path is unchanged.
    assert!(with_session.call_tool("echo", json!({"text": "x"})).await.result().get("resultType").is_none());
    assert_eq!(server.http.sessions().len(), 1);
    // A GET at the stateless revision has no stream to open.
    let get = set(with_session.request(Method::GET, ""), "mcp-protocol-version", REVISION);
    assert_eq!(with_session.send(get).await.status(), StatusCode::METHOD_NOT_ALLOWED);
    // A notification at the stateless revision is accepted and dropped.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    assert_eq!(without_session.send(without_session.raw(&note)).await.status(), StatusCode::ACCEPTED);
}

#[tokio::test]
async fn a_tool_that_needs_a_session_is_listed_and_called_only_in_one() {
    let registry = Registry::builder()
        .tool(
            Tool::new("title", "Titles this conversation.")
                .session_required(true)
                .sync_handler(|_, user, _| ToolResult::ok(json!({"conversation": user.session_id()}))),
        )
        .tool(Tool::new("plain", "Needs nothing.").sync_handler(|_, _, _| ToolResult::text("plain")))
        .build()
        .unwrap();
    let server = TestServer::of(McpEngine::builder(Arc::new(registry)).build(), HttpOptions::default());
    let names = |reply: &Reply, result: &Value| -> Vec<String> {
        let tools = result["tools"].as_array().unwrap_or_else(|| panic!("{}", reply.body));
        tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
    };

    // 2025-11-25 with a session: listed, and the call runs in the session's conversation.
    let with_session = server.initialized(json!({})).await;
    let reply = with_session.call("tools/list", json!({})).await;
    assert_eq!(names(&reply, reply.result()), ["plain", "title"]);
    let reply = with_session.call_tool("title", json!({})).await;
    assert!(reply.result()["structuredContent"]["conversation"].is_string(), "{}", reply.body);

    // 2026-07-28 has no sessions: not listed, and a call is refused as for an unknown tool.
    let without = MetaClient::of(&server);
    let reply = without.call("tools/list", json!({})).await;
    assert_eq!(names(&reply, assert_complete(&reply)), ["plain"]);
    let reply = without.call_tool("title", json!({})).await;
    assert_eq!(reply.body["error"]["code"], -32602, "{}", reply.body);
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("works only inside a session"), "{message}");
    // A caller whose credentials name a conversation has one at any revision.
    let named = MetaClient::of(&server).acting_as(UserInfo::authenticated("u1").with_session("chat-9"));
    let reply = named.call("tools/list", json!({})).await;
    assert_eq!(names(&reply, assert_complete(&reply)), ["plain", "title"]);
}

#[tokio::test]
async fn the_in_process_entry_point_chooses_the_revision_per_message_too() {
    // `handle_bytes` is what the criterion bench and in-process embedders call: it must answer
    // a 2026-07-28 request as the HTTP and stdio transports do, not as a session message.
    let engine = support::engine(McpOptions::default());
    let session = Arc::new(mirobody_mcp::session::Session::new(None));
    let user = UserInfo::anonymous();
    let ask = async |message: Value| -> Value {
        let reply = engine.handle_bytes(message.to_string().as_bytes(), &user, &session).await.unwrap();
        serde_json::from_slice(&reply).unwrap()
    };
    let call = |meta: Value| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}})
    };

    let stateless = ask(call(meta(json!({})))).await;
    assert_eq!(stateless["result"]["resultType"], "complete", "{stateless}");
    assert_eq!(stateless["result"]["structuredContent"]["echo"], "hi");

    let discover =
        ask(json!({"jsonrpc": "2.0", "id": 8, "method": "server/discover", "params": {"_meta": meta(json!({}))}}))
            .await;
    assert_eq!(discover["result"]["supportedVersions"][0], REVISION, "{discover}");

    // Its `_meta` is checked as on the other transports: an unsupported version is refused.
    let mut bad = meta(json!({}));
    bad["io.modelcontextprotocol/protocolVersion"] = json!("v999");
    let refused = ask(call(bad)).await;
    assert_eq!(refused["error"]["code"], -32022, "{refused}");

    // A message without `_meta` stays a session message, its reply without `resultType`.
    let in_session = ask(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                             "params": {"name": "echo", "arguments": {"text": "old"}}}))
    .await;
    assert_eq!(in_session["result"]["structuredContent"]["echo"], "old", "{in_session}");
    assert!(in_session["result"].get("resultType").is_none(), "{in_session}");
}

// =============================================================================================
// The _meta and header ladder
// =============================================================================================

#[tokio::test]
async fn bad_meta_gets_400_invalid_params() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let cases = [
        json!({}),
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": REVISION}}),
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": REVISION, "io.modelcontextprotocol/clientCapabilities": []}}),
    ];
    for (i, params) in cases.into_iter().enumerate() {
        let id = 100 + i as i64;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": params});
        let reply = json_reply(client.send(client.raw(&body)).await).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, -32602, &json!(id));
    }
    // clientInfo is optional.
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": REVISION, "io.modelcontextprotocol/clientCapabilities": {}}}});
    assert_complete(&json_reply(client.send(client.raw(&body)).await).await);
}

#[tokio::test]
async fn an_unsupported_version_gets_400_naming_the_versions_served() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let request =
        client.request("server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999"}}));
    let reply = json_reply(client.send(set(request, "mcp-protocol-version", "v999")).await).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, -32022, &reply.body["id"].clone());
    let data = &reply.body["error"]["data"];
    assert_eq!(data["requested"], "v999");
    assert!(data["supported"].as_array().unwrap().contains(&json!(REVISION)), "{data}");
}

#[tokio::test]
async fn headers_that_disagree_with_the_body_get_400_header_mismatch() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let echo = || client.request("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}));
    let mismatches = [
        // The version header names another version than _meta.
        set(
            client.request("server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999"}})),
            "mcp-protocol-version",
            REVISION,
        ),
        unset(echo(), "mcp-protocol-version"),
        unset(echo(), "mcp-method"),
        set(echo(), "mcp-method", "tools/list"),
        set(echo(), "mcp-method", "TOOLS/CALL"),
        unset(echo(), "mcp-name"),
        set(echo(), "mcp-name", "other"),
        set(echo(), "mcp-name", "=?base64?ZWNobw?="),
    ];
    for request in mismatches {
        let reply = json_reply(client.send(request).await).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
        assert_eq!(reply.error_code(), -32020, "{}", reply.body);
        assert!(reply.body["id"].is_number(), "{}", reply.body);
    }
    let mut twice = echo();
    twice.headers_mut().append("mcp-method", HeaderValue::from_static("tools/call"));
    assert_eq!(json_reply(client.send(twice).await).await.error_code(), -32020);

    // Header names are case-insensitive, values trimmed, names may come base64-encoded.
    for name in ["  echo  ", "=?base64?ZWNobw==?="] {
        let reply = json_reply(client.send(set(echo(), "mcp-name", name)).await).await;
        assert_eq!(assert_complete(&reply)["structuredContent"]["echo"], "hi");
    }
}

/// The same request with its method written `tools\/call`: the one-pass reader of a
/// 2026-07-28 `tools/call` leaves a request with escapes in its method to the envelope path.
async fn through_the_envelope(request: Request<Body>) -> Request<Body> {
    let (parts, body) = request.into_parts();
    let text = String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(text.contains(r#""method":"tools/call""#), "{text}");
    Request::from_parts(parts, Body::from(text.replace(r#""method":"tools/call""#, r#""method":"tools\/call""#)))
}

#[tokio::test]
async fn tool_calls_are_answered_alike_read_in_one_pass_or_through_the_envelope() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let extra = MetaClient::new(extra_router());
    let call = |client: &MetaClient, params: Value| client.request_as(7, "tools/call", params);
    let echo = || call(&client, json!({"name": "echo", "arguments": {"text": "hi \"there\""}}));
    let route = |region: &str| {
        let request = call(&extra, json!({"name": "route", "arguments": {"region": "eu", "count": 3}}));
        set(set(request, "mcp-param-region", region), "mcp-param-count", "3")
    };
    // Each case makes its request afresh, once for each reading.
    type Case<'a> = (&'a MetaClient, Box<dyn Fn() -> Request<Body> + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (&client, Box::new(echo)),
        (&client, Box::new(|| call(&client, json!({"name": "echo", "arguments": {"text": 5}})))),
        (&client, Box::new(|| call(&client, json!({"name": "echo"})))),
        (&client, Box::new(|| call(&client, json!({"name": "nope", "arguments": {}})))),
        (&client, Box::new(|| call(&client, json!({"name": 5, "arguments": {}})))),
        (&client, Box::new(|| call(&client, json!({"name": "panic", "arguments": {}})))),
        (
            &client,
            Box::new(|| call(&client, json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "t"}}))),
        ),
        (
            &client,
            Box::new(|| {
                call(
                    &client,
                    json!({"name": "echo", "arguments": {}, "_meta": {"io.modelcontextprotocol/logLevel": "loud"}}),
                )
            }),
        ),
        (
            &client,
            Box::new(|| {
                call(
                    &client,
                    json!({"name": "echo", "arguments": {}, "_meta": {"io.modelcontextprotocol/protocolVersion": "v999"}}),
                )
            }),
        ),
        (
            &client,
            Box::new(|| {
                call(
                    &client,
                    json!({"name": "echo", "arguments": {}, "_meta": {"io.modelcontextprotocol/clientInfo": 1}}),
                )
            }),
        ),
        (&client, Box::new(|| set(echo(), "mcp-name", "other"))),
        (&client, Box::new(|| unset(echo(), "mcp-method"))),
        (
            &client,
            Box::new(|| {
                let mut twice = echo();
                twice.headers_mut().append("mcp-protocol-version", HeaderValue::from_static(REVISION));
                twice
            }),
        ),
        (&extra, Box::new(|| route("eu"))),
        (&extra, Box::new(|| route("us"))),
        (&extra, Box::new(|| call(&extra, json!({"name": "summarize", "arguments": {}})))),
    ];
    for (i, (client, request)) in cases.iter().enumerate() {
        let one_pass = client.send(request()).await;
        let envelope = client.send(through_the_envelope(request()).await).await;
        assert_eq!(one_pass.status(), envelope.status(), "case {i}");
        assert_eq!(header_str(one_pass.headers(), "content-type"), header_str(envelope.headers(), "content-type"));
        let (one_pass, envelope) = (body_bytes(one_pass).await, body_bytes(envelope).await);
        assert!(!one_pass.is_empty(), "case {i}");
        assert_eq!(String::from_utf8_lossy(&one_pass), String::from_utf8_lossy(&envelope), "case {i}");
    }
}

#[tokio::test]
async fn mcp_param_headers_must_mirror_their_arguments() {
    let client = MetaClient::new(extra_router());
    let call = |arguments: Value| client.request("tools/call", json!({"name": "route", "arguments": arguments}));
    let ok = |request| async { assert_complete(&json_reply(client.send(request).await).await).clone() };
    let mismatch = |request| async {
        let reply = json_reply(client.send(request).await).await;
        assert_eq!((reply.status, reply.error_code()), (StatusCode::BAD_REQUEST, -32020), "{}", reply.body);
    };
    // No annotated argument, no header: fine.
    ok(call(json!({"note": "n"}))).await;
    ok(set(call(json!({"region": "us-west1"})), "mcp-param-region", "us-west1")).await;
    ok(set(call(json!({"region": "Hello"})), "Mcp-Param-Region", "=?base64?SGVsbG8=?=")).await;
    // A value without the complete sentinel is taken literally.
    ok(set(call(json!({"region": "=?base64?SGVsbG8="})), "mcp-param-region", "=?base64?SGVsbG8=")).await;
    // Integers compare numerically.
    ok(set(call(json!({"count": 42})), "mcp-param-count", "42.0")).await;
    mismatch(call(json!({"region": "us-west1"}))).await;
    mismatch(set(call(json!({"region": "us-west1"})), "mcp-param-region", "eu-west1")).await;
    mismatch(set(call(json!({"region": "Hello"})), "mcp-param-region", "=?base64?SGVsbG8?=")).await;
    mismatch(set(call(json!({"region": "Hello"})), "mcp-param-region", "=?base64?SGVs!!!bG8=?=")).await;
    mismatch(set(call(json!({})), "mcp-param-region", "us-west1")).await;
    mismatch(set(call(json!({"count": 42})), "mcp-param-count", "43")).await;
}

// =============================================================================================
// Methods
// =============================================================================================

#[tokio::test]
async fn removed_and_unknown_methods_get_404_method_not_found() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    for method in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "nope"] {
        let request = client.request(method, json!({"uri": "test://static", "level": "info"}));
        let reply = json_reply(client.send(request).await).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method}: {}", reply.body);
        assert_eq!(reply.error_code(), -32601, "{method}");
        assert!(reply.body["id"].is_number());
    }
    assert!(server.http.sessions().is_empty());
}

#[tokio::test]
async fn an_unknown_resource_is_invalid_params_naming_its_uri() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let reply = client.call("resources/read", json!({"uri": "test://missing"})).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::BAD_REQUEST, -32602), "{}", reply.body);
    assert_eq!(reply.body["error"]["data"]["uri"], "test://missing");
    // The session path still answers with its own code.
    let with_session = server.initialized(json!({})).await;
    assert_eq!(with_session.call("resources/read", json!({"uri": "test://missing"})).await.error_code(), -32002);
}

#[tokio::test]
async fn listings_and_reads_carry_caching_hints() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    for method in ["tools/list", "prompts/list", "resources/list", "resources/templates/list"] {
        let reply = client.call(method, json!({})).await;
        let result = assert_complete(&reply);
        assert_eq!(result["ttlMs"], 60_000, "{method}");
        assert_eq!(result["cacheScope"], "public", "{method}");
    }
    let listing = client.call("tools/list", json!({})).await;
    let names: Vec<&str> =
        listing.result()["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, support::TOOL_NAMES, "tools are listed in name order");
    let read = client.call("resources/read", json!({"uri": "test://static"})).await;
    let result = assert_complete(&read);
    assert_eq!((result["ttlMs"].clone(), result["cacheScope"].clone()), (json!(0), json!("public")));
    assert_eq!(result["contents"][0]["text"], "static text");
    // What an authenticated caller reads may be theirs alone.
    let alice = MetaClient::of(&server).acting_as(UserInfo::authenticated("alice"));
    let read = alice.call("resources/read", json!({"uri": "test://private"})).await;
    assert_eq!(assert_complete(&read)["cacheScope"], "private");
    // A listing that depends on who asks is private.
    let hiding = TestServer::with(
        crate::support::with(|o: &mut McpOptions| o.hide_auth_tools_from_anonymous = true),
        HttpOptions::default(),
    );
    let reply = MetaClient::of(&hiding).call("tools/list", json!({})).await;
    assert_eq!(assert_complete(&reply)["cacheScope"], "private");
}

#[tokio::test]
async fn every_result_has_a_result_type() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    assert_complete(&client.call("prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}})).await);
    let completion = client
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "A"}}),
        )
        .await;
    assert_complete(&completion);
    // Argument problems stay results the model can read.
    let invalid = client.call_tool("echo", json!({})).await;
    assert_eq!(assert_complete(&invalid)["isError"], true);
}

// =============================================================================================
// Multi-round-trip calls through the one ctx.request API
// =============================================================================================

#[path = "rev_2026_07_28/rounds.rs"]
mod rounds;

// =============================================================================================
// Streaming, and subscriptions/listen
// =============================================================================================

#[path = "rev_2026_07_28/streams.rs"]
mod streams;

// =============================================================================================
// Tasks
// =============================================================================================

#[path = "rev_2026_07_28/tasks.rs"]
mod tasks;

// =============================================================================================
// stdio: the same per-request choice, without headers
// =============================================================================================

#[tokio::test]
async fn stdio_serves_both_revisions_in_one_process() {
    let mut stdio = support::Stdio::start(McpOptions::default(), UserInfo::anonymous(), 1 << 20);
    let with_meta = |id: i64, method: &str, mut params: Value| {
        params["_meta"] = meta(json!({"elicitation": {}}));
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    };
    stdio.send(&with_meta(1, "server/discover", json!({}))).await;
    let discovered = stdio.recv().await;
    assert_eq!(discovered["result"]["resultType"], "complete", "{discovered}");

    stdio.send(&with_meta(2, "tools/call", json!({"name": "elicit", "arguments": {}}))).await;
    let asked = stdio.recv().await;
    assert_eq!(asked["result"]["inputRequests"]["elicitation-1"]["method"], "elicitation/create", "{asked}");
    let state = asked["result"]["requestState"].clone();
    let answers = json!({"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}});
    let retry = json!({"name": "elicit", "arguments": {}, "requestState": state, "inputResponses": answers});
    stdio.send(&with_meta(3, "tools/call", retry)).await;
    let answered = stdio.recv().await;
    assert_eq!(answered["result"]["structuredContent"]["answer"]["content"]["name"], "Ada", "{answered}");

    stdio.send(&with_meta(4, "ping", json!({}))).await;
    assert_eq!(stdio.recv().await["error"]["code"], -32601);
    let bad = json!({"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": {}});
    stdio.send(&bad).await;
    assert_eq!(stdio.recv().await["error"]["code"], -32602);

    // The handshake revision, in the same process.
    stdio.send(&support::rpc(6, "initialize", support::init_params("2025-11-25", json!({})))).await;
    assert_eq!(stdio.recv().await["result"]["protocolVersion"], "2025-11-25");
    stdio.send(&support::rpc(7, "ping", json!({}))).await;
    assert_eq!(stdio.recv().await["result"], json!({}));
    stdio.close().await.expect("serve ends cleanly");
}

#[tokio::test]
async fn stdio_listen_streams_changes_until_cancelled() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let changes = mirobody_mcp::changes::ChangeNotifier::new();
    let engine = McpEngine::builder(Arc::new(support::registry())).change_notifier(changes.clone()).build();
    let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, from_server) = tokio::io::duplex(1 << 16);
    let task = tokio::spawn(mirobody_mcp::stdio::serve(engine, UserInfo::anonymous(), server_in, server_out, 1 << 20));
    let mut lines = BufReader::new(from_server).lines();
    let mut recv = async || -> Value {
        let line = within("a line", lines.next_line()).await.unwrap().expect("more output");
        serde_json::from_str(&line).unwrap()
    };
    let listen = json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
                        "params": {"_meta": meta(json!({})), "notifications": {"toolsListChanged": true}}});
    to_server.write_all(format!("{listen}\n").as_bytes()).await.unwrap();
    assert_eq!(recv().await["method"], "notifications/subscriptions/acknowledged");
    changes.prompts_changed();
    changes.tools_changed();
    let change = recv().await;
    assert_eq!(change["method"], "notifications/tools/list_changed");
    assert_eq!(change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "sub"}});
    to_server.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
    within("the listener to go", async {
        while changes.listeners() > 0 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    drop(to_server);
    within("serve to end", task).await.unwrap().unwrap();
}
