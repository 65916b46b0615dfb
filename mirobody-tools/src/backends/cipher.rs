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
    pub fn from_config(key: &str) -> Result<Self, String> {
        let key = key.trim();
        let bytes = crate::text::unhex(key)
            .filter(|b| b.len() == 32)
            .or_else(|| base64::engine::general_purpose::STANDARD.decode(key).ok())
            .or_else(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(key.trim_end_matches('=')).ok())
            .filter(|b| b.len() == 32)
            .ok_or("file_encryption_key must be 32 bytes, as base64 or 64 hex digits")?;
        Ok(FileCipher { cipher: Aes256Gcm::new_from_slice(&bytes).map_err(|e| e.to_string())? })
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
    pub fn decrypt(&self, key: &str, stored: &[u8]) -> Result<Vec<u8>, String> {
        if !FileCipher::is_encrypted(stored) {
            return Err("the object is not encrypted".into());
        }
        let (nonce, sealed) = stored[MAGIC.len()..].split_at(NONCE_LEN);
        self.cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: key.as_bytes() })
            .map_err(|_| "the object could not be decrypted (wrong file_encryption_key, or damaged)".into())
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
        assert!(c.decrypt("b", &sealed).is_err(), "moved to another key");
        let other = FileCipher::from_config(&"11".repeat(32)).unwrap();
        assert!(other.decrypt("a", &sealed).is_err(), "another key");
    }

    #[test]
    fn keys_in_base64_or_hex_of_32_bytes() {
        let b64 = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
        assert!(FileCipher::from_config(&b64).is_ok());
        assert!(FileCipher::from_config("short").is_err());
        assert!(FileCipher::from_config(&"ab".repeat(31)).is_err());
    }
}
