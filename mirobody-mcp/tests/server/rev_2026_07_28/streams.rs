//! What a 2026-07-28 call streams: log messages only when the request names a level, progress
//! before the result, the handler cancelled when the stream or connection closes, keep-alives
//! on a silent call; and `subscriptions/listen`, acknowledged first, then carrying the changes
//! asked for until the streams end.

use super::*;

// =============================================================================================
// Streaming: logs on request, progress, cancellation, keep-alives
// =============================================================================================

#[tokio::test]
async fn logs_flow_only_when_the_request_names_a_level() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let quiet = client.call_tool("log", json!({})).await;
    assert_eq!(quiet.content_type(), "application/json");
    assert_complete(&quiet);

    let request = client.request(
        "tools/call",
        json!({"name": "log", "arguments": {}, "_meta": {"io.modelcontextprotocol/logLevel": "info"}}),
    );
    let mut sse = Sse::new(client.send(request).await);
    for expected in ["first", "second"] {
        let message = sse.next_message().await;
        assert_eq!(message["method"], "notifications/message");
        assert_eq!(message["params"]["data"]["msg"], expected);
    }
    let last = sse.next_message().await;
    assert_eq!(last["result"]["resultType"], "complete");

    let request = client.request(
        "tools/call",
        json!({"name": "log", "arguments": {}, "_meta": {"io.modelcontextprotocol/logLevel": "loud"}}),
    );
    assert_eq!(json_reply(client.send(request).await).await.error_code(), -32602);
}

#[tokio::test]
async fn progress_streams_before_the_result() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let request =
        client.request("tools/call", json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p1"}}));
    let mut sse = Sse::new(client.send(request).await);
    for step in [0.0, 50.0, 100.0] {
        let message = sse.next_message().await;
        assert_eq!(message["method"], "notifications/progress");
        assert_eq!(message["params"]["progressToken"], "p1");
        assert_eq!(message["params"]["progress"], step);
    }
    assert_eq!(sse.next_message().await["result"]["resultType"], "complete");
}

#[tokio::test]
async fn closing_the_stream_cancels_the_handler() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let tag = "rev-2026-07-28-close-sse";
    let request =
        client.request("tools/call", json!({"name": "slow", "arguments": {"tag": tag}, "_meta": {"progressToken": 1}}));
    let mut sse = Sse::new(client.send(request).await);
    assert_eq!(sse.next_message().await["method"], "notifications/progress");
    let stopped_signal = stopped(tag);
    drop(sse);
    within("the handler to stop after the stream closed", stopped_signal.notified()).await;

    // Before any reply (JSON pending), dropping the connection cancels too.
    let tag = "rev-2026-07-28-close-json";
    let started_signal = started(tag);
    let stopped_signal = stopped(tag);
    let request = client.request("tools/call", json!({"name": "slow", "arguments": {"tag": tag}}));
    let router = server.http.router();
    let pending = tokio::spawn(async move { router.oneshot(request).await });
    within("the handler to start", started_signal.notified()).await;
    pending.abort();
    within("the handler to stop after the connection closed", stopped_signal.notified()).await;
}

#[tokio::test]
async fn a_silent_call_switches_to_sse_with_keep_alives() {
    let server =
        TestServer::with_http(crate::support::with(|o: &mut HttpOptions| o.keep_alive = Duration::from_millis(40)));
    let client = MetaClient::of(&server);
    let response =
        client.send(client.request("tools/call", json!({"name": "slow", "arguments": {"tag": "ka", "ms": 300}}))).await;
    assert!(support::header_str(response.headers(), "content-type").starts_with("text/event-stream"));
    assert_eq!(support::header_str(response.headers(), "x-accel-buffering"), "no");
    let bytes = within("the stream to end", response.into_body().collect()).await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.lines().any(|l| l.starts_with(':')), "no keep-alive comment in {text:?}");
    assert!(text.contains(r#""finished":true"#), "{text}");
}

// =============================================================================================
// subscriptions/listen
// =============================================================================================

#[tokio::test]
async fn listen_acknowledges_first_then_carries_the_changes_asked_for() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let changes = server.http.engine().changes().clone();
    let tools = client.request_as(777, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let tools_id = json!(777);
    let mut tools_stream = Sse::new(client.send(tools).await);
    let mut prompts_stream = Sse::new(
        client
            .send(client.request("subscriptions/listen", json!({"notifications": {"promptsListChanged": true}})))
            .await,
    );

    let ack = tools_stream.next_message().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}));
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], tools_id);
    assert_eq!(prompts_stream.next_message().await["method"], "notifications/subscriptions/acknowledged");

    changes.tools_changed();
    changes.prompts_changed();
    let change = tools_stream.next_message().await;
    assert_eq!(change["method"], "notifications/tools/list_changed");
    assert_eq!(change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], tools_id);
    // The prompts-only stream skipped the tool change.
    assert_eq!(prompts_stream.next_message().await["method"], "notifications/prompts/list_changed");

    let bad = client.request("subscriptions/listen", json!({}));
    assert_eq!(json_reply(client.send(bad).await).await.error_code(), -32602);
}

#[tokio::test]
async fn ending_the_streams_closes_each_with_its_result() {
    let server = TestServer::new();
    let client = MetaClient::of(&server);
    let request = client.request_as(9, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let mut stream = Sse::new(client.send(request).await);
    assert_eq!(stream.next_message().await["method"], "notifications/subscriptions/acknowledged");
    server.http.engine().changes().end_streams();
    let last = stream.next_message().await;
    assert_eq!(last["id"], 9);
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 9);
    assert!(stream.next_event().await.is_none(), "the stream ends after its result");
}
