//! `POST <prefix>/files` (signed in) and the upload page at `<prefix>/upload/<token>` (a link
//! from the `upload_link` tool, which `DELETE` ends; `DELETE <prefix>/upload` ends all the
//! caller's): a person's files, stored through
//! [`Uploader::store_and_import`](mirobody_tools::uploads::Uploader::store_and_import), which
//! imports health data (FHIR, NDJSON, a CSV of measurements, an Apple Health export) and says
//! what it imported in the answer's `import`.
//!
//! A file comes as `multipart/form-data` (its field `file`) or as the raw body with its
//! `Content-Type` and `?filename=`. The page is the same bytes for every link: the token stays
//! in the URL, which the page posts back to; a strict content security policy keeps it from
//! loading or sending anything elsewhere, and `Referrer-Policy: no-referrer` keeps the token in.

use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Path, Query};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use base64::Engine;
use http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use mirobody_mcp::limits::CallerKey;
use mirobody_tools::upload_links::LinkError;
use mirobody_tools::uploads::UploadError;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{Routes, error};
use tracing::Instrument;

/// The upload page.
const PAGE: &str = include_str!("../../assets/upload.html");

// The page's policy, with its one inline script allowed by hash rather than 'unsafe-inline'.
static PAGE_POLICY: LazyLock<HeaderValue> = LazyLock::new(|| {
    let script = PAGE.split_once("<script>").and_then(|(_, rest)| rest.split_once("</script>")).map_or("", |s| s.0);
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script.as_bytes()));
    let policy = format!(
        "default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; img-src data:; \
         connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    );
    HeaderValue::from_str(&policy).expect("a header value")
});

/// Bytes a multipart envelope may add around the file.
const MULTIPART_OVERHEAD: usize = 64 * 1024;

pub(super) fn router(prefix: &str, routes: Routes) -> Router {
    Router::new()
        .route(&format!("{prefix}/files"), post(upload_signed_in))
        .route(&format!("{prefix}/upload"), delete(revoke_all_links))
        .route(&format!("{prefix}/upload/{{token}}"), get(page).post(upload_by_link).delete(revoke_link))
        // The bodies are bounded as they are read (`Routes::read_body`), by the upload limits.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(routes)
}

#[derive(Deserialize)]
struct FileQuery {
    filename: Option<String>,
}

async fn upload_signed_in(
    axum::extract::State(routes): axum::extract::State<Routes>,
    request: Request<Body>,
) -> Response {
    let owner = match routes.caller(&request) {
        Ok((owner, _)) => owner,
        Err(refusal) => return refusal,
    };
    // What the `upload_file` tool would need, for the same caller (agent list, scopes).
    if let Err(denied) = routes.inner.auth.authorize(&request, mirobody_auth::UPLOAD_FILE) {
        return routes.inner.auth.reject(&denied);
    }
    let key = super::shares::caller_key(&request);
    receive(&routes, &owner, key, request).await
}

// A file through a link: one of the link's uses is taken before the body is read, so uploads
// racing on a single-use link store one file, and given back when nothing was stored for a
// reason other than the body's pace (a file refused for its type or size, a connection lost,
// a server error), so a refusal burns no link. A body cut for being too slow or too long (408)
// keeps the use taken: else one link would hold a turn again and again. The upload counts
// against the link's owner's turns, whatever address it comes from.
async fn upload_by_link(
    axum::extract::State(routes): axum::extract::State<Routes>,
    Path(token): Path<String>,
    request: Request<Body>,
) -> Response {
    let taken = match routes.inner.links.take_use(&token).await {
        Ok(taken) => taken,
        Err(e) => return link_refused(&e),
    };
    // Received and settled in a task of its own: a client that hangs up once the file is stored
    // must not drop the request there and so get the use back for a file that was kept.
    let settled = tokio::spawn(
        async move {
            let owner = taken.user().to_owned();
            let key = CallerKey::User(Arc::from(owner.as_str()));
            let mut response = receive(&routes, &owner, key, request).await;
            match response.status() {
                StatusCode::CREATED => {
                    // The page reads it to say the link is used up rather than try the next file.
                    response.headers_mut().insert(USES_LEFT, HeaderValue::from(taken.uses_left()));
                    taken.keep();
                }
                StatusCode::REQUEST_TIMEOUT => taken.keep(),
                _ => taken.give_back().await,
            }
            response
        }
        .in_current_span(),
    );
    // A panic in the task dropped the use unsettled, which gives it back.
    settled.await.unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "The upload failed; try again."))
}

/// The header telling the upload page how many more files its link stores.
const USES_LEFT: header::HeaderName = header::HeaderName::from_static("upload-link-uses-left");

fn link_refused(e: &LinkError) -> Response {
    error(StatusCode::from_u16(e.status()).unwrap_or(StatusCode::FORBIDDEN), e.to_string())
}

// `DELETE <prefix>/upload/<token>`: whoever holds a link may end it.
async fn revoke_link(
    axum::extract::State(routes): axum::extract::State<Routes>,
    Path(token): Path<String>,
) -> Response {
    match routes.inner.links.revoke(&token).await {
        Ok(()) => {
            let mut response = StatusCode::NO_CONTENT.into_response();
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => link_refused(&e),
    }
}

// `DELETE <prefix>/upload`: the signed-in caller ends every link of theirs that still works,
// with the `upload_link` tool's permission (which ends them too).
async fn revoke_all_links(
    axum::extract::State(routes): axum::extract::State<Routes>,
    request: Request<Body>,
) -> Response {
    let owner = match routes.caller(&request) {
        Ok((owner, _)) => owner,
        Err(refusal) => return refusal,
    };
    if let Err(denied) = routes.inner.auth.authorize(&request, mirobody_auth::UPLOAD_LINK) {
        return routes.inner.auth.reject(&denied);
    }
    match routes.inner.links.revoke_all(&owner).await {
        Ok(revoked) => {
            let mut response = axum::Json(serde_json::json!({"revoked": revoked})).into_response();
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => link_refused(&e),
    }
}

// The page, for a link that still works; showing it takes no use.
async fn page(axum::extract::State(routes): axum::extract::State<Routes>, Path(token): Path<String>) -> Response {
    let mut response = match routes.inner.links.check(&token).await {
        Ok(_) => (StatusCode::OK, PAGE).into_response(),
        Err(e) => (StatusCode::from_u16(e.status()).unwrap_or(StatusCode::FORBIDDEN), e.to_string()).into_response(),
    };
    let ok = response.status() == StatusCode::OK;
    let headers = response.headers_mut();
    if ok {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    }
    headers.insert(header::CONTENT_SECURITY_POLICY, PAGE_POLICY.clone());
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("multipart/form-data"))
}

// Reads the file from the request (bounded) and stores it as `owner`'s, in one of `key`'s
// turns. The memory is charged before the body is read: its declared length (capped at the
// largest allowed) or, without one, the largest, times the copies made of it.
async fn receive(routes: &Routes, owner: &str, key: CallerKey, request: Request<Body>) -> Response {
    let _turn = match routes.admit_as(key).await {
        Ok(turn) => turn,
        Err(busy) => return busy,
    };
    let max_file = usize::try_from(routes.inner.uploader.limits().max_file_bytes).unwrap_or(usize::MAX);
    let too_large = || error(StatusCode::PAYLOAD_TOO_LARGE, UploadError::TooLarge { max: max_file as u64 }.to_string());
    let (parts, body) = request.into_parts();
    let multipart = is_multipart(&parts.headers);
    let max = if multipart { max_file.saturating_add(MULTIPART_OVERHEAD) } else { max_file };
    let declared_length = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|length| usize::try_from(length).unwrap_or(usize::MAX));
    if declared_length.is_some_and(|length| length > max) {
        return too_large();
    }
    let expected = declared_length.unwrap_or(max);
    // The body and the copy that stores it (and the field read out of a multipart body).
    let copies = if multipart { 3 } else { 2 };
    let _memory = match routes.charge(expected.saturating_mul(copies)).await {
        Ok(memory) => memory,
        Err(refusal) => return refusal,
    };
    let bytes = match routes.read_body(body, expected).await {
        Ok(bytes) => bytes,
        Err(refusal) if refusal.status() == StatusCode::PAYLOAD_TOO_LARGE => return too_large(),
        Err(refusal) => return refusal,
    };
    let (filename, declared, bytes) = if multipart {
        let request = Request::from_parts(parts, Body::from(bytes));
        match file_field(request).await {
            Ok(found) => found,
            Err(refusal) => return refusal,
        }
    } else {
        let filename = Query::<FileQuery>::try_from_uri(&parts.uri).ok().and_then(|q| q.0.filename);
        let declared = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
        (filename.unwrap_or_else(|| "upload".to_owned()), declared, bytes.to_vec())
    };
    // Health data is imported from a copy of the bytes, and its tree or rows held meanwhile.
    let _import_memory = match routes.charge(mirobody_tools::imports::import_memory(&bytes)).await {
        Ok(memory) => memory,
        Err(refusal) => return refusal,
    };
    match routes.inner.uploader.store_and_import(owner, &filename, declared.as_deref(), bytes).await {
        Ok(uploaded) => {
            let mut response = (StatusCode::CREATED, axum::Json(uploaded)).into_response();
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => error(StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST), e.to_string()),
    }
}

// The `file` field of a multipart body: its name, declared type and bytes.
async fn file_field(request: Request<Body>) -> Result<(String, Option<String>, Vec<u8>), Response> {
    let bad = |message: &str| error(StatusCode::BAD_REQUEST, message);
    let mut multipart =
        Multipart::from_request(request, &()).await.map_err(|_| bad("The multipart body could not be read."))?;
    loop {
        let field = multipart.next_field().await.map_err(|_| bad("The multipart body could not be read."))?;
        let Some(field) = field else {
            return Err(bad("The multipart body has no 'file' field."));
        };
        if field.name() != Some("file") {
            continue;
        }
        let filename = field.file_name().unwrap_or("upload").to_owned();
        let declared = field.content_type().map(str::to_owned);
        let bytes = field.bytes().await.map_err(|_| bad("The file in the multipart body could not be read."))?;
        return Ok((filename, declared, bytes.to_vec()));
    }
}
