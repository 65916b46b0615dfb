//! `delete_health_data` through the real server: refused where the client cannot ask the
//! person, nothing deleted when they decline, and the file, its values and its objects gone
//! when they confirm, and one import's values (what `record_health_data` stored) by its id;
//! another person's data untouched throughout.

use mirobody_core::UserInfo;
use mirobody_health::prelude::*;
use serde_json::{Value, json};

use crate::support::{Env, Sse, rpc};
use crate::tools::upload;

fn glucose(id: &str) -> Value {
    json!({"resourceType": "Observation", "id": id, "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0", "display": "Glucose"}]},
        "effectiveDateTime": "2024-01-02T08:00:00Z", "valueQuantity": {"value": 5.4, "unit": "mmol/L"}})
}

/// `owner` holds one file and one value.
async fn holdings(env: &Env, owner: &str) {
    upload(env, owner, &format!("up-{owner}.txt"), "labs.txt", "text/plain", b"glucose 5.4", Some("glucose 5.4")).await;
    env.backends.sql().add_observations(owner, &[glucose(&format!("{owner}-g"))]).await.unwrap();
}

async fn total(env: &Env, owner: &str) -> u64 {
    env.backends.sql().observations(owner, owner, 10).await.unwrap().unwrap().total
}

/// Calls the tool as `user` from a client that declared elicitation, answers its question
/// with `answer`, and returns the call's response.
async fn call_answering(env: &Env, user: &str, arguments: Value, answer: Value) -> Value {
    let mut client = env.client().as_user(UserInfo::authenticated(user));
    client.initialize(json!({"elicitation": {}})).await;
    let call = rpc(9, "tools/call", json!({"name": "delete_health_data", "arguments": arguments}));
    let mut stream = Sse::new(client.post(&call).await);
    let question = stream.next_message().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(message.contains("cannot be undone"), "{message}");
    let reply = json!({"jsonrpc": "2.0", "id": question["id"], "result": answer});
    assert_eq!(client.post(&reply).await.status(), http::StatusCode::ACCEPTED);
    stream.next_message().await
}

#[tokio::test]
async fn nothing_is_deleted_without_the_persons_confirmation() {
    let env = Env::sqlite().await;
    holdings(&env, "ada").await;
    // A client that cannot ask: refused, with what to do instead.
    let client = env.user("ada").await;
    let reply = client.tool("delete_health_data", json!({"kind": "value", "id": "Observation/ada-g"})).await;
    assert!(reply.tool_error().contains("cannot ask the user to confirm"), "{}", reply.tool_error());
    assert_eq!(total(&env, "ada").await, 1);
    // Declined, or accepted without ticking the box: nothing deleted.
    for answer in [json!({"action": "decline"}), json!({"action": "accept", "content": {"confirm": false}})] {
        let response = call_answering(&env, "ada", json!({"kind": "file", "id": "up-ada.txt"}), answer).await;
        assert_eq!(response["result"]["structuredContent"]["deleted"], false, "{response}");
    }
    assert_eq!(env.backends.sql().files("ada").await.unwrap().len(), 1);
    // Bad arguments are refused before asking anyone.
    for (arguments, message) in [
        (json!({"kind": "account", "id": "x"}), "'kind' must be"),
        (json!({"kind": "file", "id": " "}), "'id' is required"),
        (json!({"kind": "file", "id": "k".repeat(513)}), "at most 512"),
    ] {
        let reply = client.tool("delete_health_data", arguments).await;
        assert!(reply.tool_error().contains(message), "{}", reply.tool_error());
    }
}

#[tokio::test]
async fn a_confirmed_deletion_removes_the_file_its_values_and_objects() {
    let env = Env::sqlite().await;
    holdings(&env, "ada").await;
    holdings(&env, "bob").await;
    let yes = json!({"action": "accept", "content": {"confirm": true}});
    // Another person's file is not found, and stays.
    let response = call_answering(&env, "ada", json!({"kind": "file", "id": "up-bob.txt"}), yes.clone()).await;
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert_eq!(env.backends.sql().files("bob").await.unwrap().len(), 1);

    let response = call_answering(&env, "ada", json!({"kind": "value", "id": "Observation/ada-g"}), yes.clone()).await;
    assert_eq!(response["result"]["structuredContent"]["deleted"], true, "{response}");
    assert_eq!(total(&env, "ada").await, 0);

    let response = call_answering(&env, "ada", json!({"kind": "file", "id": "up-ada.txt"}), yes).await;
    assert_eq!(response["result"]["structuredContent"]["deleted"], true, "{response}");
    assert!(env.backends.sql().files("ada").await.unwrap().is_empty());
    let storage = env.backends.storage().unwrap();
    assert!(storage.get("up-ada.txt").await.is_err() && storage.get("up-ada.txt.trans").await.is_err());
    // Bob's data is all there.
    assert_eq!(total(&env, "bob").await, 1);
    assert!(storage.get("up-bob.txt").await.is_ok());
}

/// What `record_health_data` stored is undone by its import id, the person's own only.
#[tokio::test]
async fn a_confirmed_deletion_of_an_import_removes_its_values() {
    let env = Env::sqlite().await;
    let mut imports = Vec::new();
    for person in ["ada", "bob"] {
        let client = env.user(person).await;
        let values = json!({"values": [
            {"indicator": "glucose", "value": 5.4, "unit": "mmol/L", "time": "2026-01-15"},
            {"indicator": "weight", "value": 61.5, "unit": "kg", "time": "2026-01-15"}]});
        let recorded = client.tool("record_health_data", values).await.ok().clone();
        assert_eq!(recorded["recorded"], 2, "{recorded}");
        imports.push(recorded["import_id"].as_i64().unwrap().to_string());
    }
    let yes = json!({"action": "accept", "content": {"confirm": true}});
    // Bob's import is not Ada's to delete: not found, and his values stay.
    let response = call_answering(&env, "ada", json!({"kind": "import", "id": imports[1]}), yes.clone()).await;
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert_eq!(total(&env, "bob").await, 2);
    for not_an_import in ["x1", "99999999"] {
        let response = call_answering(&env, "ada", json!({"kind": "import", "id": not_an_import}), yes.clone()).await;
        assert_eq!(response["result"]["isError"], true, "{response}");
    }
    assert_eq!(total(&env, "ada").await, 2);
    let response = call_answering(&env, "ada", json!({"kind": "import", "id": imports[0]}), yes).await;
    assert_eq!(
        response["result"]["structuredContent"],
        json!({"deleted": true, "kind": "import", "id": imports[0]}),
        "{response}"
    );
    assert_eq!(total(&env, "ada").await, 0);
    assert_eq!(total(&env, "bob").await, 2);
}
