//! The mirobody MCP server.
//!
//! [`McpService`] answers MCP requests for a tool registry, independent of transport; the
//! [`http`] module serves it as Streamable HTTP (a tower service an application can mount in
//! its own axum router), [`stdio`] over stdin/stdout for desktop clients.

pub mod jsonrpc;
pub mod mcp;
pub mod peer;
pub mod app;
pub mod cli;
pub mod config;
pub mod http;
pub mod session;
pub mod stdio;

/// The axum version the router is built on, for serving and mounting it.
pub use axum;
pub use mcp::{Backends, Exchange, McpOptions, McpService, McpServiceBuilder, Reply, ServerInfo, Status};
