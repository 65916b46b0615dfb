//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the MCP
//! 2025-11-25 way to meet a client): a `client_id` that is an https URL names a JSON document
//! describing the client, which this server fetches, checks and keeps for a while.
//!
//! Anyone who can start an authorization chooses the URL, so the fetch is built not to be
//! turned against the server's own network: https only; the host resolved here and refused
//! if any of its addresses is not a public unicast one; the connection made only to the
//! addresses checked (a second lookup cannot rebind it); no redirects, no proxy; capped in time
//! and size; bounded in how many run at once; and a URL that failed is not fetched again for
//! a while.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mirobody_ports::OAuthClient;
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::sync::Semaphore;
use url::{Host, Url};

use super::clients::acceptable_redirect_uri;
use super::register::{MAX_NAME_CHARS, MAX_REDIRECT_URIS};
use crate::error_chain::chain;
use crate::server::OAuthServer;
use crate::settings::OAuthSettings;

/// What `registered_from` says of a client known by its metadata document.
pub(crate) const METADATA: &str = "metadata";
/// The longest client_id URL accepted.
const MAX_URL_BYTES: usize = 2000;
/// The largest document read.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// Documents fetched at once, at most; further lookups wait (within the fetch time cap).
const MAX_CONCURRENT_FETCHES: usize = 8;
/// URLs remembered as failed, at most.
const MAX_FAILURES_KEPT: usize = 4096;

/// Why a document could not be used lately.
#[derive(Clone, Debug)]
struct Failure {
    why: String,
    unreachable: bool,
}

/// The fetches in flight and the URLs that failed lately, shared by every request.
pub(crate) struct Resolver {
    fetches: Semaphore,
    /// Until when, why, and whether the host was unreachable.
    failures: Mutex<HashMap<String, (Instant, Failure)>>,
}

impl Resolver {
    pub(crate) fn new() -> Self {
        Resolver { fetches: Semaphore::new(MAX_CONCURRENT_FETCHES), failures: Mutex::new(HashMap::new()) }
    }

    // Why `url` failed, if it did within the failure TTL.
    fn failed_lately(&self, url: &str) -> Option<Failure> {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures.get(url).filter(|(until, _)| Instant::now() < *until).map(|(_, failure)| failure.clone())
    }

    fn remember_failure(&self, url: &str, failure: Failure, ttl: Duration) {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() >= MAX_FAILURES_KEPT {
            failures.retain(|_, (until, _)| now < *until);
        }
        if failures.len() >= MAX_FAILURES_KEPT {
            // Still full of live entries: forget one rather than grow without bound.
            if let Some(any) = failures.keys().next().cloned() {
                failures.remove(&any);
            }
        }
        failures.insert(url.to_owned(), (now + ttl, failure));
    }
}

/// What looking a client up found.
pub(crate) enum Lookup {
    /// The client.
    Found(OAuthClient),
    /// No such client; for a metadata document, why it cannot be used (safe to show).
    Unknown(Option<String>),
    /// The store failed, or too many documents are being fetched: try again.
    Unavailable(String),
}

/// Whether `client_id` names a metadata document (rather than a registered client, whose ids
/// are random and hold no `:`).
pub(crate) fn is_document_id(client_id: &str) -> bool {
    let head = client_id.get(..8).unwrap_or(client_id).to_ascii_lowercase();
    head.starts_with("https://") || head.starts_with("http://")
}

/// The host a metadata-document client's URL is on, which vouches for its name.
pub(crate) fn document_host(client: &OAuthClient) -> Option<String> {
    if client.registered_from != METADATA || !is_document_id(&client.client_id) {
        return None;
    }
    Url::parse(&client.client_id).ok()?.host_str().map(str::to_owned)
}

impl OAuthServer {
    /// The client with this id: registered, or described by its metadata document (from the
    /// store while fresh, fetched otherwise).
    pub(crate) async fn find_client(&self, client_id: &str) -> Lookup {
        let store = &self.inner.stores.oauth;
        if !is_document_id(client_id) {
            return match store.client(client_id).await {
                Ok(Some(client)) => Lookup::Found(client),
                Ok(None) => Lookup::Unknown(None),
                Err(e) => Lookup::Unavailable(e.to_string()),
            };
        }
        let settings = &self.inner.settings;
        // A URL that could never be fetched costs no store lookup, no permit, no cache entry.
        if let Err(refused) = check_url(client_id, settings.cimd_allow_loopback_http) {
            return Lookup::Unknown(Some(refused.why));
        }
        let ttl_ms = i64::try_from(settings.cimd_cache_ttl.as_millis()).unwrap_or(i64::MAX / 2);
        let grace_ms = i64::try_from(settings.cimd_stale_grace.as_millis()).unwrap_or(i64::MAX / 2);
        let age = |client: &OAuthClient| mirobody_core::clock::now_ms() - client.created_at_ms;
        let stored = match store.client(client_id).await {
            Ok(client) => client.filter(|client| client.registered_from == METADATA),
            Err(e) => return Lookup::Unavailable(e.to_string()),
        };
        if let Some(client) = stored.as_ref().filter(|client| (0..ttl_ms).contains(&age(client))) {
            return Lookup::Found(client.clone());
        }
        // The document could not be fetched: a copy within the grace is used while its host is
        // down, so a client whose host has an outage keeps working; a document fetched and
        // found wrong (or gone, 4xx) is never covered by its old copy.
        let stale_or_refused = |failure: Failure| match &stored {
            Some(client) if failure.unreachable && age(client) < ttl_ms.saturating_add(grace_ms) => {
                tracing::warn!(client_id = ?client_id, why = %failure.why, "client metadata document unreachable: its last copy is used");
                Lookup::Found(client.clone())
            }
            _ => Lookup::Unknown(Some(failure.why)),
        };
        let resolver = &self.inner.cimd;
        if let Some(failure) = resolver.failed_lately(client_id) {
            return stale_or_refused(failure);
        }
        let Ok(Ok(_permit)) = tokio::time::timeout(settings.cimd_fetch_timeout, resolver.fetches.acquire()).await
        else {
            return Lookup::Unavailable("too many client metadata documents are being fetched".into());
        };
        // Another request may have fetched it, or failed to, while this one waited.
        if let Some(failure) = resolver.failed_lately(client_id) {
            return stale_or_refused(failure);
        }
        match store.client(client_id).await {
            Ok(Some(client)) if client.registered_from == METADATA && (0..ttl_ms).contains(&age(&client)) => {
                return Lookup::Found(client);
            }
            Ok(_) => {}
            Err(e) => return Lookup::Unavailable(e.to_string()),
        }
        match fetch_client(client_id, settings).await {
            Ok(client) => match store.put_client(&client).await {
                Ok(()) => {
                    tracing::info!(client_id = ?client_id, "client metadata document fetched");
                    Lookup::Found(client)
                }
                Err(e) => Lookup::Unavailable(e.to_string()),
            },
            Err(refused) => {
                tracing::info!(client_id = ?client_id, why = %refused.why, detail = ?refused.detail, "client metadata document refused");
                let failure = Failure { why: refused.why, unreachable: refused.unreachable };
                resolver.remember_failure(client_id, failure.clone(), settings.cimd_failure_ttl);
                stale_or_refused(failure)
            }
        }
    }
}

/// Why a document cannot be used: `why` may be shown to anyone; `detail` (a network error)
/// only logged.
#[derive(Debug)]
struct Refused {
    why: String,
    detail: Option<String>,
    /// The host could not be reached, or answered that it is failing (5xx, 429): the
    /// document may be fine, so a recent copy stays usable (`cimd_stale_grace`). A document
    /// that was fetched and is wrong, or an address that must not be fetched from, never is.
    unreachable: bool,
}

fn refused(why: impl Into<String>) -> Refused {
    Refused { why: why.into(), detail: None, unreachable: false }
}

fn unreachable(why: impl Into<String>, detail: Option<String>) -> Refused {
    Refused { why: why.into(), detail, unreachable: true }
}

/// Fetches, checks and returns the client `client_id` describes.
async fn fetch_client(client_id: &str, settings: &OAuthSettings) -> Result<OAuthClient, Refused> {
    let allow_loopback = settings.cimd_allow_loopback_http;
    let url = check_url(client_id, allow_loopback)?;
    let cap = settings.cimd_fetch_timeout;
    // One cap over everything: the name lookup, the connection, the headers and the body.
    let body = tokio::time::timeout(cap, async {
        let addrs = resolve(&url, allow_loopback).await?;
        fetch(&url, &addrs, cap).await
    })
    .await
    .map_err(|_| unreachable(too_slow(cap), None))??;
    parse_document(client_id, &body)
}

fn too_slow(cap: Duration) -> String {
    format!("the document did not arrive within {} s", cap.as_secs_f32())
}

/// Checks the client_id URL itself: at most 2000 bytes, in its normal form (so it compares
/// equal to the document's `client_id`, and has no `.` or `..` segments), https (or, when
/// allowed, http to a loopback host), no user info, no fragment, a path beyond `/`.
fn check_url(client_id: &str, allow_loopback: bool) -> Result<Url, Refused> {
    if client_id.len() > MAX_URL_BYTES {
        return Err(refused(format!("the client_id URL is longer than {MAX_URL_BYTES} bytes")));
    }
    let url = Url::parse(client_id).map_err(|_| refused("the client_id is not a URL"))?;
    if url.scheme() == "http" && !(allow_loopback && loopback_host(&url)) {
        return Err(refused("the client_id URL must use https"));
    }
    if url.scheme() != "https" && url.scheme() != "http" {
        return Err(refused("the client_id URL must use https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused("the client_id URL may not carry a user name or password"));
    }
    if url.fragment().is_some() {
        return Err(refused("the client_id URL may not have a fragment"));
    }
    if url.host().is_none() || url.path() == "/" || url.path().is_empty() {
        return Err(refused("the client_id URL must have a host and a path"));
    }
    if url.as_str() != client_id {
        return Err(refused(format!("the client_id URL is not in its normal form ({url})")));
    }
    Ok(url)
}

// 127.0.0.1, [::1] or localhost: the hosts the loopback setting opens.
fn loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// The addresses to connect to: the host's, looked up here, refused if any of them is not a
/// public unicast address (loopback ones pass when `allow_loopback` is on; a plain http URL
/// needs them all loopback).
async fn resolve(url: &Url, allow_loopback: bool) -> Result<Vec<SocketAddr>, Refused> {
    let port = url.port_or_known_default().ok_or_else(|| refused("the client_id URL has no port"))?;
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(Host::Domain(name)) => tokio::net::lookup_host((name, port))
            .await
            .map_err(|e| unreachable(format!("the host {name} cannot be resolved"), Some(e.to_string())))?
            .collect(),
        None => Vec::new(),
    };
    let host = url.host_str().unwrap_or_default();
    if addrs.is_empty() {
        return Err(refused(format!("the host {host} has no address")));
    }
    for addr in &addrs {
        let class = classify(addr.ip());
        let allowed = match class {
            AddressClass::Public => url.scheme() == "https",
            AddressClass::Loopback => allow_loopback,
            AddressClass::Internal(_) => false,
        };
        if !allowed {
            let kind = match class {
                AddressClass::Internal(kind) => kind,
                AddressClass::Loopback => "loopback",
                AddressClass::Public => "public, over plain http",
            };
            return Err(refused(format!("the host {host} resolves to a {kind} address, which is not fetched")));
        }
    }
    Ok(addrs)
}

/// What kind of address an IP address is, for deciding whether to fetch from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AddressClass {
    /// Public unicast: may be fetched from.
    Public,
    /// This host (127.0.0.0/8, ::1, and their mapped forms).
    Loopback,
    /// Anything else that is not the public internet, and what kind.
    Internal(&'static str),
}

/// Classifies an address. IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) are
/// classified by it; outside 2000::/3 nothing in IPv6 is public.
pub(crate) fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(ip) => classify_v4(ip),
        IpAddr::V6(ip) => classify_v6(ip),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    use AddressClass::Internal;
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        (127, _, _) => AddressClass::Loopback,
        (0, _, _) => Internal("unspecified"),
        (10, _, _) | (192, 168, _) => Internal("private"),
        (172, b, _) if b & 0xf0 == 16 => Internal("private"),
        (100, b, _) if b & 0xc0 == 64 => Internal("shared (carrier-grade NAT)"),
        (169, 254, _) => Internal("link-local"),
        (192, 0, 0) | (192, 88, 99) => Internal("reserved"),
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Internal("documentation"),
        (198, b, _) if b & 0xfe == 18 => Internal("benchmarking"),
        (224..=239, _, _) => Internal("multicast"),
        (255, 255, 255) if ip.is_broadcast() => Internal("broadcast"),
        (240..=255, _, _) => Internal("reserved"),
        _ => AddressClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    use AddressClass::Internal;
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if ip.is_loopback() {
        return AddressClass::Loopback;
    }
    if ip.is_unspecified() {
        return Internal("unspecified");
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address inside.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return classify_v4(embedded(s[1], s[2]));
    }
    match s[0] {
        0xff00..=0xffff => Internal("multicast"),
        0xfe80..=0xfebf => Internal("link-local"),
        0xfec0..=0xfeff => Internal("site-local"),
        0xfc00..=0xfdff => Internal("unique-local"),
        // Outside 2000::/3 (IPv4-compatible, discard-only, local NAT64 …): nothing public.
        h if h & 0xe000 != 0x2000 => Internal("reserved"),
        0x2001 if s[1] == 0x0db8 => Internal("documentation"),
        0x3fff if s[1] < 0x1000 => Internal("documentation"),
        // 2001::/23: IETF protocol assignments, Teredo among them.
        0x2001 if s[1] < 0x0200 => Internal("reserved"),
        _ => AddressClass::Public,
    }
}

/// GETs the document from `addrs` (and nowhere else), reading at most `MAX_DOCUMENT_BYTES`.
async fn fetch(url: &Url, addrs: &[SocketAddr], cap: Duration) -> Result<Vec<u8>, Refused> {
    let failed = |e: reqwest::Error| {
        let why = if e.is_timeout() { too_slow(cap) } else { "the document could not be fetched".into() };
        unreachable(why, Some(chain(&e)))
    };
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(cap)
        .timeout(cap)
        .user_agent(concat!("mirobody-oauth/", env!("CARGO_PKG_VERSION")));
    if let Some(Host::Domain(name)) = url.host() {
        // Connect to the addresses checked, not to whatever a second lookup would answer.
        builder = builder.resolve_to_addrs(name, addrs);
    }
    let client = builder.build().map_err(failed)?;
    let mut response =
        client.get(url.as_str()).header(http::header::ACCEPT, "application/json").send().await.map_err(failed)?;
    let status = response.status();
    if status.is_redirection() {
        return Err(refused("the document's URL answered with a redirect, which is not followed"));
    }
    if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        return Err(unreachable(format!("the document's URL answered {}", status.as_u16()), None));
    }
    if status != reqwest::StatusCode::OK {
        return Err(refused(format!("the document's URL answered {}", status.as_u16())));
    }
    let content_type = response.headers().get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let essence = content_type.unwrap_or_default().split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if essence != "application/json" && !(essence.starts_with("application/") && essence.ends_with("+json")) {
        return Err(refused("the document is not served as application/json"));
    }
    let too_large = || refused(format!("the document is larger than {} KiB", MAX_DOCUMENT_BYTES / 1024));
    if response.content_length().is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            // Dropping the response closes the connection: nothing more is read.
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

// The document's fields this server uses; others are ignored.
#[derive(Deserialize)]
struct Document {
    client_id: String,
    client_name: Option<String>,
    client_uri: Option<String>,
    #[serde(default)]
    redirect_uris: Vec<String>,
    token_endpoint_auth_method: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
    client_secret: Option<IgnoredAny>,
}

/// Checks a document and makes the client it describes: its `client_id` is the URL exactly,
/// it is public (no secret: anyone can read the document), its redirect URIs are ones
/// registration would take.
fn parse_document(client_id: &str, body: &[u8]) -> Result<OAuthClient, Refused> {
    let document: Document = serde_json::from_slice(body)
        .map_err(|e| Refused { detail: Some(e.to_string()), ..refused("the document is not client metadata") })?;
    if document.client_id != client_id {
        return Err(refused("the document's client_id is not its URL"));
    }
    if document.client_secret.is_some() {
        return Err(refused("a metadata document may not hold a client_secret"));
    }
    match document.token_endpoint_auth_method.as_deref() {
        None | Some("none") => {}
        Some("client_secret_basic" | "client_secret_post" | "client_secret_jwt") => {
            return Err(refused(
                "a metadata document client cannot have a shared secret: use token_endpoint_auth_method none",
            ));
        }
        Some(_) => return Err(refused("only token_endpoint_auth_method none is supported")),
    }
    if document.redirect_uris.is_empty() || document.redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(refused(format!("the document must give from 1 to {MAX_REDIRECT_URIS} redirect_uris")));
    }
    for uri in &document.redirect_uris {
        acceptable_redirect_uri(uri).map_err(|why| refused(format!("redirect_uris: {why}")))?;
    }
    if document.grant_types.is_some_and(|g| g.iter().any(|g| g != "authorization_code" && g != "refresh_token")) {
        return Err(refused("grant_types may hold only authorization_code and refresh_token"));
    }
    if document.response_types.is_some_and(|r| r.iter().any(|r| r != "code")) {
        return Err(refused("response_types may hold only code"));
    }
    let client_uri = match document.client_uri {
        Some(uri) if uri.len() > MAX_URL_BYTES || !uri.starts_with("https://") => {
            return Err(refused("client_uri must be an https URL of at most 2000 bytes"));
        }
        other => other,
    };
    let client_name = document.client_name.map(|n| n.trim().chars().take(MAX_NAME_CHARS).collect::<String>());
    Ok(OAuthClient {
        client_id: client_id.to_owned(),
        client_name: client_name.filter(|n| !n.is_empty()),
        client_uri,
        redirect_uris: document.redirect_uris,
        secret_hash: None,
        registered_from: METADATA.to_owned(),
        // The fetch time: the copy is used until the cache TTL after it.
        created_at_ms: mirobody_core::clock::now_ms(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_classified() {
        use AddressClass::{Internal, Loopback, Public};
        let table: &[(&str, AddressClass)] = &[
            ("8.8.8.8", Public),
            ("1.1.1.1", Public),
            ("93.184.215.14", Public),
            ("172.32.0.1", Public),
            ("100.128.0.1", Public),
            ("127.0.0.1", Loopback),
            ("127.8.9.10", Loopback),
            ("0.0.0.0", Internal("unspecified")),
            ("0.1.2.3", Internal("unspecified")),
            ("10.0.0.1", Internal("private")),
            ("172.16.0.1", Internal("private")),
            ("172.31.255.255", Internal("private")),
            ("192.168.1.1", Internal("private")),
            ("100.64.0.1", Internal("shared (carrier-grade NAT)")),
            ("100.127.255.254", Internal("shared (carrier-grade NAT)")),
            ("169.254.169.254", Internal("link-local")),
            ("192.0.0.8", Internal("reserved")),
            ("192.0.2.1", Internal("documentation")),
            ("198.51.100.7", Internal("documentation")),
            ("203.0.113.9", Internal("documentation")),
            ("198.18.0.1", Internal("benchmarking")),
            ("224.0.0.1", Internal("multicast")),
            ("239.255.255.250", Internal("multicast")),
            ("255.255.255.255", Internal("broadcast")),
            ("240.0.0.1", Internal("reserved")),
            ("2606:4700:4700::1111", Public),
            ("2a00:1450:4001:81b::200e", Public),
            ("::1", Loopback),
            ("::", Internal("unspecified")),
            ("fe80::1", Internal("link-local")),
            ("febf::1", Internal("link-local")),
            ("fc00::1", Internal("unique-local")),
            ("fd12:3456::1", Internal("unique-local")),
            ("fec0::1", Internal("site-local")),
            ("ff02::1", Internal("multicast")),
            ("2001:db8::1", Internal("documentation")),
            ("3fff::1", Internal("documentation")),
            ("2001::1", Internal("reserved")),
            ("100::1", Internal("reserved")),
            ("::127.0.0.1", Internal("reserved")),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:10.0.0.1", Internal("private")),
            ("::ffff:169.254.169.254", Internal("link-local")),
            ("::ffff:8.8.8.8", Public),
            ("64:ff9b::a9fe:a9fe", Internal("link-local")),
            ("64:ff9b::808:808", Public),
            ("2002:c0a8:0101::1", Internal("private")),
            ("2002:0808:0808::1", Public),
        ];
        for (text, class) in table {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(classify(ip), *class, "{text}");
        }
    }

    // The fetch connects to the addresses it was given and looks nothing up again: a name
    // that never resolves (`.invalid`, RFC 2606) is reached at the address checked for it.
    #[tokio::test]
    async fn the_fetch_connects_only_to_the_checked_addresses() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route(
            "/c.json",
            axum::routing::get(|| async { ([(http::header::CONTENT_TYPE, "application/json")], "{}") }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let url = Url::parse(&format!("http://doc.invalid:{}/c.json", addr.port())).unwrap();
        let body = fetch(&url, &[addr], Duration::from_secs(5)).await.unwrap();
        assert_eq!(body, b"{}");
    }

    #[test]
    fn client_id_urls_are_checked_before_any_lookup() {
        for good in ["https://app.example/client.json", "https://app.example:8443/oauth/client?v=2"] {
            assert!(check_url(good, false).is_ok(), "{good}");
        }
        assert!(check_url("http://127.0.0.1:9/c.json", true).is_ok());
        assert!(check_url("http://localhost:9/c.json", true).is_ok());
        let long = format!("https://app.example/{}", "a".repeat(MAX_URL_BYTES));
        for bad in [
            "http://app.example/client.json",
            "http://127.0.0.1:9/c.json",
            "https://app.example",
            "https://app.example/",
            "https://user:pw@app.example/c.json",
            "https://user@app.example/c.json",
            "https://app.example/c.json#x",
            "https://app.example/a/../c.json",
            "https://APP.example/c.json",
            "https://app.example:443/c.json",
            "ftp://app.example/c.json",
            long.as_str(),
        ] {
            assert!(check_url(bad, false).is_err(), "{bad}");
        }
        assert!(check_url("http://app.example/c.json", true).is_err(), "the loopback setting opens only loopback");
    }

    #[test]
    fn documents_must_describe_a_public_client_at_their_own_url() {
        let url = "https://app.example/client.json";
        let doc = |extra: serde_json::Value| {
            let mut base = serde_json::json!({
                "client_id": url, "client_name": " App ", "redirect_uris": ["https://app.example/cb"],
            });
            base.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            base.to_string().into_bytes()
        };
        let client = parse_document(url, &doc(serde_json::json!({}))).unwrap();
        assert_eq!(client.client_name.as_deref(), Some("App"));
        assert_eq!(client.registered_from, METADATA);
        assert!(client.secret_hash.is_none());
        assert!(parse_document(url, &doc(serde_json::json!({"token_endpoint_auth_method": "none"}))).is_ok());
        for bad in [
            serde_json::json!({"client_id": "https://app.example/other.json"}),
            serde_json::json!({"token_endpoint_auth_method": "client_secret_basic"}),
            serde_json::json!({"token_endpoint_auth_method": "client_secret_post"}),
            serde_json::json!({"token_endpoint_auth_method": "private_key_jwt"}),
            serde_json::json!({"client_secret": "s"}),
            serde_json::json!({"redirect_uris": []}),
            serde_json::json!({"redirect_uris": ["javascript:alert(1)"]}),
            serde_json::json!({"redirect_uris": ["http://evil.example/cb"]}),
            serde_json::json!({"grant_types": ["client_credentials"]}),
            serde_json::json!({"response_types": ["token"]}),
            serde_json::json!({"client_uri": "http://app.example"}),
        ] {
            assert!(parse_document(url, &doc(bad.clone())).is_err(), "{bad}");
        }
        assert!(parse_document(url, b"[1]").is_err());
    }
}
