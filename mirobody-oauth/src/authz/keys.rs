//! The ES256 key tokens are signed with: kept in a PKCS#8 PEM file, made at first start, and
//! published as a JWK.

use std::path::Path;

use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::{EncodePrivateKey, LineEnding};

/// Why the signing key cannot be loaded or made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The file cannot be read or written.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The file holds no P-256 PKCS#8 private key.
    #[error("{0}: not a P-256 private key in PKCS#8 PEM ('-----BEGIN PRIVATE KEY-----')")]
    NotAKey(String),
}

/// The key access tokens are signed with, and its public half as a JWK (its `kid` is the
/// RFC 7638 thumbprint).
#[derive(Clone)]
pub struct SigningKey {
    encoding: EncodingKey,
    jwk: Jwk,
    kid: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl SigningKey {
    /// The key in `pem` (PKCS#8 `PRIVATE KEY`, P-256).
    pub fn from_pem(pem: &[u8], origin: &str) -> Result<Self, KeyError> {
        // Before jsonwebtoken's first use, which fixes its provider for the process.
        mirobody_auth::install_jwt_crypto();
        let encoding = EncodingKey::from_ec_pem(pem).map_err(|_| KeyError::NotAKey(origin.to_owned()))?;
        let mut jwk =
            Jwk::from_encoding_key(&encoding, Algorithm::ES256).map_err(|_| KeyError::NotAKey(origin.to_owned()))?;
        let kid = jwk.thumbprint(ThumbprintHash::SHA256).map_err(|_| KeyError::NotAKey(origin.to_owned()))?;
        jwk.common.key_id = Some(kid.clone());
        Ok(SigningKey { encoding, jwk, kid })
    }

    /// The key in `path`; when there is no such file, a new key written there (owner-only,
    /// atomically: of two processes starting together, both end with the one that landed).
    pub fn load_or_create(path: &Path) -> Result<Self, KeyError> {
        let file_error = |message: String| KeyError::File { path: path.display().to_string(), message };
        for _ in 0..2 {
            match std::fs::read(path) {
                Ok(pem) => return Self::from_pem(&pem, &path.display().to_string()),
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(file_error(e.to_string())),
                Err(_) => {}
            }
            let pem = generate_pem().map_err(file_error)?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| file_error(e.to_string()))?;
            }
            match write_new_private(path, pem.as_bytes()) {
                Ok(()) => return Self::from_pem(pem.as_bytes(), &path.display().to_string()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(file_error(e.to_string())),
            }
        }
        Err(file_error("keeps changing; is another server writing it?".into()))
    }

    /// The key in `path`, which must exist (a previous key, kept to verify what it signed).
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let pem = std::fs::read(path)
            .map_err(|e| KeyError::File { path: path.display().to_string(), message: e.to_string() })?;
        Self::from_pem(&pem, &path.display().to_string())
    }

    /// Rotates the key in `path`: it moves to `previous` (replacing what was there), and a new
    /// key is made in `path`; the new key is returned. Servers that load both (the new one to
    /// sign, the previous one to verify) keep taking tokens signed before the rotation until
    /// they expire. Running servers sign with the new key once restarted.
    ///
    /// ```
    /// use mirobody_oauth::SigningKey;
    ///
    /// let dir = std::env::temp_dir().join(format!("mirobody-rotate-doc-{}", std::process::id()));
    /// let (current, previous) = (dir.join("oauth-es256.pem"), dir.join("oauth-es256.previous.pem"));
    /// let old = SigningKey::load_or_create(&current).unwrap();
    /// let new = SigningKey::rotate(&current, &previous).unwrap();
    /// assert_ne!(old.kid(), new.kid());
    /// assert_eq!(SigningKey::load(&previous).unwrap().kid(), old.kid());
    /// assert_eq!(SigningKey::load(&current).unwrap().kid(), new.kid());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn rotate(path: &Path, previous: &Path) -> Result<Self, KeyError> {
        let file_error = |path: &Path, e: std::io::Error| KeyError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        // The current key must be a key: a rotation never throws away a file it cannot read.
        Self::load(path)?;
        std::fs::rename(path, previous).map_err(|e| file_error(previous, e))?;
        Self::load_or_create(path)
    }

    /// The key id tokens name.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as a JWK (with `kid`, `alg` and `use`).
    pub fn public_jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// Signs claims as an ES256 JWT naming this key.
    pub fn sign(&self, claims: &serde_json::Value) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding)
    }
}

// A fresh P-256 key as PKCS#8 PEM.
fn generate_pem() -> Result<String, String> {
    loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| e.to_string())?;
        // A random 32 bytes is a valid scalar but with odds of about 2^-32 against.
        if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
            return secret.to_pkcs8_pem(LineEnding::LF).map(|pem| pem.to_string()).map_err(|e| e.to_string());
        }
    }
}

// Creates `path` with `bytes`, readable by its owner only, failing if it exists; written to a
// temporary file first so a reader never sees half a key.
fn write_new_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    // A hard link fails when the target exists, where a rename would replace it.
    let linked = std::fs::hard_link(&temporary, path);
    let _ = std::fs::remove_file(&temporary);
    linked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_key_is_kept_and_signs_tokens_its_jwk_verifies() {
        let dir = std::env::temp_dir().join(format!("mirobody-oauth-key-{}", std::process::id()));
        let path = dir.join("key.pem");
        let _ = std::fs::remove_file(&path);
        let first = SigningKey::load_or_create(&path).unwrap();
        let again = SigningKey::load_or_create(&path).unwrap();
        assert_eq!(first.kid(), again.kid(), "the second start reads the same key");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let token = first.sign(&serde_json::json!({"sub": "u1", "exp": 4_000_000_000u64})).unwrap();
        let key = jsonwebtoken::DecodingKey::from_jwk(first.public_jwk()).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.validate_aud = false;
        let data = jsonwebtoken::decode::<serde_json::Value>(&token, &key, &validation).unwrap();
        assert_eq!(data.claims["sub"], "u1");
        assert_eq!(data.header.kid.as_deref(), Some(first.kid()));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_without_a_key_is_refused_not_replaced() {
        let dir = std::env::temp_dir().join(format!("mirobody-oauth-badkey-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key.pem");
        std::fs::write(&path, "not a key").unwrap();
        assert!(matches!(SigningKey::load_or_create(&path), Err(KeyError::NotAKey(_))));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a key");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
