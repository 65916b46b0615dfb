//! Personal MCP URLs end to end (create, 409, rotate, revoke, header form, agent binding), the
//! CLI admin functions, the protected resource metadata, and query-string credentials.

mod common;

use std::sync::Arc;

use axum::body::Body;
use common::*;
use mirobody_auth::{
    Authenticator, McpEndpoint, SecretAdminError, create_secret, looks_like_secret, revoke_secret, rotate_secret,
};
use serde_json::json;

async fn post_personal(app: &axum::Router, query: &str, authorization: Option<&str>) -> Reply {
    let mut builder = request("POST", &format!("/personal/mcp{query}"));
    if let Some(value) = authorization {
        builder = builder.header("authorization", value);
    }
    send(app, builder.body(Body::empty()).unwrap()).await
}

async fn via_path(app: &axum::Router, secret: &str) -> Reply {
    send(app, request("POST", &format!("/mcp/{secret}")).body(Body::empty()).unwrap()).await
}

#[tokio::test]
async fn create_conflict_rotate_revoke() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let token = bearer(&hs256(&claims("alice"), HS_KEY));

    // Create.
    let created = post_personal(&app, "", Some(&token)).await;
    assert_eq!(created.status, 200, "{}", created.text);
    assert_eq!(created.body["code"], 0);
    assert_eq!(created.body["msg"], "ok");
    assert_eq!(created.headers["cache-control"], "no-store");
    let url = created.body["data"]["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://mcp.test/mcp/"), "{url}");
    let first = secret_of(&url);
    assert!(looks_like_secret(&first), "{first}");
    assert_eq!(store.len(), 1);

    // The URL alone identifies alice, with no header.
    let reply = via_path(&app, &first).await;
    assert_eq!((reply.status, reply.body["user_id"].as_str()), (200, Some("alice")));
    assert_eq!(reply.body["method"], "Secret");

    // A second create cannot show the secret again: 409, pointing at rotation.
    let again = post_personal(&app, "", Some(&token)).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["code"], 409);
    assert!(again.body["msg"].as_str().unwrap().contains("rotate=true"), "{}", again.text);
    assert!(again.body["data"].is_null());
    assert!(via_path(&app, &first).await.status == 200, "a refused create leaves the URL working");

    // Rotate: a new URL, and the old one stops working.
    let rotated = post_personal(&app, "?rotate=true", Some(&token)).await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let second = secret_of(rotated.body["data"]["url"].as_str().unwrap());
    assert_ne!(first, second);
    let old = via_path(&app, &first).await;
    assert_eq!(old.status, 401);
    assert!(old.challenge.unwrap().contains(r#"error="invalid_token""#));
    assert_eq!(via_path(&app, &second).await.body["user_id"], "alice");

    // The header form of the same secret.
    let reply = call_mcp(&app, None, Some(&second)).await;
    assert_eq!((reply.status, reply.body["user_id"].as_str()), (200, Some("alice")));

    // Revoke: 401 afterwards; revoking again reports there was nothing.
    let revoke = |auth: Option<String>| {
        let mut builder = request("DELETE", "/personal/mcp");
        if let Some(value) = auth {
            builder = builder.header("authorization", value);
        }
        builder.body(Body::empty()).unwrap()
    };
    let revoked = send(&app, revoke(Some(token.clone()))).await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(revoked.body["data"]["revoked"], true);
    assert_eq!(via_path(&app, &second).await.status, 401);
    assert_eq!(call_mcp(&app, None, Some(&second)).await.status, 401);
    assert_eq!(send(&app, revoke(Some(token.clone()))).await.body["data"]["revoked"], false);
    assert_eq!(send(&app, revoke(None)).await.status, 401);

    // After a revoke, a plain create works again.
    assert_eq!(post_personal(&app, "", Some(&token)).await.status, 200);
}

#[tokio::test]
async fn personal_urls_need_a_bearer_token() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);

    let none = post_personal(&app, "", None).await;
    assert_eq!(none.status, 401);
    assert_eq!(none.body["code"], 401);
    let challenge = none.challenge.unwrap();
    assert!(challenge.starts_with(&format!(r#"Bearer resource_metadata="{METADATA_URL}""#)), "{challenge}");
    assert!(!challenge.contains("error="), "no credentials, no error code: {challenge}");

    let expired = {
        let mut c = claims("alice");
        c["exp"] = json!(now() - 3600);
        hs256(&c, HS_KEY)
    };
    let reply = post_personal(&app, "", Some(&bearer(&expired))).await;
    assert_eq!(reply.status, 401);
    assert!(reply.challenge.unwrap().contains("expired"));

    // A personal secret is not enough to mint, rotate or revoke.
    let token = bearer(&hs256(&claims("alice"), HS_KEY));
    let url = post_personal(&app, "", Some(&token)).await.body["data"]["url"].as_str().unwrap().to_owned();
    let secret = secret_of(&url);
    let reply = send(
        &app,
        request("POST", "/personal/mcp?rotate=true").header("x-mcp-secret", &secret).body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(reply.status, 401);
    assert_eq!(via_path(&app, &secret).await.status, 200, "the refused rotation changed nothing");

    let bad_flag = post_personal(&app, "?rotate=maybe", Some(&token)).await;
    assert_eq!(bad_flag.status, 400);
}

#[tokio::test]
async fn personal_urls_without_a_store_are_503() {
    let auth = authenticator(&config(), None).await;
    let reply = post_personal(&app(&auth), "", Some(&bearer(&hs256(&claims("alice"), HS_KEY)))).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body["code"], 503);
}

#[tokio::test]
async fn a_secret_inherits_the_tokens_agent() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(Arc::clone(&store))).await;
    let app = app(&auth);
    let mut c = claims("alice");
    c["agent"] = json!("baseline");
    let url = post_personal(&app, "", Some(&bearer(&hs256(&c, HS_KEY)))).await.body["data"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(via_path(&app, &secret_of(&url)).await.body["agent"], "baseline");
}

#[tokio::test]
async fn the_uri_prefix_is_in_every_url_and_route() {
    let store = Arc::new(MemorySecrets::default());
    let config = config();
    let auth = Authenticator::new(&config, McpEndpoint::new(BASE, "/api"), Some(store.clone() as _)).await.unwrap();
    let app = app(&auth);
    let mut c = claims("alice");
    c["aud"] = json!("http://mcp.test/api/mcp");
    let token = bearer(&hs256(&c, HS_KEY));
    let reply =
        send(&app, request("POST", "/api/personal/mcp").header("authorization", &token).body(Body::empty()).unwrap())
            .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let url = reply.body["data"]["url"].as_str().unwrap();
    assert!(url.starts_with("http://mcp.test/api/mcp/"), "{url}");
    let reply = send(&app, request("POST", &format!("/api/mcp/{}", secret_of(url))).body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["path"], "/api/mcp");
    assert_eq!(reply.body["user_id"], "alice");
}

#[tokio::test]
async fn admin_functions_for_the_cli() {
    let store = MemorySecrets::default();
    let endpoint = McpEndpoint::new("https://mcp.example.com", "");
    let url = create_secret(&store, &endpoint, "42", Some("baseline")).await.unwrap();
    assert!(url.expose().starts_with("https://mcp.example.com/mcp/"));
    let debug = format!("{url:?}");
    assert_eq!(debug, "PersonalUrl(https://mcp.example.com/mcp/[redacted])");
    assert!(matches!(create_secret(&store, &endpoint, "42", None).await, Err(SecretAdminError::Exists(_))));
    let rotated = rotate_secret(&store, &endpoint, "42", None).await.unwrap();
    assert_ne!(rotated, url);
    assert!(revoke_secret(&store, "42").await.unwrap());
    assert!(!revoke_secret(&store, "42").await.unwrap());
    // Rotating with no secret creates one.
    assert!(rotate_secret(&store, &endpoint, "7", None).await.is_ok());
    assert!(matches!(create_secret(&store, &endpoint, "", None).await, Err(SecretAdminError::NoUser)));
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn concurrent_creations_for_one_user_give_one_url() {
    let store = MemorySecrets::default();
    let endpoint = McpEndpoint::new("https://mcp.example.com", "");
    let attempts = (0..8).map(|_| create_secret(&store, &endpoint, "42", None));
    let results = futures::future::join_all(attempts).await;
    let created: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(created.len(), 1, "exactly one creation wins");
    assert_eq!(results.iter().filter(|r| matches!(r, Err(SecretAdminError::Exists(_)))).count(), 7);
    assert_eq!(store.len(), 1);
    // The URL handed out is the one stored.
    let auth = authenticator(&config(), Some(Arc::new(store))).await;
    let secret = secret_of(created[0].expose());
    assert_eq!(auth.user_for_secret(&secret).await.unwrap().user_id(), Some("42"));
}

#[tokio::test]
async fn protected_resource_metadata_at_both_paths() {
    let auth = authenticator(&config(), None).await;
    let app = app(&auth);
    let expected = json!({
        "resource": MCP_URL,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["mcp:read", "mcp:write"],
        "bearer_methods_supported": ["header"],
    });
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let reply = send(&app, request("GET", path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.body, expected, "{path}");
        assert_eq!(reply.headers["content-type"], "application/json");
        assert_eq!(reply.headers["access-control-allow-origin"], "*");
    }
    // Reachable with a stale token, since a client looks there precisely when its token fails.
    let reply = send(
        &app,
        request("GET", "/.well-known/oauth-protected-resource/mcp")
            .header("authorization", "Bearer expired.or.garbage")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, 200);
    // The URL in 401 challenges is one of the served paths.
    assert_eq!(auth.resource_metadata_url(), METADATA_URL);

    // Under a prefix: the path-inserted form carries it, and the prefixed forms are served too.
    let prefixed = Authenticator::new(&config(), McpEndpoint::new(BASE, "/api"), None).await.unwrap();
    let app = common::app(&prefixed);
    assert_eq!(prefixed.resource_metadata_url(), "http://mcp.test/.well-known/oauth-protected-resource/api/mcp");
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/api/mcp",
        "/api/.well-known/oauth-protected-resource",
        "/api/.well-known/oauth-protected-resource/mcp",
    ] {
        let reply = send(&app, request("GET", path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.body["resource"], "http://mcp.test/api/mcp", "{path}");
    }
}

#[tokio::test]
async fn query_string_credentials_are_400_with_a_clear_message() {
    let store = Arc::new(MemorySecrets::default());
    let auth = authenticator(&config(), Some(store)).await;
    let app = app(&auth);
    let token = hs256(&claims("alice"), HS_KEY);
    for (uri, name) in [
        (format!("/mcp?token={token}"), "token"),
        (format!("/mcp?access_token={token}"), "access_token"),
        (format!("/mcp?x=1&Secret={token}"), "secret"),
        (format!("/personal/mcp?access_token={token}"), "access_token"),
        ("/healthz?token=".to_owned(), "token"),
    ] {
        let reply = send(&app, request("POST", &uri).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, 400, "{uri}");
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("'{name}'")) && message.contains("Authorization header"), "{message}");
        assert!(!reply.text.contains(&token), "the refusal echoes the token");
    }
    // Other query parameters pass.
    let reply = send(&app, request("POST", "/mcp?page=2").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, 200);
}
