//! MCP sessions shared through the Redis of this machine: the backplane's records and events,
//! then instances over one Redis serving one session between them (a question asked on one
//! and answered through another, the session going on after its first instance is gone).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mirobody_core::{ResourceRegistry, SessionBackplane, UserInfo};
use mirobody_mcp::McpService;
use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_tools::backends::{OpenedBackends, RedisCache};
use serde_json::json;

use crate::support::{Client, Env, Sse, external, handles, rpc, unique};

async fn redis(test: &str) -> Option<(String, String)> {
    let url = external("MIROBODY_TEST_REDIS_URL", test)?;
    Some((url, format!("{}:", unique("mirobody_test"))))
}

#[tokio::test]
async fn redis_keeps_session_records_until_they_expire_or_are_removed() {
    let Some((url, prefix)) = redis("redis_keeps_session_records").await else { return };
    let redis = RedisCache::connect(&url, &prefix).await.unwrap();
    let short = Duration::from_millis(300);
    redis.save("s1", b"one".to_vec(), short).await.unwrap();
    redis.save("s2", b"two".to_vec(), short).await.unwrap();
    assert_eq!(redis.load("s1").await.unwrap(), Some(b"one".to_vec()));
    // Renewed: s1 outlives its first expiry; s2 does not; a missing id is not made.
    redis.renew(&["s1".into(), "gone".into()], Duration::from_secs(30)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(redis.load("s1").await.unwrap(), Some(b"one".to_vec()));
    assert_eq!(redis.load("s2").await.unwrap(), None);
    assert_eq!(redis.load("gone").await.unwrap(), None);
    // Under its own prefix only.
    let other = RedisCache::connect(&url, &format!("{prefix}other:")).await.unwrap();
    assert_eq!(other.load("s1").await.unwrap(), None);
    redis.remove("s1").await.unwrap();
    assert_eq!(redis.load("s1").await.unwrap(), None);
}

#[tokio::test]
async fn redis_carries_events_to_every_subscriber_of_its_prefix() {
    let Some((url, prefix)) = redis("redis_carries_events").await else { return };
    let a = RedisCache::connect(&url, &prefix).await.unwrap();
    let b = RedisCache::connect(&url, &prefix).await.unwrap();
    let elsewhere = RedisCache::connect(&url, &format!("{prefix}other:")).await.unwrap();
    let (mut on_a, mut on_b) = (a.events().await.unwrap(), b.events().await.unwrap());
    let mut on_elsewhere = elsewhere.events().await.unwrap();
    a.publish(b"hello".to_vec()).await.unwrap();
    for events in [&mut on_a, &mut on_b] {
        let event = tokio::time::timeout(Duration::from_secs(5), events.next()).await.unwrap();
        assert_eq!(event, Some(b"hello".to_vec()));
    }
    let nothing = tokio::time::timeout(Duration::from_millis(200), on_elsewhere.next()).await;
    assert!(nothing.is_err(), "another prefix hears nothing");
}

// An instance: the built-in tools over `backends`, its sessions shared through their Redis.
async fn instance(backends: &OpenedBackends) -> McpHttp {
    let registry = Arc::new(mirobody_tools::builtin_registry().unwrap());
    let resources = ResourceRegistry::from_registered(mirobody_tools::views::resources(), Vec::new()).unwrap();
    let service = McpService::builder(registry).resources(resources).backends(handles(backends)).build();
    let mut options = HttpOptions::default();
    options.caller_limits = mirobody_mcp::limits::CallerLimits::default().with_rate(0, 0);
    McpHttp::with_shared_sessions(service, options, backends.session_backplane().expect("Redis is configured"))
        .await
        .unwrap()
}

fn via(client: &Client, http: &McpHttp) -> Client {
    let mut moved = Client::new(http.router());
    moved.session = client.session.clone();
    moved.user = client.user.clone();
    moved
}

#[tokio::test]
async fn instances_sharing_a_redis_serve_one_session_between_them() {
    let Some((url, prefix)) = redis("instances_sharing_a_redis").await else { return };
    let env = Env::with(|config| mirobody_tools::backends::BackendConfig {
        redis_url: Some(url),
        redis_key_prefix: prefix,
        ..config
    })
    .await;
    let (a, b) = (instance(&env.backends).await, instance(&env.backends).await);
    let mut client = Client::new(a.router()).as_user(UserInfo::authenticated("ada"));
    client.initialize(json!({"elicitation": {}})).await;

    // Asked through a, answered through b.
    let call = rpc(
        3,
        "tools/call",
        json!({"name": "ask_user", "arguments": {"question": "Units?", "options": ["Metric", "Imperial"]}}),
    );
    let mut stream = Sse::new(client.post(&call).await);
    let question = stream.next_message().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"choice": "Metric"}}});
    let intruder = via(&client, &b).as_user(UserInfo::authenticated("eve"));
    assert_eq!(intruder.post(&answer).await.status(), http::StatusCode::NOT_FOUND);
    assert_eq!(via(&client, &b).post(&answer).await.status(), http::StatusCode::ACCEPTED);
    let response = stream.next_message().await;
    assert_eq!(response["result"]["structuredContent"], json!({"answered": true, "answer": {"selected": ["Metric"]}}));

    // Written through b, read through a third instance after a is gone.
    via(&client, &b).tool("remember", json!({"text": "Allergic to penicillin"})).await.ok();
    drop(a);
    let c = instance(&env.backends).await;
    let recalled = via(&client, &c).tool("recall_memory", json!({"query": "penicillin"})).await;
    assert!(recalled.ok().to_string().contains("Allergic to penicillin"), "{}", recalled.body);
}
