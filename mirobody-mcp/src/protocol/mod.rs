//! The protocol engine, independent of transport: JSON-RPC messages, the method router and one
//! module per protocol revision, the client peer, and the one-pass readers.
//!
//! A request goes to one revision: `rev_2025_11_25` answers the `initialize` handshake and a
//! session's requests, `rev_2026_07_28` the stateless revision's. `engine` holds what both
//! share (the tool, resource and prompt listings, access checks, the access log), and
//! [`McpEngine::handle_bytes`] below chooses between them for one message, as the transports
//! do for theirs.

use std::sync::Arc;

use mirobody_core::UserInfo;

use crate::jsonrpc;
use crate::session::Session;

mod access;
pub mod changes;
mod engine;
mod hooks;
pub(crate) mod methods;
pub(crate) mod one_pass;
mod outcome;
pub(crate) mod peer;
pub(crate) mod rev_2025_11_25;
pub(crate) mod rev_2026_07_28;
pub(crate) mod tasks;
mod time_limit;
pub(crate) mod versions;

pub use access::AccessLogOptions;
pub use engine::*;
pub(crate) use hooks::MAX_TRACEPARENT_BYTES;
pub use hooks::{ResourceLister, ToolVisibility, TracePropagation};
pub(crate) use one_pass::tool_call::{ToolCall, read_tool_call};
pub(crate) use rev_2025_11_25::progress_token;

impl McpEngine {
    /// Reads one message and answers it, with no client channel (requests to the client get
    /// [`PeerError::Unsupported`](mirobody_core::PeerError)). `None` for messages that get no
    /// response. A request whose `_meta` names a protocol version, or `server/discover`, is
    /// answered as 2026-07-28 (statelessly, `session` unused), as stdio does; every other
    /// message belongs to `session`. For in-process use and benchmarks; the transports add
    /// streaming.
    pub async fn handle_bytes(&self, bytes: &[u8], user: &UserInfo, session: &Arc<Session>) -> Option<Vec<u8>> {
        match jsonrpc::Message::parse(bytes) {
            Ok(jsonrpc::Message::Request(request)) if crate::protocol::rev_2026_07_28::is_request(&request) => {
                Some(self.serve_rev_2026_07_28(&request, user, None).await.body)
            }
            Ok(jsonrpc::Message::Request(request)) => {
                let exchange = Exchange { user, session, client: None };
                Some(self.handle_request(&request, &exchange).await.body)
            }
            Ok(jsonrpc::Message::Notification(n)) => {
                let _ = self.handle_notification(&n, session);
                None
            }
            Ok(jsonrpc::Message::Response(r)) => {
                let _ = self.handle_response(r, session, user);
                None
            }
            Err(failure) => Some(jsonrpc::error_bytes(failure.id.as_ref(), &failure.error)),
        }
    }
}
