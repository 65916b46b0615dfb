//! The built-in prompts through the real binary, on both protocol revisions: advertised,
//! listed with their arguments, rendered with the tools they name, and refused with -32602 for
//! a missing required argument, an unknown prompt, an unknown argument or one too long.

mod common;

use common::{fresh_data_dir, post, request, server_port, start, token};
use serde_json::{Value, json};

const NAMES: [&str; 3] = ["explain_lab_report", "prepare_doctor_visit", "weekly_health_summary"];

/// One client of one revision.
trait Revision {
    fn call(&self, method: &str, params: Value) -> Value;
}

/// MCP 2025-11-25: a session opened with `initialize`.
struct Sessions {
    port: u16,
    token: String,
    session: String,
}

impl Revision for Sessions {
    fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
        post(self.port, &self.token, Some(&self.session), &body).expect("a reply").1
    }
}

/// MCP 2026-07-28: stateless, `_meta` and the standard headers on each request.
struct Stateless {
    port: u16,
    token: String,
}

impl Revision for Stateless {
    fn call(&self, method: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "prompts-test", "version": "1"},
        });
        let name = params["name"].as_str().unwrap_or_default().to_owned();
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params}).to_string();
        let bearer = format!("Bearer {}", self.token);
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", bearer.as_str()),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        if !name.is_empty() {
            headers.push(("Mcp-Name", name.as_str()));
        }
        let (status, head, reply) = request(self.port, "POST", "/mcp", &headers, body.as_bytes());
        assert!(status == 200 || status == 400, "{head}");
        serde_json::from_slice(&reply).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&reply)))
    }
}

fn text_of(result: &Value) -> &str {
    assert_eq!(result["messages"].as_array().map(Vec::len), Some(1), "{result}");
    assert_eq!(result["messages"][0]["role"], "user", "{result}");
    result["messages"][0]["content"]["text"].as_str().expect("a text message")
}

fn invalid_params(reply: &Value) -> &str {
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    reply["error"]["message"].as_str().unwrap_or_default()
}

fn check(client: &dyn Revision, revision: &str) {
    let list = client.call("prompts/list", json!({}));
    let prompts = list["result"]["prompts"].as_array().unwrap_or_else(|| panic!("{revision}: {list}"));
    let names: Vec<&str> = prompts.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, NAMES, "{revision}");
    let arguments: Vec<&Value> = prompts.iter().map(|p| &p["arguments"]).collect();
    assert_eq!(arguments[0][0]["name"], "file");
    assert_eq!(arguments[0][0]["required"], true);
    assert_eq!(arguments[1][0]["name"], "reason");
    assert_eq!(arguments[1][0]["required"], false);
    assert_eq!(arguments[2][0]["name"], "member");
    for prompt in prompts {
        assert!(prompt["title"].is_string() && prompt["description"].is_string(), "{prompt}");
    }

    // Each rendered, naming the tools to call and bringing in the argument.
    let lab = client.call("prompts/get", json!({"name": "explain_lab_report", "arguments": {"file": "cbc-march.pdf"}}));
    let text = text_of(&lab["result"]);
    for named in ["list_files", "read_file", "fetch_health_data", "\"cbc-march.pdf\""] {
        assert!(text.contains(named), "{revision}: {named} in {text}");
    }
    assert!(text.contains("language I use"), "the model answers in the person's language: {text}");
    let visit = client
        .call("prompts/get", json!({"name": "prepare_doctor_visit", "arguments": {"reason": "心脏科 follow-up"}}));
    let text = text_of(&visit["result"]);
    for named in ["get_user_health_profile", "search_health_indicators", "recall_memory", "心脏科 follow-up"] {
        assert!(text.contains(named), "{revision}: {named} in {text}");
    }
    let without_reason = client.call("prompts/get", json!({"name": "prepare_doctor_visit"}));
    assert!(text_of(&without_reason["result"]).contains("general health"), "{without_reason}");
    let week = client.call("prompts/get", json!({"name": "weekly_health_summary", "arguments": {}}));
    let text = text_of(&week["result"]);
    assert!(text.contains("fetch_health_data") && text.contains("render_chart"), "{text}");
    let today = mirobody_health::text::rfc3339(mirobody_core::clock::now_ms())[..10].to_owned();
    assert!(text.contains(&today), "the dates are filled in ({today}): {text}");

    // Refusals: the JSON-RPC invalid-params error, saying what is wrong.
    let missing = client.call("prompts/get", json!({"name": "explain_lab_report", "arguments": {}}));
    assert!(invalid_params(&missing).contains("'file'"), "{revision}: {missing}");
    let blank = client.call("prompts/get", json!({"name": "explain_lab_report", "arguments": {"file": "  "}}));
    assert!(invalid_params(&blank).contains("'file'"), "{revision}: {blank}");
    let unknown = client.call("prompts/get", json!({"name": "no_such_prompt"}));
    assert!(invalid_params(&unknown).contains("no_such_prompt"), "{revision}: {unknown}");
    let stray = client.call("prompts/get", json!({"name": "weekly_health_summary", "arguments": {"topic": "x"}}));
    assert!(invalid_params(&stray).contains("Unknown argument 'topic'"), "{revision}: {stray}");
    let long = "x".repeat(201);
    let too_long = client.call("prompts/get", json!({"name": "prepare_doctor_visit", "arguments": {"reason": long}}));
    assert!(invalid_params(&too_long).contains("at most 200"), "{revision}: {too_long}");
}

#[test]
fn the_built_in_prompts_are_served_on_both_revisions() {
    let data_dir = fresh_data_dir("prompts");
    let port = server_port();
    let token = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start(&data_dir, port));

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "prompts-test", "version": "1"}}});
    let (head, reply) = post(port, &token, None, &init).expect("initialize");
    assert_eq!(reply["result"]["capabilities"]["prompts"], json!({"listChanged": false}), "{reply}");
    let session = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|s| s.trim().to_owned()))
        .expect("a session id");
    check(&Sessions { port, token: token.clone(), session }, "2025-11-25");

    let stateless = Stateless { port, token };
    let discover = stateless.call("server/discover", json!({}));
    assert!(discover["result"]["capabilities"]["prompts"].is_object(), "{discover}");
    check(&stateless, "2026-07-28");
}
