//! The mirobody MCP server.
//!
//! [`McpService`] answers MCP requests for a tool registry, independent of transport; the
//! [`http`] module serves it as Streamable HTTP (a tower service an application can mount in
//! its own axum router), [`stdio`] over stdin/stdout for desktop clients.

// Refusals are whole HTTP responses and parse failures carry their error, each made once per
// request at most; boxing them would buy nothing.
#![allow(clippy::result_large_err)]

pub mod app;
pub mod cli;
pub mod config;
pub mod http;
pub mod jsonrpc;
pub mod mcp;
pub mod peer;
pub mod session;
pub mod stdio;

/// The axum version the router is built on, for serving and mounting it.
pub use axum;
pub use mcp::{
    Backends, Exchange, McpOptions, McpService, McpServiceBuilder, Reply, ServerInfo, Status, ToolVisibility,
};
