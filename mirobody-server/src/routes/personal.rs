//! `GET <prefix>/export`: everything the caller holds as one FHIR R4 Bundle, streamed; and
//! `POST <prefix>/delete` (`{"kind": "file" | "value" | "import" | "account", "id"?, "confirm"?}`):
//! one thing of theirs, or their whole account.
//!
//! Only the caller's own data: a care-circle reader exports and deletes nothing of another
//! person's. Deleting the account needs a bearer token (not a personal URL) and `confirm`
//! set to the caller's own id, so no request made by mistake ends an account.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderValue, Request, StatusCode, header};
use mirobody_tools::erasure::{DeleteKind, delete_one};
use serde::Deserialize;
use serde_json::json;

use super::{MAX_SMALL_BODY, Routes, error};

pub(super) fn router(prefix: &str, routes: Routes) -> Router {
    Router::new()
        .route(&format!("{prefix}/export"), get(export))
        .route(&format!("{prefix}/delete"), post(delete))
        .with_state(routes)
}

async fn export(State(routes): State<Routes>, request: Request<Body>) -> Response {
    let owner = match routes.caller(&request) {
        Ok((owner, _)) => owner,
        Err(refusal) => return refusal,
    };
    if let Err(denied) = routes.inner.auth.authorize(&request, mirobody_auth::EXPORT_HEALTH_DATA) {
        return routes.inner.auth.reject(&denied);
    }
    tracing::info!(owner, "export");
    let chunks = crate::personal::export_stream(std::sync::Arc::clone(&routes.inner.backends), owner);
    let mut response = Response::new(Body::from_stream(chunks));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/fhir+json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers
        .insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"mirobody-export.json\""));
    response
}

#[derive(Deserialize)]
struct DeleteRequest {
    kind: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    confirm: String,
}

async fn delete(State(routes): State<Routes>, request: Request<Body>) -> Response {
    let owner = match routes.caller(&request) {
        Ok((owner, _)) => owner,
        Err(refusal) => return refusal,
    };
    let permitted = routes.inner.auth.authorize(&request, mirobody_auth::DELETE_HEALTH_DATA);
    let account = request.extensions().get::<mirobody_auth::AuthMethod>() == Some(&mirobody_auth::AuthMethod::Bearer);
    let bytes = match routes.read_body(request.into_body(), MAX_SMALL_BODY).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let Ok(asked) = serde_json::from_slice::<DeleteRequest>(&bytes) else {
        return error(StatusCode::BAD_REQUEST, "Send {\"kind\": \"file\" | \"value\" | \"account\", \"id\": ...}.");
    };
    if asked.kind == "account" {
        if !account {
            return error(StatusCode::FORBIDDEN, "Deleting an account needs a bearer token, not a personal URL.");
        }
        if asked.confirm != owner {
            return error(
                StatusCode::BAD_REQUEST,
                "To delete the account and everything in it, send \"confirm\" set to your user id.",
            );
        }
        let revoked = routes.inner.revoked.as_ref();
        let mcp = routes.inner.mcp.as_ref();
        return match crate::personal::erase_account(routes.backends(), revoked, mcp, &owner).await {
            Ok(_) => (StatusCode::OK, axum::Json(json!({"deleted": true, "kind": "account"}))).into_response(),
            Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        };
    }
    if let Err(denied) = permitted {
        return routes.inner.auth.reject(&denied);
    }
    let Some(kind) = DeleteKind::parse(&asked.kind) else {
        return error(StatusCode::BAD_REQUEST, "'kind' must be \"file\", \"value\", \"import\" or \"account\".");
    };
    let store: &dyn mirobody_health::PersonalData = routes.backends().sql().as_ref();
    let storage = routes.backends().storage();
    match delete_one(store, storage.as_deref(), &owner, kind, &asked.id).await {
        Ok(true) => (StatusCode::OK, axum::Json(json!({"deleted": true, "kind": kind.as_str()}))).into_response(),
        Ok(false) => error(StatusCode::NOT_FOUND, format!("You have no {} with that id.", kind.as_str())),
        Err(e) => error(StatusCode::BAD_REQUEST, e.to_string()),
    }
}
