//! One signed-token scheme for everything a server hands out and takes back later: signed file
//! URLs, MCP `requestState`s, and whatever comes next. A token says *what it is for* (a
//! [`Purpose`]), *what it names* (the subject, any bytes) and *until when* (unix seconds), and
//! its signature is HMAC-SHA256 under a key of at least [`Signer::MIN_KEY_LEN`] bytes over
//!
//! ```text
//! purpose '\n' subject '\n' expires_at (decimal)
//! ```
//!
//! A purpose's label holds no line feed, and the expiry's digits hold none, so two different
//! (purpose, subject, expiry) triples never sign the same bytes: a token made for one purpose
//! is never accepted for another, whatever its subject. How a token is carried (a query string,
//! `subject.expiry.mac`) is for its user to choose; the signature and its check are here.
//!
//! ```
//! use std::time::Duration;
//! use mirobody_core::signed::{Purpose, Signer, TokenError};
//!
//! const DOWNLOAD: Purpose = Purpose::new("example-download-v1");
//! const UNSUBSCRIBE: Purpose = Purpose::new("example-unsubscribe-v1");
//!
//! let signer = Signer::new(*b"a secret key of at least 32 bytes").unwrap();
//! let expires_at = Signer::expires_in(Duration::from_secs(60));
//! let signature = signer.sign(DOWNLOAD, b"report.pdf", expires_at);
//! assert_eq!(signer.verify(DOWNLOAD, b"report.pdf", expires_at, &signature), Ok(()));
//! assert_eq!(signer.verify(UNSUBSCRIBE, b"report.pdf", expires_at, &signature), Err(TokenError::BadSignature));
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::clock::now_secs;

type HmacSha256 = Hmac<Sha256>;

/// What a token is for, signed into it: a token made for one purpose never verifies for
/// another. Labels are fixed at compile time and name a version (`"mirobody-signed-url-v1"`),
/// so that a new format is a new label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Purpose(&'static str);

impl Purpose {
    /// A purpose named `label`: not empty and without a line feed (refused at compile time
    /// in a `const`).
    pub const fn new(label: &'static str) -> Purpose {
        let bytes = label.as_bytes();
        assert!(!bytes.is_empty(), "a purpose needs a label");
        let mut i = 0;
        while i < bytes.len() {
            assert!(bytes[i] != b'\n', "a purpose's label holds no line feed");
            i += 1;
        }
        Purpose(label)
    }

    /// The label.
    pub const fn label(&self) -> &'static str {
        self.0
    }
}

/// A key too short to sign with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a signing key must be at least {min} bytes, not {len}", min = Signer::MIN_KEY_LEN)]
pub struct ShortKey {
    /// The length given, in bytes.
    pub len: usize,
}

/// Why a token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The signature does not match: altered, made with another key, or for another purpose.
    #[error("invalid signature")]
    BadSignature,
    /// The signature matches but the token's time has passed.
    #[error("the token has expired")]
    Expired,
}

/// Signs and verifies tokens with one secret key. Cheap to clone; `Debug` never shows the key.
#[derive(Clone)]
pub struct Signer {
    key: Arc<[u8]>,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Signer(<redacted>)")
    }
}

impl Signer {
    /// The shortest key accepted, in bytes: the output size of SHA-256, below which HMAC's key
    /// is the weaker part.
    pub const MIN_KEY_LEN: usize = 32;

    /// A signer with `key`, at least [`Signer::MIN_KEY_LEN`] bytes.
    pub fn new(key: impl Into<Vec<u8>>) -> Result<Signer, ShortKey> {
        let key = key.into();
        if key.len() < Self::MIN_KEY_LEN {
            return Err(ShortKey { len: key.len() });
        }
        Ok(Signer { key: key.into() })
    }

    /// The expiry (unix seconds) of a token that lasts `lifetime` from now, rounded up to
    /// whole seconds; a zero lifetime has already expired.
    pub fn expires_in(lifetime: Duration) -> u64 {
        let secs = lifetime.as_secs().saturating_add(u64::from(lifetime.subsec_nanos() > 0));
        now_secs().saturating_add(secs)
    }

    fn mac(&self, purpose: Purpose, subject: &[u8], expires_at: u64) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(purpose.0.as_bytes());
        mac.update(b"\n");
        mac.update(subject);
        mac.update(b"\n");
        mac.update(expires_at.to_string().as_bytes());
        mac
    }

    /// The signature of `subject` for `purpose` until `expires_at` (unix seconds).
    pub fn sign(&self, purpose: Purpose, subject: &[u8], expires_at: u64) -> [u8; 32] {
        self.mac(purpose, subject, expires_at).finalize().into_bytes().into()
    }

    /// `Ok` when `signature` is [`sign`](Self::sign)'s for these three under this key
    /// (compared in constant time) and `expires_at` has not passed.
    pub fn verify(
        &self,
        purpose: Purpose,
        subject: &[u8],
        expires_at: u64,
        signature: &[u8],
    ) -> Result<(), TokenError> {
        self.mac(purpose, subject, expires_at).verify_slice(signature).map_err(|_| TokenError::BadSignature)?;
        if now_secs() >= expires_at {
            return Err(TokenError::Expired);
        }
        Ok(())
    }

    /// A key of its own for `purpose` (HMAC-SHA256 of the label under this key), for a use
    /// that needs key material rather than tokens (an encryption key, say). It never equals a
    /// token's signature: a token's signed bytes hold two line feeds, a label none.
    pub fn derive_key(&self, purpose: Purpose) -> [u8; 32] {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(purpose.0.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: Purpose = Purpose::new("test-file-v1");
    const STATE: Purpose = Purpose::new("test-state-v1");

    fn signer(byte: u8) -> Signer {
        Signer::new(vec![byte; 32]).unwrap()
    }

    fn later() -> u64 {
        Signer::expires_in(Duration::from_secs(60))
    }

    #[test]
    fn a_token_verifies_for_its_purpose_subject_and_expiry() {
        let expires_at = later();
        let signature = signer(1).sign(FILE, b"a/b.pdf", expires_at);
        assert_eq!(signer(1).verify(FILE, b"a/b.pdf", expires_at, &signature), Ok(()));
    }

    #[test]
    fn a_token_for_one_purpose_is_refused_for_another() {
        let expires_at = later();
        let signature = signer(1).sign(FILE, b"x", expires_at);
        assert_eq!(signer(1).verify(STATE, b"x", expires_at, &signature), Err(TokenError::BadSignature));
    }

    #[test]
    fn an_expired_token_is_refused_after_its_signature_is_checked() {
        let now = now_secs();
        let signature = signer(1).sign(FILE, b"x", now);
        assert_eq!(signer(1).verify(FILE, b"x", now, &signature), Err(TokenError::Expired));
        let past = now - 1;
        assert_eq!(signer(1).verify(FILE, b"x", past, &signature), Err(TokenError::BadSignature), "expiry moved");
        let zero = Signer::expires_in(Duration::ZERO);
        assert_eq!(signer(1).verify(FILE, b"x", zero, &signer(1).sign(FILE, b"x", zero)), Err(TokenError::Expired));
        assert_eq!(Signer::expires_in(Duration::from_millis(1)), now_secs() + 1, "rounded up");
    }

    #[test]
    fn tampering_and_other_keys_are_refused() {
        let expires_at = later();
        let signature = signer(1).sign(FILE, b"abc", expires_at);
        assert_eq!(signer(1).verify(FILE, b"abd", expires_at, &signature), Err(TokenError::BadSignature));
        assert_eq!(signer(1).verify(FILE, b"abc", expires_at + 1, &signature), Err(TokenError::BadSignature));
        let mut flipped = signature;
        flipped[0] ^= 1;
        assert_eq!(signer(1).verify(FILE, b"abc", expires_at, &flipped), Err(TokenError::BadSignature));
        assert_eq!(signer(1).verify(FILE, b"abc", expires_at, &signature[..31]), Err(TokenError::BadSignature));
        assert_eq!(signer(2).verify(FILE, b"abc", expires_at, &signature), Err(TokenError::BadSignature));
    }

    #[test]
    fn short_keys_are_refused_and_debug_hides_the_key() {
        assert_eq!(Signer::new(vec![7u8; 31]).unwrap_err(), ShortKey { len: 31 });
        assert!(Signer::new(vec![7u8; 32]).is_ok());
        assert!(!format!("{:?}", signer(7)).contains('7'));
    }

    #[test]
    fn derived_keys_differ_by_purpose_and_by_key() {
        assert_ne!(signer(1).derive_key(FILE), signer(1).derive_key(STATE));
        assert_ne!(signer(1).derive_key(FILE), signer(2).derive_key(FILE));
        assert_eq!(signer(1).derive_key(FILE), signer(1).derive_key(FILE));
    }
}
