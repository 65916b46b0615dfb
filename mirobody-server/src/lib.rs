//! The mirobody MCP server.
//!
//! [`McpService`] answers MCP requests for a tool registry, independent of transport; the
//! [`http`] module serves it as Streamable HTTP (a tower service an application can mount in
//! its own axum router), [`stdio`] over stdin/stdout for desktop clients.

// Refusals are whole HTTP responses and parse failures carry their error, each made once per
// request at most; boxing them would buy nothing.
#![allow(clippy::result_large_err)]

pub mod app;
pub mod changes;
pub mod cli;
pub mod config;
pub mod http;
pub mod jsonrpc;
pub mod mcp;
pub mod modern;
pub mod modern_http;
pub mod mrtr;
pub mod peer;
pub mod session;
pub mod stdio;

/// The axum version the router is built on, for serving and mounting it.
pub use axum;
pub use mcp::{
    Backends, Exchange, McpOptions, McpService, McpServiceBuilder, Reply, ResourceLister, ServerInfo, Status,
    ToolVisibility,
};

/// Serves `router` on `listener` until SIGINT or SIGTERM, then stops accepting connections and
/// lets the requests already in flight finish; `service`'s open `subscriptions/listen` streams
/// are ended so they do not hold the shutdown up. Sets `TCP_NODELAY` on every connection.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    service: McpService,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        // Without it, small JSON replies wait on Nagle's algorithm.
        let _ = tcp.set_nodelay(true);
    });
    let signal = async move {
        shutdown_signal().await;
        service.changes().end_streams();
    };
    axum::serve(listener, router).with_graceful_shutdown(signal).await
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
