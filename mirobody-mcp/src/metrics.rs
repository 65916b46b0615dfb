//! What the endpoint counts, recorded through the [`metrics`](https://docs.rs/metrics) facade
//! into whatever recorder the application installs (mirobody-server's is Prometheus).
//!
//! Nothing is recorded unless the engine is built with
//! [`McpEngineBuilder::metrics`](crate::McpEngineBuilder::metrics): without it the hot path
//! reads no clock and touches no handle. With it, every handle is resolved once when the
//! engine is built (install the recorder before), so a request records without allocating,
//! hashing a label or taking a lock. Label values come from fixed sets: the methods this
//! server knows, the registry's tool names (a name the registry does not have is
//! [`UNKNOWN_TOOL`]), the outcomes in [`TOOL_OUTCOMES`] and the status codes in
//! [`REFUSAL_CODES`]; never a caller, a session or anything a client wrote.

use std::time::{Duration, Instant};

use http::StatusCode;
use metrics::{Counter, Gauge, Histogram};
use mirobody_core::{CallError, ToolResult};

/// MCP requests answered over HTTP, by JSON-RPC `method` (`other` for one this server does not
/// know).
pub const REQUESTS: &str = "mirobody_mcp_requests_total";
/// How long an MCP request took to answer over HTTP, from its headers to the response's, by
/// `method` (a call answered as an SSE stream counts until the stream starts).
pub const REQUEST_DURATION: &str = "mirobody_mcp_request_duration_seconds";
/// Tool calls, by `tool` and `outcome` ([`TOOL_OUTCOMES`]), over every transport.
pub const TOOL_CALLS: &str = "mirobody_mcp_tool_calls_total";
/// How long a tool call took, by `tool`: the handler's run with its checks.
pub const TOOL_CALL_DURATION: &str = "mirobody_mcp_tool_call_duration_seconds";
/// Requests the endpoint refused for a limit, by status `code` ([`REFUSAL_CODES`]).
pub const REFUSALS: &str = "mirobody_mcp_refusals_total";
/// Messages on the shared sessions' backplane, by `direction` (`published`, `received`).
pub const BACKPLANE_MESSAGES: &str = "mirobody_backplane_messages_total";
/// How long a message from another instance took to arrive, by the two instances' clocks.
pub const BACKPLANE_LAG: &str = "mirobody_backplane_lag_seconds";
/// Connections accepted by the accept loop ([`serve`](crate::serve)).
pub const CONNECTIONS: &str = "mirobody_http_connections_total";
/// Connections open now.
pub const OPEN_CONNECTIONS: &str = "mirobody_http_open_connections";

/// Every metric this crate records.
pub const NAMES: [&str; 9] = [
    REQUESTS,
    REQUEST_DURATION,
    TOOL_CALLS,
    TOOL_CALL_DURATION,
    REFUSALS,
    BACKPLANE_MESSAGES,
    BACKPLANE_LAG,
    CONNECTIONS,
    OPEN_CONNECTIONS,
];

/// A tool call's `outcome`: a result; an error result (`isError`, a time limit included);
/// arguments that do not fit the schema; no such tool (or one that needs a session the caller
/// has not); a caller not allowed to call it.
pub const TOOL_OUTCOMES: [&str; 5] = ["ok", "error", "invalid_arguments", "unknown_tool", "denied"];

/// The `tool` label of a call naming a tool the registry does not have.
pub const UNKNOWN_TOOL: &str = "unknown";

/// The `code` label of a refusal: the body took too long, was too large, the caller asked too
/// fast or holds too much, the endpoint is full.
pub const REFUSAL_CODES: [&str; 4] = ["408", "413", "429", "503"];

/// The `method` label of a request naming a method this server does not know.
pub const OTHER_METHOD: &str = "other";

// One tool's handles: a counter per outcome, and its duration.
struct ToolMetrics {
    outcomes: [Counter; TOOL_OUTCOMES.len()],
    duration: Histogram,
}

impl ToolMetrics {
    fn new(tool: &str) -> ToolMetrics {
        let tool = tool.to_owned();
        ToolMetrics {
            outcomes: TOOL_OUTCOMES
                .map(|outcome| metrics::counter!(TOOL_CALLS, "tool" => tool.clone(), "outcome" => outcome)),
            duration: metrics::histogram!(TOOL_CALL_DURATION, "tool" => tool),
        }
    }
}

/// The engine's handles, resolved once against the installed recorder.
pub(crate) struct McpMetrics {
    // By method index, as the engine numbers its methods; the last is `other`.
    requests: Box<[(Counter, Histogram)]>,
    tools: foldhash::HashMap<Box<str>, ToolMetrics>,
    unknown: ToolMetrics,
    refusals: [Counter; REFUSAL_CODES.len()],
}

impl McpMetrics {
    /// Handles for `methods` (indexed as given) and for every tool in `tools`.
    pub(crate) fn new<'a>(methods: &[&'static str], tools: impl Iterator<Item = &'a str>) -> McpMetrics {
        let requests = methods
            .iter()
            .chain(&[OTHER_METHOD])
            .map(|&method| {
                (
                    metrics::counter!(REQUESTS, "method" => method),
                    metrics::histogram!(REQUEST_DURATION, "method" => method),
                )
            })
            .collect();
        McpMetrics {
            requests,
            tools: tools.map(|name| (Box::from(name), ToolMetrics::new(name))).collect(),
            unknown: ToolMetrics::new(UNKNOWN_TOOL),
            refusals: REFUSAL_CODES.map(|code| metrics::counter!(REFUSALS, "code" => code)),
        }
    }

    /// An HTTP request answered with `status`: a refusal when its code is one of
    /// [`REFUSAL_CODES`], and a request of `method` (an index given to [`new`](Self::new),
    /// or past them for `other`) when it was one.
    pub(crate) fn answered(&self, method: Option<usize>, status: StatusCode, started: Instant) {
        if let Some(method) = method {
            let (count, duration) = &self.requests[method.min(self.requests.len() - 1)];
            count.increment(1);
            duration.record(started.elapsed());
        }
        let refusal = match status {
            StatusCode::REQUEST_TIMEOUT => 0,
            StatusCode::PAYLOAD_TOO_LARGE => 1,
            StatusCode::TOO_MANY_REQUESTS => 2,
            StatusCode::SERVICE_UNAVAILABLE => 3,
            _ => return,
        };
        self.refusals[refusal].increment(1);
    }

    /// A call of `name` that ended with `outcome`.
    pub(crate) fn tool_call(&self, name: &str, outcome: &Result<ToolResult, CallError>, took: Duration) {
        let tool = self.tools.get(name).unwrap_or(&self.unknown);
        let index = match outcome {
            Ok(result) if result.is_error() => 1,
            Ok(_) => 0,
            Err(CallError::InvalidArguments { .. }) => 2,
            Err(CallError::UnknownTool { .. } | CallError::NoSession { .. }) => 3,
            Err(_) => 4,
        };
        tool.outcomes[index].increment(1);
        tool.duration.record(took);
    }
}

/// The shared sessions' handles: noop unless the engine records metrics.
#[derive(Clone)]
pub(crate) struct BackplaneMetrics {
    pub(crate) published: Counter,
    pub(crate) received: Counter,
    pub(crate) lag: Histogram,
}

impl Default for BackplaneMetrics {
    fn default() -> Self {
        BackplaneMetrics { published: Counter::noop(), received: Counter::noop(), lag: Histogram::noop() }
    }
}

impl BackplaneMetrics {
    /// Handles resolved against the installed recorder.
    pub(crate) fn recorded() -> BackplaneMetrics {
        BackplaneMetrics {
            published: metrics::counter!(BACKPLANE_MESSAGES, "direction" => "published"),
            received: metrics::counter!(BACKPLANE_MESSAGES, "direction" => "received"),
            lag: metrics::histogram!(BACKPLANE_LAG),
        }
    }
}

/// The accept loop's handles, resolved once per loop (noop without a recorder).
pub(crate) struct ConnectionMetrics {
    pub(crate) accepted: Counter,
    pub(crate) open: Gauge,
}

impl ConnectionMetrics {
    pub(crate) fn resolve() -> ConnectionMetrics {
        ConnectionMetrics { accepted: metrics::counter!(CONNECTIONS), open: metrics::gauge!(OPEN_CONNECTIONS) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_come_from_fixed_sets() {
        // Without a recorder every handle is a no-op: this checks the classification only.
        let metrics = McpMetrics::new(&["tools/call"], ["echo"].into_iter());
        assert_eq!(metrics.requests.len(), 2, "one per method and `other`");
        assert!(metrics.tools.contains_key("echo") && !metrics.tools.contains_key(UNKNOWN_TOOL));
        metrics.answered(Some(99), StatusCode::OK, Instant::now());
        metrics.tool_call("no such tool", &Ok(ToolResult::text("x")), Duration::ZERO);
    }
}
