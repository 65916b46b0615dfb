//! The process's JWT crypto provider (`install_jwt_crypto`): ring checks ES256 signatures,
//! RustCrypto does the rest. A test binary of its own: jsonwebtoken fixes its provider at the
//! first use in a process, so nothing may use it before this test installs ours.

use jsonwebtoken::crypto::{CryptoProvider, rust_crypto};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};

#[test]
fn es256_is_checked_by_ring_and_a_forgery_is_refused() {
    mirobody_auth::install_jwt_crypto();
    let installed = CryptoProvider::try_get_default().expect("a provider");
    assert!(
        !std::ptr::fn_addr_eq(installed.verifier_factory, rust_crypto::DEFAULT_PROVIDER.verifier_factory),
        "the installed provider is not RustCrypto's alone"
    );
    let pem =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/test-only-es256-private.pem")).unwrap();
    let key = EncodingKey::from_ec_pem(&pem).unwrap();
    let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
    let decoding = DecodingKey::from_jwk(&jwk).unwrap();
    let claims = serde_json::json!({"sub": "a", "exp": 4_000_000_000u64});
    let token = jsonwebtoken::encode(&Header::new(Algorithm::ES256), &claims, &key).unwrap();
    let mut validation = Validation::new(Algorithm::ES256);
    validation.validate_aud = false;
    assert!(jsonwebtoken::decode::<serde_json::Value>(&token, &decoding, &validation).is_ok());
    // One character of the signature changed (not the last, whose low bits base64 may ignore).
    let at = token.len() - 10;
    let changed = if &token[at..=at] == "A" { "B" } else { "A" };
    let forged = format!("{}{changed}{}", &token[..at], &token[at + 1..]);
    assert!(jsonwebtoken::decode::<serde_json::Value>(&forged, &decoding, &validation).is_err());
    // HS256 still goes through RustCrypto's HMAC.
    let secret = EncodingKey::from_secret(b"thirty-two bytes of test key material!!").unwrap();
    let hs = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &secret).unwrap();
    let mut hs_validation = Validation::new(Algorithm::HS256);
    hs_validation.validate_aud = false;
    let hs_key = DecodingKey::from_secret(b"thirty-two bytes of test key material!!").unwrap();
    assert!(jsonwebtoken::decode::<serde_json::Value>(&hs, &hs_key, &hs_validation).is_ok());
}
