//! Tool calls that talk to the client while they run: the reply switches from JSON to SSE for
//! progress, log messages and elicitation (answered mid-stream by a second POST), and
//! `notifications/cancelled` (or DELETE) stops a running call.

use std::time::Duration;

use http::{Method, StatusCode};
use mirobody_core::UserInfo;
use mirobody_mcp::McpOptions;
use mirobody_mcp::http::HttpOptions;
use serde_json::{Value, json};

use crate::support::{Client, Sse, TestServer, body_bytes, json_reply, notification, rpc, started, stopped, within};

/// How long a cancelled call may take to answer.
const PROMPTLY: Duration = Duration::from_secs(2);

fn tool_call(id: i64, name: &str, arguments: Value) -> Value {
    rpc(id, "tools/call", json!({"name": name, "arguments": arguments}))
}

fn with_progress(id: i64, name: &str, arguments: Value, token: Value) -> Value {
    rpc(id, "tools/call", json!({"name": name, "arguments": arguments, "_meta": {"progressToken": token}}))
}

fn answer(id: &Value, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": name}}})
}

fn assert_progress(message: &Value, token: &Value) -> f64 {
    assert_eq!(message["jsonrpc"], "2.0");
    assert_eq!(message["method"], "notifications/progress", "{message}");
    assert!(message.get("id").is_none(), "a notification has no id: {message}");
    assert_eq!(&message["params"]["progressToken"], token, "{message}");
    assert_eq!(message["params"]["total"], 100.0, "{message}");
    message["params"]["progress"].as_f64().expect("progress is a number")
}

#[tokio::test]
async fn a_plain_tool_call_answers_json() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = json_reply(client.post(&tool_call(1, "echo", json!({"text": "hi"}))).await).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.body["id"], 1);
    assert_eq!(reply.result()["structuredContent"]["echo"], "hi");
}

#[tokio::test]
async fn progress_with_a_token_streams_notifications_then_the_response() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    for token in [json!("tok-1"), json!(42)] {
        let mut sse = Sse::new(client.post(&with_progress(7, "progress", json!({}), token.clone())).await);
        let mut steps = Vec::new();
        for _ in 0..3 {
            steps.push(assert_progress(&sse.next_message().await, &token));
        }
        assert_eq!(steps, [0.0, 50.0, 100.0], "non-decreasing progress, token {token}");

        let response = sse.next_message().await;
        assert_eq!(response["id"], 7);
        assert_eq!(response["result"]["structuredContent"], json!({"done": true}));
        assert!(sse.next_event().await.is_none(), "the stream ends after the response");
    }
}

#[tokio::test]
async fn the_sse_reply_carries_sse_headers() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let response = client.post(&with_progress(7, "progress", json!({}), json!("t"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers();
    assert_eq!(headers.get("content-type").unwrap(), "text/event-stream");
    assert_eq!(headers.get("cache-control").unwrap(), "no-cache");
    let mut sse = Sse::new(response);
    assert_eq!(sse.rest().await.len(), 4);
}

#[tokio::test]
async fn progress_without_a_token_answers_json() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let reply = client.call_tool("progress", json!({})).await;
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.result()["structuredContent"], json!({"done": true}));
}

#[tokio::test]
async fn a_json_only_client_gets_json_even_with_a_progress_token() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let request = crate::support::set_header(
        client.post_request(&with_progress(3, "progress", json!({}), json!("t"))),
        "accept",
        "application/json",
    );
    let reply = json_reply(client.send(request).await).await;
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.body["id"], 3);
    assert_eq!(reply.result()["structuredContent"], json!({"done": true}));
}

#[tokio::test]
async fn progress_streams_in_stateless_mode_too() {
    let server = TestServer::with_http(crate::support::with(|o: &mut HttpOptions| o.stateless = true));
    let client = server.client();
    let mut sse = Sse::new(client.post(&with_progress(5, "progress", json!({}), json!("s"))).await);
    let messages = sse.rest().await;
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[3]["id"], 5);
}

#[tokio::test]
async fn messages_sent_just_before_the_result_are_separate_events() {
    // progress_burst sends progress 0, yields, then sends 50 and 100 and returns in the same
    // poll: the tail (two notifications and the response) must still be three events.
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let token = json!("burst");
    let mut sse = Sse::new(client.post(&with_progress(8, "progress_burst", json!({}), token.clone())).await);
    let mut steps = Vec::new();
    for _ in 0..3 {
        steps.push(assert_progress(&sse.next_message().await, &token));
    }
    assert_eq!(steps, [0.0, 50.0, 100.0]);
    assert_eq!(sse.next_message().await["id"], 8);
}

#[tokio::test]

async fn messages_of_a_call_that_never_yields_are_not_lost() {
    // progress_sync sends three progress notifications and returns without ever yielding.
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let token = json!("sync");
    let response = client.post(&with_progress(9, "progress_sync", json!({}), token.clone())).await;
    let content_type = crate::support::header_str(response.headers(), "content-type").to_owned();
    assert!(content_type.starts_with("text/event-stream"), "the three notifications were dropped: {content_type}");
    let mut sse = Sse::new(response);
    for _ in 0..3 {
        assert_progress(&sse.next_message().await, &token);
    }
    assert_eq!(sse.next_message().await["id"], 9);
}

#[tokio::test]
async fn log_messages_flow_only_after_logging_set_level() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;

    let before = client.call_tool("log", json!({})).await;
    assert_eq!(before.content_type(), "application/json", "no log messages before setLevel");
    assert_eq!(before.result()["structuredContent"], json!({"logged": 2}));

    client.call("logging/setLevel", json!({"level": "warning"})).await.result();
    let filtered = client.call_tool("log", json!({})).await;
    assert_eq!(filtered.content_type(), "application/json", "info is below warning");

    client.call("logging/setLevel", json!({"level": "debug"})).await.result();
    let mut sse = Sse::new(client.post(&tool_call(11, "log", json!({}))).await);
    for expected in ["first", "second"] {
        let message = sse.next_message().await;
        assert_eq!(message["method"], "notifications/message", "{message}");
        assert!(message.get("id").is_none());
        assert_eq!(message["params"]["level"], "info");
        assert_eq!(message["params"]["data"], json!({"msg": expected}));
    }
    let response = sse.next_message().await;
    assert_eq!(response["id"], 11);
    assert_eq!(response["result"]["structuredContent"], json!({"logged": 2}));
}

#[tokio::test]
async fn log_levels_are_per_session() {
    let server = TestServer::new();
    let verbose = server.initialized(json!({})).await;
    let quiet = server.initialized(json!({})).await;
    verbose.call("logging/setLevel", json!({"level": "debug"})).await.result();
    let reply = quiet.call_tool("log", json!({})).await;
    assert_eq!(reply.content_type(), "application/json");
}

/// Starts the elicit tool on `client` and returns the stream and the server's request.
async fn start_elicitation(client: &Client, id: i64) -> (Sse, Value) {
    let mut sse = Sse::new(client.post(&tool_call(id, "elicit", json!({}))).await);
    let ask = sse.next_message().await;
    assert_eq!(ask["jsonrpc"], "2.0");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "What is your name?");
    assert_eq!(ask["params"]["requestedSchema"]["required"], json!(["name"]));
    assert!(ask["id"].is_string() || ask["id"].is_i64(), "the request has an id: {ask}");
    (sse, ask)
}

#[tokio::test]
async fn elicitation_round_trip() {
    let server = TestServer::new();
    let client = server.initialized(json!({"elicitation": {}})).await;
    let (mut sse, ask) = start_elicitation(&client, 3).await;

    let accepted = client.post(&answer(&ask["id"], "Ada")).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    assert!(body_bytes(accepted).await.is_empty());

    let response = sse.next_message().await;
    assert_eq!(response["id"], 3);
    let result = &response["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["answer"], json!({"action": "accept", "content": {"name": "Ada"}}));
    assert!(sse.next_event().await.is_none());

    let again = client.post_json(&answer(&ask["id"], "Ada")).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "an answered request takes no second answer");
}

#[tokio::test]
async fn an_answer_with_a_wrong_id_is_refused() {
    let server = TestServer::new();
    let client = server.initialized(json!({"elicitation": {}})).await;
    let (mut sse, ask) = start_elicitation(&client, 4).await;

    for wrong in [json!("not-the-id"), json!(4), json!(12345)] {
        let reply = client.post_json(&answer(&wrong, "Eve")).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "id {wrong}");
        assert_eq!(reply.error_code(), -32600);
        assert_eq!(reply.body["id"], wrong);
    }

    assert_eq!(client.post(&answer(&ask["id"], "Ada")).await.status(), StatusCode::ACCEPTED);
    let response = sse.next_message().await;
    assert_eq!(response["result"]["structuredContent"]["answer"]["content"]["name"], "Ada");
}

#[tokio::test]
async fn an_answer_from_another_session_or_user_is_refused_and_the_question_still_waits() {
    let server = TestServer::new();
    let client = server.initialized(json!({"elicitation": {}})).await;
    let other = server.initialized(json!({"elicitation": {}})).await;
    let (mut sse, ask) = start_elicitation(&client, 5).await;

    let stolen = other.post_json(&answer(&ask["id"], "Mallory")).await;
    assert_eq!(stolen.status, StatusCode::BAD_REQUEST, "another session cannot answer");
    let impostor = client.as_user(UserInfo::authenticated("u2")).post_json(&answer(&ask["id"], "Trudy")).await;
    assert_eq!(impostor.status, StatusCode::NOT_FOUND, "another user cannot even reach the session");

    assert_eq!(client.post(&answer(&ask["id"], "Ada")).await.status(), StatusCode::ACCEPTED);
    let response = sse.next_message().await;
    assert_eq!(response["id"], 5);
    assert_eq!(response["result"]["structuredContent"]["answer"]["content"]["name"], "Ada");
}

#[tokio::test]
async fn a_session_with_a_call_running_is_claimed_by_no_one() {
    // A question waits in an anonymous session: a signed-in stranger who learned its id can
    // neither take the session (as a client signing in after a 401 does) nor answer.
    let server = TestServer::new();
    let client = server.initialized(json!({"elicitation": {}})).await;
    let (mut sse, ask) = start_elicitation(&client, 8).await;
    let stranger = client.as_user(UserInfo::authenticated("eve"));
    assert_eq!(stranger.call("ping", json!({})).await.status, StatusCode::NOT_FOUND);
    assert_eq!(stranger.post_json(&answer(&ask["id"], "Eve")).await.status, StatusCode::NOT_FOUND);
    assert_eq!(client.post(&answer(&ask["id"], "Ada")).await.status(), StatusCode::ACCEPTED);
    let response = sse.next_message().await;
    assert_eq!(response["result"]["structuredContent"]["answer"]["content"]["name"], "Ada");
}

#[tokio::test]
async fn an_error_answer_reaches_the_tool() {
    let server = TestServer::new();
    let client = server.initialized(json!({"elicitation": {}})).await;
    let (mut sse, ask) = start_elicitation(&client, 6).await;
    let error = json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -1, "message": "user closed the dialog"}});
    assert_eq!(client.post(&error).await.status(), StatusCode::ACCEPTED);
    let response = sse.next_message().await;
    assert_eq!(
        response["result"]["structuredContent"],
        json!({"clientError": {"code": -1, "message": "user closed the dialog"}})
    );
}

#[tokio::test]
async fn an_unanswered_question_times_out() {
    let options = crate::support::with(|o: &mut McpOptions| o.answer_timeout = Duration::from_millis(100));
    let server = TestServer::with(options, HttpOptions::default());
    let client = server.initialized(json!({"elicitation": {}})).await;
    let (mut sse, ask) = start_elicitation(&client, 7).await;

    let response = sse.next_message().await;
    assert_eq!(response["id"], 7);
    assert_eq!(response["result"]["structuredContent"], json!({"noAnswer": true}));
    let late = client.post_json(&answer(&ask["id"], "Ada")).await;
    assert_eq!(late.status, StatusCode::BAD_REQUEST, "nobody waits any more");
}

#[tokio::test]
async fn elicitation_is_unsupported_when_the_client_did_not_declare_it() {
    let server = TestServer::new();
    let client = server.initialized(json!({"sampling": {}})).await;
    let reply = within("an immediate answer", client.call_tool("elicit", json!({}))).await;
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.result()["structuredContent"], json!({"unsupported": "elicitation/create"}));

    let stateless = TestServer::with_http(crate::support::with(|o: &mut HttpOptions| o.stateless = true));
    let reply = stateless.client().call_tool("elicit", json!({})).await;
    assert_eq!(reply.result()["structuredContent"], json!({"unsupported": "elicitation/create"}));
}

#[tokio::test]
async fn cancelling_a_running_call_ends_its_json_reply() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let signal = started("cancel-json");
    let call = tool_call(21, "slow", json!({"tag": "cancel-json"}));
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.post(&call).await }
    });
    within("the slow tool to start", signal.notified()).await;

    let cancel =
        client.post(&notification("notifications/cancelled", json!({"requestId": 21, "reason": "test"}))).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);

    let response = tokio::time::timeout(PROMPTLY, pending).await.expect("the cancelled call answers promptly").unwrap();
    within("the tool to stop", stopped("cancel-json").notified()).await;
    let reply = json_reply(response).await;
    assert_eq!(reply.body["id"], 21);
    assert!(reply.body.get("error").is_some(), "{}", reply.body);
    assert!(!reply.body.to_string().contains("finished"), "{}", reply.body);
}

#[tokio::test]
async fn cancelling_a_streaming_call_ends_its_stream() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let mut sse = Sse::new(client.post(&with_progress(22, "slow", json!({"tag": "cancel-sse"}), json!("c"))).await);
    let first = sse.next_message().await;
    assert_eq!(first["method"], "notifications/progress");

    let cancel = client.post(&notification("notifications/cancelled", json!({"requestId": 22}))).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);

    let rest = tokio::time::timeout(PROMPTLY, sse.rest()).await.expect("the stream ends promptly");
    within("the tool to stop", stopped("cancel-sse").notified()).await;
    assert!(rest.iter().all(|m| !m.to_string().contains("finished")), "{rest:?}");
    if let Some(last) = rest.last() {
        assert_eq!(last["id"], 22);
        assert!(last.get("error").is_some(), "{last}");
    }
}

#[tokio::test]

async fn cancelling_works_for_a_json_only_client() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let signal = started("cancel-json-only");
    let call = crate::support::set_header(
        client.post_request(&tool_call(26, "slow", json!({"tag": "cancel-json-only"}))),
        "accept",
        "application/json",
    );
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.send(call).await }
    });
    within("the slow tool to start", signal.notified()).await;
    let cancel = client.post(&notification("notifications/cancelled", json!({"requestId": 26}))).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);
    let response = tokio::time::timeout(PROMPTLY, pending).await.expect("the cancelled call answers promptly").unwrap();
    let reply = json_reply(response).await;
    assert!(!reply.body.to_string().contains("finished"), "{}", reply.body);
}

#[tokio::test]
async fn another_session_cannot_cancel_a_call() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let other = server.initialized(json!({})).await;
    let signal = started("cancel-other");
    let call = tool_call(23, "slow", json!({"tag": "cancel-other", "ms": 300}));
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.post(&call).await }
    });
    within("the slow tool to start", signal.notified()).await;
    let cancel = other.post(&notification("notifications/cancelled", json!({"requestId": 23}))).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);

    let reply = json_reply(within("the slow call", pending).await.unwrap()).await;
    assert_eq!(reply.result()["structuredContent"], json!({"finished": true}));
}

#[tokio::test]
async fn delete_cancels_the_sessions_running_calls() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let signal = started("cancel-delete");
    let call = tool_call(24, "slow", json!({"tag": "cancel-delete"}));
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.post(&call).await }
    });
    within("the slow tool to start", signal.notified()).await;

    assert_eq!(client.send(client.request(Method::DELETE, "")).await.status(), StatusCode::NO_CONTENT);
    let response = tokio::time::timeout(PROMPTLY, pending).await.expect("the call ends promptly").unwrap();
    within("the tool to stop", stopped("cancel-delete").notified()).await;
    let reply = json_reply(response).await;
    assert!(!reply.body.to_string().contains("finished"), "{}", reply.body);
}

#[tokio::test]

async fn a_dropped_call_leaves_nothing_running() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let signal = started("dropped");
    let message = tool_call(25, "slow", json!({"tag": "dropped"}));
    let call = client.post(&message);
    tokio::select! {
        _ = call => panic!("the slow call finished"),
        () = signal.notified() => {}
    }
    // The request future is dropped here, as hyper drops it when the connection closes.
    let session = server.http.sessions().get(&client.session().unwrap(), None).unwrap();
    assert!(!session.has_running_calls(), "the dropped call is still registered as running");
}
