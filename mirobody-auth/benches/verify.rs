//! The verification path, beside a baseline measured in the same run: a bare SHA-256 of the
//! same token, the least work any check of it could do. A token verified once is found again
//! by its text (the verifier's cache), so the `hs256`, `rs256` and `es256` lines measure a
//! client's second and later requests; the "first verify" lines, each token new, measure the
//! checks themselves.
//!
//! Run with `cargo bench -p mirobody-auth --bench verify`; the lines printed at the end give
//! each path's time and its ratio to the baseline.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mirobody_auth::{AuthConfig, Authenticator, JwtVerifier, McpEndpoint, generate_secret, hash_secret};
use mirobody_core::backend::BackendResult;
use mirobody_ports::{SecretOwner, SecretStore};
use serde_json::json;
use sha2::{Digest, Sha256};

const MCP_URL: &str = "https://mcp.example.com/mcp";
const HS_KEY: &str = "bench HS256 key: thirty-two bytes or more";

/// Hash-indexed secrets, as a database index finds them.
struct IndexedSecrets(HashMap<[u8; 32], SecretOwner>);

#[async_trait]
impl SecretStore for IndexedSecrets {
    async fn secret_owner(&self, secret_hash: &[u8; 32]) -> BackendResult<Option<SecretOwner>> {
        Ok(self.0.get(secret_hash).cloned())
    }
    async fn put_secret(&self, _: &str, _: &[u8; 32], _: Option<&str>, _: Option<u64>) -> BackendResult<()> {
        Ok(())
    }
    async fn add_secret(&self, _: &str, _: &[u8; 32], _: Option<&str>, _: Option<u64>) -> BackendResult<bool> {
        Ok(false)
    }
    async fn has_secret(&self, _: &str) -> BackendResult<bool> {
        Ok(false)
    }
    async fn revoke_secret(&self, _: &str) -> BackendResult<bool> {
        Ok(false)
    }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn token(alg: Algorithm, key: &EncodingKey) -> String {
    let claims = json!({
        "sub": "42", "aud": MCP_URL, "iss": "https://auth.example.com",
        "exp": jsonwebtoken::get_current_timestamp() + 3600, "scope": "mcp:read mcp:write", "sid": "chat-7",
    });
    jsonwebtoken::encode(&Header::new(alg), &claims, key).unwrap()
}

fn baseline(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

struct Setup {
    verifier: JwtVerifier,
    auth: Authenticator,
    hs: String,
    rs: String,
    es: String,
    secret: String,
}

fn setup() -> Setup {
    let config: AuthConfig = serde_json::from_value(json!({
        "hs256_secret": HS_KEY,
        "rs256": {"public_key_file": fixture("test-only-rs256-a-public.pem")},
        "es256": {"public_key_file": fixture("test-only-es256-public.pem")},
        "issuer": "https://auth.example.com",
    }))
    .unwrap();
    let verifier = JwtVerifier::new(&config, MCP_URL).unwrap();
    let mut secrets = HashMap::new();
    for i in 0..10_000 {
        let owner = SecretOwner { user_id: i.to_string(), agent: None };
        secrets.insert(hash_secret(generate_secret().unwrap().expose()), owner);
    }
    let secret = generate_secret().unwrap().expose().to_owned();
    secrets.insert(hash_secret(&secret), SecretOwner { user_id: "42".into(), agent: None });
    let store: Arc<dyn SecretStore> = Arc::new(IndexedSecrets(secrets));
    let auth = Authenticator::with_verifier(
        &config,
        JwtVerifier::new(&config, MCP_URL).unwrap(),
        McpEndpoint::new("https://mcp.example.com", ""),
        Some(store),
    );
    let rs_key = EncodingKey::from_rsa_pem(&std::fs::read(fixture("test-only-rs256-a-private.pem")).unwrap()).unwrap();
    let es_key = EncodingKey::from_ec_pem(&std::fs::read(fixture("test-only-es256-private.pem")).unwrap()).unwrap();
    Setup {
        hs: token(Algorithm::HS256, &EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap()),
        rs: token(Algorithm::RS256, &rs_key),
        es: token(Algorithm::ES256, &es_key),
        verifier,
        auth,
        secret,
    }
}

fn benches(c: &mut Criterion) {
    let s = setup();
    // Every path must succeed, or the figures measure a refusal.
    for token in [&s.hs, &s.rs, &s.es] {
        assert_eq!(block_on(s.verifier.verify(token)).unwrap().user_id(), Some("42"));
    }
    assert_eq!(block_on(s.auth.user_for_secret(&s.secret)).unwrap().user_id(), Some("42"));

    let mut group = c.benchmark_group("verify");
    group.bench_function("baseline_sha256_of_token", |b| b.iter(|| baseline(black_box(&s.hs))));
    group.bench_function("hs256", |b| b.iter(|| block_on(s.verifier.verify(black_box(&s.hs)))));
    group.bench_function("rs256", |b| b.iter(|| block_on(s.verifier.verify(black_box(&s.rs)))));
    group.bench_function("es256", |b| b.iter(|| block_on(s.verifier.verify(black_box(&s.es)))));
    group.bench_function("secret_hash_and_lookup", |b| {
        b.iter(|| block_on(s.auth.user_for_secret(black_box(&s.secret))))
    });
    group.bench_function("layer_request_hs256", |b| {
        b.iter(|| {
            let mut request =
                http::Request::post("/mcp").header("authorization", format!("Bearer {}", s.hs)).body(()).unwrap();
            block_on(s.auth.authenticate(black_box(&mut request))).unwrap()
        })
    });
    // As `mirobody_mcp::serve` sends it: with the client's address, which the bound on
    // failed credentials reads.
    group.bench_function("layer_request_hs256_with_address", |b| {
        let address = mirobody_ports::ClientAddr("203.0.113.7".parse().unwrap());
        b.iter(|| {
            let mut request =
                http::Request::post("/mcp").header("authorization", format!("Bearer {}", s.hs)).body(()).unwrap();
            request.extensions_mut().insert(address);
            block_on(s.auth.authenticate(black_box(&mut request))).unwrap()
        })
    });
    group.finish();

    report_ratios(&s);
}

// Interleaved rounds, so that machine noise hits the baseline and each path alike.
fn report_ratios(s: &Setup) {
    type Path<'a> = (&'a str, usize, Box<dyn Fn() + 'a>);
    let paths: Vec<Path<'_>> = vec![
        ("HS256 verify again", 20_000, Box::new(|| drop(black_box(block_on(s.verifier.verify(black_box(&s.hs))))))),
        ("RS256 verify again", 20_000, Box::new(|| drop(black_box(block_on(s.verifier.verify(black_box(&s.rs))))))),
        ("ES256 verify again", 20_000, Box::new(|| drop(black_box(block_on(s.verifier.verify(black_box(&s.es))))))),
        (
            "secret hash+lookup",
            20_000,
            Box::new(|| drop(black_box(block_on(s.auth.user_for_secret(black_box(&s.secret)))))),
        ),
    ];
    first_verifies(s);
    const ROUNDS: usize = 10;
    for (name, batch, run) in &paths {
        let (mut path, mut base) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..ROUNDS {
            let start = Instant::now();
            for _ in 0..*batch {
                black_box(baseline(black_box(&s.hs)));
            }
            base += start.elapsed();
            let start = Instant::now();
            for _ in 0..*batch {
                run();
            }
            path += start.elapsed();
        }
        let per = |d: Duration| d.as_nanos() as f64 / (ROUNDS * batch) as f64;
        println!(
            "{name}: {:.0} ns; SHA-256-of-token baseline: {:.0} ns; ratio {:.1}x",
            per(path),
            per(base),
            per(path) / per(base)
        );
    }
}

// Each token seen once, by a verifier that has not seen it: the signature check and the claims,
// with no cache to find it in.
fn first_verifies(s: &Setup) {
    const TOKENS: usize = 2000;
    let hs_key = EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap();
    let es_key = EncodingKey::from_ec_pem(&std::fs::read(fixture("test-only-es256-private.pem")).unwrap()).unwrap();
    for (name, alg, key) in [("HS256", Algorithm::HS256, &hs_key), ("ES256", Algorithm::ES256, &es_key)] {
        let tokens: Vec<String> = (0..TOKENS)
            .map(|i| {
                let claims = json!({
                    "sub": "42", "aud": MCP_URL, "iss": "https://auth.example.com", "jti": i,
                    "exp": jsonwebtoken::get_current_timestamp() + 3600, "scope": "mcp:read mcp:write",
                });
                jsonwebtoken::encode(&Header::new(alg), &claims, key).unwrap()
            })
            .collect();
        let start = Instant::now();
        for token in &tokens {
            black_box(baseline(black_box(token)));
        }
        let base = start.elapsed();
        let start = Instant::now();
        for token in &tokens {
            assert!(block_on(s.verifier.verify(black_box(token))).is_ok());
        }
        let path = start.elapsed();
        let per = |d: Duration| d.as_nanos() as f64 / TOKENS as f64;
        println!(
            "{name} first verify: {:.0} ns; SHA-256-of-token baseline: {:.0} ns; ratio {:.1}x",
            per(path),
            per(base),
            per(path) / per(base)
        );
    }
}

criterion_group! {
    name = verify;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(verify);
