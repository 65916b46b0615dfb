//! Test clients for an application that embeds the MCP endpoint (the `testing` feature).
//!
//! [`TestClient`] drives an endpoint's axum [`Router`](axum::Router) (or anything else that
//! serves HTTP as a tower service, such as [`Mounted`](crate::http::Mounted)) in-process,
//! without sockets: it opens a 2025-11-25 session or speaks 2026-07-28 statelessly, sends
//! requests and notifications, calls tools, and reads JSON replies ([`JsonReply`]) and SSE
//! streams ([`SseStream`]), optionally as a given [`UserInfo`](mirobody_core::UserInfo), as an
//! authentication layer in front of the endpoint would set it. [`StdioClient`] runs the stdio
//! transport over in-memory pipes.
//!
//! Every wait is bounded (five seconds unless [`TestClient::with_timeout`] says otherwise), and
//! what can go wrong on the way (a timeout, a body that is not JSON, a refused `initialize`)
//! is a [`TestError`], not a panic, so a test can assert on it.
//!
//! ```
//! use std::sync::Arc;
//! use mirobody_core::{Registry, Tool, ToolResult};
//! use mirobody_mcp::McpEngine;
//! use mirobody_mcp::http::{HttpOptions, McpHttp};
//! use mirobody_mcp::testing::TestClient;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = Registry::builder()
//!     .tool(Tool::new("hello", "Says hello.").sync_handler(|_, _, _| ToolResult::text("hello")))
//!     .build()?;
//! let http = McpHttp::new(McpEngine::builder(Arc::new(registry)).build(), HttpOptions::default());
//!
//! let mut client = TestClient::new(http.router());
//! client.initialize(json!({})).await?;
//! let reply = client.call_tool("hello", json!({})).await?;
//! assert_eq!(reply.result().unwrap()["content"][0]["text"], "hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod http;
mod sse;
mod stdio;

use std::time::Duration;

use ::http::StatusCode;
use serde_json::Value;

pub use self::http::{JsonReply, Revision, TestClient};
pub use self::sse::{SseEvent, SseStream};
pub use self::stdio::StdioClient;

/// How long a test client waits for anything unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// What went wrong while a test client talked to the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestError {
    /// Nothing came within the client's timeout.
    #[error("timed out after {after:?} waiting for {waiting_for}")]
    TimedOut {
        /// What the client was waiting for.
        waiting_for: &'static str,
        /// How long it waited.
        after: Duration,
    },
    /// The response body could not be read.
    #[error("the response body could not be read: {0}")]
    Body(String),
    /// A body, SSE event or stdio line that should hold one JSON value does not.
    #[error("not JSON ({error}): {text:?}")]
    NotJson {
        /// Why it does not parse.
        error: serde_json::Error,
        /// What was read instead.
        text: String,
    },
    /// A response that should be an SSE stream is not.
    #[error("not an SSE stream: status {status}, content type {content_type:?}")]
    NotEventStream {
        /// The response's status.
        status: StatusCode,
        /// The response's Content-Type, or "".
        content_type: String,
    },
    /// An SSE stream carried bytes that are not UTF-8.
    #[error("the SSE stream is not UTF-8")]
    NotUtf8,
    /// An SSE event has a type other than `message` where a JSON-RPC message was expected.
    #[error("an SSE event of type {0:?}, not a message")]
    NotAMessage(String),
    /// The SSE stream or the stdio server's output ended before what was awaited came.
    #[error("the stream ended")]
    Ended,
    /// `initialize` was answered with an error or a status other than 200.
    #[error("initialize was refused with status {status}: {body}")]
    InitializeRefused {
        /// The reply's status.
        status: StatusCode,
        /// The reply's body.
        body: Value,
    },
    /// A notification was answered with a status other than 202 Accepted.
    #[error("the notification was answered with {0}, not 202 Accepted")]
    NotAccepted(StatusCode),
    /// Writing to or reading from the stdio pipes failed.
    #[error("the stdio pipes failed: {0}")]
    Io(#[from] std::io::Error),
    /// The stdio server's task panicked.
    #[error("the stdio server panicked")]
    ServerPanicked,
}

/// Awaits `future` for at most `limit`.
async fn within<F: Future>(limit: Duration, waiting_for: &'static str, future: F) -> Result<F::Output, TestError> {
    tokio::time::timeout(limit, future).await.map_err(|_| TestError::TimedOut { waiting_for, after: limit })
}

/// Parses one JSON value out of `text`.
fn parse_json(text: &[u8]) -> Result<Value, TestError> {
    serde_json::from_slice(text)
        .map_err(|error| TestError::NotJson { error, text: String::from_utf8_lossy(text).into_owned() })
}
