//! The MCP methods over HTTP: ping, tools (pagination, errors, panics), resources, prompts,
//! logging, completion, and unknown methods.

use http::{Method, StatusCode};
use mirobody_mcp::http::HttpOptions;
use mirobody_mcp::{McpEngine, McpOptions};
use serde_json::{Value, json};

use crate::support::{TOOL_NAMES, TestServer, json_reply};

fn hex(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn ping_answers_an_empty_object() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call("ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.body["jsonrpc"], "2.0");
    assert_eq!(reply.result(), &json!({}));
}

#[tokio::test]
async fn ids_are_echoed_verbatim() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for id in [json!("a-string-id"), json!(0), json!(-5), json!(9_007_199_254_740_993_i64)] {
        let reply = client.post_json(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).await;
        assert_eq!(reply.body["id"], id);
    }
}

#[tokio::test]
async fn tools_list_returns_every_tool_on_one_page_by_default() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call("tools/list", json!({})).await;
    let result = reply.result();
    assert!(result.get("nextCursor").is_none(), "{result}");
    let tools = result["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
    let echo = &tools[0];
    assert_eq!(echo["inputSchema"]["type"], "object");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(echo["description"], "Echo back the provided text.");

    let no_params = client.call("tools/list", Value::Null).await;
    assert_eq!(no_params.result()["tools"].as_array().unwrap().len(), TOOL_NAMES.len());
}

#[tokio::test]
async fn tools_list_paginates_through_every_tool_exactly_once() {
    let server = TestServer::with(crate::support::with(|o: &mut McpOptions| o.page_size = 2), HttpOptions::default());
    let client = server.initialized(json!({})).await;

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let reply = client.call("tools/list", params).await;
        let result = reply.result();
        let tools = result["tools"].as_array().unwrap();
        assert!(!tools.is_empty() && tools.len() <= 2, "a page of one or two tools: {result}");
        seen.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        pages += 1;
        assert!(pages <= TOOL_NAMES.len(), "pagination does not end");
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().expect("the cursor is a string").to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, TOOL_NAMES, "every tool once, in name order");
    assert_eq!(pages, TOOL_NAMES.len().div_ceil(2));
}

#[tokio::test]
async fn tools_list_refuses_an_invalid_cursor() {
    let server = TestServer::with(crate::support::with(|o: &mut McpOptions| o.page_size = 2), HttpOptions::default());
    let client = server.initialized(json!({})).await;
    let unknown = hex("no-such-tool");
    let long = "a".repeat(300);
    for cursor in ["zz", "abc", "not a cursor", unknown.as_str(), long.as_str()] {
        let reply = client.call("tools/list", json!({"cursor": cursor})).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.error_code(), -32602, "cursor {cursor:?}");
    }
    let wrong_type = client.call("tools/list", json!({"cursor": 5})).await;
    assert_eq!(wrong_type.error_code(), -32602);
}

#[tokio::test]
async fn calling_echo_returns_structured_content_and_text() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call_tool("echo", json!({"text": "héllo"})).await;
    assert_eq!(reply.status, StatusCode::OK);
    let result = reply.result();
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"], json!({"echo": "héllo"}));
    assert_eq!(result["content"][0], json!({"type": "text", "text": r#"{"echo":"héllo"}"#}));
}

#[tokio::test]
async fn a_tool_name_written_with_escapes_names_the_same_tool() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let body =
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ec\u0068o","arguments":{"text":"hi"}}}"#;
    let reply = json_reply(client.send(client.request(Method::POST, body)).await).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.result()["structuredContent"], json!({"echo": "hi"}), "{}", reply.body);
}

#[tokio::test]
async fn calling_an_unknown_tool_is_a_json_rpc_error() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call_tool("no_such_tool", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.error_code(), -32602);
    assert!(reply.error_message().contains("no_such_tool"), "{}", reply.body);
}

#[tokio::test]
async fn tools_call_with_bad_params_is_invalid_params() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for params in [json!({}), Value::Null, json!({"name": 5}), json!("echo")] {
        let reply = client.call("tools/call", params.clone()).await;
        assert_eq!(reply.error_code(), -32602, "params {params}");
    }
}

#[tokio::test]
async fn invalid_arguments_are_an_error_result_naming_the_argument() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for arguments in [json!({"text": 5}), json!({}), json!({"other": "x"})] {
        let reply = client.call_tool("echo", arguments.clone()).await;
        assert_eq!(reply.status, StatusCode::OK);
        let result = reply.result();
        assert_eq!(result["isError"], true, "arguments {arguments}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("'text'"), "the message names the argument: {text}");
    }
    let not_an_object = client.call_tool("echo", json!(["hi"])).await;
    assert_eq!(not_an_object.result()["isError"], true);
}

#[tokio::test]
async fn a_panicking_tool_gives_an_error_result_and_the_server_keeps_serving() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call_tool("panic", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK);
    let result = reply.result();
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("panic"), "the tool is named: {text}");
    assert!(!text.contains("secret internal detail"), "the panic message is not leaked: {text}");

    let echo = client.call_tool("echo", json!({"text": "still here"})).await;
    assert_eq!(echo.result()["structuredContent"]["echo"], "still here");
}

#[tokio::test]
async fn resources_are_listed_and_read() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;

    let list = client.call("resources/list", json!({})).await;
    let resources = list.result()["resources"].as_array().unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["test://private", "test://static"]);
    let fixed = &resources[1];
    assert_eq!(fixed["name"], "static");
    assert_eq!(fixed["mimeType"], "text/plain");
    assert_eq!(fixed["description"], "A fixed text.");

    let templates = client.call("resources/templates/list", json!({})).await;
    assert_eq!(
        templates.result()["resourceTemplates"],
        json!([{"uriTemplate": "test://items/{id}", "name": "item", "mimeType": "application/json"}])
    );

    let read = client.call("resources/read", json!({"uri": "test://static"})).await;
    assert_eq!(
        read.result()["contents"],
        json!([{"uri": "test://static", "mimeType": "text/plain", "text": "static text"}])
    );

    let item = client.call("resources/read", json!({"uri": "test://items/42"})).await;
    let contents = &item.result()["contents"][0];
    assert_eq!(contents["uri"], "test://items/42");
    assert_eq!(contents["mimeType"], "application/json");
    let text: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, json!({"id": "42"}));
}

#[tokio::test]
async fn reading_an_unknown_resource_is_resource_not_found_with_the_uri() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for uri in ["test://nothing", "test://items/1/2", "test://items/"] {
        let reply = client.call("resources/read", json!({"uri": uri})).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.error_code(), -32002, "{uri}");
        assert_eq!(reply.body["error"]["data"]["uri"], uri);
    }
    let no_uri = client.call("resources/read", json!({})).await;
    assert_eq!(no_uri.error_code(), -32602);
}

#[tokio::test]
async fn resource_subscriptions_are_acknowledged_and_recorded() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let session = server.http.sessions().get(&client.session().unwrap(), None).unwrap();

    let subscribe = client.call("resources/subscribe", json!({"uri": "test://static"})).await;
    assert_eq!(subscribe.result(), &json!({}));
    assert!(session.is_subscribed("test://static"));

    let unsubscribe = client.call("resources/unsubscribe", json!({"uri": "test://static"})).await;
    assert_eq!(unsubscribe.result(), &json!({}));
    assert!(!session.is_subscribed("test://static"));

    let bad = client.call("resources/subscribe", json!({})).await;
    assert_eq!(bad.error_code(), -32602);
}

#[tokio::test]
async fn prompts_are_listed_and_rendered() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;

    let list = client.call("prompts/list", json!({})).await;
    let prompts = list.result()["prompts"].as_array().unwrap();
    assert_eq!(prompts.len(), 2);
    assert_eq!(prompts[0]["name"], "greet");
    assert_eq!(prompts[0]["description"], "Greets someone by name.");
    assert_eq!(prompts[0]["arguments"], json!([{"name": "name", "description": "Who to greet.", "required": true}]));
    assert_eq!(prompts[1]["name"], "simple");

    let get = client.call("prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}})).await;
    let result = get.result();
    assert_eq!(result["description"], "Greets someone by name.");
    assert_eq!(result["messages"], json!([{"role": "user", "content": {"type": "text", "text": "Say hello to Ada."}}]));

    let simple = client.call("prompts/get", json!({"name": "simple"})).await;
    assert_eq!(simple.result()["messages"][0]["content"]["text"], "Hello.");
}

#[tokio::test]
async fn prompts_get_refuses_missing_arguments_and_unknown_prompts() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;

    let missing = client.call("prompts/get", json!({"name": "greet", "arguments": {}})).await;
    assert_eq!(missing.error_code(), -32602);
    assert!(missing.error_message().contains("name"), "{}", missing.body);

    let unknown = client.call("prompts/get", json!({"name": "nope"})).await;
    assert_eq!(unknown.error_code(), -32602);
    assert!(unknown.error_message().contains("nope"), "{}", unknown.body);

    let not_strings = client.call("prompts/get", json!({"name": "greet", "arguments": {"name": 5}})).await;
    assert_eq!(not_strings.error_code(), -32602);
}

#[tokio::test]
async fn the_prompts_capability_is_advertised_exactly_when_there_are_prompts() {
    use crate::support::{LATEST, init_params, registry, resources};
    let without = McpEngine::builder(std::sync::Arc::new(registry())).resources(resources()).build();
    for (server, served) in [(TestServer::new(), true), (TestServer::of(without, HttpOptions::default()), false)] {
        let init = server.client().call("initialize", init_params(LATEST, json!({}))).await;
        let capabilities = &init.result()["capabilities"];
        assert_eq!(capabilities["prompts"].is_object(), served, "2025-11-25: {capabilities}");
        assert!(capabilities["tools"].is_object() && capabilities["resources"].is_object(), "{capabilities}");
        let discover = server.stateless_client().request("server/discover", json!({})).await.unwrap();
        let capabilities = &discover.body["result"]["capabilities"];
        assert_eq!(capabilities["prompts"].is_object(), served, "2026-07-28: {capabilities}");
        assert!(capabilities["tools"].is_object(), "{capabilities}");
    }
}

#[tokio::test]
async fn logging_set_level_accepts_known_levels_only() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for level in ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] {
        let reply = client.call("logging/setLevel", json!({"level": level})).await;
        assert_eq!(reply.result(), &json!({}), "{level}");
    }
    for params in [json!({"level": "verbose"}), json!({"level": "INFO"}), json!({})] {
        let reply = client.call("logging/setLevel", params.clone()).await;
        assert_eq!(reply.error_code(), -32602, "{params}");
    }
}

#[tokio::test]
async fn completion_answers_known_references_with_an_empty_list() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let known = client
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "A"}}),
        )
        .await;
    let completion = &known.result()["completion"];
    assert_eq!(completion["values"], json!([]));
    assert_eq!(completion["hasMore"], false);

    for uri in ["test://static", "test://items/{id}"] {
        let resource = client
            .call(
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": uri}, "argument": {"name": "id", "value": ""}}),
            )
            .await;
        assert_eq!(resource.result()["completion"]["values"], json!([]), "{uri}");
    }

    for reference in [
        json!({"type": "ref/resource", "uri": "test://nowhere"}),
        json!({"type": "ref/prompt", "name": "nope"}),
        json!({"type": "ref/tool", "name": "echo"}),
        json!({"type": "ref/prompt"}),
    ] {
        let unknown = client
            .call("completion/complete", json!({"ref": reference, "argument": {"name": "name", "value": ""}}))
            .await;
        assert_eq!(unknown.error_code(), -32602, "{reference}");
    }
}

#[tokio::test]
async fn an_unknown_method_is_method_not_found() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call("tools/frobnicate", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.error_code(), -32601);
    assert!(reply.error_message().contains("tools/frobnicate"));
}

#[tokio::test]
async fn single_page_listings_refuse_any_cursor() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        assert!(client.call(method, json!({})).await.body.get("result").is_some(), "{method}");
        let reply = client.call(method, json!({"cursor": "abc"})).await;
        assert_eq!(reply.error_code(), -32602, "{method}");
        assert!(reply.error_message().contains("Invalid cursor"), "{method}");
    }
}

#[tokio::test]
async fn guarded_resources_are_reached_only_by_callers_who_may_call_their_tools() {
    use std::sync::Arc;

    use mirobody_core::UserInfo;
    use mirobody_mcp::McpEngine;
    use mirobody_mcp::session::Session;

    use crate::support::{prompts, registry, resources};

    // `test://` is the data of `scoped` (listing, needs health:read) and `whoami` (reading,
    // needs a signed-in caller); agent "narrow" may not see `whoami` at all.
    let engine = McpEngine::builder(Arc::new(registry()))
        .resources(resources())
        .prompts(prompts())
        .visibility(|user: &UserInfo, tool: &mirobody_core::Tool| {
            !(user.agent() == Some("narrow") && tool.name() == "whoami")
        })
        .guard_resources("test://", "scoped", "whoami")
        .build();
    let session = Arc::new(Session::new(None));
    let ask = async |user: &UserInfo, method: &str, params: Value| -> Value {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        let reply = engine.handle_bytes(message.as_bytes(), user, &session).await.unwrap();
        serde_json::from_slice(&reply).unwrap()
    };
    let listed = async |user: &UserInfo| -> Vec<String> {
        let reply = ask(user, "resources/list", json!({})).await;
        reply["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap().to_owned()).collect()
    };
    let read = async |user: &UserInfo| ask(user, "resources/read", json!({"uri": "test://static"})).await;

    let anonymous = UserInfo::anonymous();
    assert!(listed(&anonymous).await.is_empty());
    assert_eq!(read(&anonymous).await["error"]["code"], -32002, "not found, as if it were not there");

    let signed_in = UserInfo::authenticated("u1");
    assert!(listed(&signed_in).await.is_empty(), "listing needs the listing tool's scope");
    assert_eq!(read(&signed_in).await["result"]["contents"][0]["text"], "static text");

    let scoped = UserInfo::authenticated("u1").with_scopes(["health:read"]);
    assert_eq!(listed(&scoped).await, ["test://private", "test://static"]);

    let narrow = UserInfo::authenticated("u1").with_scopes(["health:read"]).with_agent("narrow");
    assert_eq!(read(&narrow).await["error"]["code"], -32002, "an agent denied the reading tool cannot read");
    let template = ask(&narrow, "resources/read", json!({"uri": "test://items/7"})).await;
    assert_eq!(template["error"]["code"], -32002, "templates are guarded too");
}
