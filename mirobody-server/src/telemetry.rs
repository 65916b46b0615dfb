//! Traces over OTLP: when `telemetry.otlp_endpoint` (or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT`) is set, the spans of target `mirobody::trace` (a tool call,
//! a database operation, a message between instances, a `tools/call` continuing a client's
//! `_meta.traceparent`) and each request's span (`request_id.rs`) are exported as OpenTelemetry
//! spans over OTLP/HTTP in protobuf, by a batch processor on a thread of its own.
//!
//! A request's W3C `traceparent` header, else its MCP `params._meta.traceparent`, makes the
//! client's span the parent, so one model turn reads as one trace; messages to the other
//! instances of shared sessions carry it on ([`Propagation`]).
//!
//! Unset, the subscriber is the log lines alone, as it always was: the spans above are at
//! DEBUG, which neither the default INFO text nor JSON logs enable, so a request makes none.

use std::io::Read;
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::{FilterExt, Targets, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::{Config, LogFormat};

/// The target of the spans exported as traces (besides each request's, in `request_id.rs`).
pub(crate) const TRACE_TARGET: &str = "mirobody::trace";

// Set once the exporter is installed: the engine and the request spans then carry trace
// context.
static EXPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process exports traces ([`init`] installed an exporter).
pub(crate) fn exporting() -> bool {
    EXPORTING.load(std::sync::atomic::Ordering::Relaxed)
}

/// How long one export may take before it is given up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of a collector's answer read: the answer says only whether it took the spans.
const MAX_RESPONSE_BYTES: u64 = 64 * 1024;

/// The exporter of traces, while traces are exported: [`Traces::shutdown`] sends what is
/// still waiting.
#[derive(Debug)]
pub(crate) struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Exports the spans still waiting and stops the exporter's thread. Called once the
    /// runtime is over: the exporter's client may not be dropped inside it.
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("mirobody-server: the last traces could not be exported: {e}");
        }
    }
}

/// Installs the process's subscriber: log lines to stderr as `config.log` and
/// `config.log_format` say (`RUST_LOG` wins) and, when an OTLP endpoint is configured, the
/// exporter of traces, which is returned. `env` reads the standard `OTEL_*` variables.
pub(crate) fn init(config: &Config, env: impl Fn(&str) -> Option<String>) -> Result<Option<Traces>, String> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log));
    let Some(url) = config.telemetry.traces_url(env) else {
        // No exporter: the log lines alone, the filter over the whole subscriber, so that a
        // callsite below its level is skipped before anything is made (metrics included: they
        // need no layer here).
        let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
        match config.log_format {
            LogFormat::Text => logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
            // The request's span (`request_id`, `trace_id`) goes on each line with the event's fields.
            LogFormat::Json => logs.json().flatten_event(true).with_current_span(true).with_span_list(true).init(),
        }
        return Ok(None);
    };
    let provider = provider(config, &url)?;
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("mirobody-server"))
        .with_threads(false)
        .with_target(false)
        .with_filter(exported_spans());
    // Each its own filter: the log lines' filter decides nothing of what is exported.
    let subscriber = tracing_subscriber::registry().with(spans);
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    match config.log_format {
        LogFormat::Text => subscriber
            .with(logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).with_filter(filter))
            .init(),
        LogFormat::Json => subscriber
            .with(logs.json().flatten_event(true).with_current_span(true).with_span_list(true).with_filter(filter))
            .init(),
    }
    EXPORTING.store(true, std::sync::atomic::Ordering::Relaxed);
    tracing::info!(endpoint = %url, "exporting traces over OTLP/HTTP");
    Ok(Some(Traces { provider }))
}

// What is exported: spans (never events, whose fields are log text) of the trace target and
// the request's span, at any level.
fn exported_spans<S>() -> impl tracing_subscriber::layer::Filter<S> {
    Targets::new()
        .with_target(TRACE_TARGET, tracing::Level::TRACE)
        .with_target("mirobody_server::request_id", tracing::Level::TRACE)
        .and(filter_fn(|metadata| metadata.is_span()))
}

// The tracer provider: a batch exporter to `url` over OTLP/HTTP (protobuf), keeping the
// configured share of the traces no parent decided for.
fn provider(config: &Config, url: &str) -> Result<SdkTracerProvider, String> {
    let client = reqwest::blocking::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot make the trace exporter's HTTP client: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(url)
        .with_timeout(EXPORT_TIMEOUT)
        .with_http_client(BlockingClient(client))
        .build()
        .map_err(|e| format!("telemetry.otlp_endpoint {url}: {e}"))?;
    let telemetry = &config.telemetry;
    let resource = Resource::builder()
        .with_service_name(telemetry.service_name.clone())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(telemetry.sampling_ratio))))
        .with_resource(resource)
        .build())
}

// Marks a context continuing a trace the client sent: a later `_meta.traceparent` of the same
// request does not replace the parent its HTTP header gave.
#[derive(Clone, Copy, Debug)]
struct ClientTrace;

/// Makes `span` (not entered yet) a child of the client's span that `traceparent` names, if it
/// is a valid W3C one; else leaves it as it is.
pub(crate) fn continue_client_trace(span: &tracing::Span, traceparent: &str) {
    let Some(remote) = span_context(traceparent) else { return };
    let parent = Context::new().with_remote_span_context(remote).with_value(ClientTrace);
    // Fails only for a span not exported (or already entered): it then has no parent to set.
    let _ = span.set_parent(parent);
}

// The span a valid `traceparent` names.
fn span_context(traceparent: &str) -> Option<SpanContext> {
    valid_traceparent(traceparent)?;
    let mut parts = traceparent.split('-').skip(1);
    let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(SpanContext::new(
        TraceId::from_hex(trace).ok()?,
        SpanId::from_hex(span).ok()?,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    ))
}

/// The trace id of `value` if it is a valid W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`;
/// a later version may add fields after those), else none. All-zero ids and version `ff` are
/// invalid, as the recommendation says.
pub(crate) fn valid_traceparent(value: &str) -> Option<&str> {
    // A traceparent is 55 characters; a later version's may be longer, but not unboundedly.
    if value.len() > 512 {
        return None;
    }
    let mut parts = value.split('-');
    let (version, trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let lower_hex =
        |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let valid = lower_hex(version, 2)
        && version != "ff"
        && (version != "00" || parts.next().is_none())
        && lower_hex(trace, 32)
        && trace.bytes().any(|b| b != b'0')
        && lower_hex(parent, 16)
        && parent.bytes().any(|b| b != b'0')
        && lower_hex(flags, 2);
    valid.then_some(trace)
}

/// The engine's side of trace context ([`mirobody_mcp::TracePropagation`]): a `tools/call`'s
/// `_meta.traceparent` becomes its parent unless the request's header gave one, and messages
/// between instances carry the sending span's `traceparent`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Propagation;

impl mirobody_mcp::TracePropagation for Propagation {
    fn adopt(&self, span: &tracing::Span, traceparent: &str) {
        if Context::current().get::<ClientTrace>().is_none() {
            continue_client_trace(span, traceparent);
        }
    }

    fn traceparent(&self, span: &tracing::Span) -> Option<String> {
        let context = span.context();
        let span = context.span();
        let span = span.span_context();
        span.is_valid().then(|| format!("00-{}-{}-{:02x}", span.trace_id(), span.span_id(), span.trace_flags().to_u8()))
    }
}

// The exporter's HTTP client: reqwest's blocking client (the batch processor exports from a
// thread of its own, outside any runtime), so no second HTTP stack is compiled for it.
#[derive(Debug)]
struct BlockingClient(reqwest::blocking::Client);

#[async_trait::async_trait]
impl HttpClient for BlockingClient {
    async fn send_bytes(&self, request: http::Request<Bytes>) -> Result<http::Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let response =
            self.0.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body.to_vec()).send()?;
        let mut answer = http::Response::builder().status(response.status());
        if let Some(headers) = answer.headers_mut() {
            *headers = response.headers().clone();
        }
        let mut body = Vec::new();
        response.take(MAX_RESPONSE_BYTES).read_to_end(&mut body)?;
        Ok(answer.body(Bytes::from(body))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_valid_traceparent_names_a_remote_parent() {
        let parent = span_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(parent.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parent.span_id().to_string(), "00f067aa0ba902b7");
        assert!(parent.is_sampled() && parent.is_remote());
        let unsampled = span_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-fe").unwrap();
        assert!(!unsampled.is_sampled(), "only the sampled flag is kept");
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "not a traceparent",
            "",
        ] {
            assert!(span_context(bad).is_none(), "{bad}");
        }
    }
}
