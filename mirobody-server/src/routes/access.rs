//! Who read the caller's health data: `GET <prefix>/access/reads` lists the reads of it by
//! others (care-circle members), newest first, a bounded page at a time (`?limit=` at most
//! `MAX_READS_PAGE`, `?before=<id>` for the page after). The caller's own data only; it needs
//! what the `list_data_access` tool needs.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{Request, StatusCode};
use mirobody_ports::{DataRead, MAX_READS_PAGE};
use serde_json::{Value, json};

use super::{Routes, error};

/// The permission of the route: the tool that lists the same.
const PERMISSION: &str = "list_data_access";
/// Entries in a page when the request names no limit.
const DEFAULT_LIMIT: u32 = 50;

pub(super) fn router(prefix: &str, routes: Routes) -> Router {
    Router::new().route(&format!("{prefix}/access/reads"), get(reads)).with_state(routes)
}

async fn reads(State(routes): State<Routes>, request: Request<Body>) -> Response {
    let (user, _) = match routes.caller(&request) {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let auth = &routes.inner.auth;
    if let Err(denied) = auth.authorize(&request, PERMISSION) {
        return auth.reject(&denied);
    }
    let (before, limit) = match page(request.uri().query().unwrap_or_default()) {
        Ok(page) => page,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    match routes.backends().access_log().reads_of(&user, before, limit).await {
        Ok(reads) => {
            let next_before = (reads.len() == limit as usize).then(|| reads.last().map(|r| r.id)).flatten();
            let reads: Vec<Value> = reads.iter().map(entry).collect();
            let mut response = axum::Json(json!({"reads": reads, "next_before": next_before})).into_response();
            response.headers_mut().insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not list the reads of a person's data");
            error(StatusCode::SERVICE_UNAVAILABLE, "The access log could not be read; try again.")
        }
    }
}

// `before` and `limit` from the query: whole numbers, `limit` from 1 to MAX_READS_PAGE.
fn page(query: &str) -> Result<(Option<i64>, u32), String> {
    let (mut before, mut limit) = (None, DEFAULT_LIMIT);
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "before" => {
                before = Some(value.parse().map_err(|_| "'before' must be an entry's id, a whole number".to_owned())?)
            }
            "limit" => {
                limit = value
                    .parse()
                    .ok()
                    .filter(|limit| (1..=MAX_READS_PAGE).contains(limit))
                    .ok_or_else(|| format!("'limit' must be a whole number from 1 to {MAX_READS_PAGE}"))?
            }
            _ => return Err("Only 'before' and 'limit' may be given".to_owned()),
        }
    }
    Ok((before, limit))
}

fn entry(read: &DataRead) -> Value {
    json!({
        "id": read.id,
        "reader": read.reader,
        "reader_name": read.reader_name,
        "what": read.name,
        "at": mirobody_health::text::rfc3339(read.at_ms),
        "outcome": read.outcome.as_str(),
        "duration_ms": read.duration_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn a_page_is_bounded_and_its_query_checked() {
        assert_eq!(page(""), Ok((None, super::DEFAULT_LIMIT)));
        assert_eq!(page("before=42&limit=100"), Ok((Some(42), 100)));
        assert!(page("limit=101").unwrap_err().contains("from 1 to 100"));
        assert!(page("limit=0").is_err());
        assert!(page("before=x").unwrap_err().contains("'before'"));
        assert!(page("subject=ann").unwrap_err().contains("Only 'before' and 'limit'"));
    }
}
