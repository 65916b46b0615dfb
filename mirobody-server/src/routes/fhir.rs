//! `POST <prefix>/fhir` (a Bundle or one resource) and `POST <prefix>/fhir/Observation`: FHIR
//! R4 imports into the signed-in person's data, answered as a FHIR server answers (an
//! `OperationOutcome`, or a `batch-response` / `transaction-response` Bundle).

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http::{HeaderValue, Request, StatusCode, header};
use mirobody_health::import::{self, ImportResponse};
use serde_json::Value;

use super::Routes;
use tracing::Instrument;

pub(super) fn router(prefix: &str, routes: Routes) -> Router {
    Router::new()
        .route(&format!("{prefix}/fhir"), post(import_any))
        .route(&format!("{prefix}/fhir/Observation"), post(import_observation))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(routes)
}

async fn import_any(State(routes): State<Routes>, request: Request<Body>) -> Response {
    receive(routes, request, false).await
}

async fn import_observation(State(routes): State<Routes>, request: Request<Body>) -> Response {
    receive(routes, request, true).await
}

async fn receive(routes: Routes, request: Request<Body>, observation_only: bool) -> Response {
    let owner = match routes.caller(&request) {
        Ok((owner, _)) => owner,
        Err(refusal) => return refusal,
    };
    if let Err(denied) = routes.inner.auth.authorize(&request, mirobody_auth::IMPORT_HEALTH_DATA) {
        return routes.inner.auth.reject(&denied);
    }
    let _turn = match routes.admit(&request).await {
        Ok(turn) => turn,
        Err(busy) => return busy,
    };
    // The body is charged to the memory the routes share before it is read (its declared
    // length, or the most an import may be), and what its tree will take once its shape is
    // known, before the tree is built.
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        .map_or(routes.inner.max_import_bytes, |n| n.min(routes.inner.max_import_bytes));
    let _body_memory = match routes.charge(declared).await {
        Ok(memory) => memory,
        Err(refusal) => return refusal,
    };
    let bytes = match routes.read_body(request.into_body(), declared).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let parse_cost = match import::CheckedJson::check(&bytes) {
        Ok(checked) => checked.parse_cost().saturating_sub(bytes.len()),
        Err(refused) => return fhir_response(refused.status, refused.body),
    };
    let tree_memory = match routes.charge(parse_cost).await {
        Ok(memory) => memory,
        Err(refusal) => return refusal,
    };
    // Run to its end in a task of its own, holding its memory: a client that hangs up
    // mid-import must not leave half of it stored (a failed import deletes what it wrote).
    let sql = routes.backends().health();
    let importer = owner.clone();
    let imported = tokio::spawn(
        async move {
            let _held = (tree_memory, _body_memory);
            match import::CheckedJson::check(&bytes) {
                Ok(checked) => import::import_fhir_checked(sql.as_ref(), &importer, checked, observation_only).await,
                Err(refused) => refused,
            }
        }
        .in_current_span(),
    );
    let Ok(ImportResponse { status, body, summary, report_forms, .. }) = imported.await else {
        return fhir_response(
            500,
            serde_json::json!({"resourceType": "OperationOutcome", "issue": [{"severity": "error", "code": "exception", "diagnostics": "The import failed; try again."}]}),
        );
    };
    tracing::info!(
        owner,
        status,
        import_id = summary.import_id,
        created = summary.created,
        updated = summary.updated,
        removed = summary.removed,
        unchanged = summary.unchanged,
        skipped = summary.skipped,
        invalid = summary.invalid.len(),
        "FHIR import"
    );
    // A report's document sent inline becomes the person's file, its text read as an
    // upload's is.
    routes.inner.uploader.store_report_forms(&owner, &report_forms).await;
    fhir_response(status, body)
}

fn fhir_response(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/fhir+json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
