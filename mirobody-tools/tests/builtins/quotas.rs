//! Per-person quotas of the SQL store (memories, invitations waiting), on SQLite and on
//! PostgreSQL (when `MIROBODY_TEST_POSTGRES_URL` is set): writes made at once past the bound
//! store exactly the bound, the rest get the quota's message, and nothing else changes.

use mirobody_health::prelude::*;
use std::sync::Arc;

use mirobody_core::Memory;
use mirobody_core::backend::NewMemory;
use mirobody_health::QuotaExceeded;
use mirobody_store::{SqlStore, StoreQuotas};

/// Runs each named async fn (taking `&SqlStore`) as a test on SQLite and on PostgreSQL, on a
/// runtime with threads enough for the writes to race.
macro_rules! on_both_databases {
    ($($name:ident;)*) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let env = crate::support::Env::sqlite().await;
                    super::$name(env.backends.sql()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let test = concat!("quotas::postgres::", stringify!($name));
                    let Some(env) = crate::support::Env::postgres(test).await else { return };
                    super::$name(env.backends.sql()).await;
                }
            )*
        }
    };
}

on_both_databases! {
    parallel_memories_past_the_quota_store_exactly_the_quota;
    parallel_invitations_past_the_quota_store_exactly_the_quota;
    imports_past_the_observation_quota_store_nothing;
    an_import_refused_in_its_last_transaction_leaves_nothing_of_the_first;
}

const LIMIT: u64 = 5;
const ATTEMPTS: usize = 20;

fn bounded(db: &SqlStore) -> Arc<SqlStore> {
    let mut quotas = StoreQuotas::default();
    quotas.max_memories_per_user = LIMIT;
    quotas.max_pending_invitations_per_user = LIMIT;
    quotas.max_observations_per_user = LIMIT;
    Arc::new(db.clone().with_quotas(quotas))
}

fn memory(text: &str) -> NewMemory {
    NewMemory { text: text.into(), kind: "fact".into(), session_id: None }
}

async fn parallel_memories_past_the_quota_store_exactly_the_quota(db: &SqlStore) {
    let db = bounded(db);
    let writes: Vec<_> = (0..ATTEMPTS)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(async move { db.remember("mallory", memory(&format!("note number {i}"))).await })
        })
        .collect();
    let mut stored = 0;
    for write in writes {
        match write.await.unwrap() {
            Ok(_) => stored += 1,
            Err(e) => assert_eq!(e.0, QuotaExceeded::Memories { max: LIMIT }.to_string(), "a refusal of the quota"),
        }
    }
    assert_eq!(stored, LIMIT, "the acknowledged writes");
    let kept = db.memory_ids("mallory").await.unwrap();
    assert_eq!(kept.len() as u64, LIMIT, "the stored rows");
    let refused = db.remember("mallory", memory("one more")).await.unwrap_err().0;
    assert!(refused.starts_with("You have 5 memories, the most this server keeps per person;"), "{refused}");

    // Another person is not bounded by mallory's memories.
    db.remember("honest", memory("still served")).await.expect("another person's memory");
    // Forgetting one makes room for one.
    assert!(db.forget("mallory", kept[0]).await.unwrap());
    db.remember("mallory", memory("after forgetting")).await.expect("room again");
    assert!(db.remember("mallory", memory("and no more")).await.is_err());
    assert_eq!(db.recall("mallory", "forgetting", 5).await.unwrap().len(), 1, "the new memory is searchable");

    // Bulk set-up (the demo, benches) is not bounded.
    let bulk: Vec<NewMemory> = (0..8).map(|i| memory(&format!("bulk {i}"))).collect();
    assert_eq!(db.add_memories("loader", &bulk).await.unwrap().len(), 8);
}

async fn parallel_invitations_past_the_quota_store_exactly_the_quota(db: &SqlStore) {
    let db = bounded(db);
    let writes: Vec<_> = (0..ATTEMPTS)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(async move { db.invite_within_quota("mallory", &format!("victim{i}"), None).await })
        })
        .collect();
    let mut stored = 0;
    for write in writes {
        match write.await.unwrap().expect("no store error") {
            Ok(_) => stored += 1,
            Err(exceeded) => assert_eq!(exceeded, QuotaExceeded::Invitations { max: LIMIT }),
        }
    }
    assert_eq!(stored, LIMIT, "the acknowledged invitations");
    let circle = db.circle("mallory").await.unwrap();
    assert_eq!(circle.invites_sent.len() as u64, LIMIT, "the stored invitations");

    // At the quota: inviting one of them again is no new invitation, and passes; a new one
    // gets the message through `invite_to_circle` too.
    let again = &circle.invites_sent[0];
    let id = db.invite_within_quota("mallory", &again.invitee, Some("Mal")).await.unwrap();
    assert_eq!(id, Ok(again.id));
    let refused = db.invite_to_circle("mallory", "someone-new", None).await.unwrap_err().0;
    assert!(refused.starts_with("You have 5 invitations waiting for an answer"), "{refused}");
    // Bad input is still refused as bad input, not as the quota.
    let bad = db.invite_within_quota("mallory", "mallory", None).await.unwrap_err().0;
    assert_eq!(bad, "You cannot invite yourself.");

    // An answered invitation is no longer waiting: room for one more.
    let answered = &circle.invites_sent[1];
    assert_eq!(db.accept_invite(&answered.invitee, answered.id, None).await.unwrap().as_deref(), Some("mallory"));
    assert!(db.invite_within_quota("mallory", "someone-new", None).await.unwrap().is_ok());
    assert!(db.invite_within_quota("mallory", "one-too-many", None).await.unwrap().is_err());
    // A withdrawn one, too.
    assert!(db.drop_invite("mallory", circle.invites_sent[2].id).await.unwrap());
    assert!(db.invite_within_quota("mallory", "one-too-many", None).await.unwrap().is_ok());
    // Another person's invitations are theirs to count.
    assert!(db.invite_within_quota("honest", "victim0", None).await.unwrap().is_ok());
}

#[test]
fn the_defaults_bound_memories_and_invitations() {
    let quotas = StoreQuotas::default();
    assert_eq!((quotas.max_memories_per_user, quotas.max_pending_invitations_per_user), (10_000, 50));
}

// A batch of `count` glucose Observations with ids `{prefix}{i}`.
fn observations(prefix: &str, count: usize) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = (0..count)
        .map(|i| {
            serde_json::json!({"resource": {"resourceType": "Observation", "id": format!("{prefix}{i}"),
                "status": "final", "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0"}]},
                "valueQuantity": {"value": 5.0 + i as f64 / 10.0, "unit": "mmol/L"},
                "effectiveDateTime": format!("2026-01-{:02}T08:00:00Z", i + 1)}})
        })
        .collect();
    serde_json::json!({"resourceType": "Bundle", "type": "batch", "entry": entries})
}

async fn imports_past_the_observation_quota_store_nothing(db: &SqlStore) {
    use mirobody_health::HealthStore;
    use mirobody_health::import::import_fhir;
    let db = bounded(db);
    let total = |db: Arc<SqlStore>, who: &'static str| async move {
        db.observations(who, who, 100).await.unwrap().unwrap().total
    };
    // Six at once, against five: refused whole, with the quota's message.
    let over = import_fhir(db.as_ref(), "alice", &observations("a", 6)).await;
    assert_eq!(over.status, 413, "{}", over.body);
    assert!(over.body.to_string().contains("5 observations"), "{}", over.body);
    assert_eq!(total(Arc::clone(&db), "alice").await, 0);
    // Three, then three more: the second refused, the first kept.
    assert_eq!(import_fhir(db.as_ref(), "alice", &observations("b", 3)).await.status, 200);
    assert_eq!(import_fhir(db.as_ref(), "alice", &observations("c", 3)).await.status, 413);
    assert_eq!(total(Arc::clone(&db), "alice").await, 3);
    // Alice's last two places, beside Bob's first import; then four of Bob's at once against
    // his three places left.
    let two = observations("d", 2);
    let (a, b) = tokio::join!(import_fhir(db.as_ref(), "alice", &two), import_fhir(db.as_ref(), "bob", &two));
    assert_eq!((a.status, b.status), (200, 200));
    let racing: Vec<_> = (0..4)
        .map(|i| {
            let db = Arc::clone(&db);
            tokio::spawn(
                async move { import_fhir(db.as_ref(), "bob", &observations(&format!("r{i}-"), 2)).await.status },
            )
        })
        .collect();
    let mut stored = 0;
    for race in racing {
        stored += usize::from(race.await.unwrap() == 200);
    }
    // Bob has two; five allowed: one more import of two fits, the others are refused.
    assert_eq!(stored, 1, "imports made at once passed the quota together");
    assert_eq!(total(Arc::clone(&db), "bob").await, 4);
    assert_eq!(total(Arc::clone(&db), "alice").await, 5);
}

// 700 Observations of one value each are three transactions of at most 500 rows (250 each);
// a quota of 600 refuses the third, and what the first two wrote is deleted again.
async fn an_import_refused_in_its_last_transaction_leaves_nothing_of_the_first(db: &SqlStore) {
    use mirobody_health::HealthStore;
    use mirobody_health::import::import_fhir;
    let mut quotas = StoreQuotas::default();
    quotas.max_observations_per_user = 600;
    let db = db.clone().with_quotas(quotas);
    let entries: Vec<serde_json::Value> = (0..700)
        .map(|i| {
            serde_json::json!({"resource": {"resourceType": "Observation", "id": format!("o{i}"),
                "status": "final", "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0"}]},
                "valueQuantity": {"value": 5.0, "unit": "mmol/L"},
                "effectiveDateTime": format!("2026-01-01T{:02}:{:02}:00Z", i / 60 % 24, i % 60)}})
        })
        .collect();
    let bundle = serde_json::json!({"resourceType": "Bundle", "type": "batch", "entry": entries});
    let refused = import_fhir(&db, "carol", &bundle).await;
    assert_eq!(refused.status, 413, "{}", refused.body);
    assert_eq!(db.observations("carol", "carol", 10).await.unwrap().unwrap().total, 0);
    assert!(db.indicators("carol", "carol").await.unwrap().unwrap_or_default().is_empty(), "points went with them");
    // The same import within the quota is stored whole.
    let fits: Vec<serde_json::Value> = bundle["entry"].as_array().unwrap()[..600].to_vec();
    let fits = serde_json::json!({"resourceType": "Bundle", "type": "batch", "entry": fits});
    assert_eq!(import_fhir(&db, "carol", &fits).await.status, 200);
    assert_eq!(db.observations("carol", "carol", 10).await.unwrap().unwrap().total, 600);
}
