//! A whole session through the layer with every log line captured at TRACE: neither the
//! token, nor any personal secret, nor the signing key appears in them.

mod common;

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use common::*;
use mirobody_auth::{McpEndpoint, create_secret};
use tracing_subscriber::fmt::MakeWriter;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Capture {
        self.clone()
    }
}

#[tokio::test]
async fn no_token_or_secret_in_a_sessions_logs() {
    let capture = Capture::default();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(capture.clone())
        .with_ansi(false)
        .init();

    let store = Arc::new(MemorySecrets::default());
    let config = config();
    let auth = authenticator(&config, Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let token = hs256(&personal_claims("alice"), HS_KEY);
    let post = |uri: &str| request("POST", uri);

    // Discovery, minting, every way of calling, the refusals, rotation and revocation.
    send(&app, request("GET", "/.well-known/oauth-protected-resource/mcp").body(Body::empty()).unwrap()).await;
    let minted =
        send(&app, post("/personal/mcp").header("authorization", bearer(&token)).body(Body::empty()).unwrap()).await;
    let first = secret_of(minted.body["data"]["url"].as_str().unwrap());
    let mut secrets = vec![first.clone()];
    let statuses = [
        send(&app, post(&format!("/mcp/{first}")).body(Body::empty()).unwrap()).await.status,
        send(&app, post("/mcp").header("x-mcp-secret", &first).body(Body::empty()).unwrap()).await.status,
        send(&app, post("/mcp").header("authorization", bearer(&token)).body(Body::empty()).unwrap()).await.status,
        send(&app, post(&format!("/mcp/{first}")).header("authorization", bearer(&token)).body(Body::empty()).unwrap())
            .await
            .status,
        send(&app, post("/personal/mcp").header("authorization", bearer(&token)).body(Body::empty()).unwrap())
            .await
            .status,
    ];
    assert_eq!(statuses, [200, 200, 200, 200, 409]);

    // Refusals of credentials derived from the real ones.
    let tampered = format!("{}x", &token[..token.len() - 1]);
    let truncated = &first[..first.len() - 1];
    let refusals = [
        send(&app, post("/mcp").header("authorization", bearer(&tampered)).body(Body::empty()).unwrap()).await.status,
        send(&app, post(&format!("/mcp/{truncated}")).body(Body::empty()).unwrap()).await.status,
        send(&app, post(&format!("/mcp?access_token={token}")).body(Body::empty()).unwrap()).await.status,
        send(&app, post(&format!("/mcp?secret={first}")).body(Body::empty()).unwrap()).await.status,
    ];
    assert_eq!(refusals, [401, 401, 400, 400]);

    let rotated = send(
        &app,
        post("/personal/mcp?rotate=true").header("authorization", bearer(&token)).body(Body::empty()).unwrap(),
    )
    .await;
    let second = secret_of(rotated.body["data"]["url"].as_str().unwrap());
    secrets.push(second.clone());
    assert_eq!(send(&app, post(&format!("/mcp/{first}")).body(Body::empty()).unwrap()).await.status, 401);
    assert_eq!(send(&app, post(&format!("/mcp/{second}")).body(Body::empty()).unwrap()).await.status, 200);
    let revoke = request("DELETE", "/personal/mcp").header("authorization", bearer(&token));
    assert_eq!(send(&app, revoke.body(Body::empty()).unwrap()).await.status, 200);
    assert_eq!(send(&app, post(&format!("/mcp/{second}")).body(Body::empty()).unwrap()).await.status, 401);

    // A store failure is logged, with the store's words only.
    store.fail.store(true, Ordering::SeqCst);
    assert_eq!(send(&app, post(&format!("/mcp/{second}")).body(Body::empty()).unwrap()).await.status, 503);
    store.fail.store(false, Ordering::SeqCst);

    // The CLI path, and the Debug forms of everything that holds a key or a secret.
    let url = create_secret(store.as_ref(), &McpEndpoint::new(BASE, ""), "bob", None, None).await.unwrap();
    secrets.push(secret_of(url.expose()));
    tracing::info!(?url, ?config, ?auth, "debug forms");

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    // The capture works, at TRACE, and saw the session.
    for expected in [
        "caller resolved",
        "user=\"alice\"",
        "request refused by the auth layer",
        "personal MCP URL issued",
        "personal MCP URL revoked",
        "secret store lookup failed",
        "[redacted]",
    ] {
        assert!(logs.contains(expected), "the logs lack {expected:?}:\n{logs}");
    }
    let (_, payload_and_signature) = token.split_once('.').unwrap();
    let (payload, signature) = payload_and_signature.split_once('.').unwrap();
    let mut forbidden = vec![token.as_str(), payload, signature, HS_KEY, tampered.as_str(), truncated];
    forbidden.extend(secrets.iter().map(String::as_str));
    for needle in forbidden {
        assert!(!logs.contains(needle), "a credential reached the logs: {needle}\n{logs}");
    }
}
