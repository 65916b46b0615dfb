//! The HTTP/1 accept loop: keep-alive, a watchdog per connection for its header, idle and
//! write deadlines, a bound on open connections in all and per address, and a graceful
//! shutdown that ends open streams and gives requests in flight a grace period.

use super::connection;
use super::proxies::{ForwardedHeader, TrustedProxies};
use crate::McpEngine;
use crate::session::{self, limits};

pub use super::connection::HttpApp;

/// How [`serve_with`] treats connections. Start from the defaults (safe on the internet) and
/// change what you need; new settings may be added in any release. It reads from configuration
/// too (durations by [`human_duration`](crate::human_duration)), as mirobody-server's `serve`
/// section.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ServeOptions {
    /// How long a client may take to send a request's headers, or leave its connection idle
    /// between requests, before the connection is closed (slow-loris protection). A connection
    /// is closed after between one and 1¼ times this.
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub header_read_timeout: std::time::Duration,
    /// How long a shutdown waits for requests in flight before it closes their connections.
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub shutdown_grace: std::time::Duration,
    /// How long a write to a client may wait for it to read before its connection is closed
    /// (a client that stops reading its responses or streams).
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub write_timeout: std::time::Duration,
    /// The most connections open at once; more are answered 503 and closed at once.
    pub max_connections: usize,
    /// The most connections open at once from one client address (an IPv6 address by its
    /// /64, and 4 and 16 times as many from its /56 and its /48); more are answered 503 and
    /// closed at once. Zero for no bound. Connections from a trusted proxy are not counted
    /// per address: a proxy carries many clients.
    pub max_connections_per_address: usize,
    /// The reverse proxies whose [`forwarded_header`](Self::forwarded_header) names the client
    /// ([`TrustedProxies`]); none by default. The client so named is the [`ClientAddr`] every
    /// request carries, which every per-caller bound of an anonymous caller counts against.
    ///
    /// [`ClientAddr`]: crate::limits::ClientAddr
    pub trusted_proxies: TrustedProxies,
    /// The one header the trusted proxies write the client in (`X-Forwarded-For` by default);
    /// the other is never read, since a proxy that does not write it passes a client's own on.
    pub forwarded_header: ForwardedHeader,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            header_read_timeout: std::time::Duration::from_secs(30),
            shutdown_grace: std::time::Duration::from_secs(30),
            write_timeout: std::time::Duration::from_secs(30),
            max_connections: 10_000,
            max_connections_per_address: 256,
            trusted_proxies: TrustedProxies::default(),
            forwarded_header: ForwardedHeader::default(),
        }
    }
}

// What a connection refused at the door is told, written if the socket takes it at once.
const REFUSED: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

// Connections open per client address (and for IPv6, per /56 and /48 too), each counted
// until its task ends.
#[derive(Default)]
struct PerAddress(std::sync::Mutex<foldhash::HashMap<limits::Bucket, usize>>);

// One connection of an address, counted while it lives.
struct AddressSlot(std::sync::Arc<PerAddress>, std::net::IpAddr);

impl PerAddress {
    fn admit(self: &std::sync::Arc<Self>, addr: std::net::IpAddr, max: usize) -> Option<AddressSlot> {
        let mut open = session::lock(&self.0);
        let full = limits::address_buckets(addr).any(|(bucket, times)| {
            max > 0 && open.get(&bucket).is_some_and(|count| *count >= max.saturating_mul(times as usize))
        });
        if full {
            return None;
        }
        for (bucket, _) in limits::address_buckets(addr) {
            *open.entry(bucket).or_default() += 1;
        }
        Some(AddressSlot(std::sync::Arc::clone(self), addr))
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = session::lock(&(self.0).0);
        for (bucket, _) in limits::address_buckets(self.1) {
            if let Some(count) = open.get_mut(&bucket) {
                *count -= 1;
                if *count == 0 {
                    open.remove(&bucket);
                }
            }
        }
    }
}

/// Serves `app` (an axum `Router`, or one wrapped in layers such as the auth layer) on
/// `listener` until SIGINT or SIGTERM, then stops accepting connections and lets the requests
/// already in flight finish, for at most [`ServeOptions::shutdown_grace`]. `engine`'s open
/// streams (`subscriptions/listen`, and the GET streams of [`McpHttp`](crate::http::McpHttp) built on it) are
/// ended so they do not hold the shutdown up.
///
/// HTTP/1.1 with keep-alive and `TCP_NODELAY` on every connection, and the default
/// [`ServeOptions`].
pub async fn serve(listener: tokio::net::TcpListener, app: impl HttpApp, engine: McpEngine) -> std::io::Result<()> {
    serve_with(listener, app, engine, ServeOptions::default()).await
}

/// [`serve`] with options.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    app: impl HttpApp,
    engine: McpEngine,
    options: ServeOptions,
) -> std::io::Result<()> {
    serve_until(listener, app, engine, options, shutdown_signal()).await
}

/// [`serve_with`], shutting down when `signal` resolves instead of on SIGINT or SIGTERM: for an
/// application with its own shutdown, and for tests. Requests in flight then get
/// [`ServeOptions::shutdown_grace`] to finish; connections still open after it are closed.
///
/// ```no_run
/// use std::sync::Arc;
///
/// use mirobody_core::{Args, Registry, Tool, ToolContext, ToolResult, UserInfo};
/// use mirobody_mcp::http::{HttpOptions, McpHttp};
/// use mirobody_mcp::{McpEngine, ServeOptions, serve_until};
///
/// async fn hello(_args: Args, _user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
///     ToolResult::text("hello")
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Registry::builder().tool(Tool::new("hello", "Says hello.").handler(hello)).build()?;
/// let engine = McpEngine::builder(Arc::new(registry)).build();
/// // MCP at /mcp, beside whatever routes the application has.
/// let app = McpHttp::new(engine.clone(), HttpOptions::default()).router_at("/mcp");
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let stop = async {
///     let _ = tokio::signal::ctrl_c().await;
/// };
/// serve_until(listener, app, engine, ServeOptions::default(), stop).await?;
/// # Ok(())
/// # }
/// ```
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    app: impl HttpApp,
    engine: McpEngine,
    options: ServeOptions,
    signal: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    // By hand rather than `axum::serve`: HTTP/1 only (no protocol sniffing on every read), a
    // header timeout and a bounded shutdown, which `axum::serve` does not have.
    use hyper_util::rt::TokioIo;

    let mut http = hyper::server::conn::http1::Builder::new();
    // Without writev, hyper copies a reply's body behind its head and writes one buffer: MCP
    // replies are small, and queueing the two as separate buffers cost more than the copy. The header
    // timeout is kept by a watchdog per connection (see `connection`), not by hyper's timer.
    http.writev(false).header_read_timeout(None);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Owned here so that what outlives the grace period is aborted when the sets drop.
    let mut connections = tokio::task::JoinSet::new();
    let mut watchdogs = tokio::task::JoinSet::new();
    let mut signal = std::pin::pin!(signal);
    let per_address = std::sync::Arc::new(PerAddress::default());
    let proxies = options.trusted_proxies.clone().reading(options.forwarded_header);
    let counted = engine.inner().metrics.is_some().then(crate::metrics::ConnectionMetrics::resolve);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        while connections.try_join_next().is_some() {}
        while watchdogs.try_join_next().is_some() {}
        // A trusted proxy's connections carry many clients, so they are not counted per
        // address; each request counts against its own client (`ClientAddr`) instead.
        let proxy = proxies.contains(peer.ip()).then(|| proxies.clone());
        let slot = match &proxy {
            Some(_) => Some(None),
            None => per_address.admit(peer.ip(), options.max_connections_per_address).map(Some),
        };
        let slot = match slot {
            Some(slot) if connections.len() < options.max_connections => slot,
            _ => {
                // Refused at the door, before any task or buffer is made for it.
                let _ = stream.try_write(REFUSED);
                tracing::debug!("connection refused: too many open");
                continue;
            }
        };
        // Without it, small JSON replies wait on Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        let activity = std::sync::Arc::new(connection::Activity::default());
        let served = connection::Watched::new(app.clone(), std::sync::Arc::clone(&activity), Some(peer.ip()), proxy);
        let io = connection::Timed::new(stream, std::sync::Arc::clone(&activity));
        let serving = graceful.watch(http.serve_connection(TokioIo::new(io), served));
        let open = counted.as_ref().map(|metrics| {
            metrics.accepted.increment(1);
            OpenConnection::new(metrics.open.clone())
        });
        let running = connections.spawn(async move {
            let _counted = (slot, open);
            // A client that goes away mid-request is not the server's error.
            let _ = serving.await;
        });
        watchdogs.spawn(connection::close_when_idle(
            activity,
            running,
            options.header_read_timeout,
            options.write_timeout,
        ));
    }
    tracing::info!("shutting down: finishing in-flight requests");
    drop(listener);
    engine.changes().end_streams();
    // Each connection finishes the request it is answering, then closes; what outlives the
    // grace period is aborted when the sets drop.
    let finished = async {
        graceful.shutdown().await;
        while connections.join_next().await.is_some() {}
    };
    if tokio::time::timeout(options.shutdown_grace, finished).await.is_err() {
        while connections.try_join_next().is_some() {}
        tracing::warn!(open = connections.len(), "shutdown grace period over; closing the connections still open");
    }
    Ok(())
}

// A connection counted as open until its task ends or is dropped.
struct OpenConnection(metrics::Gauge);

impl OpenConnection {
    fn new(gauge: metrics::Gauge) -> OpenConnection {
        gauge.increment(1.0);
        OpenConnection(gauge)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
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

/// Resolves on SIGINT or SIGTERM: what [`serve`] and [`serve_with`] stop on, for an application
/// that serves with [`serve_until`] and needs to know when the shutdown began.
pub async fn shutdown_signal() {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_count_per_address_and_per_wider_ipv6_network() {
        let open = std::sync::Arc::new(PerAddress::default());
        let admit = |addr: &str| open.admit(addr.parse().unwrap(), 2);
        // Two per /64; four /64s fill their /56 (8); the /48 holds 32.
        let mut held: Vec<AddressSlot> = Vec::new();
        held.extend([admit("2001:db8:42:0::1").unwrap(), admit("2001:db8:42:0::2").unwrap()]);
        // Checked while the /56 and /48 still have room: only the /64's own bound refuses it.
        assert!(admit("2001:db8:42:0::3").is_none(), "the /64's own bound");
        for n in 1..4 {
            held.extend([
                admit(&format!("2001:db8:42:{n}::1")).unwrap(),
                admit(&format!("2001:db8:42:{n}::2")).unwrap(),
            ]);
        }
        assert!(admit("2001:db8:42:4::1").is_none(), "the /56 holds four times a /64's");
        for n in 1..=12 {
            let addr = format!("2001:db8:42:{n:x}00::1");
            held.extend([admit(&addr).unwrap(), admit(&addr).unwrap()]);
        }
        assert_eq!(held.len(), 32);
        assert!(admit("2001:db8:42:f000::1").is_none(), "the /48 holds sixteen times a /64's");
        assert!(admit("2001:db8:43::1").is_some(), "another /48 is not touched");
        assert!(admit("192.0.2.1").is_some() && admit("192.0.2.2").is_some(), "IPv4 addresses each their own");
        drop(held);
        assert!(session::lock(&open.0).is_empty(), "every count given back");
    }
}
