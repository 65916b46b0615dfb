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

/// What [`serve`] serves: a tower service of HTTP requests that always answers, such as an axum
/// `Router`, or one wrapped in layers (the auth layer). Implemented for every such service.
pub trait HttpApp:
    tower::Service<
        ::http::Request<hyper::body::Incoming>,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + 'static
{
}

impl<S> HttpApp for S where
    S: tower::Service<
            ::http::Request<hyper::body::Incoming>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + 'static
{
}

/// How [`serve_with`] treats connections.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// How long a client may take to send a request's headers before the connection is closed
    /// (slow-loris protection).
    pub header_read_timeout: std::time::Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions { header_read_timeout: std::time::Duration::from_secs(30) }
    }
}

/// Serves `app` (an axum `Router`, or one wrapped in layers such as the auth layer) on
/// `listener` until SIGINT or SIGTERM, then stops accepting connections and lets the requests
/// already in flight finish; `service`'s open `subscriptions/listen` streams are ended so they
/// do not hold the shutdown up.
///
/// HTTP/1.1 with keep-alive and `TCP_NODELAY` on every connection, and the default
/// [`ServeOptions`].
pub async fn serve(listener: tokio::net::TcpListener, app: impl HttpApp, service: McpService) -> std::io::Result<()> {
    serve_with(listener, app, service, ServeOptions::default()).await
}

/// [`serve`] with options.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    app: impl HttpApp,
    service: McpService,
    options: ServeOptions,
) -> std::io::Result<()> {
    // By hand rather than `axum::serve`: HTTP/1 only (no protocol sniffing on every read), and a
    // header timeout, which `axum::serve` does not set.
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(options.header_read_timeout);
    let graceful = GracefulShutdown::new();
    let mut signal = std::pin::pin!(shutdown_signal());
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        // Without it, small JSON replies wait on Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away mid-request is not the server's error.
            let _ = connection.await;
        });
    }
    drop(listener);
    service.changes().end_streams();
    graceful.shutdown().await;
    Ok(())
}

// A failed accept is the listener's trouble, not the server's end: a connection reset before
// it was taken is nothing, and running out of file descriptors passes if we wait a little
// (retrying at once would spin).
async fn accept_failed(error: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(error.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    tracing::error!(%error, "accepting a connection failed");
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
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
