//! MCP sessions shared through the Redis of this machine: the backplane's records and events,
//! then instances over one Redis serving one session between them (a question asked on one
//! and answered through another, the session going on after its first instance is gone); the
//! cache and the sessions in namespaces of their own; a completed task forged with a `PUBLISH`
//! dropped and counted; and the deployment guide's ACL user, which is all the server needs.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use futures::StreamExt;
use http::{Request, header};
use mirobody_core::{Cache, ResourceRegistry, UserInfo};
use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_mcp::{McpEngine, StateKey};
use mirobody_ports::MAX_SESSION_VALUE_BYTES;
use mirobody_ports::SessionBackplane;
use mirobody_store::{OpenedBackends, RedisCache};
use serde_json::json;
use tower::ServiceExt;

use crate::support::{Client, Env, Sse, external, handles, rpc, unique, within};

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
async fn redis_keeps_sets_of_members_bounded_with_an_expiry() {
    let Some((url, prefix)) = redis("redis_keeps_sets").await else { return };
    let redis = RedisCache::connect(&url, &prefix).await.unwrap();
    let ttl = Duration::from_secs(30);
    for member in ["m1", "m2", "m3", "m4"] {
        redis.add_member("owner", member.as_bytes().to_vec(), 3, ttl).await.unwrap();
        // Scored by the millisecond: one each, so the oldest is the one dropped.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let listed = redis.members("owner", 10).await.unwrap();
    assert_eq!(listed, [b"m2".to_vec(), b"m3".to_vec(), b"m4".to_vec()], "the oldest dropped past the bound");
    assert_eq!(redis.members("owner", 2).await.unwrap().len(), 2);
    assert_eq!(redis.members("nobody", 10).await.unwrap(), Vec::<Vec<u8>>::new());
    // A real sorted set under the records' namespace, with the expiry given.
    let mut conn = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let key = format!("{prefix}session:owner");
    let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut conn).await.unwrap();
    assert_eq!(kind, "zset");
    let left: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.unwrap();
    assert!(left > 25_000 && left <= 30_000, "{left} ms left");
    // Renewed and removed as a record is.
    redis.renew(&["owner".into()], Duration::from_secs(90)).await.unwrap();
    let left: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.unwrap();
    assert!(left > 85_000, "{left} ms left");
    redis.remove("owner").await.unwrap();
    let exists: i64 = redis::cmd("EXISTS").arg(&key).query_async(&mut conn).await.unwrap();
    assert_eq!(exists, 0);
    assert!(redis.members("owner", 10).await.unwrap().is_empty());
    // And it expires.
    redis.add_member("brief", b"m".to_vec(), 3, Duration::from_millis(100)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(redis.members("brief", 10).await.unwrap().is_empty(), "expired");
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
    let key = shared_key();
    let engine = McpEngine::builder(registry)
        .resources(resources)
        .backends(handles(backends))
        .request_state_key(key.clone())
        .build();
    let mut options = HttpOptions::default();
    options.caller_limits = mirobody_mcp::limits::CallerLimits::default().with_rate(0, 0);
    let backplane = backends.session_backplane().expect("Redis is configured");
    McpHttp::with_shared_sessions(engine, options, backplane, &key).await.unwrap()
}

// The secret the instances share, as `request_state_key` in their configuration.
fn shared_key() -> StateKey {
    StateKey::new(*b"instances share this secret, 32!").unwrap()
}

fn via(client: &Client, http: &McpHttp) -> Client {
    client.via(http.router())
}

#[tokio::test]
async fn instances_sharing_a_redis_serve_one_session_between_them() {
    let Some((url, prefix)) = redis("instances_sharing_a_redis").await else { return };
    let env =
        Env::with(|config| mirobody_store::BackendConfig { redis_url: Some(url), redis_key_prefix: prefix, ..config })
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

#[tokio::test]
async fn cache_keys_and_session_records_live_in_namespaces_of_their_own() {
    let Some((url, prefix)) = redis("namespaces").await else { return };
    let cache = RedisCache::connect(&url, &prefix).await.unwrap();
    // A cache key that looks like a session's names no session record.
    Cache::set(&cache, "session:s1", b"cached", Some(Duration::from_secs(30))).await.unwrap();
    cache.save("s1", b"record".to_vec(), Duration::from_secs(30)).await.unwrap();
    assert_eq!(cache.load("s1").await.unwrap(), Some(b"record".to_vec()));
    assert_eq!(Cache::get(&cache, "session:s1").await.unwrap(), Some(b"cached".to_vec()));

    let mut conn = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query_async(&mut conn).await.unwrap();
    keys.sort();
    assert_eq!(keys, [format!("{prefix}cache:session:s1"), format!("{prefix}session:s1")]);
    Cache::delete(&cache, "session:s1").await.unwrap();
    cache.remove("s1").await.unwrap();
}

#[tokio::test]
async fn a_huge_value_put_in_the_store_by_someone_else_is_read_only_in_part() {
    let Some((url, prefix)) = redis("huge_value").await else { return };
    let cache = RedisCache::connect(&url, &prefix).await.unwrap();
    let mut conn = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let huge = vec![b'x'; MAX_SESSION_VALUE_BYTES + 1_000];
    let key = format!("{prefix}session:huge");
    let _: () = redis::cmd("SET").arg(&key).arg(&huge).arg("PX").arg(30_000).query_async(&mut conn).await.unwrap();
    let read = cache.load("huge").await.unwrap().expect("there is a value");
    assert_eq!(read.len(), MAX_SESSION_VALUE_BYTES + 1, "one byte past the bound, no more");
    // An empty value is none, as a missing one is: no instance writes one.
    let _: () = redis::cmd("SET").arg(&key).arg("").query_async(&mut conn).await.unwrap();
    assert_eq!(cache.load("huge").await.unwrap(), None);
    cache.remove("huge").await.unwrap();
}

// Alice's 2026-07-28 `subscriptions/listen` stream on `http`, for her tasks and the prompt list.
async fn listening(http: &McpHttp) -> Sse {
    let params = json!({"notifications": {"promptsListChanged": true}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    }});
    let body = rpc(1, "subscriptions/listen", params);
    let mut request = Request::builder()
        .method("POST")
        .uri("/")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(Body::from(body.to_string()))
        .unwrap();
    request.extensions_mut().insert(UserInfo::authenticated("alice"));
    let mut stream = Sse::new(within("the listen stream", http.router().oneshot(request)).await.unwrap());
    assert_eq!(stream.next_message().await["method"], "notifications/subscriptions/acknowledged");
    stream
}

#[tokio::test]
async fn a_completed_task_forged_with_a_publish_is_dropped_and_counted() {
    let Some((url, prefix)) = redis("forged_publish").await else { return };
    let env = Env::with(|config| mirobody_store::BackendConfig {
        redis_url: Some(url.clone()),
        redis_key_prefix: prefix.clone(),
        ..config
    })
    .await;
    let (a, b) = (instance(&env.backends).await, instance(&env.backends).await);
    let mut stream = listening(&a).await;

    // What `redis-cli publish <prefix>session-events '...'` sends: a completed task for alice.
    let forged = json!({"from": "x", "id": "1", "at": 0, "kind": "change", "change": {"kind": "task",
        "owner": "user:alice", "task": {"taskId": "t1", "status": "completed",
        "result": {"content": [{"type": "text", "text": "forged"}]}}}});
    let mut conn = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let channel = format!("{prefix}session-events");
    let heard: i64 = redis::cmd("PUBLISH").arg(&channel).arg(forged.to_string()).query_async(&mut conn).await.unwrap();
    assert_eq!(heard, 2, "both instances subscribe to the channel");
    within("a to count the forgery", async {
        while a.refused_events().unwrap().unsigned < 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // Alice's stream carries only what an instance said: b's change, and nothing before it.
    b.engine().changes().prompts_changed();
    assert_eq!(stream.next_message().await["method"], "notifications/prompts/list_changed");
    within("b to count it too", async {
        while b.refused_events().unwrap().unsigned < 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

// The deployment guide's ACL user (README, "Running more than one instance"): everything the
// server does with Redis works as that user, and nothing outside its prefix does.
#[tokio::test]
async fn the_deployment_guides_acl_user_can_do_all_the_server_needs_and_no_more() {
    let Some((url, prefix)) = redis("acl_user").await else { return };
    let user = unique("mirobody_acl");
    let password = unique("secret");
    let mut admin = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    // The guide's line, with this test's user, password and prefix.
    let line = format!(
        "ACL SETUSER {user} reset on >{password} ~{prefix}* &{prefix}* \
         +get +getrange +set +del +pexpire +zadd +zremrangebyrank +zrange +publish +subscribe +unsubscribe +ping"
    );
    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    let _: () = redis::cmd("ACL").arg(&args).query_async(&mut admin).await.unwrap();
    let host = url.strip_prefix("redis://").expect("a redis:// URL");
    let as_user = format!("redis://{user}:{password}@{host}");
    let outcome = async move {
        let limited = RedisCache::connect(&as_user, &prefix).await.unwrap();
        Cache::set(&limited, "k", b"v", Some(Duration::from_secs(30))).await.unwrap();
        assert_eq!(Cache::get(&limited, "k").await.unwrap(), Some(b"v".to_vec()));
        assert!(Cache::delete(&limited, "k").await.unwrap());
        let mut events = limited.events().await.unwrap();
        limited.save("s1", b"record".to_vec(), Duration::from_secs(30)).await.unwrap();
        limited.renew(&["s1".into()], Duration::from_secs(60)).await.unwrap();
        assert_eq!(limited.load("s1").await.unwrap(), Some(b"record".to_vec()));
        limited.add_member("o1", b"member".to_vec(), 8, Duration::from_secs(30)).await.unwrap();
        limited.renew(&["o1".into()], Duration::from_secs(60)).await.unwrap();
        assert_eq!(limited.members("o1", 8).await.unwrap(), [b"member".to_vec()]);
        limited.remove("o1").await.unwrap();
        limited.publish(b"hello".to_vec()).await.unwrap();
        let event = tokio::time::timeout(Duration::from_secs(5), events.next()).await.unwrap();
        assert_eq!(event, Some(b"hello".to_vec()));
        limited.remove("s1").await.unwrap();
        // Outside its prefix, or another command: refused.
        let mut conn = redis::Client::open(as_user.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
        let other: Result<Option<Vec<u8>>, _> = redis::cmd("GET").arg("elsewhere").query_async(&mut conn).await;
        let refused = |e: redis::RedisError| e.to_string().to_lowercase().contains("permission");
        assert!(refused(other.unwrap_err()), "a key outside the prefix");
        let keys: Result<Vec<String>, _> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await;
        assert!(refused(keys.unwrap_err()), "a command the server does not use");
        let publish: Result<i64, _> = redis::cmd("PUBLISH").arg("elsewhere").arg("x").query_async(&mut conn).await;
        assert!(refused(publish.unwrap_err()), "a channel outside the prefix");
    };
    // The user goes however the test ends.
    let outcome = tokio::spawn(outcome).await;
    let _: () = redis::cmd("ACL").arg("DELUSER").arg(&user).query_async(&mut admin).await.unwrap();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic.into_panic());
    }
}
