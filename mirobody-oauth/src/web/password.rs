//! Passwords: argon2id hashes in PHC strings, and a verification that takes as long for an
//! unknown account as for a wrong password.

use std::sync::LazyLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

/// The shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// The longest: hashing is costly, and a megabyte "password" is an attack, not a secret.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// Why a password is not accepted or cannot be hashed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PasswordError {
    /// Fewer than [`MIN_PASSWORD_CHARS`] characters.
    #[error("a password needs at least {MIN_PASSWORD_CHARS} characters")]
    TooShort,
    /// More than [`MAX_PASSWORD_BYTES`] bytes.
    #[error("a password may have at most {MAX_PASSWORD_BYTES} bytes")]
    TooLong,
    /// The hash could not be made (the random generator failed).
    #[error("the password could not be hashed: {0}")]
    Hashing(String),
}

// OWASP's argon2id settings (19 MiB, 2 passes, 1 lane): slow enough for guessing, not for a
// sign-in.
fn hasher() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// The argon2id PHC string of a password that meets the length rules.
///
/// ```
/// use mirobody_oauth::{hash_password, verify_password};
///
/// let hash = hash_password("correct horse battery").unwrap();
/// assert!(hash.starts_with("$argon2id$"));
/// assert!(verify_password("correct horse battery", Some(&hash)));
/// assert!(!verify_password("wrong horse battery", Some(&hash)));
/// assert!(!verify_password("correct horse battery", None));
/// ```
pub fn hash_password(password: &str) -> Result<String, PasswordError> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(PasswordError::TooShort);
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(PasswordError::TooLong);
    }
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| PasswordError::Hashing(e.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| PasswordError::Hashing(e.to_string()))?;
    let hash = hasher().hash_password(password.as_bytes(), &salt).map_err(|e| PasswordError::Hashing(e.to_string()))?;
    Ok(hash.to_string())
}

// A hash nobody's password matches, verified when there is no account (or no password), so
// an unknown email costs the same time as a wrong password.
static DECOY: LazyLock<String> = LazyLock::new(|| {
    let salt = SaltString::encode_b64(b"mirobody decoy..").expect("16 bytes encode");
    hasher().hash_password(b"no account has this password", &salt).map(|h| h.to_string()).unwrap_or_default()
});

/// Whether `password` matches `hash` (`None`: there is no account or no password, and the
/// answer is false after the same work as a real check).
pub fn verify_password(password: &str, hash: Option<&str>) -> bool {
    if password.len() > MAX_PASSWORD_BYTES {
        return false;
    }
    let (hash, real) = match hash {
        Some(hash) => (hash, true),
        None => (DECOY.as_str(), false),
    };
    let Ok(parsed) = PasswordHash::new(hash) else { return false };
    let matches = hasher().verify_password(password.as_bytes(), &parsed).is_ok();
    real && matches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_rules_are_checked_before_any_hashing() {
        assert!(matches!(hash_password("short"), Err(PasswordError::TooShort)));
        assert!(matches!(hash_password(&"x".repeat(MAX_PASSWORD_BYTES + 1)), Err(PasswordError::TooLong)));
        assert!(!verify_password(&"x".repeat(MAX_PASSWORD_BYTES + 1), None));
    }

    #[test]
    fn each_hash_has_its_own_salt() {
        let (a, b) = (hash_password("the same password").unwrap(), hash_password("the same password").unwrap());
        assert_ne!(a, b);
        assert!(verify_password("the same password", Some(&a)) && verify_password("the same password", Some(&b)));
    }

    #[test]
    fn the_decoy_matches_nothing() {
        assert!(!verify_password("no account has this password", None));
    }
}
