//! The cryptography jsonwebtoken runs on: RustCrypto, but for ES256 checks, which ring does.
//! An ECDSA P-256 check is the costliest work a forged token makes the server do before any
//! per-caller limit can refuse it, and ring's (in the tree already, for rustls) is the
//! cheaper (`benches/verify.rs`, "ES256 first verify"; figures in `benches/README.md`). Written here because
//! jsonwebtoken offers ring as no provider of its own; its `CryptoProvider` is made to be filled
//! in this way.

use std::sync::OnceLock;

use jsonwebtoken::crypto::{CryptoProvider, JwtVerifier as SignatureCheck, rust_crypto};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};

// An ES256 public key: the SEC1 point, as `DecodingKey` holds it.
struct RingEs256(Vec<u8>);

impl signature::Verifier<Vec<u8>> for RingEs256 {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> Result<(), signature::Error> {
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &self.0)
            .verify(message, signature)
            .map_err(|_| signature::Error::new())
    }
}

impl SignatureCheck for RingEs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::ES256
    }
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> jsonwebtoken::errors::Result<Box<dyn SignatureCheck>> {
    if *algorithm == Algorithm::ES256 && key.family() == AlgorithmFamily::Ec {
        return Ok(Box::new(RingEs256(key.try_get_as_bytes()?.to_vec())));
    }
    (rust_crypto::DEFAULT_PROVIDER.verifier_factory)(algorithm, key)
}

/// Makes this provider the process's, unless one was chosen already. Every verifier this crate
/// builds calls it; a program that signs or decodes JWTs before building one calls it first
/// (jsonwebtoken fixes its provider at the first use).
pub fn install_jwt_crypto() {
    static PROVIDER: OnceLock<CryptoProvider> = OnceLock::new();
    let provider =
        PROVIDER.get_or_init(|| CryptoProvider { verifier_factory: verifier, ..rust_crypto::DEFAULT_PROVIDER.clone() });
    // Refused only when a provider is in place already, which then stays.
    let _ = provider.install_default();
}
