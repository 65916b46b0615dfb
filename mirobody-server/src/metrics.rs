//! Prometheus metrics: the recorder (`metrics-exporter-prometheus`, installed once per
//! process when the `metrics` section asks for it), the gauges read at each scrape, and
//! `GET /metrics` behind its bearer token, on a listener of its own and on the main one.
//!
//! What mirobody-mcp and mirobody-tools record goes through the `metrics` facade into this
//! recorder; what only a scrape can see (memory, the pool, sessions, tasks, the extraction
//! queue) is read when Prometheus asks. [`NAMES`] lists every metric the server exports, so
//! the dashboard in `ops/grafana/` is checked against it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Request, StatusCode, header};
use metrics_exporter_prometheus::PrometheusBuilder;
use mirobody_auth::ExposeSecret;
use mirobody_mcp::http::McpHttp;
use mirobody_store::OpenedBackends;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::MetricsSettings;

mod histograms;

/// The path metrics are served at, on either listener.
pub const PATH: &str = "/metrics";

/// Resident memory of the process, in bytes (Prometheus' standard name).
pub const PROCESS_RESIDENT_MEMORY: &str = "process_resident_memory_bytes";
/// File descriptors the process holds open (Prometheus' standard name).
pub const PROCESS_OPEN_FDS: &str = "process_open_fds";
/// MCP sessions this instance holds.
pub const SESSIONS: &str = "mirobody_mcp_sessions";
/// Tasks this instance holds live (running, or waiting for their client's input).
pub const TASKS_LIVE: &str = "mirobody_mcp_tasks_live";
/// The database pool's connections, by `state` (`idle`, `busy`).
pub const DB_POOL_CONNECTIONS: &str = "mirobody_db_pool_connections";
/// People waiting in line for the document reader, or being served.
pub const EXTRACTION_QUEUE: &str = "mirobody_extraction_queue_people";
/// Messages from the shared sessions' backplane dropped unbelieved (forged, stale, replayed,
/// unreadable), since start.
pub const BACKPLANE_REFUSED: &str = "mirobody_backplane_refused_total";
/// How long each store operation took, by `operation` (the store method: its statements on
/// the pool), as the store records it.
pub use mirobody_store::DB_OPERATION_DURATION;
/// Uploads and imports answered, by `kind` (`upload`, `import`) and `outcome` (`ok`,
/// `refused` for a 4xx, `failed` for a 5xx).
pub const UPLOADS: &str = "mirobody_uploads_total";

/// Every metric the server exports: mirobody-mcp's, the document reader's and its own.
pub const NAMES: [&str; 20] = [
    mirobody_mcp::metrics::REQUESTS,
    mirobody_mcp::metrics::REQUEST_DURATION,
    mirobody_mcp::metrics::TOOL_CALLS,
    mirobody_mcp::metrics::TOOL_CALL_DURATION,
    mirobody_mcp::metrics::REFUSALS,
    mirobody_mcp::metrics::BACKPLANE_MESSAGES,
    mirobody_mcp::metrics::BACKPLANE_LAG,
    mirobody_mcp::metrics::CONNECTIONS,
    mirobody_mcp::metrics::OPEN_CONNECTIONS,
    mirobody_tools::reading::EXTRACTIONS,
    mirobody_tools::reading::EXTRACTION_DURATION,
    PROCESS_RESIDENT_MEMORY,
    PROCESS_OPEN_FDS,
    SESSIONS,
    TASKS_LIVE,
    DB_POOL_CONNECTIONS,
    DB_OPERATION_DURATION,
    EXTRACTION_QUEUE,
    BACKPLANE_REFUSED,
    UPLOADS,
];

// Seconds: from a cached tools/call (a fraction of a millisecond) to a document read or a
// slow handler (tens of seconds).
static DURATION_BUCKETS: [f64; 14] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0];

/// The server's metrics: the recorder's handle, the token scrapes must carry, and what is read
/// at each scrape. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    render: histograms::Render,
    // SHA-256 of the token: compared in constant time, and of one length whatever was sent.
    token: Option<[u8; 32]>,
    sampled: OnceLock<Sampled>,
}

// What a scrape reads, once the server is built.
struct Sampled {
    mcp: McpHttp,
    backends: Arc<OpenedBackends>,
    reader: mirobody_tools::reading::TextReader,
}

/// Why metrics could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// Another recorder is installed in this process already.
    #[error("metrics: a recorder is installed already")]
    RecorderInstalled,
}

impl Metrics {
    /// Installs the Prometheus recorder for this process. Call it before the server is built
    /// ([`crate::app::build`]): the engine resolves its handles then.
    ///
    /// # Errors
    ///
    /// A recorder is installed already.
    pub fn install(settings: &MetricsSettings) -> Result<Metrics, MetricsError> {
        let (recorder, render) =
            histograms::Recorder::new(PrometheusBuilder::new().build_recorder(), &DURATION_BUCKETS);
        metrics::set_global_recorder(recorder).map_err(|_| MetricsError::RecorderInstalled)?;
        let token = settings.token.as_ref().map(|token| Sha256::digest(token.expose_secret().as_bytes()).into());
        // Registered now, so a scrape shows them at zero before anything happened.
        for kind in ["upload", "import"] {
            for outcome in ["ok", "refused", "failed"] {
                metrics::counter!(UPLOADS, "kind" => kind, "outcome" => outcome).absolute(0);
            }
        }
        for outcome in ["text", "no_text", "unreadable", "later"] {
            metrics::counter!(mirobody_tools::reading::EXTRACTIONS, "outcome" => outcome).absolute(0);
        }
        for direction in ["published", "received"] {
            metrics::counter!(mirobody_mcp::metrics::BACKPLANE_MESSAGES, "direction" => direction).absolute(0);
        }
        let _ = metrics::histogram!(mirobody_tools::reading::EXTRACTION_DURATION);
        let _ = metrics::histogram!(mirobody_mcp::metrics::BACKPLANE_LAG);
        Ok(Metrics { inner: Arc::new(Inner { render, token, sampled: OnceLock::new() }) })
    }

    /// Reads the sessions, tasks, pool and extraction queue of `server` at each scrape.
    pub fn watch(&self, server: &crate::app::Server) {
        let sampled = Sampled {
            mcp: server.mcp.clone(),
            backends: Arc::clone(&server.backends),
            reader: server.text_reader.clone(),
        };
        let _ = self.inner.sampled.set(sampled);
    }

    /// Serves `/metrics` alone on `listener` until `signal`.
    ///
    /// # Errors
    ///
    /// Serving failed.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        signal: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let metrics = self.clone();
        let router = axum::Router::new().route(
            PATH,
            axum::routing::get(move |request: Request<Body>| std::future::ready(metrics.answer(&request))),
        );
        axum::serve(listener, router).with_graceful_shutdown(signal).await
    }

    /// The answer to a scrape: the metrics when `request` carries the token (or none is
    /// configured), else 401 and nothing else.
    pub fn answer<B>(&self, request: &Request<B>) -> Response {
        if !self.authorized(request) {
            let mut response =
                (StatusCode::UNAUTHORIZED, "401 Unauthorized: the metrics token is missing or wrong\n").into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"metrics\""));
            return response;
        }
        self.sample();
        let mut response = self.inner.render.render().into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    fn authorized<B>(&self, request: &Request<B>) -> bool {
        let Some(expected) = &self.inner.token else { return true };
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or_default();
        let presented: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        presented.ct_eq(expected).into()
    }

    // The gauges only a scrape can read.
    fn sample(&self) {
        if let Some(memory) = resident_memory_bytes() {
            metrics::gauge!(PROCESS_RESIDENT_MEMORY).set(memory as f64);
        }
        if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
            metrics::gauge!(PROCESS_OPEN_FDS).set(fds.count() as f64);
        }
        let Some(sampled) = self.inner.sampled.get() else { return };
        metrics::gauge!(SESSIONS).set(sampled.mcp.sessions().len() as f64);
        metrics::gauge!(TASKS_LIVE).set(sampled.mcp.engine().live_tasks() as f64);
        let pool = sampled.backends.sql().pool_usage();
        let idle = pool.idle.min(pool.open as usize);
        metrics::gauge!(DB_POOL_CONNECTIONS, "state" => "idle").set(idle as f64);
        metrics::gauge!(DB_POOL_CONNECTIONS, "state" => "busy").set((pool.open as usize - idle) as f64);
        metrics::gauge!(EXTRACTION_QUEUE).set(sampled.reader.people_waiting() as f64);
        let refused = sampled.mcp.refused_events().map_or(0, |r| r.total());
        metrics::counter!(BACKPLANE_REFUSED).absolute(refused);
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").field("token", &self.inner.token.is_some()).finish_non_exhaustive()
    }
}

// VmRSS from /proc/self/status, in bytes; `None` where there is no /proc.
fn resident_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// Binds the separate metrics listener, if one is configured.
///
/// # Errors
///
/// The address cannot be bound.
pub async fn bind(settings: &MetricsSettings) -> std::io::Result<Option<(tokio::net::TcpListener, SocketAddr)>> {
    let Some(address) = settings.listen else { return Ok(None) };
    let listener = tokio::net::TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    Ok(Some((listener, bound)))
}

/// The server's service with `GET /metrics` answered in front of it (and of its auth layer,
/// which knows nothing of the metrics token): every other request goes through untouched.
#[derive(Clone)]
pub(crate) struct MetricsRoute<S> {
    inner: S,
    metrics: Option<Metrics>,
}

impl<S> MetricsRoute<S> {
    /// `inner`, with `/metrics` served when `metrics` is given.
    pub(crate) fn new(inner: S, metrics: Option<Metrics>) -> MetricsRoute<S> {
        MetricsRoute { inner, metrics }
    }
}

impl<S, B> tower::Service<Request<B>> for MetricsRoute<S>
where
    S: tower::Service<Request<B>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures::future::Either<S::Future, std::future::Ready<Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        match &self.metrics {
            Some(metrics) if request.uri().path() == PATH => {
                let response = if request.method() == http::Method::GET {
                    metrics.answer(&request)
                } else {
                    StatusCode::METHOD_NOT_ALLOWED.into_response()
                };
                futures::future::Either::Right(std::future::ready(Ok(response)))
            }
            _ => futures::future::Either::Left(self.inner.call(request)),
        }
    }
}
