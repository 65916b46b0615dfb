//! The backends directly. Each database test runs on SQLite in a temp dir and on PostgreSQL in
//! a fresh schema (when `MIROBODY_TEST_POSTGRES_URL` is set); each cache test on the
//! in-process cache and on Redis (when `MIROBODY_TEST_REDIS_URL` is set).

use mirobody_health::prelude::*;
use std::time::Duration;

use mirobody_core::backend::NewMemory;
use mirobody_core::{Cache, Memory};
use mirobody_health::FileRecord;
use mirobody_health::HealthStore;
use mirobody_ports::{AccessKind, AccessLog, AccessOutcome, SecretStore, TaskRecord, TaskState, TaskStore};
use mirobody_store::{Dialect, MemoryCache, RedisCache, SqlStore};
use serde_json::json;

use crate::support::{Env, external, unique};

/// Runs each named async fn (taking `&SqlStore`) as a test on SQLite and on PostgreSQL.
macro_rules! on_both_databases {
    ($($name:ident;)*) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    let env = crate::support::Env::sqlite().await;
                    assert_eq!(env.backends.sql().dialect(), mirobody_store::Dialect::Sqlite);
                    super::$name(env.backends.sql()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let Some(env) = crate::support::Env::postgres(concat!("postgres::", stringify!($name))).await else { return };
                    assert_eq!(env.backends.sql().dialect(), mirobody_store::Dialect::Postgres);
                    super::$name(env.backends.sql()).await;
                }
            )*
        }
    };
}

on_both_databases! {
    sharing_and_observations;
    files_are_scoped_to_their_owner;
    conversations_are_keyed_by_owner_and_session;
    memory_is_ranked_and_scoped;
    memory_queries_cannot_inject;
    common_words_do_not_drown_rare_ones;
    secrets_are_hashes_with_one_per_user;
    a_first_secret_is_added_once_even_under_concurrency;
    an_expired_secret_identifies_nobody;
    access_log_rows;
    access_log_outcomes_round_trip;
    reads_of_ones_data_are_listed_to_one_alone_newest_first_and_purged_by_age;
    the_care_circle_is_invited_accepted_and_revoked;
    imports_store_each_resource_once_and_feed_the_queries;
    tasks_are_their_owners_and_an_ended_one_never_changes;
}

async fn tasks_are_their_owners_and_an_ended_one_never_changes(db: &SqlStore) {
    let mut task = TaskRecord::new("t1".into(), "user:alice".into(), "sleepy".into(), 1_000, 60_000, 30_000);
    db.save(&task).await.unwrap();
    assert_eq!(db.load("t1", "user:alice", 2_000).await.unwrap().as_ref(), Some(&task));
    assert_eq!(db.load("t1", "user:bob", 2_000).await.unwrap(), None, "another owner's task is not found");
    assert_eq!(db.live("user:alice", 2_000).await.unwrap(), 1);
    assert_eq!(db.live("user:alice", 40_000).await.unwrap(), 0, "a task whose lease passed is not live");
    assert_eq!(db.load("t1", "user:alice", 40_000).await.unwrap().unwrap().state_at(40_000), TaskState::Failed);

    task.state = TaskState::InputRequired;
    task.input_requests = Some(json!({"go": {"method": "elicitation/create", "params": {}}}));
    db.save(&task).await.unwrap();
    assert_eq!(db.load("t1", "user:alice", 2_000).await.unwrap().unwrap().input_requests, task.input_requests);
    // Another owner cannot overwrite it by reusing its id.
    let mut foreign = task.clone();
    foreign.owner = "user:mallory".into();
    foreign.state = TaskState::Cancelled;
    db.save(&foreign).await.unwrap();
    assert_eq!(db.load("t1", "user:alice", 2_000).await.unwrap().unwrap().state, TaskState::InputRequired);

    let mut cancelled = task.clone();
    cancelled.state = TaskState::Cancelled;
    cancelled.input_requests = None;
    db.save(&cancelled).await.unwrap();
    // The end another instance writes after the cancel does not replace it.
    let mut completed = task.clone();
    completed.state = TaskState::Completed;
    completed.outcome = Some(json!({"result": {"content": []}}));
    db.save(&completed).await.unwrap();
    let kept = db.load("t1", "user:alice", 2_000).await.unwrap().unwrap();
    assert_eq!((kept.state, kept.outcome), (TaskState::Cancelled, None));
    assert_eq!(db.live("user:alice", 2_000).await.unwrap(), 0);

    // Anonymous tasks, each its own owner, are counted together, apart from signed-in ones.
    for n in 0..3 {
        let id = format!("anon{n}");
        db.save(&TaskRecord::new(id.clone(), format!("anonymous:{id}"), "sleepy".into(), 1_000, 60_000, 30_000))
            .await
            .unwrap();
    }
    db.save(&TaskRecord::new("a2".into(), "user:alice".into(), "sleepy".into(), 1_000, 60_000, 30_000)).await.unwrap();
    assert_eq!(db.live_anonymous(2_000).await.unwrap(), 3);
    assert_eq!(db.live("anonymous:anon0", 2_000).await.unwrap(), 1, "each anonymous task is its own owner's");
    assert_eq!(db.live_anonymous(40_000).await.unwrap(), 0, "leases passed");
    // What a caller keeps counts ended records too, until they expire.
    assert_eq!(db.kept("user:alice", 2_000).await.unwrap(), 2, "the cancelled task and the running one");
    assert_eq!(db.kept("user:bob", 2_000).await.unwrap(), 0);
    assert_eq!(db.kept("user:alice", 61_000).await.unwrap(), 0, "expired");
    // Anonymous callers keep together: ended records count until they expire, others' never.
    let mut ended = db.load("anon0", "anonymous:anon0", 2_000).await.unwrap().unwrap();
    ended.state = TaskState::Completed;
    db.save(&ended).await.unwrap();
    assert_eq!(db.live_anonymous(2_000).await.unwrap(), 2);
    assert_eq!(db.kept_anonymous(2_000).await.unwrap(), 3, "the ended one too, and no signed-in one");
    assert_eq!(db.kept_anonymous(40_000).await.unwrap(), 3, "kept after their leases passed");
    assert_eq!(db.kept_anonymous(61_000).await.unwrap(), 0, "expired");

    // Expired: gone from reads, then purged in bounded batches.
    assert_eq!(db.load("t1", "user:alice", 61_000).await.unwrap(), None);
    assert_eq!(db.purge(61_000, 2).await.unwrap(), 2, "at most the batch");
    assert_eq!(db.purge(61_000, 2).await.unwrap(), 2);
    assert_eq!(db.purge(61_000, 2).await.unwrap(), 1);
    assert_eq!(db.purge(61_000, 2).await.unwrap(), 0);
}

async fn the_care_circle_is_invited_accepted_and_revoked(db: &SqlStore) {
    db.upsert_user("bob", Some("Bob"), Some("Bob@Example.com")).await.unwrap();
    let by_id = db.invite_to_circle("alice", "carol", Some("Alice")).await.unwrap();
    let by_email = db.invite_to_circle("alice", " BOB@example.com ", None).await.unwrap();
    assert_eq!(db.invite_to_circle("alice", "carol", Some("Al")).await.unwrap(), by_id, "one invitation per person");
    assert!(db.invite_to_circle("alice", "alice", None).await.is_err());
    assert!(db.invite_to_circle("alice", "", None).await.is_err());

    let bobs = db.circle("bob").await.unwrap();
    assert_eq!(bobs.invites_received.len(), 1, "an invitation by email reaches the user with that email");
    assert_eq!(bobs.invites_received[0].id, by_email);
    // Nobody accepts or drops what is not addressed to them.
    assert_eq!(db.accept_invite("mallory", by_id, None).await.unwrap(), None);
    assert!(!db.drop_invite("mallory", by_id).await.unwrap());
    assert!(!db.can_read_health("carol", "alice").await.unwrap());

    assert_eq!(db.accept_invite("carol", by_id, None).await.unwrap().as_deref(), Some("alice"));
    assert!(db.can_read_health("carol", "alice").await.unwrap());
    assert!(!db.can_read_health("alice", "carol").await.unwrap(), "sharing is one way");
    let sharers = db.health_sharers("carol").await.unwrap();
    assert_eq!(sharers[0].nickname.as_deref(), Some("Al"), "the nickname the owner suggested last");
    assert_eq!(db.accept_invite("carol", by_id, None).await.unwrap(), None, "an invitation is used once");
    assert!(db.drop_invite("bob", by_email).await.unwrap(), "the invitee declines");
    assert!(db.circle("alice").await.unwrap().invites_sent.is_empty());
    assert_eq!(db.circle("alice").await.unwrap().my_readers[0].user_id, "carol");

    // Either side ends it, at once.
    assert!(db.leave_circle("carol", "alice").await.unwrap());
    assert!(!db.can_read_health("carol", "alice").await.unwrap());
    assert!(!db.leave_circle("carol", "alice").await.unwrap());
}

async fn imports_store_each_resource_once_and_feed_the_queries(db: &SqlStore) {
    let glucose = |id: &str, value: f64, unit: &str, time: &str| {
        json!({"resourceType": "Observation", "id": id, "code": {"coding": [{"system": "http://loinc.org",
            "code": "2339-0", "display": "Glucose"}]}, "effectiveDateTime": time,
            "valueQuantity": {"value": value, "unit": unit}})
    };
    let bundle = json!({"resourceType": "Bundle", "type": "batch", "entry": [
        {"resource": glucose("a", 5.4, "mmol/L", "2026-01-01T08:00:00Z")},
        {"resource": glucose("b", 99.0, "mg/dL", "2026-02-01T08:00:00Z")},
        {"resource": glucose("c", 6.0, "mmol/L", "2026-03-01T08:00:00Z")},
        {"resource": {"resourceType": "Condition", "id": "d", "code": {"text": "Asthma"}}},
    ]});
    let first = mirobody_health::import::import_fhir(db, "alice", &bundle).await;
    assert_eq!((first.status, first.summary.created), (200, 4), "{:?}", first.body);
    let again = mirobody_health::import::import_fhir(db, "alice", &bundle).await;
    assert_eq!((again.summary.created, again.summary.unchanged), (0, 4));
    // Another person's import of the same resources is theirs alone.
    assert_eq!(mirobody_health::import::import_fhir(db, "bob", &bundle).await.summary.created, 4);

    let indicators = db.indicators("alice", "alice").await.unwrap().unwrap();
    let units: Vec<(&str, u64)> = indicators.iter().map(|i| (i.unit.as_deref().unwrap(), i.count)).collect();
    assert_eq!(units, [("mg/dL", 1), ("mmol/L", 2)], "one summary per unit");
    let series = db.series("alice", "alice", "2339-0", 0, i64::MAX, 2).await.unwrap().unwrap();
    let times: Vec<&str> = series.points.iter().map(|p| p.time.as_str()).collect();
    assert_eq!(times, ["2026-02-01T08:00:00Z", "2026-03-01T08:00:00Z"], "the newest two, oldest first");
    assert!(series.truncated);
    let latest = db.latest_values("alice", "alice").await.unwrap().unwrap();
    assert_eq!((latest.len(), latest[0].value), (1, Some(6.0)));
    assert_eq!(db.health_records("alice", "alice").await.unwrap().unwrap()[0].display, "Asthma");
    // Not shared: nothing, and not an empty answer either.
    assert_eq!(db.indicators("bob", "alice").await.unwrap(), None);
    assert_eq!(db.series("bob", "alice", "2339-0", 0, i64::MAX, 10).await.unwrap(), None);
    assert_eq!(db.latest_values("bob", "alice").await.unwrap(), None);
    assert_eq!(db.health_records("bob", "alice").await.unwrap(), None);
    assert_eq!(db.indicators("carol", "carol").await.unwrap(), Some(Vec::new()));
}

fn obs(code: &str, value: i64, time: &str) -> serde_json::Value {
    json!({"code": {"coding": [{"code": code}]}, "valueQuantity": {"value": value, "unit": "u"}, "effectiveDateTime": time})
}

async fn sharing_and_observations(db: &SqlStore) {
    db.upsert_user("mom", Some("Ann"), Some("ann@example.com")).await.unwrap();
    db.share_health("mom", "me", Some("Mom")).await.unwrap();
    db.share_health("mom", "me", Some("Mum")).await.unwrap(); // renaming is an update
    let sharers = db.health_sharers("me").await.unwrap();
    assert_eq!(sharers.len(), 1);
    assert_eq!((sharers[0].nickname.as_deref(), sharers[0].email.as_deref()), (Some("Mum"), Some("ann@example.com")));
    assert!(db.health_sharers("mom").await.unwrap().is_empty(), "sharing is one way");

    assert!(db.can_read_health("me", "me").await.unwrap());
    assert!(db.can_read_health("me", "mom").await.unwrap());
    assert!(!db.can_read_health("mom", "me").await.unwrap());

    let resources: Vec<_> = (1..=9).map(|d| obs("HR", d, &format!("2026-01-0{d}T00:00:00Z"))).collect();
    db.add_observations("mom", &resources).await.unwrap();
    db.add_observations("me", &[obs("HR", 1, "2026-01-01")]).await.unwrap();
    let page = db.observations("me", "mom", 3).await.unwrap().expect("mom shares with me");
    assert_eq!(page.total, 9);
    let values: Vec<i64> = page.observations.iter().map(|o| o["valueQuantity"]["value"].as_i64().unwrap()).collect();
    assert_eq!(values, [9, 8, 7], "newest first");
    assert_eq!(db.observations("mom", "me", 3).await.unwrap(), None, "me does not share with mom");
    assert_eq!(db.observations("stranger", "mom", 3).await.unwrap(), None);
    assert_eq!(db.observations("me", "me", 3).await.unwrap().unwrap().total, 1);

    assert!(db.unshare_health("mom", "me").await.unwrap());
    assert_eq!(db.observations("me", "mom", 3).await.unwrap(), None, "a revoked share is honoured");
    assert!(!db.unshare_health("mom", "me").await.unwrap());
}

async fn files_are_scoped_to_their_owner(db: &SqlStore) {
    let file = |key: &str, at: &str| FileRecord {
        file_key: key.into(),
        filename: format!("{key}.pdf"),
        mime_type: "application/pdf".into(),
        size: 42,
        uploaded_at: at.into(),
        text_key: Some(format!("{key}.trans")),
        text_state: Default::default(),
    };
    db.add_file("u1", &file("a", "2026-01-01T00:00:00Z")).await.unwrap();
    db.add_file("u1", &file("b", "2026-01-02T00:00:00Z")).await.unwrap();
    db.add_file("u2", &file("c", "2026-01-03T00:00:00Z")).await.unwrap();
    let keys: Vec<String> = db.files("u1").await.unwrap().into_iter().map(|f| f.file_key).collect();
    assert_eq!(keys, ["b", "a"], "newest first, own files only");
    assert_eq!(db.file("u1", "a").await.unwrap(), Some(file("a", "2026-01-01T00:00:00Z")));
    assert_eq!(db.file("u1", "c").await.unwrap(), None, "another user's key");
    let duplicate = db.add_file("u2", &file("a", "2026-01-04T00:00:00Z")).await.unwrap_err();
    assert!(duplicate.to_string().contains("already exists"), "{duplicate}");
    assert!(!duplicate.to_string().contains("INSERT"), "no SQL in messages");
}

async fn conversations_are_keyed_by_owner_and_session(db: &SqlStore) {
    db.set_conversation_summary("u1", "s", "one").await.unwrap();
    db.set_conversation_summary("u2", "s", "two").await.unwrap();
    db.set_conversation_summary("u1", "s", "one again").await.unwrap();
    assert_eq!(db.conversation_summary("u1", "s").await.unwrap().as_deref(), Some("one again"));
    assert_eq!(db.conversation_summary("u2", "s").await.unwrap().as_deref(), Some("two"));
    assert_eq!(db.conversation_summary("u3", "s").await.unwrap(), None);
}

fn memory(text: &str) -> NewMemory {
    NewMemory { text: text.into(), kind: "fact".into(), session_id: Some("s1".into()) }
}

async fn memory_is_ranked_and_scoped(db: &SqlStore) {
    let a = db.remember("u1", memory("Takes vitamin D every morning")).await.unwrap();
    let b = db
        .remember(
            "u1",
            memory("Vitamin D level was low in the January blood test; doctor suggested vitamin D supplements"),
        )
        .await
        .unwrap();
    db.remember("u1", memory("Enjoys hiking on weekends")).await.unwrap();
    db.remember("u2", memory("Vitamin D deficiency diagnosed")).await.unwrap();
    assert!(b > a, "ids grow");

    let found = db.recall("u1", "vitamin D supplements", 10).await.unwrap();
    let texts: Vec<&str> = found.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(found.len(), 2, "{texts:?}");
    assert_eq!(found[0].id, b, "the memory matching more of the query ranks first: {texts:?}");
    assert!(found[0].score > found[1].score, "{found:?}");
    assert!(found.iter().all(|m| !m.text.contains("deficiency")), "never another owner's memory");
    assert!(found[0].created_at.ends_with('Z'));

    assert_eq!(db.recall("u1", "hikes", 5).await.unwrap().len(), 1, "stemmed: hikes finds hiking");
    assert_eq!(db.recall("u1", "vitamin", 1).await.unwrap().len(), 1, "top_k bounds the result");
    assert!(db.recall("u1", "?!", 5).await.unwrap().is_empty());
    assert!(db.recall("u3", "vitamin", 5).await.unwrap().is_empty());

    assert!(!db.forget("u2", a).await.unwrap(), "another owner cannot forget it");
    assert!(db.forget("u1", a).await.unwrap());
    assert_eq!(db.recall("u1", "vitamin", 10).await.unwrap().len(), 1, "a forgotten memory is gone from search");
}

async fn memory_queries_cannot_inject(db: &SqlStore) {
    db.remember("u1", memory("mine")).await.unwrap();
    db.remember("u2", memory("secret of u2")).await.unwrap();
    for query in [
        "secret\" OR \"mine",
        "secret) OR owner_tag : *",
        "' OR 1=1 --",
        "secret & !mine | (",
        "NEAR(secret u2)",
        "secret*",
        "-secret",
    ] {
        let found = db.recall("u1", query, 10).await.unwrap_or_else(|e| panic!("{query}: {e}"));
        assert!(found.iter().all(|m| m.text == "mine"), "{query}: {found:?}");
    }
}

async fn common_words_do_not_drown_rare_ones(db: &SqlStore) {
    let mut many: Vec<NewMemory> = (0..2100).map(|i| memory(&format!("daily log entry {i}"))).collect();
    many.insert(700, memory("daily log: ferritin was low"));
    db.add_memories("u1", &many).await.unwrap();
    db.remember("u2", memory("ferritin ferritin ferritin")).await.unwrap();
    let found = db.recall("u1", "daily ferritin", 3).await.unwrap();
    assert_eq!(found[0].text, "daily log: ferritin was low", "{found:?}");
    assert!(found.iter().all(|m| m.text.contains("daily")), "never another owner's memory: {found:?}");
    let common = db.recall("u1", "daily log", 5).await.unwrap();
    assert_eq!(common.len(), 5, "a query of common words still finds memories");
}

async fn secrets_are_hashes_with_one_per_user(db: &SqlStore) {
    let (h1, h2) = ([1u8; 32], [2u8; 32]);
    assert!(!db.has_secret("u1").await.unwrap());
    db.put_secret("u1", &h1, Some("agent-x"), None).await.unwrap();
    assert!(db.has_secret("u1").await.unwrap());
    let owner = db.secret_owner(&h1).await.unwrap().unwrap();
    assert_eq!((owner.user_id.as_str(), owner.agent.as_deref()), ("u1", Some("agent-x")));
    db.put_secret("u1", &h2, None, None).await.unwrap();
    assert_eq!(db.secret_owner(&h1).await.unwrap(), None, "the old secret stops working");
    assert_eq!(db.secret_owner(&h2).await.unwrap().unwrap().user_id, "u1");
    assert!(db.revoke_secret("u1").await.unwrap());
    assert!(!db.revoke_secret("u1").await.unwrap());
    assert_eq!(db.secret_owner(&h2).await.unwrap(), None);
}

async fn a_first_secret_is_added_once_even_under_concurrency(db: &SqlStore) {
    let (h1, h2) = ([3u8; 32], [4u8; 32]);
    assert!(db.add_secret("u1", &h1, None, None).await.unwrap());
    assert!(!db.add_secret("u1", &h2, Some("agent-x"), None).await.unwrap(), "u1 already has a secret");
    assert_eq!(db.secret_owner(&h1).await.unwrap().unwrap().user_id, "u1", "the first secret still works");
    assert_eq!(db.secret_owner(&h2).await.unwrap(), None, "the second was not stored");

    // Many first secrets for one new user at once: exactly one is stored.
    let hashes: Vec<[u8; 32]> = (10u8..26).map(|i| [i; 32]).collect();
    let attempts = hashes.iter().map(|hash| db.add_secret("u2", hash, None, None));
    let added = futures::future::join_all(attempts).await;
    let winners: Vec<&[u8; 32]> =
        added.iter().zip(&hashes).filter(|(added, _)| *added.as_ref().unwrap()).map(|(_, hash)| hash).collect();
    assert_eq!(winners.len(), 1, "{added:?}");
    for hash in &hashes {
        let owner = db.secret_owner(hash).await.unwrap();
        assert_eq!(owner.is_some(), hash == winners[0], "only the stored secret identifies u2");
    }
}

async fn an_expired_secret_identifies_nobody(db: &SqlStore) {
    let now_ms = || mirobody_core::clock::now_ms().unsigned_abs();
    let (expired, live, replacement) = ([40u8; 32], [41u8; 32], [42u8; 32]);
    db.put_secret("u1", &expired, None, Some(now_ms() - 1000)).await.unwrap();
    assert_eq!(db.secret_owner(&expired).await.unwrap(), None, "an expired secret's lookup finds nobody");
    assert!(!db.has_secret("u1").await.unwrap(), "an expired secret is no secret");
    // A first secret replaces an expired one, and may itself expire later.
    assert!(db.add_secret("u1", &live, Some("agent-x"), Some(now_ms() + 3_600_000)).await.unwrap());
    assert_eq!(db.secret_owner(&expired).await.unwrap(), None);
    assert_eq!(db.secret_owner(&live).await.unwrap().unwrap().user_id, "u1", "not yet expired");
    assert!(db.has_secret("u1").await.unwrap());
    assert!(!db.add_secret("u1", &replacement, None, None).await.unwrap(), "a live one is not replaced");
    // Rotation to a secret without expiry.
    db.put_secret("u1", &replacement, None, None).await.unwrap();
    assert_eq!(db.secret_owner(&live).await.unwrap(), None);
    assert_eq!(db.secret_owner(&replacement).await.unwrap().unwrap().user_id, "u1");
}

async fn access_log_rows(db: &SqlStore) {
    db.record("u1", None, AccessKind::Tool, "echo", AccessOutcome::Ok, 3).await.unwrap();
    let long = "é".repeat(100);
    db.record("u1", None, AccessKind::Resource, &long, AccessOutcome::Failed, 0).await.unwrap();
    db.record("u2", None, AccessKind::Tool, "whoami", AccessOutcome::Ok, 1).await.unwrap();
    let rows = db.access_log_of("u1").await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0], (AccessKind::Tool, "echo".to_owned(), AccessOutcome::Ok, 3));
    assert_eq!(rows[1].0, AccessKind::Resource);
    assert_eq!(rows[1].1, "é".repeat(64), "capped at 128 bytes on a character boundary");
    assert_eq!(rows[1].2, AccessOutcome::Failed);
}

async fn reads_of_ones_data_are_listed_to_one_alone_newest_first_and_purged_by_age(db: &SqlStore) {
    db.upsert_user("r-bob", Some("Bob"), Some("bob@example.com")).await.unwrap();
    db.record("r-bob", Some("r-ann"), AccessKind::Tool, "family_health", AccessOutcome::Ok, 4).await.unwrap();
    db.record("r-bob", Some("r-ann"), AccessKind::Tool, "fetch_health_data", AccessOutcome::Cancelled, 9)
        .await
        .unwrap();
    db.record("r-eve", Some("r-ann"), AccessKind::Tool, "family_health", AccessOutcome::Failed, 1).await.unwrap();
    // Not reads of another person's data: one's own, and one naming oneself as subject.
    db.record("r-ann", None, AccessKind::Tool, "family_health", AccessOutcome::Ok, 1).await.unwrap();
    db.record("r-ann", Some("r-ann"), AccessKind::Tool, "family_health", AccessOutcome::Ok, 1).await.unwrap();
    db.record("r-ann", Some("r-bob"), AccessKind::Tool, "family_health", AccessOutcome::Ok, 2).await.unwrap();

    let reads = db.reads_of("r-ann", None, 10).await.unwrap();
    let seen: Vec<(&str, &str, AccessOutcome)> =
        reads.iter().map(|r| (r.reader.as_str(), r.name.as_str(), r.outcome)).collect();
    assert_eq!(
        seen,
        [
            ("r-eve", "family_health", AccessOutcome::Failed),
            ("r-bob", "fetch_health_data", AccessOutcome::Cancelled),
            ("r-bob", "family_health", AccessOutcome::Ok),
        ],
        "newest first, others' reads only"
    );
    assert_eq!(reads[1].reader_name.as_deref(), Some("Bob"), "the reader's display name where known");
    assert_eq!(reads[0].reader_name, None, "no name known for eve");
    assert_eq!(reads[1].duration_ms, 9);
    // Paged: the entries before the last one seen.
    let page = db.reads_of("r-ann", None, 2).await.unwrap();
    assert_eq!(page.len(), 2);
    let next = db.reads_of("r-ann", Some(page[1].id), 2).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].name, "family_health");
    // The page is capped whatever is asked.
    for _ in 0..(mirobody_ports::MAX_READS_PAGE + 5) {
        db.record("r-bob", Some("r-cap"), AccessKind::Tool, "family_health", AccessOutcome::Ok, 0).await.unwrap();
    }
    let capped = db.reads_of("r-cap", None, u32::MAX).await.unwrap();
    assert_eq!(capped.len(), mirobody_ports::MAX_READS_PAGE as usize);
    // Bob's data was read by ann once; a stranger's by nobody.
    assert_eq!(db.reads_of("r-bob", None, 10).await.unwrap().len(), 1);
    assert!(db.reads_of("r-nobody", None, 10).await.unwrap().is_empty());
    // Purged by age, in bounded batches: everything is older than a time in the future.
    let future = mirobody_core::clock::now_ms() + 60_000;
    assert_eq!(db.purge_before(future, 2).await.unwrap(), 2, "at most the batch");
    while db.purge_before(future, 1_000).await.unwrap() > 0 {}
    assert!(db.reads_of("r-ann", None, 10).await.unwrap().is_empty());
    assert_eq!(db.purge_before(0, 10).await.unwrap(), 0, "nothing is older than the epoch");
}

async fn access_log_outcomes_round_trip(db: &SqlStore) {
    for (i, outcome) in AccessOutcome::ALL.into_iter().enumerate() {
        db.record("u3", None, AccessKind::Tool, outcome.as_str(), outcome, i as u64).await.unwrap();
    }
    let rows = db.access_log_of("u3").await.unwrap();
    let read: Vec<AccessOutcome> = rows.iter().map(|(_, _, outcome, _)| *outcome).collect();
    assert_eq!(read, AccessOutcome::ALL, "every outcome reads back as written");
    for (_, name, outcome, _) in &rows {
        assert_eq!(name, outcome.as_str());
    }
}

#[tokio::test]
async fn reopening_migrates_once_and_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());
    let db = SqlStore::connect(&url, None, 2).await.unwrap();
    db.remember("u1", memory("kept across restarts")).await.unwrap();
    db.close().await;
    let again = SqlStore::connect(&url, None, 2).await.unwrap();
    assert_eq!(again.schema_version().await.unwrap(), newest_migration());
    assert_eq!(again.recall("u1", "restarts", 5).await.unwrap().len(), 1);
    assert_eq!(again.dialect(), Dialect::Sqlite);
}

#[tokio::test]
async fn a_schema_1_database_is_upgraded_with_its_memories_searchable() {
    use sqlx::{Connection, Executor};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let url = format!("sqlite://{}", path.display());
    {
        let options =
            <sqlx::sqlite::SqliteConnectOptions as std::str::FromStr>::from_str(&url).unwrap().create_if_missing(true);
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await.unwrap();
        conn.execute(include_str!("../../../mirobody-store/migrations/sqlite/0001_init.sql")).await.unwrap();
        conn.execute(
            "CREATE TABLE mirobody_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL);
             INSERT INTO mirobody_migrations VALUES (1, 'init', 0);
             INSERT INTO memories (owner, owner_tag, text, kind, created_at_ms) VALUES ('u1', 'x', 'Allergic to penicillin', 'fact', 0);
             INSERT INTO memories (owner, owner_tag, text, kind, created_at_ms) VALUES ('u2', 'y', 'penicillin is fine', 'fact', 0);
             INSERT INTO observations (subject, code, effective_ms, resource, created_at_ms) VALUES ('u1', '8867-4', 0,
               '{\"resourceType\":\"Observation\",\"code\":{\"coding\":[{\"system\":\"http://loinc.org\",\"code\":\"8867-4\",\"display\":\"Heart rate\"}]},\"effectiveDateTime\":\"2025-06-01T07:00:00Z\",\"valueQuantity\":{\"value\":61,\"unit\":\"/min\"}}', 0);
             INSERT INTO observations (subject, code, effective_ms, resource, created_at_ms) VALUES ('u1', 'x', 0, 'not json', 0);",
        )
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
    let db = SqlStore::connect(&url, None, 2).await.expect("schema 1 upgrades");
    assert_eq!(db.schema_version().await.unwrap(), newest_migration());
    // Observations stored before schema 5 are read into values the health queries see; a
    // row the importer cannot read keeps its place and gives none.
    let indicators = db.indicators("u1", "u1").await.unwrap().unwrap();
    assert_eq!(indicators.len(), 1, "{indicators:?}");
    assert_eq!((indicators[0].code.as_str(), indicators[0].count), ("8867-4", 1));
    assert_eq!(indicators[0].first, "2025-06-01T07:00:00Z");
    let found = db.recall("u1", "penicillin", 5).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].text, "Allergic to penicillin");
    db.remember("u1", memory("new after the upgrade")).await.unwrap();
    assert_eq!(db.recall("u1", "upgrade", 5).await.unwrap().len(), 1);
}

#[tokio::test]
async fn postgres_migrates_once_per_schema() {
    let Some(env) = Env::postgres("postgres_migrates_once_per_schema").await else { return };
    let schema = env._schema.as_ref().unwrap();
    let again = SqlStore::connect(&schema.url, Some(&schema.name), 2).await.unwrap();
    assert_eq!(again.schema_version().await.unwrap(), newest_migration());
    let bad = SqlStore::connect(&schema.url, Some("Robert'); DROP TABLE users;--"), 1).await.unwrap_err();
    assert!(bad.to_string().contains("invalid database_schema"), "{bad}");
}

#[tokio::test]
async fn a_bad_database_url_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = mirobody_store::BackendConfig {
        database_url: Some("mysql://x".into()),
        ..crate::support::config_in(dir.path())
    };
    let err = mirobody_store::open(&config).await.unwrap_err().to_string();
    assert!(err.contains("database_url must start with sqlite:// or postgres://"), "{err}");
    let secret = mirobody_store::BackendConfig {
        database_url: Some("postgres://app:hunter2@db/x".into()),
        file_encryption_key: Some("k".repeat(64)),
        ..Default::default()
    };
    let shown = format!("{secret:?}");
    assert!(!shown.contains("hunter2") && !shown.contains("kkkk"), "{shown}");
}

async fn cache_contract(cache: &dyn Cache, prefix: &str) {
    let key = |k: &str| format!("{prefix}{k}");
    assert_eq!(cache.get(&key("missing")).await.unwrap(), None);
    cache.set(&key("a"), b"one", None).await.unwrap();
    assert_eq!(cache.get(&key("a")).await.unwrap().as_deref(), Some(&b"one"[..]));
    cache.set(&key("a"), b"two", None).await.unwrap();
    assert_eq!(cache.get(&key("a")).await.unwrap().as_deref(), Some(&b"two"[..]));
    cache.set(&key("short"), b"x", Some(Duration::from_millis(100))).await.unwrap();
    assert!(cache.get(&key("short")).await.unwrap().is_some());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(cache.get(&key("short")).await.unwrap(), None, "expired");
    assert!(cache.delete(&key("a")).await.unwrap());
    assert!(!cache.delete(&key("a")).await.unwrap());
    assert_eq!(cache.get(&key("a")).await.unwrap(), None);
    cache.set(&key("bin"), &[0, 255, 1], Some(Duration::from_secs(60))).await.unwrap();
    assert_eq!(cache.get(&key("bin")).await.unwrap(), Some(vec![0, 255, 1]));
    assert!(cache.delete(&key("bin")).await.unwrap());
}

#[tokio::test]
async fn in_process_cache() {
    cache_contract(&MemoryCache::new(1 << 20), "").await;
}

#[tokio::test]
async fn in_process_cache_is_bounded() {
    let cache = MemoryCache::new(10_000);
    for i in 0..100 {
        cache.set(&format!("k{i}"), &[0u8; 1000], None).await.unwrap();
    }
    let mut present = 0;
    for i in 0..100 {
        present += usize::from(cache.get(&format!("k{i}")).await.unwrap().is_some());
    }
    assert!(present < 20, "{present} entries of 1 kB kept in a 10 kB cache");
}

#[tokio::test]
async fn redis_cache() {
    let Some(url) = external("MIROBODY_TEST_REDIS_URL", "redis_cache") else { return };
    let prefix = format!("{}:", unique("mirobody_test"));
    let cache = RedisCache::connect(&url, &prefix).await.unwrap();
    cache_contract(&cache, "").await;
    // Prefixes keep deployments apart.
    let other = RedisCache::connect(&url, &format!("{prefix}other:")).await.unwrap();
    cache.set("shared", b"mine", Some(Duration::from_secs(30))).await.unwrap();
    assert_eq!(other.get("shared").await.unwrap(), None);
    cache.delete("shared").await.unwrap();
}

#[tokio::test]
async fn redis_is_used_when_configured() {
    let Some(url) = external("MIROBODY_TEST_REDIS_URL", "redis_is_used_when_configured") else { return };
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{}:", unique("mirobody_test"));
    let config = mirobody_store::BackendConfig {
        redis_url: Some(url.clone()),
        redis_key_prefix: prefix.clone(),
        ..crate::support::config_in(dir.path())
    };
    let backends = mirobody_store::open(&config).await.unwrap();
    backends.cache().set("k", b"v", Some(Duration::from_secs(30))).await.unwrap();
    let direct = RedisCache::connect(&url, &prefix).await.unwrap();
    assert_eq!(direct.get("k").await.unwrap(), Some(b"v".to_vec()), "the value is in Redis");
    direct.delete("k").await.unwrap();
}

/// The newest migration's version, from the scripts' file names (`0007_file_text.sql` is 7).
fn newest_migration() -> i64 {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mirobody-store/migrations/sqlite");
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.split('_').next()?.parse().ok())
        .max()
        .expect("at least one migration")
}
