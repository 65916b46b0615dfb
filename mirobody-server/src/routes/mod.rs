//! The routes a person's application uses beside MCP: uploads (`POST /files`, the upload
//! page), FHIR imports (`POST /fhir`) and the care circle (`/circle`).
//!
//! Each is a thin adapter: it identifies the caller from what the auth layer put in the
//! request (never from the body), reads a body bounded in size and time, and calls the same
//! functions of `mirobody-tools` the CLI and the demo call. `uploads.rs`, `fhir.rs` and
//! `circle.rs` hold one group each; this file holds what they share.

// A refusal here is the response itself, made once per request: boxing it would buy nothing.
#![allow(clippy::result_large_err)]

mod circle;
mod fhir;
mod uploads;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Request, StatusCode, header};
use http_body_util::BodyExt;
use mirobody_auth::{AuthError, AuthMethod, Authenticator};
use mirobody_core::UserInfo;
use mirobody_tools::backends::OpenedBackends;
use mirobody_tools::upload_links::UploadLinks;
use mirobody_tools::uploads::UploadLimits;
use serde_json::json;
use tokio::sync::Semaphore;

/// What the routes share.
#[derive(Clone)]
pub(crate) struct Routes {
    inner: Arc<Inner>,
}

struct Inner {
    backends: Arc<OpenedBackends>,
    auth: Authenticator,
    limits: UploadLimits,
    links: UploadLinks,
    max_import_bytes: usize,
    body_deadline: Duration,
    // Uploads and imports handled at once, server-wide (`Routes::admit`).
    receiving: Semaphore,
}

/// How long a request waits for its turn to be received before it is told to come back.
const QUEUE_WAIT: Duration = Duration::from_secs(10);
/// The largest JSON body of a care-circle request.
const MAX_SMALL_BODY: usize = 16 * 1024;

/// The settings of [`router`].
pub(crate) struct RouteSettings {
    pub(crate) prefix: String,
    pub(crate) limits: UploadLimits,
    pub(crate) links: UploadLinks,
    pub(crate) max_import_bytes: u64,
    pub(crate) max_concurrent: usize,
    pub(crate) body_deadline: Duration,
}

/// Every route of this module, under `settings.prefix`.
pub(crate) fn router(backends: Arc<OpenedBackends>, auth: Authenticator, settings: RouteSettings) -> Router {
    let routes = Routes {
        inner: Arc::new(Inner {
            backends,
            auth,
            limits: settings.limits,
            links: settings.links,
            max_import_bytes: usize::try_from(settings.max_import_bytes).unwrap_or(usize::MAX),
            body_deadline: settings.body_deadline,
            receiving: Semaphore::new(settings.max_concurrent.max(1)),
        }),
    };
    let prefix = settings.prefix;
    Router::new()
        .merge(uploads::router(&prefix, routes.clone()))
        .merge(fhir::router(&prefix, routes.clone()))
        .merge(circle::router(&prefix, routes))
}

/// `{"error": message}` with `status`.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let mut response = (status, axum::Json(json!({"error": message.into()}))).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

impl Routes {
    /// The signed-in caller and how they proved it, or the auth layer's refusal (401 with a
    /// challenge) for an anonymous one.
    fn caller(&self, request: &Request<Body>) -> Result<(String, AuthMethod), Response> {
        let user = request.extensions().get::<UserInfo>().and_then(|u| u.user_id()).map(str::to_owned);
        let method = request.extensions().get::<AuthMethod>().copied().unwrap_or(AuthMethod::Anonymous);
        match user {
            Some(user) if method != AuthMethod::Anonymous => Ok((user, method)),
            _ => Err(self.inner.auth.reject(&AuthError::Missing)),
        }
    }

    /// Like [`caller`](Self::caller), but only a bearer token will do: for what grants access
    /// that outlives a personal URL (inviting someone into one's care circle, accepting).
    fn bearer_caller(&self, request: &Request<Body>) -> Result<String, Response> {
        match self.caller(request)? {
            (user, AuthMethod::Bearer) => Ok(user),
            _ => Err(error(
                StatusCode::FORBIDDEN,
                "This needs a bearer token: a personal MCP URL cannot change who reads your health data.",
            )),
        }
    }

    /// A turn among the uploads and imports being handled (bodies received, parsed, stored),
    /// held until the answer is made: each may hold up to its size limit in memory, so at most
    /// `uploads.max_concurrent` do at once. Waits [`QUEUE_WAIT`], then 503 with `Retry-After`.
    async fn admit(&self) -> Result<tokio::sync::SemaphorePermit<'_>, Response> {
        match tokio::time::timeout(QUEUE_WAIT, self.inner.receiving.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => {
                let mut busy = error(StatusCode::SERVICE_UNAVAILABLE, "The server is receiving many files; try again.");
                busy.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                Err(busy)
            }
        }
    }

    /// The body, at most `max` bytes, arriving within the body deadline.
    async fn read_body(&self, body: Body, max: usize) -> Result<Bytes, Response> {
        let limited = http_body_util::Limited::new(body, max);
        match tokio::time::timeout(self.inner.body_deadline, limited.collect()).await {
            Err(_) => Err(error(StatusCode::REQUEST_TIMEOUT, "The request body took too long to arrive.")),
            Ok(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                Err(error(StatusCode::PAYLOAD_TOO_LARGE, format!("The request body is larger than {max} bytes.")))
            }
            Ok(Err(_)) => Err(error(StatusCode::BAD_REQUEST, "The request body could not be read.")),
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
        }
    }

    fn backends(&self) -> &OpenedBackends {
        &self.inner.backends
    }
}
