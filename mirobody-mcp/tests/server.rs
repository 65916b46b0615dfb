//! Integration tests of mirobody-mcp, one binary: the Streamable HTTP endpoint driven through
//! its axum router without sockets (lifecycle and sessions, HTTP rules, every MCP method, auth
//! challenges, SSE streaming with progress, logs, elicitation and cancellation, the GET stream, and
//! MCP 2026-07-28 served statelessly beside them),
//! the connection handling of `serve_with` over real sockets, the stdio transport over in-memory
//! pipes, a transport of one's own on `Connection`, and what the `testing` clients report.

#[path = "server/support.rs"]
mod support;

#[path = "server/auth.rs"]
mod auth;
#[path = "server/ending_users.rs"]
mod ending_users;
#[path = "server/get_stream.rs"]
mod get_stream;
#[path = "server/http_rules.rs"]
mod http_rules;
#[path = "server/lifecycle.rs"]
mod lifecycle;
#[path = "server/methods.rs"]
mod methods;
#[path = "server/own_transport.rs"]
mod own_transport;
#[path = "server/rev_2026_07_28.rs"]
mod rev_2026_07_28;
#[path = "server/serving.rs"]
mod serving;
#[path = "server/shared_sessions.rs"]
mod shared_sessions;
#[path = "server/stdio.rs"]
mod stdio;
#[path = "server/streaming.rs"]
mod streaming;
#[path = "server/testing_clients.rs"]
mod testing_clients;
#[path = "server/time_limits.rs"]
mod time_limits;
#[path = "server/tracing_spans.rs"]
mod tracing_spans;
#[path = "server/views.rs"]
mod views;
