//! Random tokens (stored as `mirobody_auth::hash_secret` hashes).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Why no random token could be made (the operating system's generator failed).
#[derive(Debug, thiserror::Error)]
#[error("the system random number generator failed: {0}")]
pub struct RandomError(String);

/// `bytes` random bytes, base64url without padding: 32 bytes give 43 characters.
pub(crate) fn token(bytes: usize) -> Result<String, RandomError> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|e| RandomError(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

/// `bytes` random bytes in lower-case hex: 8 bytes give 16 characters.
pub(crate) fn hex(bytes: usize) -> Result<String, RandomError> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|e| RandomError(e.to_string()))?;
    Ok(buffer.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_long_and_differ() {
        let (a, b) = (super::token(32).unwrap(), super::token(32).unwrap());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        let hex = super::hex(8).unwrap();
        assert!(hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
}
