//! The surroundings of a 2026-07-28 request and its response, as the transports see them.

use mirobody_core::UserInfo;

use super::*;
use crate::jsonrpc::{self, Id, RpcError};
use crate::protocol::Status;
use crate::protocol::peer::Outbox;

/// The surroundings of one 2026-07-28 request, supplied by the transport.
pub(crate) struct Exchange<'a> {
    /// The verified caller.
    pub user: &'a UserInfo,
    /// The request's `_meta`, already [checked](RequestMeta::check).
    pub meta: &'a RequestMeta,
    /// Where request-scoped notifications (progress, logs) go, when the transport can carry
    /// them before the response.
    pub notifications: Option<Outbox>,
}

/// The response to one 2026-07-28 request.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The JSON-RPC response.
    pub body: Vec<u8>,
    /// How it should travel (authentication challenges).
    pub status: Status,
    /// The JSON-RPC error code, when the response is an error (transports map it to a status).
    pub error_code: Option<i64>,
}

impl Reply {
    pub(crate) fn ok(body: Vec<u8>) -> Self {
        Reply { body, status: Status::Ok, error_code: None }
    }

    /// An error response to `id`.
    pub(crate) fn error(id: &Id, error: &RpcError) -> Self {
        Reply { body: jsonrpc::error_bytes(Some(id), error), status: Status::Ok, error_code: Some(error.code) }
    }

    pub(crate) fn error_with(id: &Id, error: &RpcError, status: Status) -> Self {
        Reply { status, ..Reply::error(id, error) }
    }
}
