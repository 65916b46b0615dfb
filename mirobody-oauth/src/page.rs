//! The pages' shell: one stylesheet, no external asset, a strict policy; no script but the
//! passkey one, on the pages that offer passkeys.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

/// The policy every page is served with: nothing loads from anywhere, forms post only back
/// here, nobody frames it.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// The consent page's policy: its form redirects to the client, so `form-action` is left
/// out (browsers apply it to the redirect a form's answer makes, and every client has its
/// own address).
const CONSENT_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'";

/// The policy of the pages that offer passkeys: the strict one, plus this server's own script
/// (`passkey.js`, no inline script) and `fetch` back here, which WebAuthn needs.
const SCRIPT_POLICY: &str = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; \
     img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const STYLE: &str = include_str!("../assets/style.css");

/// Escapes text for HTML element content and double-quoted attributes.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A page: `title` (plain text) and `body` (HTML the caller escaped), with the strict policy.
pub(crate) fn page(status: StatusCode, title: &str, body: &str) -> Response {
    render(status, title, body, POLICY)
}

/// A page that loads this server's passkey script (see [`SCRIPT_POLICY`]).
pub(crate) fn script_page(status: StatusCode, title: &str, body: &str) -> Response {
    render(status, title, body, SCRIPT_POLICY)
}

/// The consent page (see [`CONSENT_POLICY`]).
pub(crate) fn consent_page(title: &str, body: &str) -> Response {
    render(StatusCode::OK, title, body, CONSENT_POLICY)
}

fn render(status: StatusCode, title: &str, body: &str, policy: &'static str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n<meta name=\"robots\" content=\"noindex, nofollow\">\n\
         <title>{title}</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>{STYLE}</style>\n</head>\n\
         <body>\n<main>\n{body}\n</main>\n</body>\n</html>\n",
        title = escape(title),
    );
    let mut response = Response::new(Body::from(html));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// A `303 See Other` to `location` (a path on this server or a client's redirect URI).
pub(crate) fn see_other(location: &str) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_leaves_no_markup() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }
}
