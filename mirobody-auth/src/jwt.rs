//! Bearer JWT verification: keys from configuration and JWKS, the algorithm taken from the key.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Validation};
use mirobody_core::UserInfo;
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::config::{AuthConfig, KeyAlgorithm, PemKeyConfig};
use crate::error::AuthConfigError;
use crate::revoked::RevokedGrants;
use crate::token_cache::TokenCache;

mod jwks;
use jwks::JwksCache;

/// The longest token accepted, in bytes; longer ones are refused before any parsing.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The `token_type` values that mark an access token; any other value is refused.
pub const ACCESS_TOKEN_TYPES: [&str; 2] = ["access_token", "oauth_access_token"];

/// Why a bearer token was refused. The messages are safe to send to the client and to log:
/// none carries any part of the token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a JWT: wrong shape, bad base64 or JSON, or too long.
    #[error("the token is malformed")]
    Malformed,
    /// The header names an algorithm this server does not verify (`none`, `HS512`, ...).
    #[error("the token's algorithm is not accepted")]
    AlgorithmNotAccepted,
    /// The header names a key id this server does not know.
    #[error("the token was signed by an unknown key")]
    UnknownKey,
    /// No configured key verifies the signature.
    #[error("the token's signature is invalid")]
    BadSignature,
    /// `exp` is in the past.
    #[error("the token has expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("the token is not yet valid")]
    NotYetValid,
    /// A required claim is missing or has the wrong type.
    #[error("the token lacks the '{0}' claim")]
    MissingClaim(String),
    /// `iss` is not the configured issuer.
    #[error("the token's issuer is not accepted")]
    WrongIssuer,
    /// `aud` does not name this server.
    #[error("the token's audience is not this server")]
    WrongAudience,
    /// A refresh token (or another non-access token).
    #[error("only access tokens are accepted, not refresh tokens")]
    NotAnAccessToken,
    /// No key is configured, so no token can be verified.
    #[error("bearer tokens are not accepted by this server")]
    NoKeys,
    /// The grant the token was issued under (its `gid` claim) was revoked.
    #[error("the token has been revoked")]
    Revoked,
}

/// Verifies bearer JWTs against the configured keys and turns them into a [`UserInfo`].
///
/// The algorithm is the configured key's: a token is checked only against keys of the
/// algorithm its header names, and a header naming anything but HS256, RS256 or ES256
/// (`none` included) is refused, so neither `alg: none` nor HS256-signed-with-the-RSA-public-key
/// can pass. `exp` and `sub` are required, `nbf` is honoured, `iss` and `aud` are checked when
/// configured (the audience defaults to the canonical MCP URL), and refresh tokens are refused.
///
/// A token that a configured key verified is kept (4096 at most) and found by its full text
/// until its `exp` (plus the leeway): the same checks are not run again for every request of a
/// client. A revoked grant (`gid`) is checked on every use. Tokens of JWKS keys are not kept, so
/// a key withdrawn from the document stops its tokens at the next refresh.
pub struct JwtVerifier {
    keys: Vec<VerifyKey>,
    jwks: Option<JwksCache>,
    hs256: Validation,
    rs256: Validation,
    es256: Validation,
    claims: ClaimNames,
    revoked: Option<RevokedGrants>,
    cache: TokenCache,
    leeway: u64,
}

struct ClaimNames {
    agent: String,
    session: String,
    subject: String,
}

#[derive(Clone)]
struct VerifyKey {
    alg: Algorithm,
    kid: Option<String>,
    key: DecodingKey,
    origin: &'static str,
    /// The rules of a key bound to its own issuer, in place of the configured ones.
    own_rules: Option<Box<Validation>>,
}

impl fmt::Debug for VerifyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key").field("alg", &self.alg).field("kid", &self.kid).field("origin", &self.origin).finish()
    }
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("keys", &self.keys)
            .field("jwks", &self.jwks.as_ref().map(|j| &j.source))
            .field("audience", &self.hs256.aud)
            .field("issuer", &self.hs256.iss)
            .finish()
    }
}

// The header fields that choose a key. Keys named by the token itself (`jwk`, `jku`, `x5u`,
// `x5c`) are never used.
#[derive(Deserialize)]
struct PeekHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    // RFC 7515 §4.1.11: extensions the verifier must understand; this one understands none.
    #[serde(default)]
    crit: Option<Value>,
}

impl JwtVerifier {
    /// Loads every key the configuration names (reading PEM files and a JWKS file now) and
    /// fetches a JWKS URL. `default_audience` is the canonical MCP URL, used when the
    /// configuration sets no `audience`.
    ///
    /// A JWKS URL that cannot be fetched now is logged and fetched again when a token needs it;
    /// anything wrong with configured keys or files is an error naming the key.
    pub async fn load(config: &AuthConfig, default_audience: &str) -> Result<Self, AuthConfigError> {
        let verifier = Self::new(config, default_audience)?;
        if let Some(jwks) = &verifier.jwks
            && jwks.client.is_some()
        {
            match jwks.fetch().await {
                Ok(keys) => jwks.store(keys),
                Err(e) => {
                    tracing::warn!(source = %jwks.source, error = %e, "JWKS not loaded at start; will retry when a token needs it")
                }
            }
        }
        Ok(verifier)
    }

    /// Like [`load`](JwtVerifier::load) but without network access: a JWKS URL is fetched when
    /// the first token needs it.
    pub fn new(config: &AuthConfig, default_audience: &str) -> Result<Self, AuthConfigError> {
        install_crypto_provider();
        let mut keys = Vec::new();
        if let Some(secret) = &config.hs256_secret {
            keys.push(hs256_key(secret.expose_secret(), "hs256_secret", None, "current")?);
        }
        if let Some(pem) = &config.rs256 {
            keys.push(pem_key(pem, KeyAlgorithm::RS256, "rs256")?);
        }
        if let Some(pem) = &config.es256 {
            keys.push(pem_key(pem, KeyAlgorithm::ES256, "es256")?);
        }
        for (i, previous) in config.previous_keys.iter().enumerate() {
            let name = format!("previous_keys[{i}]");
            let key = match previous.alg {
                KeyAlgorithm::HS256 => {
                    let secret = previous
                        .secret
                        .as_ref()
                        .ok_or_else(|| AuthConfigError::key(&name, "an HS256 key needs `secret`"))?;
                    if previous.public_key_file.is_some() {
                        return Err(AuthConfigError::key(&name, "an HS256 key takes `secret`, not `public_key_file`"));
                    }
                    hs256_key(secret.expose_secret(), &name, previous.kid.clone(), "previous")?
                }
                alg => {
                    if previous.secret.is_some() {
                        return Err(AuthConfigError::key(
                            &name,
                            format!("an {} key takes `public_key_file`, not `secret`", alg.as_str()),
                        ));
                    }
                    let file = previous.public_key_file.as_deref().ok_or_else(|| {
                        AuthConfigError::key(&name, format!("an {} key needs `public_key_file`", alg.as_str()))
                    })?;
                    let mut key = public_pem_key(&read_file(file, &name)?, alg, &name)?;
                    key.kid = previous.kid.clone();
                    key.origin = "previous";
                    key
                }
            };
            keys.push(key);
        }
        let jwks = match &config.jwks {
            None => None,
            Some(source) => Some(JwksCache::new(source, config)?),
        };
        let audience = config.audience.clone().unwrap_or_else(|| vec![default_audience.to_owned()]);
        if audience.iter().any(|a| a.is_empty()) {
            return Err(AuthConfigError::Invalid("audience: an empty string is not an audience".into()));
        }
        let validation = |alg: Algorithm| {
            let mut v = Validation::new(alg);
            v.leeway = config.leeway.as_secs();
            v.validate_exp = true;
            v.validate_nbf = true;
            let mut required = vec!["exp", "sub"];
            if let Some(issuer) = &config.issuer {
                v.set_issuer(&[issuer]);
                required.push("iss");
            }
            if audience.is_empty() {
                v.validate_aud = false;
            } else {
                v.set_audience(&audience);
                required.push("aud");
            }
            v.set_required_spec_claims(&required);
            v
        };
        Ok(JwtVerifier {
            keys,
            jwks,
            hs256: validation(Algorithm::HS256),
            rs256: validation(Algorithm::RS256),
            es256: validation(Algorithm::ES256),
            claims: ClaimNames {
                agent: config.agent_claim.clone(),
                session: config.session_claim.clone(),
                subject: config.subject_claim.clone(),
            },
            revoked: None,
            cache: TokenCache::default(),
            leeway: config.leeway.as_secs(),
        })
    }

    /// Whether any key (configured, or a JWKS source) can verify tokens.
    pub fn has_keys(&self) -> bool {
        !self.keys.is_empty() || self.jwks.is_some()
    }

    /// Verifies a token (without the `Bearer ` prefix) and returns its caller.
    pub async fn verify(&self, token: &str) -> Result<UserInfo, TokenError> {
        if !self.has_keys() {
            return Err(TokenError::NoKeys);
        }
        // A client sends one token with many requests: a token verified before is found by its
        // text, far cheaper than checking it again.
        let now = jsonwebtoken::get_current_timestamp();
        if let Some(known) = self.cached_at(token, now) {
            return known;
        }
        let header = peek_header(token)?;
        if header.crit.is_some() {
            return Err(TokenError::Malformed);
        }
        let alg = match header.alg.as_str() {
            "HS256" => Algorithm::HS256,
            "RS256" => Algorithm::RS256,
            "ES256" => Algorithm::ES256,
            _ => return Err(TokenError::AlgorithmNotAccepted),
        };
        let kid = header.kid.as_deref();
        if let Some(jwks) = &self.jwks {
            // A token naming an unknown kid waits for the refresh (the key may have just been
            // published); a merely stale cache does not make everyone wait for one fetch.
            if kid.is_some_and(|kid| !self.knows_kid(jwks, kid)) {
                jwks.refresh(true).await;
            } else if jwks.is_stale() {
                jwks.refresh(false).await;
            }
        }
        let jwks_keys = self.jwks.as_ref().map(JwksCache::snapshot);
        let all = self.keys.iter().chain(jwks_keys.iter().flat_map(|keys| keys.iter()));
        let of_alg: Vec<&VerifyKey> = all.filter(|k| k.alg == alg).collect();
        if of_alg.is_empty() {
            // A JWKS may yet bring RS256 and ES256 keys, never HS256 ones.
            let may_come = self.jwks.is_some() && alg != Algorithm::HS256;
            return Err(if may_come { TokenError::UnknownKey } else { TokenError::AlgorithmNotAccepted });
        }
        // A key with the token's kid first, then keys that name no kid; keys with another kid
        // never verify it.
        let mut candidates: Vec<&VerifyKey> = Vec::with_capacity(of_alg.len());
        candidates.extend(of_alg.iter().filter(|k| kid.is_some() && k.kid.as_deref() == kid));
        candidates.extend(of_alg.iter().filter(|k| k.kid.is_none()));
        if candidates.is_empty() {
            return Err(TokenError::UnknownKey);
        }
        let validation = match alg {
            Algorithm::HS256 => &self.hs256,
            Algorithm::RS256 => &self.rs256,
            _ => &self.es256,
        };
        for key in candidates {
            let validation = key.own_rules.as_deref().unwrap_or(validation);
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, validation) {
                Ok(data) => {
                    let exp = data.claims.get("exp").and_then(Value::as_u64);
                    let grant = data.claims.get("gid").and_then(Value::as_str).map(str::to_owned);
                    let user = self.user_from_claims(data.claims)?;
                    // Not a JWKS key's: one withdrawn from the document must stop its tokens at
                    // the next refresh, which a cached answer would outlive.
                    if let (Some(exp), false) = (exp, key.origin == "jwks") {
                        self.cache.put(token, &user, exp.saturating_add(self.leeway), grant.as_deref(), now);
                    }
                    return Ok(user);
                }
                Err(e) => match e.kind() {
                    // Try the next key; any other failure comes after the signature was good.
                    ErrorKind::InvalidSignature
                    | ErrorKind::InvalidKeyFormat
                    | ErrorKind::InvalidRsaKey(_)
                    | ErrorKind::InvalidEcdsaKey => continue,
                    kind => return Err(map_error(kind)),
                },
            }
        }
        Err(TokenError::BadSignature)
    }

    /// The answer for a token verified before and unexpired, without checking it again;
    /// `None` for one that would need checking.
    pub(crate) fn cached(&self, token: &str) -> Option<Result<UserInfo, TokenError>> {
        self.cached_at(token, jsonwebtoken::get_current_timestamp())
    }

    fn cached_at(&self, token: &str, now: u64) -> Option<Result<UserInfo, TokenError>> {
        let (user, grant) = self.cache.get(token, now)?;
        if let (Some(revoked), Some(grant)) = (&self.revoked, grant.as_deref())
            && revoked.contains(grant)
        {
            return Some(Err(TokenError::Revoked));
        }
        Some(Ok(user))
    }

    fn knows_kid(&self, jwks: &JwksCache, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
            || jwks.snapshot().iter().any(|k| k.kid.as_deref() == Some(kid))
    }

    /// This verifier, also taking ES256 or RS256 tokens signed by the key whose public half is
    /// `jwk` (an authorization server's own signing key, say); a `kid` in the JWK must match
    /// the token's.
    pub fn with_jwk(mut self, jwk: &Jwk) -> Result<Self, AuthConfigError> {
        let key = self.jwk_key(jwk, None)?;
        self.keys.push(key);
        Ok(self)
    }

    /// This verifier, also taking tokens signed by the key whose public half is `jwk`, when
    /// their `iss` is `issuer`, whatever issuer the configuration names: a server that issues
    /// tokens itself verifies them beside those of the identity provider it is configured
    /// with, and a token of either is taken only with its own issuer's key.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use mirobody_auth::{AuthConfig, JwtVerifier};
    ///
    /// let config: AuthConfig = serde_json::from_value(serde_json::json!({
    ///     "hs256_secret": "a-secret-of-at-least-32-bytes-long!!", "issuer": "https://idp.example"
    /// })).unwrap();
    /// let jwk = serde_json::from_value(serde_json::json!({"kty": "EC", "crv": "P-256", "kid": "own",
    ///     "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"})).unwrap();
    /// let verifier = JwtVerifier::load(&config, "https://mcp.example/mcp").await.unwrap()
    ///     .with_issuer_jwk(&jwk, "https://mcp.example").unwrap();
    /// assert!(verifier.has_keys());
    /// # });
    /// ```
    pub fn with_issuer_jwk(mut self, jwk: &Jwk, issuer: &str) -> Result<Self, AuthConfigError> {
        let key = self.jwk_key(jwk, Some(issuer))?;
        self.keys.push(key);
        Ok(self)
    }

    fn jwk_key(&self, jwk: &Jwk, issuer: Option<&str>) -> Result<VerifyKey, AuthConfigError> {
        let name = jwk.common.key_id.clone().unwrap_or_else(|| "jwk".to_owned());
        let alg = match &jwk.algorithm {
            AlgorithmParameters::EllipticCurve(_) => Algorithm::ES256,
            AlgorithmParameters::RSA(_) => Algorithm::RS256,
            _ => return Err(AuthConfigError::key(&name, "only EC P-256 and RSA keys are taken")),
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|e| AuthConfigError::key(&name, e.to_string()))?;
        let own_rules = issuer.map(|issuer| {
            let mut rules = if alg == Algorithm::ES256 { self.es256.clone() } else { self.rs256.clone() };
            rules.set_issuer(&[issuer]);
            rules.required_spec_claims.insert("iss".to_owned());
            Box::new(rules)
        });
        Ok(VerifyKey { alg, kid: jwk.common.key_id.clone(), key, origin: "jwk", own_rules })
    }

    /// This verifier, refusing tokens whose `gid` claim names a grant in `revoked`.
    pub fn with_revoked_grants(mut self, revoked: RevokedGrants) -> Self {
        self.revoked = Some(revoked);
        self
    }

    fn user_from_claims(&self, mut claims: Map<String, Value>) -> Result<UserInfo, TokenError> {
        if let (Some(revoked), Some(Value::String(grant))) = (&self.revoked, claims.get("gid"))
            && revoked.contains(grant)
        {
            return Err(TokenError::Revoked);
        }
        if let Some(token_type) = claims.get("token_type") {
            let access = token_type.as_str().is_some_and(|t| ACCESS_TOKEN_TYPES.contains(&t));
            if !access {
                return Err(TokenError::NotAnAccessToken);
            }
        }
        let sub = match claims.remove("sub") {
            Some(Value::String(sub)) if !sub.trim().is_empty() => sub,
            _ => return Err(TokenError::MissingClaim("sub".into())),
        };
        let mut user = UserInfo::authenticated(sub);
        if let Some(session) = claim_text(&claims, &self.claims.session) {
            user = user.with_session(session);
        }
        if let Some(subject) = claim_text(&claims, &self.claims.subject) {
            user = user.with_subject(subject);
        }
        if let Some(agent) = claim_text(&claims, &self.claims.agent) {
            user = user.with_agent(agent);
        }
        let scopes = scopes(&claims);
        if !scopes.is_empty() {
            user = user.with_scopes(scopes);
        }
        Ok(user)
    }
}

// A string claim, or a number as text (user ids are often numeric); empty counts as absent.
fn claim_text(claims: &Map<String, Value>, name: &str) -> Option<String> {
    match claims.get(name)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

// `scope` (space-separated, RFC 8693/9068) or `scp` (an array, or a string).
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut add = |s: &str| {
        if !s.is_empty() && seen.insert(s.to_owned()) {
            out.push(s.to_owned());
        }
    };
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(text)) => text.split_whitespace().for_each(&mut add),
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).for_each(&mut add),
            _ => {}
        }
    }
    out
}

fn map_error(kind: &ErrorKind) -> TokenError {
    match kind {
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) | ErrorKind::InvalidClaimFormat(claim) => {
            TokenError::MissingClaim(claim.clone())
        }
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm | ErrorKind::UnsupportedAlgorithm => {
            TokenError::AlgorithmNotAccepted
        }
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        _ => TokenError::Malformed,
    }
}

// Reads the header before any key is chosen: three segments, a JSON header with a string `alg`.
fn peek_header(token: &str) -> Result<PeekHeader, TokenError> {
    if token.len() > MAX_TOKEN_BYTES || token.split('.').count() != 3 {
        return Err(TokenError::Malformed);
    }
    let encoded = token.split('.').next().unwrap_or_default();
    let bytes = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| TokenError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed)
}

// jsonwebtoken picks its crypto from crate features; if another crate in the build enables a
// second backend, no default is chosen, so pick RustCrypto explicitly (idempotent).
fn install_crypto_provider() {
    crate::jwt_crypto::install_jwt_crypto();
}

fn hs256_key(
    secret: &str,
    name: &str,
    kid: Option<String>,
    origin: &'static str,
) -> Result<VerifyKey, AuthConfigError> {
    // RFC 7518 §3.2: an HS256 key must be at least as long as the hash.
    if secret.len() < 32 {
        return Err(AuthConfigError::key(name, "an HS256 secret must be at least 32 bytes"));
    }
    let key =
        DecodingKey::from_secret(secret.as_bytes()).map_err(|_| AuthConfigError::key(name, "invalid HS256 secret"))?;
    Ok(VerifyKey { alg: Algorithm::HS256, kid, key, origin, own_rules: None })
}

fn read_file(path: &Path, name: &str) -> Result<Vec<u8>, AuthConfigError> {
    std::fs::read(path).map_err(|e| AuthConfigError::key(name, format!("cannot read {}: {e}", path.display())))
}

fn pem_key(config: &PemKeyConfig, alg: KeyAlgorithm, name: &str) -> Result<VerifyKey, AuthConfigError> {
    let mut key = match (&config.public_key_file, &config.private_key_file) {
        (Some(public), _) => public_pem_key(&read_file(public, name)?, alg, name)?,
        (None, Some(private)) => private_pem_key(&read_file(private, name)?, alg, name)?,
        (None, None) => return Err(AuthConfigError::key(name, "needs `public_key_file` or `private_key_file`")),
    };
    if let (Some(_), Some(private)) = (&config.public_key_file, &config.private_key_file) {
        // Both given: they must be a pair, or tokens this deployment signs would not verify.
        let derived = private_pem_key(&read_file(private, name)?, alg, name)?;
        if public_components(&derived.key, derived.alg) != public_components(&key.key, key.alg) {
            return Err(AuthConfigError::key(name, "the public key does not belong to the private key"));
        }
    }
    key.kid = config.kid.clone();
    key.origin = "current";
    Ok(key)
}

fn jose(alg: KeyAlgorithm) -> Algorithm {
    match alg {
        KeyAlgorithm::HS256 => Algorithm::HS256,
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::ES256 => Algorithm::ES256,
    }
}

fn public_pem_key(pem: &[u8], alg: KeyAlgorithm, name: &str) -> Result<VerifyKey, AuthConfigError> {
    let key = match alg {
        KeyAlgorithm::RS256 => DecodingKey::from_rsa_pem(pem),
        KeyAlgorithm::ES256 => DecodingKey::from_ec_pem(pem),
        KeyAlgorithm::HS256 => return Err(AuthConfigError::key(name, "an HS256 key is a secret, not a PEM file")),
    }
    .map_err(|e| AuthConfigError::key(name, format!("not a {} public key in PEM form ({e})", alg.as_str())))?;
    let alg = jose(alg);
    // Parse the key now, so that a bad key stops the server instead of failing every token.
    if public_components(&key, alg).is_none() {
        return Err(AuthConfigError::key(name, format!("the public key is not a valid {alg:?} key")));
    }
    Ok(VerifyKey { alg, kid: None, key, origin: "current", own_rules: None })
}

fn private_pem_key(pem: &[u8], alg: KeyAlgorithm, name: &str) -> Result<VerifyKey, AuthConfigError> {
    let encoding = match alg {
        KeyAlgorithm::RS256 => EncodingKey::from_rsa_pem(pem),
        KeyAlgorithm::ES256 => EncodingKey::from_ec_pem(pem),
        KeyAlgorithm::HS256 => return Err(AuthConfigError::key(name, "an HS256 key is a secret, not a PEM file")),
    }
    .map_err(|e| AuthConfigError::key(name, format!("not a {} private key in PEM form ({e})", alg.as_str())))?;
    let alg = jose(alg);
    let jwk = Jwk::from_encoding_key(&encoding, alg)
        .map_err(|e| AuthConfigError::key(name, format!("cannot derive the public key ({e})")))?;
    let key = DecodingKey::from_jwk(&jwk)
        .map_err(|e| AuthConfigError::key(name, format!("cannot derive the public key ({e})")))?;
    Ok(VerifyKey { alg, kid: None, key, origin: "current", own_rules: None })
}

// The public key as JWK parameters, for comparing keys and checking that they parse.
fn public_components(key: &DecodingKey, alg: Algorithm) -> Option<AlgorithmParameters> {
    let params = Jwk::from_decoding_key(key, Some(alg)).ok()?.algorithm;
    match (&params, alg) {
        (AlgorithmParameters::RSA(_), Algorithm::RS256) => Some(params),
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) if ec.curve == EllipticCurve::P256 => Some(params),
        _ => None,
    }
}
