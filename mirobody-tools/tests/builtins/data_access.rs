//! Who read a person's data, through the real engine and store on SQLite and PostgreSQL: ann
//! shares with bob, bob reads ann's data through a tool, ann lists it and sees bob's read
//! (with his name, the tool, the outcome); bob cannot list ann's reads; a third person who
//! tries to read ann's data reads nothing and leaves nothing in ann's list.

use mirobody_health::prelude::*;
use serde_json::{Value, json};

use crate::support::{Env, TIMEOUT};

macro_rules! on_both_databases {
    ($($name:ident;)*) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::support::Env::sqlite().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let test = concat!("data_access::postgres::", stringify!($name));
                    let Some(env) = crate::support::Env::postgres(test).await else { return };
                    super::$name(env).await;
                }
            )*
        }
    };
}

on_both_databases! {
    a_person_sees_who_read_their_data_and_nobody_else_does;
}

fn observation() -> Value {
    json!({
        "resourceType": "Observation",
        "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "8867-4", "display": "Heart rate"}]},
        "valueQuantity": {"value": 61, "unit": "beats/minute"},
        "effectiveDateTime": "2026-03-01T08:00:00Z",
    })
}

// Ann's list, once it holds `count` entries (the log is written off the call's path).
async fn reads_of_ann(ann: &crate::support::Client, count: usize) -> Value {
    tokio::time::timeout(TIMEOUT, async {
        loop {
            let listed = ann.tool("list_data_access", json!({})).await.ok().clone();
            if listed["reads"].as_array().is_some_and(|reads| reads.len() >= count) {
                return listed;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("ann's list in time")
}

async fn a_person_sees_who_read_their_data_and_nobody_else_does(env: Env) {
    let sql = env.backends.sql();
    sql.upsert_user("bob", Some("Bob Reader"), Some("bob@example.com")).await.unwrap();
    sql.add_observations("ann", &[observation()]).await.unwrap();
    sql.share_health("ann", "bob", Some("Ann")).await.unwrap();
    let (ann, bob, cy) = (env.user("ann").await, env.user("bob").await, env.user("cy").await);

    // Nobody read ann's data yet.
    assert_eq!(ann.tool("list_data_access", json!({})).await.ok()["reads"], json!([]));
    // Bob reads ann's data, and his own (which is not a read of anybody else's).
    assert_eq!(bob.tool("family_health", json!({"member": "Ann"})).await.ok()["observation_count"], 1);
    bob.tool("family_health", json!({})).await.ok();
    // Cy is not in ann's circle: the tool reads nothing of ann's.
    let refused = cy.tool("family_health", json!({"member": "ann"})).await;
    assert!(refused.tool_error().contains("No circle member matching"), "{:?}", refused.tool_error());

    let listed = reads_of_ann(&ann, 1).await;
    let reads = listed["reads"].as_array().unwrap();
    assert_eq!(reads.len(), 1, "bob's one read, nothing of cy's: {listed}");
    assert_eq!(reads[0]["reader"], "Bob Reader");
    assert_eq!(reads[0]["what"], "family_health");
    assert_eq!(reads[0]["outcome"], "ok");
    assert!(reads[0]["at"].as_str().unwrap().ends_with('Z'), "{listed}");
    assert_eq!(listed["next_before"], Value::Null, "one page");

    // Bob's list is of his own data: ann's reads are not in it, and no argument names another.
    assert_eq!(bob.tool("list_data_access", json!({})).await.ok()["reads"], json!([]));
    let naming_ann = bob.tool("list_data_access", json!({"member": "ann"})).await;
    assert!(naming_ann.tool_error().contains("unknown argument 'member'"), "{:?}", naming_ann.tool_error());
    // Cy sees nothing.
    assert_eq!(cy.tool("list_data_access", json!({})).await.ok()["reads"], json!([]));

    // Paged and bounded: a count past the bound is the bound, a page of one names the next.
    bob.tool("get_user_health_profile", json!({"member": "Ann"})).await.ok();
    let listed = reads_of_ann(&ann, 2).await;
    assert_eq!(listed["reads"][0]["what"], "get_user_health_profile", "newest first: {listed}");
    let first = ann.tool("list_data_access", json!({"count": 1})).await.ok().clone();
    assert_eq!(first["reads"].as_array().unwrap().len(), 1);
    let before = first["next_before"].as_i64().expect("a next page");
    let next = ann.tool("list_data_access", json!({"count": 1, "before": before})).await.ok().clone();
    assert_eq!(next["reads"][0]["what"], "family_health", "{next}");
    let all = ann.tool("list_data_access", json!({"count": 100_000})).await.ok().clone();
    assert_eq!(all["reads"].as_array().unwrap().len(), 2);
}
