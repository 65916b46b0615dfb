//! How a call's refusal and a reply travel, shared by both revisions, the engine and the
//! tasks: argument problems are results, the rest JSON-RPC errors with their HTTP treatment.

use mirobody_core::{CallError, ToolResult};

use crate::jsonrpc::{RpcError, code};

/// How a reply should travel, beyond its JSON-RPC body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// A normal reply.
    Ok,
    /// The method needs an authenticated caller (HTTP 401 with a challenge).
    Unauthenticated,
    /// The caller's token lacks these scopes (HTTP 403).
    Forbidden(Vec<String>),
}

/// How a [`CallError`] is answered: argument problems are results the model can read and correct
/// (SEP-1303); the rest are protocol errors, with the HTTP treatment they need.
pub(crate) enum CallFailure {
    /// An error result.
    Result(ToolResult),
    /// A JSON-RPC error.
    Error(RpcError, Status),
}

pub(crate) fn call_failure(error: CallError) -> CallFailure {
    match error {
        e @ CallError::InvalidArguments { .. } => CallFailure::Result(e.into_tool_result()),
        // A tool that needs a session is not listed where there is none: unknown there.
        e @ (CallError::UnknownTool { .. } | CallError::NoSession { .. }) => {
            CallFailure::Error(RpcError::invalid_params(e.to_string()), Status::Ok)
        }
        e @ CallError::Unauthenticated { .. } => {
            CallFailure::Error(RpcError::new(code::UNAUTHORIZED, e.to_string()), Status::Unauthenticated)
        }
        CallError::InsufficientScope { tool, missing } => {
            let message = format!("Insufficient scope for tool '{tool}': the token lacks {}", missing.join(", "));
            CallFailure::Error(RpcError::new(code::UNAUTHORIZED, message), Status::Forbidden(missing))
        }
        other => CallFailure::Error(RpcError::new(code::INTERNAL_ERROR, other.to_string()), Status::Ok),
    }
}
