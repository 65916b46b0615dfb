//! Property tests: whatever sequence of calls two users make (remembering, uploading,
//! recording observations, titling conversations under the same session ids, sharing and
//! unsharing), user A's tool calls never return user B's observations, files, memories or
//! conversations, unless B shares their health data with A (and then only observations).

use mirobody_tools::health::HealthStore;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::Env;
use crate::tools::upload;

const USERS: [&str; 2] = ["alice", "bob"];

#[derive(Clone, Debug)]
enum Op {
    Remember { user: usize, n: u8 },
    Upload { user: usize, n: u8 },
    Observe { user: usize, n: u8 },
    Summarize { user: usize, session: u8, n: u8 },
    Share { owner: usize },
    Unshare { owner: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let user = 0..2usize;
    prop_oneof![
        (user.clone(), any::<u8>()).prop_map(|(user, n)| Op::Remember { user, n }),
        (user.clone(), any::<u8>()).prop_map(|(user, n)| Op::Upload { user, n }),
        (user.clone(), any::<u8>()).prop_map(|(user, n)| Op::Observe { user, n }),
        (user.clone(), 0..2u8, any::<u8>()).prop_map(|(user, session, n)| Op::Summarize { user, session, n }),
        user.clone().prop_map(|owner| Op::Share { owner }),
        user.prop_map(|owner| Op::Unshare { owner }),
    ]
}

/// A marker word unique to `user`, put in everything they store.
fn marker(user: usize) -> &'static str {
    ["zephyrA", "quokkaB"][user]
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let env = Env::sqlite().await;
    let sql = env.backends.sql();
    let mut clients = Vec::new();
    for user in USERS {
        clients.push(env.user(user).await);
    }
    let mut shares = [false; 2]; // shares[owner]: owner shares with the other user
    for op in &ops {
        match *op {
            Op::Remember { user, n } => {
                let text = format!("{} note {n}", marker(user));
                clients[user].tool("remember", json!({"text": text})).await.ok();
            }
            Op::Upload { user, n } => {
                let key = format!("{}-{n}-{}", USERS[user], sql.files(USERS[user]).await.unwrap().len());
                let body = format!("{} file {n}", marker(user));
                upload(&env, USERS[user], &key, &format!("{key}.txt"), "text/plain", body.as_bytes(), None).await;
            }
            Op::Observe { user, n } => {
                let obs = json!({"code": {"text": marker(user)}, "valueQuantity": {"value": n, "unit": "u"}, "effectiveDateTime": "2026-01-01T00:00:00Z"});
                sql.add_observations(USERS[user], &[obs]).await.unwrap();
            }
            Op::Summarize { user, session, n } => {
                // Both users use the same session ids: conversations must still stay apart.
                let mut client = env.client().as_user(
                    mirobody_core::UserInfo::authenticated(USERS[user]).with_session(format!("shared-{session}")),
                );
                client.initialize(json!({})).await;
                client
                    .tool("summarize_conversation", json!({"summary": format!("{} title {n}", marker(user))}))
                    .await
                    .ok();
            }
            Op::Share { owner } => {
                sql.share_health(USERS[owner], USERS[1 - owner], Some(&format!("nick{owner}"))).await.unwrap();
                shares[owner] = true;
            }
            Op::Unshare { owner } => {
                sql.unshare_health(USERS[owner], USERS[1 - owner]).await.unwrap();
                shares[owner] = false;
            }
        }
    }
    for reader in 0..2 {
        let other = 1 - reader;
        let client = &clients[reader];
        let foreign = marker(other);
        let leaked = |what: &str, value: &Value| -> Result<(), TestCaseError> {
            prop_assert!(
                !value.to_string().contains(foreign),
                "{} saw {}'s {what}: {value}",
                USERS[reader],
                USERS[other]
            );
            Ok(())
        };
        leaked(
            "memories",
            client.tool("recall_memory", json!({"query": format!("{foreign} note"), "top_k": 50})).await.ok(),
        )?;
        let files = client.tool("list_files", json!({})).await;
        leaked("files", files.ok())?;
        for f in sql.files(USERS[other]).await.unwrap() {
            let read = client.tool("read_file", json!({"file_key": f.file_key})).await;
            prop_assert!(read.tool_error().starts_with("File not found"));
        }
        leaked("own observations", client.tool("family_health", json!({})).await.ok())?;
        let theirs = client.tool("family_health", json!({"member": USERS[other]})).await;
        if shares[other] {
            prop_assert_eq!(&theirs.ok()["subject"], &json!(format!("nick{other}")));
        } else {
            prop_assert!(theirs.tool_error().contains("No circle member"));
            leaked("observations", &theirs.body)?;
        }
        for session in 0..2 {
            let title = sql.conversation_summary(USERS[reader], &format!("shared-{session}")).await.unwrap();
            leaked("conversation", &json!(title))?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_call_sequence_reaches_another_users_data(ops in prop::collection::vec(op(), 1..14)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(ops))?;
    }
}
