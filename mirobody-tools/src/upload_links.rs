//! The short-lived links a person is given to a page where they can upload from any browser.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::backends::SignedUrlError;
use crate::text::{hex, unhex};

type HmacSha256 = Hmac<Sha256>;

/// Short-lived signed links to the upload page: whoever holds one may upload files as the
/// person it was made for until it expires, and nothing else.
///
/// A link is `<base>/<token>`, the token `<user id, base64url>.<expiry, unix seconds>.<HMAC>`.
/// The page it opens is the same for every link; the token stays in the URL.
#[derive(Clone)]
pub struct UploadLinks {
    key: Vec<u8>,
    base: String,
    lifetime: Duration,
}

impl std::fmt::Debug for UploadLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadLinks").field("base", &self.base).field("lifetime", &self.lifetime).finish()
    }
}

/// The longest user id an upload link carries.
const MAX_LINK_USER_BYTES: usize = 256;

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl UploadLinks {
    /// Links under `base` (for example `https://mirobody.example/upload`) signed with `key`
    /// (at least 32 bytes), each valid for `lifetime`.
    pub fn new(key: impl Into<Vec<u8>>, base: impl Into<String>, lifetime: Duration) -> Result<Self, String> {
        let key = key.into();
        if key.len() < 32 {
            return Err("the upload-link key must be at least 32 bytes".into());
        }
        Ok(UploadLinks { key, base: base.into().trim_end_matches('/').to_owned(), lifetime })
    }

    /// How long a link works.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    fn mac(&self, user: &str, expires: u64) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(b"mirobody-upload-link-v1\n");
        mac.update(user.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// A link for `user_id` and when it expires (unix seconds); `None` for an id too long to
    /// carry.
    pub fn link(&self, user_id: &str) -> Option<(String, u64)> {
        if user_id.is_empty() || user_id.len() > MAX_LINK_USER_BYTES {
            return None;
        }
        let expires = unix_now().saturating_add(self.lifetime.as_secs().max(1));
        let signature = hex(&self.mac(user_id, expires).finalize().into_bytes());
        Some((format!("{}/{}.{expires}.{signature}", self.base, URL_SAFE_NO_PAD.encode(user_id)), expires))
    }

    /// The user a link's token was made for, or why it is refused (checked in constant time).
    pub fn verify(&self, token: &str) -> Result<String, SignedUrlError> {
        let mut parts = token.split('.');
        let (Some(user), Some(expires), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(SignedUrlError::Malformed);
        };
        let user = URL_SAFE_NO_PAD.decode(user).ok().and_then(|b| String::from_utf8(b).ok());
        let (Some(user), Ok(expires), Some(signature)) = (user, expires.parse::<u64>(), unhex(signature)) else {
            return Err(SignedUrlError::Malformed);
        };
        if user.is_empty() || user.len() > MAX_LINK_USER_BYTES {
            return Err(SignedUrlError::Malformed);
        }
        self.mac(&user, expires).verify_slice(&signature).map_err(|_| SignedUrlError::BadSignature)?;
        if unix_now() >= expires {
            return Err(SignedUrlError::Expired);
        }
        Ok(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(lifetime: u64) -> UploadLinks {
        UploadLinks::new(vec![9u8; 32], "https://m.example/upload/", Duration::from_secs(lifetime)).unwrap()
    }

    fn token(url: &str) -> &str {
        url.strip_prefix("https://m.example/upload/").unwrap()
    }

    #[test]
    fn a_link_verifies_to_its_user_only() {
        let (url, expires) = links(600).link("alice@example.com").unwrap();
        assert!(expires > unix_now() + 590);
        assert_eq!(links(600).verify(token(&url)), Ok("alice@example.com".to_owned()));
        let other = UploadLinks::new(vec![8u8; 32], "https://m.example/upload", Duration::from_secs(600)).unwrap();
        assert_eq!(other.verify(token(&url)), Err(SignedUrlError::BadSignature));
        // Another user's id with this link's signature.
        let mut parts: Vec<&str> = token(&url).split('.').collect();
        let bob = URL_SAFE_NO_PAD.encode("bob");
        parts[0] = &bob;
        assert_eq!(links(600).verify(&parts.join(".")), Err(SignedUrlError::BadSignature));
        for bad in ["", "a.b", "a.1.zz", "a.1.00.extra", &format!("{bob}.x.00")] {
            assert_eq!(links(600).verify(bad), Err(SignedUrlError::Malformed), "{bad}");
        }
        assert!(links(600).link(&"u".repeat(MAX_LINK_USER_BYTES + 1)).is_none());
    }

    #[test]
    fn an_expired_link_is_refused() {
        let l = links(600);
        let expires = unix_now() - 1;
        let signature = hex(&l.mac("alice", expires).finalize().into_bytes());
        let token = format!("{}.{expires}.{signature}", URL_SAFE_NO_PAD.encode("alice"));
        assert_eq!(l.verify(&token), Err(SignedUrlError::Expired));
    }
}
