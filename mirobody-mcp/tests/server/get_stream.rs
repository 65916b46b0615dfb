//! The GET stream for server messages unrelated to a request: one per session, Accept rules,
//! delivery of unrelated messages, and its end when the session is deleted or the server shuts
//! down.

use http::{Method, StatusCode};
use serde_json::json;

use crate::support::{Sse, TestServer, json_reply, set_header};

#[tokio::test]
async fn get_opens_one_sse_stream_per_session() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;

    let first = client.send(client.request(Method::GET, "")).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers().get("content-type").unwrap(), "text/event-stream");

    let second = json_reply(client.send(client.request(Method::GET, "")).await).await;
    assert_eq!(second.status, StatusCode::CONFLICT);
    assert_eq!(second.error_code(), -32000);

    let other = server.initialized(json!({})).await;
    let elsewhere = other.send(other.request(Method::GET, "")).await;
    assert_eq!(elsewhere.status(), StatusCode::OK, "another session has its own stream");

    drop(first);
    let reopened = client.send(client.request(Method::GET, "")).await;
    assert_eq!(reopened.status(), StatusCode::OK, "a closed stream can be reopened");
}

#[tokio::test]
async fn get_without_sse_in_accept_gets_406() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let request = set_header(client.request(Method::GET, ""), "accept", "application/json");
    let reply = json_reply(client.send(request).await).await;
    assert_eq!(reply.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(reply.error_code(), -32000);
}

#[tokio::test]
async fn get_needs_a_known_session() {
    let server = TestServer::new();
    let anonymous = server.client();
    assert_eq!(anonymous.send(anonymous.request(Method::GET, "")).await.status(), StatusCode::BAD_REQUEST);
    let stranger = anonymous.on_session(Some("feedfacefeedfacefeedfacefeedface"));
    assert_eq!(stranger.send(stranger.request(Method::GET, "")).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn unrelated_messages_arrive_on_the_get_stream() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let session = server.http.sessions().get(&client.session().unwrap(), None).unwrap();
    let update = json!({"uri": "test://static"});
    let message = || {
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": update}))
            .unwrap()
    };

    assert!(!session.send_unrelated(message()), "nothing to send on before a GET");

    let mut sse = Sse::new(client.send(client.request(Method::GET, "")).await);
    assert!(session.send_unrelated(message()));
    let received = sse.next_message().await;
    assert_eq!(received, json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": update}));
}

#[tokio::test]
async fn delete_ends_the_get_stream() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let mut sse = Sse::new(client.send(client.request(Method::GET, "")).await);
    assert_eq!(client.send(client.request(Method::DELETE, "")).await.status(), StatusCode::NO_CONTENT);
    assert!(sse.next_event().await.is_none(), "the stream ends with its session");
}

#[tokio::test]
async fn shutting_down_ends_the_get_stream() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await;
    let mut sse = Sse::new(client.send(client.request(Method::GET, "")).await);
    server.http.engine().changes().end_streams();
    assert!(sse.next_event().await.is_none(), "an idle stream must not hold the shutdown up");
    drop(sse);
    // A stream opened during the shutdown ends at once too.
    let late = client.send(client.request(Method::GET, "")).await;
    assert!(Sse::new(late).next_event().await.is_none());
}
