//! Upload links in the SQL store, on SQLite and on PostgreSQL: a link names no one, is kept only
//! as a hash, stores one file however many uploads race on it, gives a use back for an upload
//! that stored nothing, expires, is revoked, and a person holds a bounded number.

use std::time::Duration;

use mirobody_tools::upload_links::{LinkError, LinkSettings, UploadLinks};
use sha2::{Digest, Sha256};

use mirobody_core::UserInfo;
use serde_json::json;

use crate::support::{Client, Env, router, within};

const BASE: &str = "https://m.example/upload";

fn links(env: &Env, edit: impl FnOnce(&mut LinkSettings)) -> UploadLinks {
    let mut settings = LinkSettings::default();
    edit(&mut settings);
    UploadLinks::new(env.backends.health(), BASE, settings)
}

fn id_of(url: &str) -> &str {
    url.strip_prefix(BASE).and_then(|rest| rest.strip_prefix('/')).expect("a link under the base")
}

// A stored link's columns: token_hash, user_id, created_ms, expires_ms, uses_left, revoked_ms.
type RawLink = (Vec<u8>, String, i64, i64, i64, Option<i64>);

// The database as someone holding a copy of it sees it: every column of every link, as text.
async fn raw_rows(env: &Env) -> Vec<String> {
    use sqlx::Connection;
    const COLUMNS: &str = "token_hash, user_id, created_ms, expires_ms, uses_left, revoked_ms";
    match &env._schema {
        None => {
            let url = format!("sqlite://{}", env.dir.path().join("mirobody.db").display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let rows: Vec<RawLink> =
                sqlx::query_as(&format!("SELECT {COLUMNS} FROM upload_links")).fetch_all(&mut conn).await.unwrap();
            rows.into_iter().map(|row| format!("{row:?} {}", String::from_utf8_lossy(&row.0))).collect()
        }
        Some(schema) => {
            let mut conn = sqlx::PgConnection::connect(&schema.url).await.unwrap();
            let sql = format!("SELECT {COLUMNS} FROM {}.upload_links", schema.name);
            let rows: Vec<RawLink> = sqlx::query_as(&sql).fetch_all(&mut conn).await.unwrap();
            rows.into_iter().map(|row| format!("{row:?} {}", String::from_utf8_lossy(&row.0))).collect()
        }
    }
}

async fn a_link_names_no_one_and_is_kept_as_a_hash(env: &Env) {
    let links = links(env, |_| {});
    let link = links.mint("alice@example.com").await.unwrap();
    let id = id_of(&link.url).to_owned();
    assert_eq!(id.len(), 32, "192 random bits in base64url: {id}");
    assert!(!link.url.contains("alice"), "{}", link.url);
    use base64::Engine;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("alice@example.com");
    assert!(!link.url.contains(&encoded[..8]), "no encoding of the user id: {}", link.url);
    assert_eq!(link.uses, 1);
    assert_eq!(links.check(&id).await, Ok("alice@example.com".to_owned()));

    let rows = raw_rows(env).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(!rows[0].contains(&id), "the id is not at rest: {rows:?}");
    let hash: [u8; 32] = Sha256::digest(id.as_bytes()).into();
    assert!(rows[0].starts_with(&format!("({:?}", hash.to_vec())), "its SHA-256 is: {rows:?}");
}

async fn a_link_stores_one_file_and_a_refused_one_gives_its_use_back(env: &Env) {
    let links = links(env, |_| {});
    let id = id_of(&links.mint("alice").await.unwrap().url).to_owned();
    // Showing the page takes no use.
    for _ in 0..3 {
        assert_eq!(links.check(&id).await, Ok("alice".to_owned()));
    }
    // An upload refused for its content gives the use back.
    let refused = links.take_use(&id).await.unwrap();
    assert_eq!((refused.user(), refused.uses_left()), ("alice", 0));
    assert_eq!(links.take_use(&id).await.unwrap_err(), LinkError::UsedUp, "taken while in flight");
    refused.give_back().await;
    // A request that went away mid-upload gives it back too.
    drop(links.take_use(&id).await.unwrap());
    within("the use given back on drop", async {
        while links.check(&id).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // A stored file spends it.
    links.take_use(&id).await.unwrap().keep();
    assert_eq!(links.check(&id).await, Err(LinkError::UsedUp));
    assert_eq!(links.take_use(&id).await.unwrap_err(), LinkError::UsedUp);

    // Made for more uses, it stores that many.
    let twice = links_with_uses(env, 2);
    let id = id_of(&twice.mint("alice").await.unwrap().url).to_owned();
    let first = twice.take_use(&id).await.unwrap();
    assert_eq!(first.uses_left(), 1);
    first.keep();
    twice.take_use(&id).await.unwrap().keep();
    assert_eq!(twice.take_use(&id).await.unwrap_err(), LinkError::UsedUp);
}

fn links_with_uses(env: &Env, uses: u32) -> UploadLinks {
    links(env, |s| s.uses = uses)
}

async fn parallel_uploads_on_a_single_use_link_get_one_use(env: &Env) {
    let links = links(env, |_| {});
    let id = id_of(&links.mint("alice").await.unwrap().url).to_owned();
    let attempts: Vec<_> = (0..8)
        .map(|_| {
            let (links, id) = (links.clone(), id.clone());
            tokio::spawn(async move { links.take_use(&id).await.map(|taken| taken.keep()) })
        })
        .collect();
    let mut outcomes = Vec::new();
    for attempt in attempts {
        outcomes.push(within("a parallel use", attempt).await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "{outcomes:?}");
    assert!(outcomes.iter().filter(|o| o.is_err()).all(|o| *o == Err(LinkError::UsedUp)), "{outcomes:?}");
}

async fn a_link_expires_and_is_purged_when_another_is_made(env: &Env) {
    let links = links(env, |s| s.lifetime = Duration::from_secs(1));
    let id = id_of(&links.mint("alice").await.unwrap().url).to_owned();
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(links.check(&id).await, Err(LinkError::Expired));
    assert_eq!(links.take_use(&id).await.unwrap_err(), LinkError::Expired);
    assert_eq!(links.live("alice").await, Ok(0));
    links.mint("bob").await.unwrap();
    assert_eq!(links.check(&id).await, Err(LinkError::NotValid), "purged");
    assert_eq!(raw_rows(env).await.len(), 1);
}

async fn links_are_revoked_one_by_one_or_all_of_a_person(env: &Env) {
    let links = links(env, |_| {});
    let mint = |user: &'static str| {
        let links = links.clone();
        async move { id_of(&links.mint(user).await.unwrap().url).to_owned() }
    };
    let (one, two, bobs) = (mint("alice").await, mint("alice").await, mint("bob").await);
    assert_eq!(links.revoke(&one).await, Ok(()));
    assert_eq!(links.check(&one).await, Err(LinkError::Revoked));
    assert_eq!(links.take_use(&one).await.unwrap_err(), LinkError::Revoked);
    assert_eq!(links.revoke(&one).await, Err(LinkError::Revoked));
    assert_eq!(links.revoke("not-a-link").await, Err(LinkError::NotValid));
    assert_eq!(links.revoke(&"A".repeat(32)).await, Err(LinkError::NotValid));

    assert_eq!(links.revoke_all("alice").await, Ok(1));
    assert_eq!(links.take_use(&two).await.unwrap_err(), LinkError::Revoked);
    assert_eq!(links.check(&bobs).await, Ok("bob".to_owned()), "another person's link works on");
    assert_eq!(links.revoke_all("alice").await, Ok(0));
}

async fn a_person_holds_a_bounded_number_of_links(env: &Env) {
    // Uploads through these links end at once: a used-up link goes at the bound right away.
    let links = links(env, |s| {
        s.max_live_per_user = 3;
        s.upload_time = Duration::ZERO;
    });
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(id_of(&links.mint("alice").await.unwrap().url).to_owned());
    }
    let refused = links.mint("alice").await.unwrap_err();
    assert_eq!(refused, LinkError::TooMany { live: 3 });
    assert_eq!(refused.status(), 429);
    links.mint("bob").await.expect("the bound is per person");
    // A used or revoked link no longer counts.
    links.take_use(&ids[0]).await.unwrap().keep();
    tokio::time::sleep(Duration::from_millis(5)).await;
    links.mint("alice").await.expect("room again after a link was used");
    assert!(links.mint("alice").await.is_err());
    links.revoke(&ids[1]).await.unwrap();
    links.mint("alice").await.expect("room again after a link was revoked");
    // Making and revoking links in a loop keeps no more rows than the bound.
    assert_eq!(links.revoke_all("alice").await, Ok(3));
    for _ in 0..10 {
        links.mint("alice").await.expect("room again after revoking them all");
        links.revoke_all("alice").await.unwrap();
    }
    let alices = raw_rows(env).await.into_iter().filter(|row| row.contains("\"alice\"")).count();
    assert!(alices <= 3, "{alices} rows for alice");
    assert_eq!(links.mint("").await.unwrap_err(), LinkError::BadUser);
    assert_eq!(links.mint(&"u".repeat(257)).await.unwrap_err(), LinkError::BadUser);
}

async fn a_link_whose_upload_is_in_progress_is_kept_at_the_bound(env: &Env) {
    let links = links(env, |s| s.max_live_per_user = 2);
    let first = id_of(&links.mint("carol").await.unwrap().url).to_owned();
    let second = id_of(&links.mint("carol").await.unwrap().url).to_owned();
    // An upload takes the single use of the first and is still arriving.
    let in_progress = links.take_use(&first).await.unwrap();
    assert_eq!(links.check(&first).await, Err(LinkError::UsedUp));
    // Its row is not dropped for a new link: carol is at the bound.
    assert_eq!(links.mint("carol").await.unwrap_err(), LinkError::TooMany { live: 1 });
    // The upload stored nothing: the link works again for its holder.
    in_progress.give_back().await;
    assert_eq!(links.check(&first).await, Ok("carol".to_owned()), "the use came back to a link still kept");
    // A used-up link is kept for the upload time after its last use, then goes at the bound.
    links.take_use(&second).await.unwrap().keep();
    assert!(links.mint("carol").await.is_err(), "the last use is recent");
    let settled = self::links(env, |s| {
        s.max_live_per_user = 2;
        s.upload_time = Duration::ZERO;
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    settled.mint("carol").await.expect("the used-up link's upload has ended: its row goes");
    assert_eq!(links.check(&second).await, Err(LinkError::NotValid));
    assert_eq!(links.check(&first).await, Ok("carol".to_owned()), "a link that works is never dropped");
}

async fn every_scenario(env: &Env) {
    a_link_names_no_one_and_is_kept_as_a_hash(env).await;
    a_link_stores_one_file_and_a_refused_one_gives_its_use_back(env).await;
    parallel_uploads_on_a_single_use_link_get_one_use(env).await;
    links_are_revoked_one_by_one_or_all_of_a_person(env).await;
    a_person_holds_a_bounded_number_of_links(env).await;
    a_link_whose_upload_is_in_progress_is_kept_at_the_bound(env).await;
    // Last, on an empty table: it counts the rows left after a purge.
    clear_links(env).await;
    a_link_expires_and_is_purged_when_another_is_made(env).await;
}

async fn clear_links(env: &Env) {
    use sqlx::Connection;
    match &env._schema {
        None => {
            let url = format!("sqlite://{}", env.dir.path().join("mirobody.db").display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            sqlx::query("DELETE FROM upload_links").execute(&mut conn).await.unwrap();
        }
        Some(schema) => {
            let mut conn = sqlx::PgConnection::connect(&schema.url).await.unwrap();
            let sql = format!("DELETE FROM {}.upload_links", schema.name);
            sqlx::query(&sql).execute(&mut conn).await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn upload_links_on_sqlite() {
    let env = Env::sqlite().await;
    every_scenario(&env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn upload_links_on_postgres() {
    let Some(env) = Env::postgres("upload_links_on_postgres").await else { return };
    every_scenario(&env).await;
}

// The `upload_link` tool: a new link per call, for the signed-in caller only; `revoke_all` ends
// theirs; and answers that find nothing carry no link.
#[tokio::test]
async fn the_tool_makes_a_link_per_call_for_the_caller_and_ends_them() {
    // Long enough that a random link id never holds it by chance ("u1" did, one run in ~70).
    const USER: &str = "person-with-a-long-user-id";
    let env = Env::sqlite().await;
    let links = links(&env, |_| {});
    let with_links = router(&env.backends, |mut handles| {
        handles.extensions.insert(links.clone());
        handles
    });
    let mut client = Client::new(with_links).as_user(UserInfo::authenticated(USER).with_session("chat-1"));
    client.initialize(json!({})).await;

    let first = client.tool("upload_link", json!({})).await.ok().clone();
    let second = client.tool("upload_link", json!({})).await.ok().clone();
    assert_ne!(first["url"], second["url"], "one link per call");
    for made in [&first, &second] {
        let url = made["url"].as_str().unwrap();
        assert!(!url.contains(USER), "{url}");
        assert_eq!(links.check(id_of(url)).await, Ok(USER.to_owned()), "made for the caller");
        assert_eq!((made["uses"].as_u64(), made["expires_in"].as_u64()), (Some(1), Some(900)), "{made}");
    }
    let refused = client.tool("upload_link", json!({"revoke_all": "yes"})).await;
    assert!(refused.tool_error().contains("must be a boolean"), "{}", refused.tool_error());
    assert_eq!(client.tool("upload_link", json!({"revoke_all": true})).await.ok()["revoked"], 2);
    assert_eq!(links.check(id_of(first["url"].as_str().unwrap())).await, Err(LinkError::Revoked));

    let empty = client.tool("search_health_indicators", json!({"keywords": ["glucose"]})).await.ok().clone();
    let message = empty["message"].as_str().unwrap();
    assert!(message.contains("upload_link"), "{empty}");
    assert!(empty.get("upload_url").is_none() && !empty.to_string().contains("/upload/"), "{empty}");
    assert_eq!(links.live(USER).await, Ok(0), "an answer makes no link");
}
