//! Signed, expiring read URLs for the local object store: core's signed token
//! ([`mirobody_core::signed::Signer`]) for the purpose `mirobody-signed-url-v1`, the object key
//! as its subject, checked by the server route that serves them.
//!
//! A URL is `<base>/<key>?expires=<unix seconds>&signature=<hex>`. The server strips `<base>`
//! and hands the rest of the path and the query string to [`UrlSigner::verify`], which returns
//! the object key to serve only when the signature matches and the time has not passed.

use std::fmt;
use std::time::Duration;

use mirobody_core::signed::{Purpose, ShortKey, Signer, TokenError};

// The label the URLs of this module have always been signed under, so that URLs made before
// the signed-token type was shared still verify.
const SIGNED_URL: Purpose = Purpose::new("mirobody-signed-url-v1");

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
    signer: Signer,
    base: String,
}

impl fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UrlSigner").field("base", &self.base).field("key", &"<redacted>").finish()
    }
}

impl UrlSigner {
    /// A signer with this key (at least 32 bytes) whose URLs start with `base` (for example
    /// `https://mirobody.example/files`); a shorter key is refused with its length.
    pub fn new(key: impl Into<Vec<u8>>, base: impl Into<String>) -> Result<Self, ShortKey> {
        let signer = Signer::new(key)?;
        Ok(UrlSigner { signer, base: base.into().trim_end_matches('/').to_owned() })
    }

    /// Where the URLs point (no trailing slash).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// A URL that reads `key` until `expires_in` from now (a second at least).
    pub fn sign(&self, key: &str, expires_in: Duration) -> String {
        let expires = Signer::expires_in(expires_in.max(Duration::from_secs(1)));
        let signature = hex::encode(self.signer.sign(SIGNED_URL, key.as_bytes(), expires));
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
                Some(("signature", v)) if signature.is_none() => signature = hex::decode(v).ok(),
                _ => {}
            }
        }
        let (Some(expires), Some(signature)) = (expires, signature) else {
            return Err(SignedUrlError::Malformed);
        };
        match self.signer.verify(SIGNED_URL, key.as_bytes(), expires, &signature) {
            Ok(()) => Ok(key.to_owned()),
            Err(TokenError::Expired) => Err(SignedUrlError::Expired),
            Err(_) => Err(SignedUrlError::BadSignature),
        }
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
        let expires = mirobody_core::clock::now_secs() - 1;
        let signature = hex::encode(s.signer.sign(SIGNED_URL, b"abc", expires));
        assert_eq!(s.verify("abc", &format!("expires={expires}&signature={signature}")), Err(SignedUrlError::Expired));
    }

    #[test]
    fn urls_signed_before_the_shared_token_type_still_verify() {
        // HMAC-SHA256 under 32 bytes of 7 of "mirobody-signed-url-v1\nabc\n4102444800", as the
        // module's own HMAC wrote it before it used core's `Signer` (expiry: 2100-01-01).
        let old = "expires=4102444800&signature=f5fe5d03dd0a46040dc89005dfbf58fc96c6e7c36e9ed070c8380e5a41085d84";
        assert_eq!(signer().verify("/abc", old), Ok("abc".to_owned()));
    }

    #[test]
    fn short_keys_are_refused_and_debug_hides_the_key() {
        assert!(matches!(UrlSigner::new(vec![1u8; 31], "x"), Err(ShortKey { len: 31 })));
        assert!(!format!("{:?}", signer()).contains("7, 7"));
    }
}
