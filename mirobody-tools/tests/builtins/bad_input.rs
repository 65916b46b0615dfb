//! Bad input for every tool (wrong types, huge strings, unknown members, other users' file
//! keys): each gets a clear error result, and the stored data is exactly as before.

use mirobody_health::HealthStore;
use mirobody_health::prelude::*;
use serde_json::{Value, json};

use crate::support::Env;
use crate::tools::upload;

/// Everything a bad call could change, read straight from the store.
async fn snapshot(env: &Env) -> Value {
    let sql = env.backends.sql();
    let mut out = json!({});
    for user in ["u1", "u2"] {
        out[user] = json!({
            "memories": sql.memory_ids(user).await.unwrap(),
            "conversation": sql.conversation_summary(user, &format!("chat-{user}")).await.unwrap(),
            "files": sql.files(user).await.unwrap().len(),
            "observations": sql.observations(user, user, 1000).await.unwrap().unwrap().total,
            "sharers": sql.health_sharers(user).await.unwrap().len(),
        });
    }
    out
}

#[tokio::test]
async fn every_tool_refuses_bad_input_clearly_and_changes_nothing() {
    let env = Env::sqlite().await;
    upload(&env, "u2", "f-u2", "theirs.txt", "text/plain", b"u2 only", None).await;
    env.backends.sql().share_health("u2", "someone-else", Some("Two")).await.unwrap();
    let u1 = env.user("u1").await;
    u1.tool("remember", json!({"text": "kept"})).await.ok();
    u1.tool("summarize_conversation", json!({"summary": "Before"})).await.ok();
    let before = snapshot(&env).await;

    let huge = "x".repeat(100_000);
    let cases: Vec<(&str, Value, &str)> = vec![
        ("echo", json!({"text": 5}), "argument 'text' must be a string, not integer"),
        ("echo", json!({}), "missing required argument 'text'"),
        ("echo", json!({"text": "a", "extra": 1}), "unknown argument 'extra'"),
        ("whoami", json!({"user_id": "u2"}), "unknown argument 'user_id'"),
        ("ask_user", json!({"question": "Q", "options": "a, b"}), "argument 'options' must be an array"),
        ("ask_user", json!({"question": huge, "options": ["a", "b"]}), "too long"),
        ("ask_user", json!({"question": "Q", "options": ["only one"]}), "2 to 4"),
        ("ask_user", json!({"question": "Q", "options": ["a", "b"], "multi_select": "yes"}), "must be a boolean"),
        ("family_health", json!({"count": "20"}), "argument 'count' must be an integer, not string"),
        ("family_health", json!({"count": 2.5}), "must be an integer"),
        ("family_health", json!({"member": 7}), "must be a string"),
        ("family_health", json!({"member": "u2"}), "No circle member matching 'u2'"),
        ("family_health", json!({"member": "Two"}), "No circle member matching 'Two'"),
        ("family_health", json!({"member": huge}), "too long"),
        ("list_files", json!({"owner": "u2"}), "unknown argument 'owner'"),
        ("read_file", json!({"file_key": 5}), "must be a string"),
        ("read_file", json!({}), "missing required argument 'file_key'"),
        ("read_file", json!({"file_key": ""}), "requires a 'file_key'"),
        ("read_file", json!({"file_key": "f-u2"}), "File not found"),
        ("read_file", json!({"file_key": "f-u2.trans"}), "File not found"),
        ("read_file", json!({"file_key": "../../etc/passwd"}), "not a file_key"),
        ("read_file", json!({"file_key": huge}), "not a file_key"),
        ("recall_memory", json!({"query": ["kept"]}), "must be a string"),
        ("recall_memory", json!({"query": "kept", "top_k": "5"}), "must be an integer"),
        ("recall_memory", json!({"query": "kept", "top_k": -1}), "between 1 and 50"),
        ("recall_memory", json!({"query": "  "}), "'query' is required"),
        ("recall_memory", json!({"query": huge}), "too long"),
        ("remember", json!({"text": ["a"]}), "must be a string"),
        ("remember", json!({"text": "x", "kind": "secret"}), "must be one of \"fact\", \"preference\", \"episode\""),
        ("remember", json!({"text": "   "}), "'text' is required"),
        ("remember", json!({"text": huge}), "too long"),
        ("render_chart", json!({"option": [1, 2]}), "must be an object"),
        ("render_chart", json!({"option": "not json"}), "must be an object"),
        ("render_chart", json!({"option": {"series": [{"type": "bar", "data": [1]}]}}), "needs 'xAxis'"),
        ("render_chart", json!({"option": {"series": [{"type": "pie", "data": [1]}]}, "title": huge}), "too long"),
        ("render_chart", json!({"option": {"series": [{"type": "pie", "data": [huge.repeat(3)]}]}}), "byte limit"),
        ("summarize_conversation", json!({"summary": 5}), "must be a string"),
        ("summarize_conversation", json!({"summary": " "}), "'summary' is required"),
        ("summarize_conversation", json!({"summary": huge}), "far too long"),
    ];
    for (tool, args, expected) in cases {
        let reply = u1.tool(tool, args.clone()).await;
        let message = reply.tool_error();
        assert!(message.contains(expected), "{tool} {}: {message:?} lacks {expected:?}", crate::short(&args));
        assert!(!message.contains("u2 only"), "{tool}: another user's content leaked");
    }
    assert_eq!(snapshot(&env).await, before, "bad calls changed stored data");

    // A body over the server's limit is refused before any tool runs.
    let too_big = u1
        .post(&crate::support::rpc(
            99,
            "tools/call",
            json!({"name": "remember", "arguments": {"text": "y".repeat(5 << 20)}}),
        ))
        .await;
    assert_eq!(too_big.status(), http::StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(snapshot(&env).await, before);
}

#[tokio::test]
async fn unknown_tools_and_anonymous_callers_change_nothing() {
    let env = Env::sqlite().await;
    let before = snapshot(&env).await;
    let mut anonymous = env.client();
    anonymous.initialize(json!({})).await;
    for (tool, args) in [
        ("remember", json!({"text": "sneaky"})),
        ("summarize_conversation", json!({"summary": "sneaky"})),
        ("family_health", json!({})),
        ("read_file", json!({"file_key": "f"})),
    ] {
        let reply = anonymous.tool(tool, args).await;
        assert_eq!(reply.status, http::StatusCode::UNAUTHORIZED, "{tool}");
    }
    let u1 = env.user("u1").await;
    let unknown = u1.tool("forget_everything", json!({})).await;
    assert!(unknown.rpc_error().1.contains("Unknown tool"));
    assert_eq!(snapshot(&env).await, before);
}
