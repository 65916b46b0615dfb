//! Reading a server-sent event stream event by event, so a test can act between events.

use std::time::Duration;

use axum::body::Body;
use http::{Response, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;

use super::{DEFAULT_TIMEOUT, TestError, parse_json, within};

/// One server-sent event with data.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// The `id:` field, if the event had one (the id a client resumes after).
    pub id: Option<String>,
    /// The `data:` lines, joined with newlines.
    pub data: String,
}

impl SseEvent {
    /// The data as one JSON value.
    pub fn json(&self) -> Result<Value, TestError> {
        parse_json(self.data.as_bytes())
    }
}

/// An SSE response body, read one event at a time.
///
/// ```
/// use mirobody_mcp::axum::body::Body;
/// use mirobody_mcp::axum::http::Response;
/// use mirobody_mcp::testing::SseStream;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let body = ": keep-alive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
/// let response = Response::builder().header("content-type", "text/event-stream").body(Body::from(body))?;
/// let mut stream = SseStream::from_response(response)?;
/// assert_eq!(stream.next_message().await?["id"], 1);
/// assert!(stream.next_event().await?.is_none(), "the stream has ended");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct SseStream {
    body: Body,
    buffer: String,
    timeout: Duration,
}

impl SseStream {
    /// The stream of a response that must be `200 OK` with `Content-Type: text/event-stream`.
    pub fn from_response(response: Response<Body>) -> Result<Self, TestError> {
        let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let content_type = content_type.unwrap_or_default();
        if response.status() != StatusCode::OK || !content_type.starts_with("text/event-stream") {
            return Err(TestError::NotEventStream { status: response.status(), content_type: content_type.to_owned() });
        }
        Ok(SseStream { body: response.into_body(), buffer: String::new(), timeout: DEFAULT_TIMEOUT })
    }

    /// The same stream, waiting at most `timeout` for each event.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The next event with data (comments, such as keep-alives, are skipped); `None` when the
    /// stream has ended.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, TestError> {
        within(self.timeout, "the next SSE event", self.read_event()).await?
    }

    /// The next event as a JSON-RPC message: an event of type `message` (or of no type) whose
    /// data is one JSON value.
    pub async fn next_message(&mut self) -> Result<Value, TestError> {
        let event = self.next_event().await?.ok_or(TestError::Ended)?;
        match event.event.as_deref() {
            None | Some("message") => event.json(),
            Some(other) => Err(TestError::NotAMessage(other.to_owned())),
        }
    }

    /// Every remaining event's data as JSON, until the stream ends.
    pub async fn remaining_messages(&mut self) -> Result<Vec<Value>, TestError> {
        let mut messages = Vec::new();
        while let Some(event) = self.next_event().await? {
            messages.push(event.json()?);
        }
        Ok(messages)
    }

    async fn read_event(&mut self) -> Result<Option<SseEvent>, TestError> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse_block(&block) {
                    return Ok(Some(event));
                }
            }
            let Some(frame) = self.body.frame().await else { return Ok(None) };
            let frame = frame.map_err(|e| TestError::Body(e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                self.buffer.push_str(std::str::from_utf8(&data).map_err(|_| TestError::NotUtf8)?);
            }
        }
    }
}

/// One event block (the lines before a blank line); `None` for a block without data.
fn parse_block(block: &str) -> Option<SseEvent> {
    let (mut event, mut id, mut data) = (None, None, None::<String>);
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            "event" => event = Some(value.trim().to_owned()),
            "id" => id = Some(value.to_owned()),
            _ => {}
        }
    }
    data.map(|data| SseEvent { event, id, data })
}
