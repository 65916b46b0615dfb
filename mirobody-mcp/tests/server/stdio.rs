//! The stdio transport over in-memory pipes: one line per reply, none for notifications, errors
//! for bad and oversized lines, elicitation round trips, progress, the end of input, and the
//! bound on running requests.

use mirobody_core::UserInfo;
use mirobody_mcp::McpOptions;
use serde_json::json;

use crate::support::{LATEST, Stdio, init_params, notification, rpc};

const MAX: usize = 4096;

async fn initialized(capabilities: serde_json::Value) -> Stdio {
    let mut stdio = Stdio::start(McpOptions::default(), UserInfo::anonymous(), MAX);
    stdio.send(&rpc(1, "initialize", init_params(LATEST, capabilities))).await;
    let reply = stdio.recv().await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["protocolVersion"], LATEST);
    stdio.send(&notification("notifications/initialized", json!({}))).await;
    stdio
}

#[tokio::test]
async fn requests_get_one_line_each() {
    let mut stdio = initialized(json!({})).await;

    stdio.send(&rpc(2, "tools/list", json!({}))).await;
    let list = stdio.recv().await;
    assert_eq!(list["id"], 2);
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"echo"), "{names:?}");

    stdio.send(&rpc(3, "tools/call", json!({"name": "echo", "arguments": {"text": "over stdio"}}))).await;
    let call = stdio.recv().await;
    assert_eq!(call["jsonrpc"], "2.0");
    assert_eq!(call["id"], 3);
    assert_eq!(call["result"]["structuredContent"], json!({"echo": "over stdio"}));

    stdio.close().await.expect("serve ends cleanly");
}

#[tokio::test]
async fn notifications_get_no_line() {
    let mut stdio = initialized(json!({})).await;
    stdio.send(&notification("notifications/cancelled", json!({"requestId": 99}))).await;
    stdio.send(&notification("notifications/roots/list_changed", json!({}))).await;
    stdio.send(&rpc(4, "ping", json!({}))).await;
    let next = stdio.recv().await;
    assert_eq!(next, json!({"jsonrpc": "2.0", "id": 4, "result": {}}), "the ping's reply is the next line");
    stdio.close().await.unwrap();
}

#[tokio::test]
async fn a_malformed_line_gets_a_parse_error_and_the_loop_goes_on() {
    let mut stdio = initialized(json!({})).await;
    stdio.send_line(r#"{"jsonrpc": "2.0", "id": 5, "method": "#).await;
    let error = stdio.recv().await;
    assert_eq!(error["error"]["code"], -32700);
    assert!(error["id"].is_null());

    stdio.send_line("").await;
    stdio.send_line(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).await;
    assert_eq!(stdio.recv().await["error"]["code"], -32600);

    stdio.send(&rpc(6, "ping", json!({}))).await;
    assert_eq!(stdio.recv().await["id"], 6);
    stdio.close().await.unwrap();
}

#[tokio::test]
async fn an_oversized_line_gets_an_error_and_the_next_line_works() {
    let mut stdio = initialized(json!({})).await;
    let big = rpc(7, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(MAX * 2)}}));
    stdio.send(&big).await;
    let error = stdio.recv().await;
    assert!(error["error"]["code"].is_i64(), "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains(&MAX.to_string()), "the limit is named: {error}");

    stdio.send(&rpc(8, "tools/call", json!({"name": "echo", "arguments": {"text": "small"}}))).await;
    let reply = stdio.recv().await;
    assert_eq!(reply["id"], 8);
    assert_eq!(reply["result"]["structuredContent"]["echo"], "small");
    stdio.close().await.unwrap();
}

#[tokio::test]
async fn elicitation_round_trip_over_stdio() {
    let mut stdio = initialized(json!({"elicitation": {}})).await;
    stdio.send(&rpc(9, "tools/call", json!({"name": "elicit", "arguments": {}}))).await;

    let ask = stdio.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "What is your name?");

    stdio.send(&json!({"jsonrpc": "2.0", "id": "not-the-id", "result": {"action": "decline"}})).await;
    stdio
        .send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}))
        .await;
    let reply = stdio.recv().await;
    assert_eq!(reply["id"], 9);
    assert_eq!(reply["result"]["structuredContent"]["answer"], json!({"action": "accept", "content": {"name": "Ada"}}));
    stdio.close().await.unwrap();
}

#[tokio::test]
async fn elicitation_over_stdio_is_unsupported_without_the_capability() {
    let mut stdio = initialized(json!({})).await;
    stdio.send(&rpc(10, "tools/call", json!({"name": "elicit", "arguments": {}}))).await;
    let reply = stdio.recv().await;
    assert_eq!(reply["result"]["structuredContent"], json!({"unsupported": "elicitation/create"}));
    stdio.close().await.unwrap();
}

#[tokio::test]
async fn progress_notifications_precede_the_reply_over_stdio() {
    let mut stdio = initialized(json!({})).await;
    stdio
        .send(&rpc(11, "tools/call", json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p"}})))
        .await;
    for expected in [0.0, 50.0, 100.0] {
        let note = stdio.recv().await;
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], "p");
        assert_eq!(note["params"]["progress"], expected);
    }
    assert_eq!(stdio.recv().await["id"], 11);
    stdio.close().await.unwrap();
}

#[tokio::test]
async fn an_authenticated_stdio_user_runs_auth_tools() {
    let mut stdio = Stdio::start(McpOptions::default(), UserInfo::authenticated("local"), MAX);
    stdio.send(&rpc(1, "tools/call", json!({"name": "whoami", "arguments": {"tag": "stdio-user"}}))).await;
    let reply = stdio.recv().await;
    assert_eq!(reply["result"]["structuredContent"], json!({"user": "local"}));
    stdio.close().await.unwrap();
}

#[tokio::test]
async fn closing_the_input_ends_serve() {
    let stdio = initialized(json!({})).await;
    stdio.close().await.expect("serve returns Ok when its input ends");

    let idle = Stdio::start(McpOptions::default(), UserInfo::anonymous(), MAX);
    idle.close().await.expect("serve returns Ok on an empty input");
}

#[tokio::test]
async fn closing_the_input_stops_a_running_call() {
    let mut stdio = initialized(json!({})).await;
    let signal = crate::support::started("stdio-close");
    stdio.send(&rpc(12, "tools/call", json!({"name": "slow", "arguments": {"tag": "stdio-close"}}))).await;
    crate::support::within("the slow tool to start", signal.notified()).await;
    tokio::time::timeout(std::time::Duration::from_secs(2), stdio.close())
        .await
        .expect("serve does not wait for the 30 s tool")
        .unwrap();
    crate::support::within("the tool to stop", crate::support::stopped("stdio-close").notified()).await;
}

#[tokio::test]
async fn cancelling_over_stdio_stops_the_call_without_a_reply() {
    let mut stdio = initialized(json!({})).await;
    let signal = crate::support::started("stdio-cancel");
    stdio.send(&rpc(13, "tools/call", json!({"name": "slow", "arguments": {"tag": "stdio-cancel"}}))).await;
    crate::support::within("the slow tool to start", signal.notified()).await;
    stdio.send(&notification("notifications/cancelled", json!({"requestId": 13}))).await;
    crate::support::within("the cancelled tool to stop", crate::support::stopped("stdio-cancel").notified()).await;
    stdio.send(&rpc(14, "ping", json!({}))).await;
    let next = stdio.recv().await;
    assert_eq!(next["id"], 14, "the cancelled call sends nothing: {next}");
    stdio.close().await.unwrap();
}

#[tokio::test]

async fn requests_written_just_before_the_input_ends_are_answered() {
    // `printf '%s\n' "$initialize" "$call" | mirobody-server stdio` must print both replies.
    let mut stdio = Stdio::start(McpOptions::default(), UserInfo::anonymous(), MAX);
    stdio.send(&rpc(1, "initialize", init_params(LATEST, json!({})))).await;
    stdio.send(&rpc(2, "tools/call", json!({"name": "echo", "arguments": {"text": "last words"}}))).await;
    let (result, lines) = stdio.close_and_drain().await;
    result.expect("serve ends cleanly");
    let ids: Vec<&serde_json::Value> = lines.iter().map(|line| &line["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)], "every request is answered: {lines:?}");
    assert_eq!(lines[1]["result"]["structuredContent"]["echo"], "last words");
}

#[tokio::test]
async fn serve_with_bounds_the_requests_running_at_once() {
    use mirobody_mcp::ConnectionOptions;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, from_server) = tokio::io::duplex(1 << 16);
    let options = ConnectionOptions::default().with_max_running_requests(1).with_max_message_bytes(MAX);
    let engine = crate::support::engine(McpOptions::default());
    let task =
        tokio::spawn(mirobody_mcp::stdio::serve_with(engine, UserInfo::anonymous(), server_in, server_out, options));
    let mut lines = BufReader::new(from_server).lines();

    let signal = crate::support::started("stdio-bound");
    let slow = rpc(1, "tools/call", json!({"name": "slow", "arguments": {"tag": "stdio-bound"}}));
    to_server.write_all(format!("{slow}\n{}\n", rpc(2, "ping", json!({}))).as_bytes()).await.unwrap();
    let line = crate::support::within("a line", lines.next_line()).await.unwrap().expect("a reply");
    let refused: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!((&refused["id"], &refused["error"]["code"]), (&json!(2), &json!(-32000)), "{refused}");
    crate::support::within("the slow tool to start", signal.notified()).await;

    drop(to_server);
    crate::support::within("serve to end", task).await.unwrap().expect("serve ends cleanly");
    crate::support::within("the slow tool to stop", crate::support::stopped("stdio-bound").notified()).await;
}
