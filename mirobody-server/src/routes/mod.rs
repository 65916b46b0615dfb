//! The routes a person's application uses beside MCP: uploads (`POST /files`, the upload
//! page), FHIR imports (`POST /fhir`), the care circle (`/circle`) and who read one's data
//! (`/access/reads`).
//!
//! Each is a thin adapter: it identifies the caller from what the auth layer put in the
//! request (never from the body), reads a body bounded in size and time, and calls the same
//! functions of `mirobody-tools` the CLI and the demo call. `uploads.rs`, `fhir.rs` and
//! `circle.rs` hold one group each; this file holds what they share.

// A refusal here is the response itself, made once per request: boxing it would buy nothing.
#![allow(clippy::result_large_err)]

mod access;
mod circle;
mod fhir;
mod personal;
mod shares;
mod uploads;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Request, StatusCode, header};
use mirobody_auth::{AuthError, AuthMethod, Authenticator};
use mirobody_core::UserInfo;
use mirobody_store::OpenedBackends;
use mirobody_tools::upload_links::UploadLinks;
use mirobody_tools::uploads::Uploader;
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
    uploader: Uploader,
    links: UploadLinks,
    max_import_bytes: usize,
    body_deadline: Duration,
    // Uploads and imports handled at once, server-wide (`Routes::admit`).
    receiving: Semaphore,
    // And per caller, in front of the server-wide turns.
    caller_turns: shares::CallerTurns,
    min_body_bytes_per_sec: u64,
    // What bodies and their parse take in memory, server-wide (`Routes::charge`).
    memory: Arc<Semaphore>,
    memory_capacity: usize,
    // The sign-in pages, when on: an invitation by email to someone with no account gives a
    // sign-up link.
    oauth: Option<mirobody_oauth::OAuthServer>,
    // The grants whose access tokens stop at once, for an account deleted here.
    revoked: Option<mirobody_auth::RevokedGrants>,
    // The MCP endpoint whose sessions an account deleted here loses.
    mcp: Option<mirobody_mcp::http::McpHttp>,
}

/// How long a request waits for its turn to be received before it is told to come back.
const QUEUE_WAIT: Duration = Duration::from_secs(10);
/// The largest JSON body of a care-circle request.
const MAX_SMALL_BODY: usize = 16 * 1024;

/// The settings of [`router`].
pub(crate) struct RouteSettings {
    pub(crate) prefix: String,
    pub(crate) uploader: Uploader,
    pub(crate) links: UploadLinks,
    pub(crate) max_import_bytes: u64,
    pub(crate) max_concurrent: usize,
    pub(crate) body_deadline: Duration,
    /// Turns one caller may hold among `max_concurrent` (0: no bound).
    pub(crate) max_concurrent_per_caller: usize,
    /// The slowest a body may arrive, after a grace (0: no bound).
    pub(crate) min_body_bytes_per_sec: u64,
    /// The per-caller request rate `/mcp` keeps, kept here too.
    pub(crate) callers: Arc<mirobody_mcp::limits::Callers>,
    /// The memory bodies being handled may take together, parses included, in bytes.
    pub(crate) max_inflight_bytes: usize,
    /// The sign-in pages and authorization server, when `oauth.enabled`.
    pub(crate) oauth: Option<mirobody_oauth::OAuthServer>,
    /// The grants whose access tokens stop at once.
    pub(crate) revoked: Option<mirobody_auth::RevokedGrants>,
    /// The MCP endpoint whose sessions a deleted account loses.
    pub(crate) mcp: Option<mirobody_mcp::http::McpHttp>,
}

/// Every route of this module, under `settings.prefix`.
pub(crate) fn router(backends: Arc<OpenedBackends>, auth: Authenticator, settings: RouteSettings) -> Router {
    let routes = Routes {
        inner: Arc::new(Inner {
            backends,
            auth,
            uploader: settings.uploader,
            links: settings.links,
            max_import_bytes: usize::try_from(settings.max_import_bytes).unwrap_or(usize::MAX),
            body_deadline: settings.body_deadline,
            receiving: Semaphore::new(settings.max_concurrent.max(1)),
            caller_turns: shares::CallerTurns::new(settings.max_concurrent_per_caller),
            min_body_bytes_per_sec: settings.min_body_bytes_per_sec,
            memory: Arc::new(Semaphore::new(settings.max_inflight_bytes.clamp(1, Semaphore::MAX_PERMITS))),
            memory_capacity: settings.max_inflight_bytes.clamp(1, Semaphore::MAX_PERMITS),
            oauth: settings.oauth,
            revoked: settings.revoked,
            mcp: settings.mcp,
        }),
    };
    let prefix = settings.prefix;
    Router::new()
        .merge(uploads::router(&prefix, routes.clone()).layer(axum::middleware::from_fn(counted_uploads)))
        .merge(fhir::router(&prefix, routes.clone()).layer(axum::middleware::from_fn(counted_imports)))
        .merge(circle::router(&prefix, routes.clone()))
        .merge(access::router(&prefix, routes.clone()))
        .merge(personal::router(&prefix, routes))
        .layer(axum::middleware::from_fn_with_state(settings.callers, shares::within_rate))
}

// Uploads and imports answered, for the metrics (nothing recorded without a recorder).
async fn counted_uploads(request: Request<Body>, next: axum::middleware::Next) -> Response {
    counted("upload", request, next).await
}

async fn counted_imports(request: Request<Body>, next: axum::middleware::Next) -> Response {
    counted("import", request, next).await
}

async fn counted(kind: &'static str, request: Request<Body>, next: axum::middleware::Next) -> Response {
    let posted = request.method() == http::Method::POST;
    let response = next.run(request).await;
    if posted {
        let outcome = match response.status() {
            status if status.is_success() => "ok",
            status if status.is_client_error() => "refused",
            _ => "failed",
        };
        metrics::counter!(crate::metrics::UPLOADS, "kind" => kind, "outcome" => outcome).increment(1);
    }
    response
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
    /// `uploads.max_concurrent` do at once. The request's caller may hold at most
    /// `uploads.max_concurrent_per_caller` of them: beyond, 429 with `Retry-After` at once
    /// (queueing would let one caller's requests wait for every turn). Then a server-wide turn:
    /// waits [`QUEUE_WAIT`], then 503 with `Retry-After`.
    // Not async: the request (not `Sync`) is read before the wait, and is not held across it.
    fn admit<'a>(
        &'a self,
        request: &Request<Body>,
    ) -> impl Future<Output = Result<(shares::CallerTurn<'a>, tokio::sync::SemaphorePermit<'a>), Response>> + use<'a>
    {
        self.admit_as(shares::caller_key(request))
    }

    /// Like [`admit`](Self::admit), counted against `key` rather than the request's caller (an
    /// upload through a link counts against the link's owner).
    async fn admit_as(
        &self,
        key: mirobody_mcp::limits::CallerKey,
    ) -> Result<(shares::CallerTurn<'_>, tokio::sync::SemaphorePermit<'_>), Response> {
        let own = self.inner.caller_turns.take(key);
        self.admit_server_wide(own).await
    }

    async fn admit_server_wide<'a>(
        &'a self,
        own: Option<shares::CallerTurn<'a>>,
    ) -> Result<(shares::CallerTurn<'a>, tokio::sync::SemaphorePermit<'a>), Response> {
        let Some(own) = own else {
            let mut refused = error(
                StatusCode::TOO_MANY_REQUESTS,
                "You are sending as many files and imports at once as you may; send this one when one has finished.",
            );
            refused.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return Err(refused);
        };
        match tokio::time::timeout(QUEUE_WAIT, self.inner.receiving.acquire()).await {
            Ok(Ok(permit)) => Ok((own, permit)),
            _ => {
                let mut busy = error(StatusCode::SERVICE_UNAVAILABLE, "The server is receiving many files; try again.");
                busy.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                Err(busy)
            }
        }
    }

    /// Takes `bytes` of the memory bodies being handled may take together (a body, and what it
    /// is parsed into), held until the permit is dropped: waits [`QUEUE_WAIT`] for it, then
    /// 503 with `Retry-After`; 413 for more than the whole budget.
    async fn charge(&self, bytes: usize) -> Result<tokio::sync::OwnedSemaphorePermit, Response> {
        let capacity = self.inner.memory_capacity;
        let Some(wanted) = u32::try_from(bytes).ok().filter(|_| bytes <= capacity) else {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "This request would take more memory to handle than this server allows ({capacity} bytes); send it in parts."
                ),
            ));
        };
        let wait = Arc::clone(&self.inner.memory).acquire_many_owned(wanted.max(1));
        match tokio::time::timeout(QUEUE_WAIT, wait).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => {
                let mut busy = error(StatusCode::SERVICE_UNAVAILABLE, "The server is handling much data; try again.");
                busy.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                Err(busy)
            }
        }
    }

    /// The body, at most `max` bytes, arriving within the body deadline and, after a grace,
    /// at least at `uploads.min_body_bytes_per_sec` (408 when not: a body that trickles would
    /// hold its turn for the whole deadline).
    async fn read_body(&self, body: Body, max: usize) -> Result<Bytes, Response> {
        let min = self.inner.min_body_bytes_per_sec;
        let pace = shares::BodyPace { deadline: self.inner.body_deadline, min_bytes_per_sec: min };
        shares::read_paced(body, max, pace).await.map_err(|refusal| match refusal {
            shares::BodyRefusal::TooLong => {
                error(StatusCode::REQUEST_TIMEOUT, "The request body took too long to arrive.")
            }
            shares::BodyRefusal::TooSlow => error(
                StatusCode::REQUEST_TIMEOUT,
                format!("The request body arrived more slowly than {min} bytes a second."),
            ),
            shares::BodyRefusal::TooLarge => {
                error(StatusCode::PAYLOAD_TOO_LARGE, format!("The request body is larger than {max} bytes."))
            }
            shares::BodyRefusal::Unreadable => error(StatusCode::BAD_REQUEST, "The request body could not be read."),
        })
    }

    fn backends(&self) -> &OpenedBackends {
        &self.inner.backends
    }
}
