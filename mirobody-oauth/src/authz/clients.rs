//! Clients: the redirect URIs they may use, and authenticating them at the token endpoint.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, header};
use mirobody_ports::OAuthClient;
use subtle::ConstantTimeEq;
use url::{Host, Url};

/// The longest redirect URI kept.
pub(crate) const MAX_REDIRECT_URI_BYTES: usize = 2000;

// Schemes that run code or read files in a browser: never a redirect target.
const FORBIDDEN_SCHEMES: [&str; 5] = ["javascript", "data", "file", "vbscript", "blob"];

/// Whether `uri` may be registered as a redirect URI: absolute, no fragment, and https, or
/// http to a loopback host (a native app's local listener, RFC 8252 §7.3), or a private-use
/// scheme with a dot in it (`com.example.app:/cb`, RFC 8252 §7.1; `cursor://…` too).
pub(crate) fn acceptable_redirect_uri(uri: &str) -> Result<Url, String> {
    if uri.len() > MAX_REDIRECT_URI_BYTES {
        return Err(format!("a redirect URI may have at most {MAX_REDIRECT_URI_BYTES} bytes"));
    }
    let url = Url::parse(uri).map_err(|_| format!("'{uri}' is not an absolute URI"))?;
    if url.fragment().is_some() {
        return Err("a redirect URI may not have a fragment".into());
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" | "https" => Err("an http redirect URI must be to a loopback host (127.0.0.1, [::1], localhost)".into()),
        scheme if FORBIDDEN_SCHEMES.contains(&scheme) => Err(format!("the '{scheme}' scheme is not allowed")),
        _ => Ok(url),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// The registered redirect URI `requested` matches: exactly, or for a loopback http one,
/// exactly but for the port (RFC 8252 §7.3: a native app gets a port when it starts).
pub(crate) fn matching_redirect_uri<'a>(client: &'a OAuthClient, requested: &str) -> Option<&'a str> {
    if let Some(exact) = client.redirect_uris.iter().find(|uri| *uri == requested) {
        return Some(exact);
    }
    let wanted = Url::parse(requested).ok().filter(|u| u.scheme() == "http" && is_loopback(u))?;
    client.redirect_uris.iter().map(String::as_str).find(|registered| {
        Url::parse(registered).ok().is_some_and(|mut registered| {
            is_loopback(&registered) && registered.set_port(wanted.port()).is_ok() && registered == wanted
        })
    })
}

/// The domain a person sees for a client: the host of its first redirect URI (for a
/// loopback one, "this computer"), so a look-alike name cannot pass for another app.
pub(crate) fn display_domain(client: &OAuthClient, redirect_uri: Option<&str>) -> String {
    let uri = redirect_uri.or_else(|| client.redirect_uris.first().map(String::as_str)).unwrap_or_default();
    match Url::parse(uri) {
        Ok(url) if url.scheme() == "http" && is_loopback(&url) => "an app on this computer (localhost)".into(),
        Ok(url) => match url.host_str() {
            Some(host) => host.to_owned(),
            None => format!("{}: (an app on this device)", url.scheme()),
        },
        Err(_) => "unknown".into(),
    }
}

/// What a request to the token or revocation endpoint says of its client.
#[derive(Debug, Default)]
pub(crate) struct ClientCredentials {
    pub(crate) client_id: Option<String>,
    pub(crate) secret: Option<String>,
}

/// Why a client is not accepted (answered `invalid_client`).
#[derive(Debug)]
pub(crate) struct InvalidClient(pub(crate) &'static str);

impl ClientCredentials {
    /// `Authorization: Basic` (form-encoded id and secret, RFC 6749 §2.3.1), or the form's
    /// `client_id` and `client_secret`; both at once is refused.
    pub(crate) fn read(
        headers: &HeaderMap,
        form_id: Option<&str>,
        form_secret: Option<&str>,
    ) -> Result<Self, InvalidClient> {
        let basic = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        if let Some(value) = basic {
            let (scheme, encoded) =
                value.trim().split_once(' ').ok_or(InvalidClient("malformed Authorization header"))?;
            if !scheme.eq_ignore_ascii_case("basic") {
                return Err(InvalidClient("the token endpoint takes client credentials as Basic, not Bearer"));
            }
            if form_secret.is_some() {
                return Err(InvalidClient("client credentials given twice"));
            }
            let decoded = STANDARD.decode(encoded.trim()).map_err(|_| InvalidClient("malformed Basic credentials"))?;
            let text = String::from_utf8(decoded).map_err(|_| InvalidClient("malformed Basic credentials"))?;
            let (id, secret) = text.split_once(':').ok_or(InvalidClient("malformed Basic credentials"))?;
            let decode =
                |s: &str| form_urlencoded::parse(format!("v={s}").as_bytes()).next().map(|(_, v)| v.into_owned());
            let id = decode(id).unwrap_or_default();
            if form_id.is_some_and(|form| form != id) {
                return Err(InvalidClient("client_id differs from the Basic credentials"));
            }
            return Ok(ClientCredentials { client_id: Some(id), secret: decode(secret) });
        }
        Ok(ClientCredentials { client_id: form_id.map(str::to_owned), secret: form_secret.map(str::to_owned) })
    }

    /// Whether these credentials authenticate `client`: its secret for a confidential
    /// client (compared as hashes, in constant time), nothing for a public one.
    pub(crate) fn authenticate(&self, client: &OAuthClient) -> Result<(), InvalidClient> {
        match (&client.secret_hash, &self.secret) {
            (Some(expected), Some(given)) if bool::from(mirobody_auth::hash_secret(given).ct_eq(expected)) => Ok(()),
            (Some(_), _) => Err(InvalidClient("client authentication failed")),
            (None, Some(_)) => Err(InvalidClient("this client has no secret")),
            (None, None) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(uris: &[&str]) -> OAuthClient {
        OAuthClient {
            client_id: "c".into(),
            client_name: None,
            client_uri: None,
            redirect_uris: uris.iter().map(|u| (*u).to_owned()).collect(),
            secret_hash: None,
            registered_from: "test".into(),
            created_at_ms: 0,
        }
    }

    #[test]
    fn redirect_uris_that_may_be_registered() {
        for good in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:33418/",
            "http://localhost/cb",
            "http://[::1]:9/x",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
            "com.example.app:/cb",
        ] {
            assert!(acceptable_redirect_uri(good).is_ok(), "{good}");
        }
        for bad in [
            "http://example.com/cb",
            "javascript:alert(1)",
            "data:text/html,x",
            "https://a.example/cb#frag",
            "/relative",
            "file:///etc/passwd",
        ] {
            assert!(acceptable_redirect_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loopback_redirects_match_on_any_port_and_nothing_else_does() {
        let c = client(&["http://127.0.0.1/callback", "https://app.example/cb"]);
        assert_eq!(matching_redirect_uri(&c, "http://127.0.0.1:51234/callback"), Some("http://127.0.0.1/callback"));
        assert_eq!(matching_redirect_uri(&c, "https://app.example/cb"), Some("https://app.example/cb"));
        for other in [
            "http://127.0.0.1:51234/other",
            "https://app.example/cb/",
            "https://app.example:8443/cb",
            "https://app.example/cb?x=1",
            "https://evil.example/cb",
            "http://127.0.0.1.evil.example/callback",
        ] {
            assert_eq!(matching_redirect_uri(&c, other), None, "{other}");
        }
    }

    #[test]
    fn basic_credentials_are_form_decoded_and_checked() {
        let mut headers = HeaderMap::new();
        headers
            .insert(header::AUTHORIZATION, format!("Basic {}", STANDARD.encode("my%20id:s%3Acret")).parse().unwrap());
        let credentials = ClientCredentials::read(&headers, None, None).unwrap();
        assert_eq!(credentials.client_id.as_deref(), Some("my id"));
        assert_eq!(credentials.secret.as_deref(), Some("s:cret"));
        let mut confidential = client(&[]);
        confidential.secret_hash = Some(mirobody_auth::hash_secret("s:cret"));
        assert!(credentials.authenticate(&confidential).is_ok());
        confidential.secret_hash = Some(mirobody_auth::hash_secret("other"));
        assert!(credentials.authenticate(&confidential).is_err());
        assert!(
            ClientCredentials::default().authenticate(&confidential).is_err(),
            "no secret for a confidential client"
        );
        headers.insert(header::AUTHORIZATION, "Bearer x".parse().unwrap());
        assert!(ClientCredentials::read(&headers, None, None).is_err());
    }
}
