//! `McpHttp::end_sessions_of`: a person's sessions ended at once (their account deleted, say),
//! on the instance that ends them and, through the backplane, on every other: their records
//! and the index of their sessions gone, every copy dropped, everyone else's sessions kept.
//! And the index shows a reader of the store neither whose sessions they are nor their ids.

use std::sync::Arc;

use http::StatusCode;
use mirobody_core::UserInfo;
use mirobody_mcp::http::HttpOptions;
use mirobody_mcp::session::MemoryBackplane;
use serde_json::json;

use crate::support::TestServer;

const ALICE: &str = "alice-5c2e9b";
const BOB: &str = "bob-0a7d41";

#[tokio::test]
async fn ending_a_users_sessions_ends_them_on_every_instance_and_no_one_elses() {
    let backplane = Arc::new(MemoryBackplane::new());
    let a = TestServer::sharing(Arc::clone(&backplane) as _, HttpOptions::default()).await;
    let b = TestServer::sharing(Arc::clone(&backplane) as _, HttpOptions::default()).await;
    // Alice: one session made on each instance, one of them used on both; another made
    // anonymous on b and claimed when she signed in. Bob: one on a.
    let on_a = a.initialized_as(UserInfo::authenticated(ALICE), json!({})).await;
    let on_b = b.initialized_as(UserInfo::authenticated(ALICE), json!({})).await;
    on_a.via(&b).call("ping", json!({})).await.result();
    let claimed = b.initialized(json!({})).await.as_user(UserInfo::authenticated(ALICE));
    claimed.call("ping", json!({})).await.result();
    let bob = a.initialized_as(UserInfo::authenticated(BOB), json!({})).await;
    assert_eq!((backplane.len(), backplane.sets()), (4, 2), "four records, an index for each person");
    let ids: Vec<String> = [&on_a, &on_b, &claimed, &bob].iter().map(|c| c.session().unwrap()).collect();
    for readable in ids.iter().map(String::as_str).chain([ALICE, BOB]) {
        assert!(!backplane.holds(readable.as_bytes()), "the store shows {readable}");
    }

    assert_eq!(a.http.end_sessions_of(ALICE).await.unwrap(), 3);
    // At once, on either instance, whichever made the session.
    for client in [&on_a, &on_b, &claimed] {
        for via in [&a, &b] {
            let reply = client.via(via).call("ping", json!({})).await;
            assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.body);
        }
    }
    assert_eq!((backplane.len(), backplane.sets()), (1, 1), "bob's record and index only");
    assert_eq!(a.http.sessions().len() + b.http.sessions().len(), 1, "no copy of alice's is left");
    // Bob goes on, through either instance.
    bob.call("ping", json!({})).await.result();
    bob.via(&b).call("ping", json!({})).await.result();
    // Nothing more to end; and a new session of alice's is hers as before.
    assert_eq!(b.http.end_sessions_of(ALICE).await.unwrap(), 0);
    let again = b.initialized_as(UserInfo::authenticated(ALICE), json!({})).await;
    again.via(&a).call("ping", json!({})).await.result();
}

#[tokio::test]
async fn without_a_backplane_the_sessions_here_end() {
    let server = TestServer::new();
    let alice = server.initialized_as(UserInfo::authenticated(ALICE), json!({})).await;
    let bob = server.initialized_as(UserInfo::authenticated(BOB), json!({})).await;
    assert_eq!(server.http.end_sessions_of(ALICE).await.unwrap(), 1);
    assert_eq!(alice.call("ping", json!({})).await.status, StatusCode::NOT_FOUND);
    bob.call("ping", json!({})).await.result();
}
