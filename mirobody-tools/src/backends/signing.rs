//! Signed, expiring read URLs for the local object store: HMAC-SHA256 over the key and the
//! expiry, checked by the server route that serves them.
//!
//! A URL is `<base>/<key>?expires=<unix seconds>&signature=<hex>`. The server strips `<base>`
//! and hands the rest of the path and the query string to [`UrlSigner::verify`], which returns
//! the object key to serve only when the signature matches and the time has not passed.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::text::{hex, unhex};

type HmacSha256 = Hmac<Sha256>;

/// Why a signed URL was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignedUrlError {
    /// The path or query is not one this server made (missing or malformed parts).
    #[error("malformed signed URL")]
    Malformed,
    /// The signature does not match (tampered with, or made with another key).
    #[error("invalid signature")]
    BadSignature,
    /// The URL was valid but its time has passed.
    #[error("the link has expired")]
    Expired,
}

/// Makes and checks signed URLs with one secret key.
#[derive(Clone)]
pub struct UrlSigner {
    key: Vec<u8>,
    base: String,
}

impl fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UrlSigner").field("base", &self.base).field("key", &"<redacted>").finish()
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl UrlSigner {
    /// A signer with this key (at least 32 bytes) whose URLs start with `base` (for example
    /// `https://mirobody.example/files`).
    pub fn new(key: impl Into<Vec<u8>>, base: impl Into<String>) -> Result<Self, String> {
        let key = key.into();
        if key.len() < 32 {
            return Err("signing_key must be at least 32 bytes".into());
        }
        Ok(UrlSigner { key, base: base.into().trim_end_matches('/').to_owned() })
    }

    /// Where the URLs point (no trailing slash).
    pub fn base(&self) -> &str {
        &self.base
    }

    fn mac(&self, key: &str, expires: u64) -> HmacSha256 {
        // new_from_slice accepts any key length for HMAC.
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(b"mirobody-signed-url-v1\n");
        mac.update(key.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// A URL that reads `key` until `expires_in` from now.
    pub fn sign(&self, key: &str, expires_in: Duration) -> String {
        let expires = unix_now().saturating_add(expires_in.as_secs().max(1));
        let signature = hex(&self.mac(key, expires).finalize().into_bytes());
        format!("{}/{key}?expires={expires}&signature={signature}", self.base)
    }

    /// The object key of a signed URL, given its path below the base (`key`, with or without a
    /// leading `/`) and its query string (with or without `?`).
    pub fn verify(&self, path: &str, query: &str) -> Result<String, SignedUrlError> {
        let key = path.trim_start_matches('/');
        if !super::storage::valid_key(key) {
            return Err(SignedUrlError::Malformed);
        }
        let (mut expires, mut signature) = (None, None);
        for pair in query.trim_start_matches('?').split('&') {
            match pair.split_once('=') {
                Some(("expires", v)) if expires.is_none() => expires = v.parse::<u64>().ok(),
                Some(("signature", v)) if signature.is_none() => signature = unhex(v),
                _ => {}
            }
        }
        let (Some(expires), Some(signature)) = (expires, signature) else {
            return Err(SignedUrlError::Malformed);
        };
        // Constant-time comparison.
        self.mac(key, expires).verify_slice(&signature).map_err(|_| SignedUrlError::BadSignature)?;
        if unix_now() >= expires {
            return Err(SignedUrlError::Expired);
        }
        Ok(key.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> UrlSigner {
        UrlSigner::new(vec![7u8; 32], "http://localhost:8080/files/").unwrap()
    }

    fn split(url: &str) -> (&str, &str) {
        let rest = url.strip_prefix("http://localhost:8080/files").unwrap();
        rest.split_once('?').unwrap()
    }

    #[test]
    fn a_signed_url_verifies_to_its_key() {
        let url = signer().sign("abc/report.pdf", Duration::from_secs(60));
        let (path, query) = split(&url);
        assert_eq!(signer().verify(path, query), Ok("abc/report.pdf".to_owned()));
    }

    #[test]
    fn tampering_is_refused() {
        let url = signer().sign("abc", Duration::from_secs(60));
        let (_, query) = split(&url);
        assert_eq!(signer().verify("/abd", query), Err(SignedUrlError::BadSignature));
        let later = query.replace("expires=", "expires=9");
        assert_eq!(signer().verify("/abc", &later), Err(SignedUrlError::BadSignature));
        let other = UrlSigner::new(vec![8u8; 32], "http://localhost:8080/files").unwrap();
        assert_eq!(other.verify("/abc", query), Err(SignedUrlError::BadSignature));
        assert_eq!(signer().verify("/abc", "expires=1"), Err(SignedUrlError::Malformed));
        assert_eq!(signer().verify("/../etc/passwd", query), Err(SignedUrlError::Malformed));
    }

    #[test]
    fn an_expired_url_is_refused() {
        let s = signer();
        let expires = unix_now() - 1;
        let signature = hex(&s.mac("abc", expires).finalize().into_bytes());
        assert_eq!(s.verify("abc", &format!("expires={expires}&signature={signature}")), Err(SignedUrlError::Expired));
    }

    #[test]
    fn short_keys_are_refused_and_debug_hides_the_key() {
        assert!(UrlSigner::new(vec![1u8; 31], "x").is_err());
        assert!(!format!("{:?}", signer()).contains("7, 7"));
    }
}
