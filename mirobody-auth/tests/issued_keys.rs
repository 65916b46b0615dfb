//! Tokens of an authorization server whose key is given as a JWK (`JwtVerifier::with_jwk`),
//! their grants revoked (`RevokedGrants`), and the cache of verified asymmetric tokens.

mod common;

use std::time::Duration;

use common::*;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mirobody_auth::{AuthConfig, JwtVerifier, RevokedGrants, TokenError};
use serde_json::json;

fn issuer_key() -> (EncodingKey, Jwk) {
    let key = EncodingKey::from_ec_pem(&fixture_bytes("test-only-es256-private.pem")).unwrap();
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some("as-key".into());
    (key, jwk)
}

fn issued(key: &EncodingKey, claims: &serde_json::Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("as-key".into());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn config() -> AuthConfig {
    serde_json::from_value(json!({"hs256_secret": HS_KEY})).unwrap()
}

#[tokio::test]
async fn a_revoked_grant_stops_its_tokens_even_once_they_are_cached() {
    let (key, jwk) = issuer_key();
    let revoked = RevokedGrants::new(Duration::from_secs(900));
    let verifier = JwtVerifier::load(&config(), MCP_URL)
        .await
        .unwrap()
        .with_jwk(&jwk)
        .unwrap()
        .with_revoked_grants(revoked.clone());
    let mut claims = claims("ana");
    claims["gid"] = json!("grant-1");
    let token = issued(&key, &claims);
    // Twice: the second answer comes from the cache.
    for _ in 0..2 {
        assert_eq!(verifier.verify(&token).await.unwrap().user_id(), Some("ana"));
    }
    revoked.revoke("grant-1");
    assert_eq!(verifier.verify(&token).await.unwrap_err(), TokenError::Revoked);
    // A token of another grant still works.
    claims["gid"] = json!("grant-2");
    assert!(verifier.verify(&issued(&key, &claims)).await.is_ok());
    // The configured HS256 key still verifies its own tokens beside the JWK.
    assert!(verifier.verify(&hs256(&common::claims("bo"), HS_KEY)).await.is_ok());
}

#[tokio::test]
async fn the_cache_never_outlives_a_token_or_accepts_a_changed_one() {
    let (key, jwk) = issuer_key();
    let verifier = JwtVerifier::load(&config(), MCP_URL).await.unwrap().with_jwk(&jwk).unwrap();
    // Expired past the 30 s leeway: refused, and not cached on the way.
    let mut expired = claims("ana");
    expired["exp"] = json!(jsonwebtoken::get_current_timestamp() - 120);
    let token = issued(&key, &expired);
    for _ in 0..2 {
        assert_eq!(verifier.verify(&token).await.unwrap_err(), TokenError::Expired);
    }
    // A cached token with one character of its signature changed is another token: refused.
    let good = issued(&key, &claims("ana"));
    assert!(verifier.verify(&good).await.is_ok());
    // (Not the last character, whose low bits base64 may ignore.)
    let at = good.len() - 10;
    let changed = if &good[at..=at] == "A" { "B" } else { "A" };
    let tampered = format!("{}{changed}{}", &good[..at], &good[at + 1..]);
    assert!(verifier.verify(&tampered).await.is_err());
    // A token for another audience is refused whatever is cached.
    let mut other = claims("ana");
    other["aud"] = json!("https://elsewhere.example/mcp");
    assert_eq!(verifier.verify(&issued(&key, &other)).await.unwrap_err(), TokenError::WrongAudience);
}

#[tokio::test]
async fn a_jwk_of_another_kind_is_refused() {
    let jwk: Jwk = serde_json::from_value(json!({"kty": "oct", "k": "c2VjcmV0", "kid": "h"})).unwrap();
    let verifier = JwtVerifier::load(&config(), MCP_URL).await.unwrap();
    assert!(verifier.with_jwk(&jwk).is_err());
}

#[tokio::test]
async fn an_own_key_takes_only_its_own_issuer_beside_the_configured_one() {
    const OWN: &str = "https://mcp.example.com";
    let (key, jwk) = issuer_key();
    let config: AuthConfig = serde_json::from_value(json!({"hs256_secret": HS_KEY, "issuer": ISSUER})).unwrap();
    let verifier = JwtVerifier::load(&config, MCP_URL).await.unwrap().with_issuer_jwk(&jwk, OWN).unwrap();

    // The server's own token, naming itself: taken although the configuration names another issuer.
    let mut own = claims("ana");
    own["iss"] = json!(OWN);
    assert_eq!(verifier.verify(&issued(&key, &own)).await.unwrap().user_id(), Some("ana"));
    // Signed with the own key but claiming the provider, or no issuer: refused.
    let borrowed = claims("ana");
    assert_eq!(verifier.verify(&issued(&key, &borrowed)).await.unwrap_err(), TokenError::WrongIssuer);
    let mut anonymous = claims("ana");
    anonymous.as_object_mut().unwrap().remove("iss");
    assert!(matches!(verifier.verify(&issued(&key, &anonymous)).await, Err(TokenError::MissingClaim(c)) if c == "iss"));
    // The provider's token keeps its rules: its issuer taken, the server's refused.
    assert!(verifier.verify(&hs256(&claims("bo"), HS_KEY)).await.is_ok());
    let mut posing = claims("bo");
    posing["iss"] = json!(OWN);
    assert_eq!(verifier.verify(&hs256(&posing, HS_KEY)).await.unwrap_err(), TokenError::WrongIssuer);
    // The own key's audience rule stays: a token for another resource is refused.
    own["aud"] = json!("https://elsewhere.example/mcp");
    assert_eq!(verifier.verify(&issued(&key, &own)).await.unwrap_err(), TokenError::WrongAudience);
}
