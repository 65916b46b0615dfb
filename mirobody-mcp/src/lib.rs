//! The mirobody MCP server, for embedding.
//!
//! [`McpEngine`] answers MCP requests for a tool registry, independent of transport; the
//! [`http`] module serves it as Streamable HTTP (a tower service an application can mount in
//! its own axum router), [`stdio`] over stdin/stdout for desktop clients, and [`serve`] runs
//! an HTTP/1 server for either. [`Connection`] is one client's conversation message by
//! message, for a transport of one's own (WebSocket, a queue, an in-process pipe); stdio is
//! written on it.
//! With the `testing` feature, `testing` holds in-process clients for an embedder's tests.
//!
//! The crate is in three layers, each depending only on those below it:
//!
//! - `transport`: Streamable HTTP (one module per protocol revision's side of the endpoint),
//!   the message-level connection and stdio on it, and the accept loop with its connection deadlines;
//! - `protocol`: the method router, one module per revision (`rev_2025_11_25`,
//!   `rev_2026_07_28`), JSON-RPC, the one-pass readers and the client peer;
//! - `session`: per-client state, the session store and what each caller may hold;
//! - `jsonrpc`: the wire format, below them all; `metrics`, what every layer counts, beside it.

// Refusals are whole HTTP responses and parse failures carry their error, each made once per
// request at most; boxing them would buy nothing.
#![allow(clippy::result_large_err)]

mod jsonrpc;
pub mod metrics;
mod protocol;
pub mod session;
#[cfg(feature = "testing")]
pub mod testing;
mod transport;

/// The axum version the router is built on, for serving and mounting it.
pub use axum;
/// How the option structs read durations (`30s`, `15m`): core's, re-exported for embedders.
pub use mirobody_core::human_duration;
pub use protocol::rev_2026_07_28::mrtr::StateKey;
pub use protocol::tasks::{MemoryTaskStore, TaskError, TaskOptions};
pub use protocol::{
    AccessLogOptions, Backends, McpEngine, McpEngineBuilder, McpOptions, ResourceLister, ServerInfo, ToolVisibility,
    TracePropagation, changes,
};
pub use session::limits;
pub use transport::messages::{Connection, ConnectionOptions};
pub use transport::proxies::{BadForwardedHeader, BadProxy, ForwardedHeader, TrustedProxies};
pub use transport::serve::{HttpApp, ServeOptions, serve, serve_until, serve_with, shutdown_signal};
pub use transport::{http, stdio};
