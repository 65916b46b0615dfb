//! Property tests: whatever sequence of calls two users make (remembering, uploading,
//! recording observations, importing FHIR data, titling conversations under the same session
//! ids, sharing and unsharing, inviting, accepting and revoking in the care circle), user A's
//! tool calls never return user B's observations, health data, files, memories or
//! conversations, unless B shares their health data with A (and then only health data).

use mirobody_health::HealthStore;
use mirobody_health::prelude::*;
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
    Import { user: usize, n: u8 },
    Invite { owner: usize },
    Accept { reader: usize },
    Revoke { user: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let user = 0..2usize;
    prop_oneof![
        (user.clone(), any::<u8>()).prop_map(|(user, n)| Op::Remember { user, n }),
        (user.clone(), any::<u8>()).prop_map(|(user, n)| Op::Upload { user, n }),
        (user.clone(), any::<u8>()).prop_map(|(user, n)| Op::Observe { user, n }),
        (user.clone(), 0..2u8, any::<u8>()).prop_map(|(user, session, n)| Op::Summarize { user, session, n }),
        user.clone().prop_map(|owner| Op::Share { owner }),
        user.clone().prop_map(|owner| Op::Unshare { owner }),
        (user.clone(), any::<u8>()).prop_map(|(user, n)| Op::Import { user, n }),
        user.clone().prop_map(|owner| Op::Invite { owner }),
        user.clone().prop_map(|reader| Op::Accept { reader }),
        user.prop_map(|user| Op::Revoke { user }),
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
    let mut invites: [Option<i64>; 2] = [None, None]; // invites[owner]: waiting for the other
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
            Op::Import { user, n } => {
                let observation = json!({"resourceType": "Observation", "id": format!("o{n}"),
                    "code": {"text": marker(user)}, "effectiveDateTime": "2026-02-01T00:00:00Z",
                    "valueQuantity": {"value": n, "unit": "u"}, "subject": {"reference": format!("Patient/{}", USERS[1 - user])}});
                let condition = json!({"resourceType": "Condition", "id": format!("c{n}"),
                    "code": {"text": format!("{} condition {n}", marker(user))}});
                let bundle = json!({"resourceType": "Bundle", "type": "batch",
                    "entry": [{"resource": observation}, {"resource": condition}]});
                let imported = mirobody_health::import::import_fhir(sql.as_ref(), USERS[user], &bundle).await;
                prop_assert_eq!(imported.status, 200);
            }
            Op::Invite { owner } => {
                let id = sql.invite_to_circle(USERS[owner], USERS[1 - owner], Some(&format!("nick{owner}"))).await;
                invites[owner] = Some(id.unwrap());
            }
            Op::Accept { reader } => {
                let owner = 1 - reader;
                // Nobody accepts the invitation they made themselves, meant for the other.
                if let Some(own) = invites[reader] {
                    prop_assert_eq!(sql.accept_invite(USERS[reader], own, None).await.unwrap(), None);
                }
                if let Some(id) = invites[owner].take() {
                    let accepted = sql.accept_invite(USERS[reader], id, None).await.unwrap();
                    prop_assert_eq!(accepted.as_deref(), Some(USERS[owner]));
                    shares[owner] = true;
                }
            }
            Op::Revoke { user } => {
                sql.leave_circle(USERS[user], USERS[1 - user]).await.unwrap();
                shares = [false; 2];
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
        // A part of the marker finds what is named by it, and an answer that repeats the
        // question back does not hold the whole marker.
        let part = &foreign[1..6];
        let search = json!({"keywords": [part]});
        leaked("indicators", client.tool("search_health_indicators", search).await.ok())?;
        leaked("series", client.tool("fetch_health_data", json!({"indicators": [part]})).await.ok())?;
        let trends = json!({"indicators": [part], "interval": "day"});
        leaked("trends", client.tool("fetch_health_trends", trends).await.ok())?;
        leaked("profile", client.tool("get_user_health_profile", json!({})).await.ok())?;
        for tool in ["search_health_indicators", "fetch_health_data", "fetch_health_trends", "get_user_health_profile"]
        {
            let arguments = json!({"keywords": [part], "indicators": [part], "member": USERS[other]});
            let mut arguments = arguments.as_object().unwrap().clone();
            if tool == "get_user_health_profile" {
                arguments.retain(|k, _| k == "member");
            } else if tool == "search_health_indicators" {
                arguments.remove("indicators");
            } else {
                arguments.remove("keywords");
            }
            if tool == "fetch_health_trends" {
                arguments.insert("interval".into(), json!("week"));
            }
            let theirs = client.tool(tool, Value::Object(arguments)).await;
            if shares[other] {
                prop_assert_eq!(&theirs.ok()["subject"], &json!(format!("nick{other}")), "{}", tool);
            } else {
                prop_assert!(theirs.tool_error().contains("No circle member"), "{tool}");
                leaked(tool, &theirs.body)?;
            }
        }
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
