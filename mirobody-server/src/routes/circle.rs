//! The care circle over HTTP, for an application: `GET <prefix>/circle` (both ways, with the
//! invitations waiting), `POST <prefix>/circle/invites` (invite by user id or email),
//! `POST <prefix>/circle/invites/{id}/accept`, `DELETE <prefix>/circle/invites/{id}` (withdraw
//! or decline) and `DELETE <prefix>/circle/members/{user}` (end the sharing, either way).
//!
//! Every route needs the care-circle permission ([`CARE_CIRCLE`]: the caller's agent list
//! names it, and the caller holds the scopes it is configured to need). What gives someone
//! access (inviting, accepting) needs a bearer token besides; a personal MCP URL may read the
//! circle and end sharing, never widen it. One person has at most
//! `quotas.max_invitations_per_user` invitations waiting; one more is 409.
//!
//! An invitation by email to an address with no account, on a server with its sign-in pages
//! on, answers with a `signup_url` besides its id: a link that makes the account of that
//! address (once, for 14 days). Nothing is sent to the address; the inviter hands the link
//! over. When no link can be made (too many waiting), `signup_url_error` says why.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use http::{Request, StatusCode};
use mirobody_auth::CARE_CIRCLE;
use mirobody_oauth::InviteLinkError;
use serde::Deserialize;
use serde_json::json;

use super::{MAX_SMALL_BODY, Routes, error};

pub(super) fn router(prefix: &str, routes: Routes) -> Router {
    Router::new()
        .route(&format!("{prefix}/circle"), get(overview))
        .route(&format!("{prefix}/circle/invites"), post(invite))
        .route(&format!("{prefix}/circle/invites/{{id}}/accept"), post(accept))
        .route(&format!("{prefix}/circle/invites/{{id}}"), delete(drop_invite))
        .route(&format!("{prefix}/circle/members/{{user}}"), delete(leave))
        .with_state(routes)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Invite {
    invitee: String,
    nickname: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Accept {
    nickname: Option<String>,
}

// The caller, when they hold the care-circle permission; with `widens`, only through a
// bearer token.
fn circle_caller(routes: &Routes, request: &Request<Body>, widens: bool) -> Result<String, Response> {
    let user = if widens { routes.bearer_caller(request)? } else { routes.caller(request)?.0 };
    let auth = &routes.inner.auth;
    auth.authorize(request, CARE_CIRCLE).map_err(|denied| auth.reject(&denied))?;
    Ok(user)
}

fn backend_error(e: mirobody_core::backend::BackendError) -> Response {
    let message = e.to_string();
    // The store's own refusals (bad input) are the caller's to fix; the rest are ours.
    if message.starts_with("Database error") {
        error(StatusCode::SERVICE_UNAVAILABLE, message)
    } else {
        error(StatusCode::BAD_REQUEST, message)
    }
}

// The JSON body; with `required` false, no body reads as `{}`.
async fn json_body<T: serde::de::DeserializeOwned>(
    routes: &Routes,
    request: Request<Body>,
    required: bool,
) -> Result<T, Response> {
    let bytes = routes.read_body(request.into_body(), MAX_SMALL_BODY).await?;
    let empty = bytes.iter().all(u8::is_ascii_whitespace);
    let json: &[u8] = if empty && !required { b"{}" } else { &bytes };
    serde_json::from_slice(json).map_err(|e| error(StatusCode::BAD_REQUEST, format!("The body is not valid: {e}.")))
}

async fn overview(State(routes): State<Routes>, request: Request<Body>) -> Response {
    let user = match circle_caller(&routes, &request, false) {
        Ok(user) => user,
        Err(refusal) => return refusal,
    };
    match routes.backends().health().circle(&user).await {
        Ok(circle) => axum::Json(circle).into_response(),
        Err(e) => backend_error(e),
    }
}

async fn invite(State(routes): State<Routes>, request: Request<Body>) -> Response {
    let owner = match circle_caller(&routes, &request, true) {
        Ok(owner) => owner,
        Err(refusal) => return refusal,
    };
    let body: Invite = match json_body(&routes, request, true).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    match routes.backends().health().invite_within_quota(&owner, &body.invitee, body.nickname.as_deref()).await {
        Ok(Ok(id)) => {
            tracing::info!(owner, invite = id, "care-circle invitation");
            let mut answer = json!({"id": id});
            if body.invitee.contains('@')
                && let Some(oauth) = &routes.inner.oauth
            {
                match oauth.invite_link(&body.invitee, &owner).await {
                    Ok(Some(url)) => answer["signup_url"] = json!(url),
                    Ok(None) => {}
                    Err(e @ (InviteLinkError::TooMany | InviteLinkError::Email)) => {
                        answer["signup_url_error"] = json!(e.to_string());
                    }
                    Err(e) => {
                        tracing::error!(owner, error = %e, "cannot make a sign-up link");
                        answer["signup_url_error"] = json!("The sign-up link could not be made just now.");
                    }
                }
            }
            (StatusCode::CREATED, axum::Json(answer)).into_response()
        }
        Ok(Err(exceeded)) => {
            tracing::info!(owner, "care-circle invitation refused: quota");
            error(StatusCode::CONFLICT, exceeded.to_string())
        }
        Err(e) => backend_error(e),
    }
}

async fn accept(State(routes): State<Routes>, Path(id): Path<i64>, request: Request<Body>) -> Response {
    let user = match circle_caller(&routes, &request, true) {
        Ok(user) => user,
        Err(refusal) => return refusal,
    };
    let body: Accept = match json_body(&routes, request, false).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    if body.nickname.as_ref().is_some_and(|n| n.chars().count() > mirobody_store::MAX_INVITEE_CHARS) {
        return error(StatusCode::BAD_REQUEST, "The nickname is too long.");
    }
    match routes.backends().health().accept_invite(&user, id, body.nickname.as_deref()).await {
        Ok(Some(owner)) => {
            tracing::info!(reader = user, owner, invite = id, "care-circle invitation accepted");
            axum::Json(json!({"owner": owner})).into_response()
        }
        Ok(None) => error(StatusCode::NOT_FOUND, "No such invitation is waiting for you."),
        Err(e) => backend_error(e),
    }
}

async fn drop_invite(State(routes): State<Routes>, Path(id): Path<i64>, request: Request<Body>) -> Response {
    let user = match circle_caller(&routes, &request, false) {
        Ok(user) => user,
        Err(refusal) => return refusal,
    };
    match routes.backends().health().drop_invite(&user, id).await {
        Ok(true) => axum::Json(json!({"dropped": true})).into_response(),
        Ok(false) => error(StatusCode::NOT_FOUND, "No such invitation of yours."),
        Err(e) => backend_error(e),
    }
}

async fn leave(State(routes): State<Routes>, Path(other): Path<String>, request: Request<Body>) -> Response {
    let user = match circle_caller(&routes, &request, false) {
        Ok(user) => user,
        Err(refusal) => return refusal,
    };
    match routes.backends().health().leave_circle(&user, &other).await {
        Ok(revoked) => {
            tracing::info!(user, other, revoked, "care-circle sharing ended");
            axum::Json(json!({"revoked": revoked})).into_response()
        }
        Err(e) => backend_error(e),
    }
}
