//! Encryption at rest for stored files: AES-256-GCM, with the object key as associated data so
//! a ciphertext moved to another key does not decrypt.
//!
//! Layout: `MBE1` (4 bytes), a random 12-byte nonce, then the ciphertext and its 16-byte tag.
//! Objects without the marker are read as plain bytes (stored before encryption was turned on).

use std::fmt;

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use base64::Engine;
use rand::RngCore;

const MAGIC: &[u8; 4] = b"MBE1";
const NONCE_LEN: usize = 12;

/// Why a [`FileCipher`] could not be made or could not open stored bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CipherError {
    /// The configured key is not 32 bytes given as base64 or 64 hex digits.
    #[error("file_encryption_key must be 32 bytes, as base64 or 64 hex digits")]
    InvalidKey,
    /// The bytes carry no encryption marker: stored before encryption was turned on, or not
    /// made by [`FileCipher::encrypt`].
    #[error("the object is not encrypted")]
    NotEncrypted,
    /// The bytes carry the marker but do not open: another key, another object key, or damage.
    #[error("the object could not be decrypted (wrong file_encryption_key, or damaged)")]
    Undecryptable,
}

/// Encrypts and decrypts stored files with one key.
#[derive(Clone)]
pub struct FileCipher {
    cipher: Aes256Gcm,
}

impl fmt::Debug for FileCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FileCipher(<redacted>)")
    }
}

impl FileCipher {
    /// A cipher from a 32-byte key given as base64 (standard or URL-safe, padded or not) or as
    /// 64 hex digits.
    pub fn from_config(key: &str) -> Result<Self, CipherError> {
        let key = key.trim();
        let bytes = hex::decode(key)
            .ok()
            .filter(|b| b.len() == 32)
            .or_else(|| base64::engine::general_purpose::STANDARD.decode(key).ok())
            .or_else(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(key.trim_end_matches('=')).ok())
            .filter(|b| b.len() == 32)
            .ok_or(CipherError::InvalidKey)?;
        Ok(FileCipher { cipher: Aes256Gcm::new_from_slice(&bytes).map_err(|_| CipherError::InvalidKey)? })
    }

    /// Whether stored bytes carry the encryption marker.
    pub fn is_encrypted(bytes: &[u8]) -> bool {
        bytes.len() >= MAGIC.len() + NONCE_LEN + 16 && bytes.starts_with(MAGIC)
    }

    /// Encrypts `plain` for the object `key`.
    pub fn encrypt(&self, key: &str, plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: plain, aad: key.as_bytes() })
            .expect("AES-GCM encryption of an in-memory buffer cannot fail");
        let mut out = Vec::with_capacity(MAGIC.len() + NONCE_LEN + sealed.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// Decrypts what [`FileCipher::encrypt`] made for the same `key`.
    pub fn decrypt(&self, key: &str, stored: &[u8]) -> Result<Vec<u8>, CipherError> {
        if !FileCipher::is_encrypted(stored) {
            return Err(CipherError::NotEncrypted);
        }
        let (nonce, sealed) = stored[MAGIC.len()..].split_at(NONCE_LEN);
        self.cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: key.as_bytes() })
            .map_err(|_| CipherError::Undecryptable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn round_trips_and_binds_the_key() {
        let c = FileCipher::from_config(KEY).unwrap();
        let sealed = c.encrypt("a", b"hello");
        assert!(FileCipher::is_encrypted(&sealed));
        assert!(!sealed.windows(5).any(|w| w == b"hello"));
        assert_eq!(c.decrypt("a", &sealed).unwrap(), b"hello");
        assert_eq!(c.decrypt("b", &sealed), Err(CipherError::Undecryptable), "moved to another key");
        let other = FileCipher::from_config(&"11".repeat(32)).unwrap();
        assert_eq!(other.decrypt("a", &sealed), Err(CipherError::Undecryptable), "another key");
        assert_eq!(c.decrypt("a", b"hello, in plain bytes"), Err(CipherError::NotEncrypted));
    }

    #[test]
    fn keys_in_base64_or_hex_of_32_bytes() {
        let b64 = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
        assert!(FileCipher::from_config(&b64).is_ok());
        assert!(matches!(FileCipher::from_config("short"), Err(CipherError::InvalidKey)));
        assert!(matches!(FileCipher::from_config(&"ab".repeat(31)), Err(CipherError::InvalidKey)));
    }
}
