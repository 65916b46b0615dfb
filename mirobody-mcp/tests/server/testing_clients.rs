//! What the `testing` clients report instead of panicking, and how they read SSE: the errors
//! an embedder's test can match on.

use std::time::Duration;

use axum::body::Body;
use http::{Response, StatusCode};
use mirobody_mcp::http::HttpOptions;
use mirobody_mcp::testing::{SseStream, TestClient, TestError};
use serde_json::json;

use crate::support::{TestServer, with};

#[tokio::test]
async fn a_refused_initialize_is_an_error_with_the_reply() {
    let server = TestServer::with_http(with(|o: &mut HttpOptions| o.max_sessions = 1));
    let _first = server.initialized(json!({})).await;
    let mut second = server.client().0;
    match second.initialize(json!({})).await {
        Err(TestError::InitializeRefused { status, body }) => {
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
            assert!(body["error"]["message"].as_str().unwrap_or_default().contains("too many active sessions"));
        }
        other => panic!("expected a refused initialize, got {other:?}"),
    }
    assert_eq!(second.session_id(), None, "no session is kept from a refusal");
}

#[tokio::test]
async fn a_notification_on_an_unknown_session_is_not_accepted() {
    let server = TestServer::new();
    let stranger = server.client().0.on_session(Some("0123456789abcdef0123456789abcdef"));
    match stranger.notify("notifications/initialized", json!({})).await {
        Err(TestError::NotAccepted(status)) => assert_eq!(status, StatusCode::NOT_FOUND),
        other => panic!("expected NotAccepted, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reply_slower_than_the_timeout_is_an_error() {
    let server = TestServer::new();
    let client = server.initialized(json!({})).await.0.with_timeout(Duration::from_millis(50));
    match client.call_tool("slow", json!({"tag": "testing-clients-timeout", "ms": 10_000})).await {
        Err(TestError::TimedOut { after, .. }) => assert_eq!(after, Duration::from_millis(50)),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn a_json_reply_is_not_an_event_stream() {
    let client: TestClient = TestServer::new().client().0;
    let response = client.request_unread("ping", json!({})).await.expect("a response");
    match SseStream::from_response(response) {
        Err(TestError::NotEventStream { status, .. }) => assert_eq!(status, StatusCode::BAD_REQUEST),
        other => panic!("expected NotEventStream, got {:?}", other.map(|_| "a stream")),
    }
}

#[tokio::test]
async fn sse_events_keep_their_type_id_and_every_data_line() {
    let body = ": keep-alive\n\nevent: message\nid: 7\ndata: first\ndata:second\n\nevent: note\ndata: {}\n\n";
    let response = Response::builder().header("content-type", "text/event-stream").body(Body::from(body)).unwrap();
    let mut stream = SseStream::from_response(response).unwrap();
    let event = stream.next_event().await.unwrap().expect("an event");
    assert_eq!((event.event.as_deref(), event.id.as_deref()), (Some("message"), Some("7")));
    assert_eq!(event.data, "first\nsecond");
    assert!(matches!(stream.next_message().await, Err(TestError::NotAMessage(kind)) if kind == "note"));
    assert!(stream.next_event().await.unwrap().is_none(), "the stream has ended");
    assert!(matches!(stream.next_message().await, Err(TestError::Ended)));
}
