//! A request id and a trace id on every log line of an HTTP request: the span that
//! [`RequestIds`] opens around each request carries `request_id` (the client's sane
//! `x-request-id`, else one made here, and echoed in the response) and, when the request has a
//! valid W3C `traceparent`, its `trace_id`; when traces are exported (`telemetry.rs`) the span
//! is also the root of the server's part of the trace, a child of the client's span. The path
//! is left out of the span on purpose: a personal MCP URL carries its secret in the path.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::response::Response;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, Request};
use tracing::Instrument;

/// The header a request id is read from and answered in.
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

/// The longest request id taken from a client; a longer one is replaced, not cut.
pub(crate) const MAX_REQUEST_ID_CHARS: usize = 128;

/// Wraps the server's service: each request runs in a `request` span with its ids.
#[derive(Clone, Debug)]
pub(crate) struct RequestIds<S> {
    inner: S,
    /// The span's level: INFO where every line must carry the ids (JSON logs), else DEBUG,
    /// so a server logging at INFO makes no span, no id and no header per request.
    level: tracing::Level,
    /// Whether the span is exported as a trace (`telemetry.rs`): it then continues the trace
    /// of the request's `traceparent`.
    traced: bool,
}

impl<S> RequestIds<S> {
    /// `inner`, with ids on its requests, in a span at `level`.
    pub(crate) fn new(inner: S, level: tracing::Level) -> RequestIds<S> {
        RequestIds { inner, level, traced: false }
    }

    /// The same, the span a child of the client's when traces are exported.
    pub(crate) fn traced(mut self, traced: bool) -> RequestIds<S> {
        self.traced = traced;
        self
    }
}

impl<S, B> tower::Service<Request<B>> for RequestIds<S>
where
    S: tower::Service<Request<B>, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures::future::Either<S::Future, BoxFuture<'static, Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let span = if self.level == tracing::Level::INFO {
            tracing::info_span!(
                "request",
                request_id = tracing::field::Empty,
                trace_id = tracing::field::Empty,
                http_method = tracing::field::Empty
            )
        } else {
            tracing::debug_span!(
                "request",
                request_id = tracing::field::Empty,
                trace_id = tracing::field::Empty,
                http_method = tracing::field::Empty
            )
        };
        // Nothing listens: the request goes through untouched, at no cost.
        if span.is_disabled() {
            return futures::future::Either::Left(self.inner.call(request));
        }
        let id = request_id(request.headers());
        span.record("request_id", id.as_str());
        span.record("http_method", request.method().as_str());
        if let Some(traceparent) = traceparent(request.headers())
            && let Some(trace_id) = crate::telemetry::valid_traceparent(traceparent)
        {
            span.record("trace_id", trace_id);
            // Before the span is first entered, when its parent is still open.
            if self.traced {
                crate::telemetry::continue_client_trace(&span, traceparent);
            }
        }
        // Entered while the inner service starts too: some of it runs before the first poll.
        let future = span.in_scope(|| self.inner.call(request));
        futures::future::Either::Right(Box::pin(async move {
            let mut response = future.instrument(span).await?;
            if let Ok(value) = HeaderValue::from_str(&id) {
                response.headers_mut().insert(REQUEST_ID_HEADER, value);
            }
            Ok(response)
        }))
    }
}

/// The request's id: its `x-request-id` when that is 1 to [`MAX_REQUEST_ID_CHARS`] of
/// `A-Z a-z 0-9 - _ . :` (nothing a log line or a header could be bent with), else 32 random
/// hex digits.
pub(crate) fn request_id(headers: &HeaderMap) -> String {
    let given = headers.get(REQUEST_ID_HEADER).and_then(|value| value.to_str().ok());
    match given {
        Some(id) if sane_id(id) => id.to_owned(),
        _ => new_id(),
    }
}

fn sane_id(id: &str) -> bool {
    (1..=MAX_REQUEST_ID_CHARS).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

// A per-process random prefix and a count: unique across instances (8 random bytes each),
// and no system call or allocation per digit on the request path.
fn new_id() -> String {
    static PREFIX: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(|| {
        let mut bytes = [0u8; 8];
        // Without randomness, the start time still tells instances apart.
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            bytes = (nanos.as_nanos() as u64).to_le_bytes();
        }
        u64::from_le_bytes(bytes)
    });
    let count = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix:016x}{count:016x}")
}

// The request's `traceparent` header, if it is text.
fn traceparent(headers: &HeaderMap) -> Option<&str> {
    headers.get("traceparent")?.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace_id(headers: &HeaderMap) -> Option<&str> {
        crate::telemetry::valid_traceparent(traceparent(headers)?)
    }

    fn headers(name: &'static str, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn a_sane_request_id_is_kept_and_any_other_replaced() {
        assert_eq!(request_id(&headers(REQUEST_ID_HEADER, "abc-123_x.y:z")), "abc-123_x.y:z");
        let longest = "a".repeat(MAX_REQUEST_ID_CHARS);
        assert_eq!(request_id(&headers(REQUEST_ID_HEADER, &longest)), longest);
        for bad in ["a".repeat(MAX_REQUEST_ID_CHARS + 1), "with space".into(), "quote\"d".into(), String::new()] {
            let made = request_id(&headers(REQUEST_ID_HEADER, &bad));
            assert_ne!(made, bad);
            assert_eq!(made.len(), 32, "{made}");
            assert!(made.bytes().all(|b| b.is_ascii_hexdigit()), "{made}");
        }
        assert_ne!(request_id(&HeaderMap::new()), request_id(&HeaderMap::new()), "made ids differ");
    }

    #[test]
    fn only_a_valid_traceparent_gives_a_trace_id() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(trace_id(&headers("traceparent", good)), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert_eq!(trace_id(&headers("traceparent", later)), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01",
            "not a traceparent",
        ] {
            assert_eq!(trace_id(&headers("traceparent", bad)), None, "{bad}");
        }
        let huge = format!("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}", "a".repeat(600));
        assert_eq!(trace_id(&headers("traceparent", &huge)), None, "too long");
    }
}
