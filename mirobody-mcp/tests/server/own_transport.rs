//! A transport written outside the crate on `mirobody_mcp::Connection`, with the public API
//! only: an in-memory one over tokio channels serving a whole conversation and a question to
//! the client; cancellation by `notifications/cancelled` (either revision) and by dropping or
//! closing the connection; the bound on running requests, the message size limit and the
//! outgoing channel holding the connection back when the client stops reading.

use std::time::Duration;

use mirobody_core::UserInfo;
use mirobody_mcp::{Connection, ConnectionOptions, McpOptions};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::support::{LATEST, engine, init_params, notification, rpc, started, stopped, within};

/// The transport: the client's messages come in on one channel and are handed to the
/// connection one by one; what the connection sends goes straight back on its receiver. When
/// the client's side closes, the connection closes with a short grace.
struct InMemory {
    to_server: mpsc::Sender<Vec<u8>>,
    from_server: mpsc::Receiver<Vec<u8>>,
    task: JoinHandle<()>,
}

impl InMemory {
    fn start(user: UserInfo, options: ConnectionOptions) -> Self {
        let (mut connection, from_server) = Connection::with_options(engine(McpOptions::default()), user, options);
        let (to_server, mut incoming) = mpsc::channel::<Vec<u8>>(16);
        let task = tokio::spawn(async move {
            while let Some(message) = incoming.recv().await {
                connection.handle(&message).await;
            }
            connection.close(Duration::from_secs(1)).await;
        });
        InMemory { to_server, from_server, task }
    }

    async fn send(&self, message: &Value) {
        self.to_server.send(message.to_string().into_bytes()).await.expect("the transport reads");
    }

    async fn send_bytes(&self, bytes: &[u8]) {
        self.to_server.send(bytes.to_vec()).await.expect("the transport reads");
    }

    async fn recv(&mut self) -> Value {
        let message = within("a message from the server", self.from_server.recv()).await;
        serde_json::from_slice(&message.expect("the server still sends")).expect("every message is JSON")
    }

    /// Closes the client's side; what the server still sent, once its side has ended.
    async fn close(self) -> Vec<Value> {
        let InMemory { to_server, mut from_server, task } = self;
        drop(to_server);
        let mut rest = Vec::new();
        while let Some(message) = within("the server's side to end", from_server.recv()).await {
            rest.push(serde_json::from_slice(&message).expect("JSON"));
        }
        within("the transport to end", task).await.expect("the transport does not panic");
        rest
    }
}

async fn initialized(capabilities: Value) -> InMemory {
    let mut client = InMemory::start(UserInfo::anonymous(), ConnectionOptions::default());
    client.send(&rpc(1, "initialize", init_params(LATEST, capabilities))).await;
    let reply = client.recv().await;
    assert_eq!(reply["result"]["protocolVersion"], LATEST, "{reply}");
    client.send(&notification("notifications/initialized", json!({}))).await;
    client
}

/// A 2026-07-28 request's params: `params` with the `_meta` that makes it stateless.
fn stateless(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    });
    params
}

async fn next(outgoing: &mut mpsc::Receiver<Vec<u8>>) -> Value {
    let message = within("a message from the connection", outgoing.recv()).await.expect("the connection sends");
    serde_json::from_slice(&message).expect("every message is JSON")
}

#[tokio::test]
async fn an_in_memory_transport_initializes_lists_and_calls() {
    let mut client = initialized(json!({})).await;

    client.send(&rpc(2, "tools/list", json!({}))).await;
    let list = client.recv().await;
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"echo") && names.contains(&"slow"), "{names:?}");

    client.send(&rpc(3, "tools/call", json!({"name": "echo", "arguments": {"text": "in memory"}}))).await;
    let call = client.recv().await;
    assert_eq!(call["id"], 3);
    assert_eq!(call["result"]["structuredContent"], json!({"echo": "in memory"}));

    // A 2026-07-28 request on the same connection is served statelessly beside the session.
    client.send(&rpc(4, "tools/call", stateless(json!({"name": "echo", "arguments": {"text": "new"}})))).await;
    let call = client.recv().await;
    assert_eq!(call["result"]["resultType"], "complete", "{call}");
    assert_eq!(call["result"]["structuredContent"]["echo"], "new");

    client.send_bytes(b"{not json").await;
    assert_eq!(client.recv().await["error"]["code"], -32700);

    assert!(client.close().await.is_empty(), "nothing is left to send");
}

#[tokio::test]
async fn the_server_asks_the_client_and_gets_its_answer() {
    let mut client = initialized(json!({"elicitation": {}})).await;
    client.send(&rpc(5, "tools/call", json!({"name": "elicit", "arguments": {}}))).await;
    let ask = client.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "What is your name?");
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    client.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer})).await;
    let reply = client.recv().await;
    assert_eq!(reply["id"], 5);
    assert_eq!(reply["result"]["structuredContent"]["answer"], answer);
    assert!(client.close().await.is_empty());
}

#[tokio::test]
async fn a_cancelled_request_stops_and_sends_nothing_on_either_revision() {
    let (mut connection, mut outgoing) = Connection::new(engine(McpOptions::default()), UserInfo::anonymous());
    let calls = [
        (10, "connection-cancel", json!({"name": "slow", "arguments": {"tag": "connection-cancel"}})),
        (
            11,
            "connection-cancel-new",
            stateless(json!({"name": "slow", "arguments": {"tag": "connection-cancel-new"}})),
        ),
    ];
    for (id, tag, params) in calls {
        let signal = started(tag);
        connection.handle(rpc(id, "tools/call", params).to_string().as_bytes()).await;
        within("the slow tool to start", signal.notified()).await;
        assert_eq!(connection.running_requests(), 1);
        let cancel = notification("notifications/cancelled", json!({"requestId": id}));
        connection.handle(cancel.to_string().as_bytes()).await;
        within("the cancelled tool to stop", stopped(tag).notified()).await;
    }
    connection.handle(rpc(12, "ping", json!({})).to_string().as_bytes()).await;
    assert_eq!(next(&mut outgoing).await, json!({"jsonrpc": "2.0", "id": 12, "result": {}}), "no reply before it");
    assert_eq!(connection.running_requests(), 0);
}

#[tokio::test]
async fn dropping_the_connection_stops_a_running_request() {
    let (mut connection, mut outgoing) = Connection::new(engine(McpOptions::default()), UserInfo::anonymous());
    let signal = started("connection-drop");
    let call = rpc(13, "tools/call", json!({"name": "slow", "arguments": {"tag": "connection-drop"}}));
    connection.handle(call.to_string().as_bytes()).await;
    within("the slow tool to start", signal.notified()).await;
    drop(connection);
    within("the tool to stop", stopped("connection-drop").notified()).await;
    assert!(within("the channel to end", outgoing.recv()).await.is_none(), "the stopped call sends nothing");
}

#[tokio::test]
async fn closing_lets_short_requests_finish_and_stops_the_rest() {
    let (mut connection, mut outgoing) = Connection::new(engine(McpOptions::default()), UserInfo::anonymous());
    let long = started("connection-close-long");
    let calls = [
        rpc(14, "tools/call", json!({"name": "slow", "arguments": {"tag": "connection-close-short", "ms": 20}})),
        rpc(15, "tools/call", json!({"name": "slow", "arguments": {"tag": "connection-close-long"}})),
    ];
    for call in calls {
        connection.handle(call.to_string().as_bytes()).await;
    }
    within("the long tool to start", long.notified()).await;
    within("close to give up on the long call", connection.close(Duration::from_millis(300))).await;
    within("the long tool to stop", stopped("connection-close-long").notified()).await;
    let reply = next(&mut outgoing).await;
    assert_eq!((&reply["id"], &reply["result"]["structuredContent"]), (&json!(14), &json!({"finished": true})));
    assert!(outgoing.recv().await.is_none(), "the long call sends nothing and the channel ends");
}

#[tokio::test]
async fn requests_beyond_the_bound_are_refused_until_one_ends() {
    let options = ConnectionOptions::default().with_max_running_requests(2).with_max_message_bytes(512);
    let (mut connection, mut outgoing) =
        Connection::with_options(engine(McpOptions::default()), UserInfo::anonymous(), options);
    for (id, tag) in [(20, "connection-bound-a"), (21, "connection-bound-b")] {
        let signal = started(tag);
        connection
            .handle(rpc(id, "tools/call", json!({"name": "slow", "arguments": {"tag": tag}})).to_string().as_bytes())
            .await;
        within("the slow tool to start", signal.notified()).await;
    }

    connection.handle(rpc(22, "ping", json!({})).to_string().as_bytes()).await;
    let refused = next(&mut outgoing).await;
    assert_eq!(refused["id"], 22, "{refused}");
    assert_eq!(refused["error"]["code"], -32000);
    assert!(refused["error"]["message"].as_str().unwrap().contains("limit is 2"), "{refused}");

    let cancel = notification("notifications/cancelled", json!({"requestId": 20}));
    connection.handle(cancel.to_string().as_bytes()).await;
    within("the cancelled tool to stop", stopped("connection-bound-a").notified()).await;
    connection.handle(rpc(23, "ping", json!({})).to_string().as_bytes()).await;
    assert_eq!(next(&mut outgoing).await, json!({"jsonrpc": "2.0", "id": 23, "result": {}}), "room again");

    // A message over the size limit is refused whole, whatever it holds.
    let big = rpc(24, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(600)}}));
    connection.handle(big.to_string().as_bytes()).await;
    let too_large = next(&mut outgoing).await;
    assert_eq!(too_large["error"]["code"], -32600);
    assert!(too_large["error"]["message"].as_str().unwrap().contains("512"), "the limit is named: {too_large}");
    assert_eq!(connection.running_requests(), 1, "the one slow call left");
}

#[tokio::test]
async fn a_client_that_stops_reading_holds_the_connection_back() {
    let mut options = ConnectionOptions::default();
    options.outgoing_capacity = 1;
    let (mut connection, mut outgoing) =
        Connection::with_options(engine(McpOptions::default()), UserInfo::anonymous(), options);
    connection.handle(b"{1").await;
    let waits = tokio::time::timeout(Duration::from_millis(100), connection.handle(b"{2")).await;
    assert!(waits.is_err(), "the second error waits for room: the channel is full");
    assert_eq!(next(&mut outgoing).await["error"]["code"], -32700);
    within("room for the third error", connection.handle(b"{3")).await;
    assert_eq!(next(&mut outgoing).await["error"]["code"], -32700);
}
