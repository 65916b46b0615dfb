//! The access log through the protocol: a call that becomes a task is recorded when the task
//! ends, with its real outcome and duration (cancelled and expired tasks too), never at its
//! start; a read of another person's data names them, and fails with a clear error when the
//! log's queue stays full.

use std::sync::Mutex;

use async_trait::async_trait;
use mirobody_core::BackendError;
use mirobody_mcp::AccessLogOptions;
use mirobody_ports::{AccessKind, AccessLog, AccessOutcome, DataRead};

use super::*;

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    user: String,
    subject: Option<String>,
    name: String,
    outcome: AccessOutcome,
    duration_ms: u64,
}

// Every entry written; with `blocked`, every write waits for ever (a writer that fell behind).
#[derive(Default)]
struct Recorded {
    entries: Mutex<Vec<Entry>>,
    blocked: bool,
    // Writes begun, blocked ones included.
    begun: AtomicUsize,
}

#[async_trait]
impl AccessLog for Recorded {
    async fn record(
        &self,
        user_id: &str,
        subject: Option<&str>,
        _kind: AccessKind,
        name: &str,
        outcome: AccessOutcome,
        duration_ms: u64,
    ) -> Result<(), BackendError> {
        self.begun.fetch_add(1, Ordering::SeqCst);
        if self.blocked {
            std::future::pending::<()>().await;
        }
        let entry =
            Entry { user: user_id.into(), subject: subject.map(Into::into), name: name.into(), outcome, duration_ms };
        self.entries.lock().unwrap().push(entry);
        Ok(())
    }

    async fn reads_of(&self, _: &str, _: Option<i64>, _: u32) -> Result<Vec<DataRead>, BackendError> {
        Ok(Vec::new())
    }

    async fn purge_before(&self, _: i64, _: u64) -> Result<u64, BackendError> {
        Ok(0)
    }
}

impl Recorded {
    fn entries(&self) -> Vec<Entry> {
        self.entries.lock().unwrap().clone()
    }

    // Waits until an entry of `name` is written, and returns the entries then.
    async fn until_written(&self, name: &str) -> Vec<Entry> {
        within(&format!("the access log entry of {name}"), async {
            loop {
                let entries = self.entries();
                if entries.iter().any(|e| e.name == name) {
                    return entries;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
    }
}

async fn reads_ann(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    match ctx.reads_data_of("ann").await {
        Ok(()) => ToolResult::text("ann's data"),
        Err(refused) => ToolResult::error(refused.to_string()),
    }
}

fn logged_service(log: Arc<Recorded>, options: TaskOptions, access: AccessLogOptions) -> McpEngine {
    let registry = Registry::builder()
        .tool(
            Tool::new("sleepy", "Sleeps.")
                .param(mirobody_core::Param::optional("ms", mirobody_core::Type::Integer, "How long."))
                .task_support(TaskSupport::Optional)
                .handler(sleepy),
        )
        .tool(
            Tool::new("forever", "Never ends.")
                .param(mirobody_core::Param::optional("tag", mirobody_core::Type::String, "Names the call."))
                .task_support(TaskSupport::Optional)
                .handler(forever),
        )
        .tool(
            Tool::new("sleep_past_a_limit", "Sleeps past its 200 ms.")
                .param(mirobody_core::Param::optional("ms", mirobody_core::Type::Integer, "How long."))
                .task_support(TaskSupport::Optional)
                .time_limit(Duration::from_millis(200))
                .handler(sleepy),
        )
        .tool(Tool::new("reads_ann", "Reads ann's data.").handler(reads_ann))
        .build()
        .unwrap();
    McpEngine::builder(Arc::new(registry))
        .task_store(Arc::new(MemoryTaskStore::default()))
        .task_options(options)
        .access_log(log)
        .access_log_options(access)
        .build()
}

#[tokio::test]
async fn a_task_is_logged_when_it_ends_with_its_outcome_and_duration_not_at_its_start() {
    let log = Arc::new(Recorded::default());
    let options = options().with_max_live_per_caller(8);
    let client = as_user(client_of(logged_service(log.clone(), options, AccessLogOptions::default())), "alice");
    let running = created(&client, "forever", json!({"tag": "logged-then-cancelled"})).await;
    let slow = created(&client, "sleepy", json!({"ms": 300})).await;
    let failing = created(&client, "sleep_past_a_limit", json!({"ms": 5000})).await;
    // A call answered at once is logged at once; everything before it in the queue is too.
    assert_complete(&client.call_tool("reads_ann", json!({})).await);
    let entries = log.until_written("reads_ann").await;
    assert!(
        entries.iter().all(|e| e.name != "forever"),
        "a running task has no entry yet (not an 'accepted' one): {entries:?}"
    );

    assert_eq!(until(&client, &slow, "completed").await["status"], "completed");
    let entries = log.until_written("sleepy").await;
    let sleepy: Vec<&Entry> = entries.iter().filter(|e| e.name == "sleepy").collect();
    assert_eq!(sleepy.len(), 1, "one entry, at its end: {entries:?}");
    assert_eq!((sleepy[0].user.as_str(), sleepy[0].outcome), ("alice", AccessOutcome::Ok));
    assert!(sleepy[0].duration_ms >= 300, "its whole duration, not the request's: {:?}", sleepy[0]);

    assert_eq!(until(&client, &failing, "completed").await["result"]["isError"], true);
    let entries = log.until_written("sleep_past_a_limit").await;
    let failed = entries.iter().find(|e| e.name == "sleep_past_a_limit").unwrap();
    assert_eq!(failed.outcome, AccessOutcome::Failed, "its real outcome: {failed:?}");

    client.call("tasks/cancel", json!({"taskId": running})).await.result();
    let entries = log.until_written("forever").await;
    let cancelled: Vec<&Entry> = entries.iter().filter(|e| e.name == "forever").collect();
    assert_eq!(cancelled.len(), 1, "{entries:?}");
    assert_eq!(cancelled[0].outcome, AccessOutcome::Cancelled);
    // Cancelling again writes nothing more.
    client.call("tasks/cancel", json!({"taskId": running})).await.result();
    assert_complete(&client.call_tool("sleepy", json!({"ms": 0})).await);
    within("the second sleepy entry", async {
        while log.entries().iter().filter(|e| e.name == "sleepy").count() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(log.entries().iter().filter(|e| e.name == "forever").count(), 1);
}

#[tokio::test]
async fn a_task_still_running_at_its_time_to_live_is_stopped_and_logged_as_expired() {
    let log = Arc::new(Recorded::default());
    let options = options().with_ttl(Duration::from_millis(300));
    let client = as_user(client_of(logged_service(log.clone(), options, AccessLogOptions::default())), "alice");
    let task = created(&client, "forever", json!({"tag": "stopped-at-its-ttl"})).await;
    let entries = log.until_written("forever").await;
    let expired = entries.iter().find(|e| e.name == "forever").unwrap();
    assert_eq!(expired.outcome, AccessOutcome::Expired, "{expired:?}");
    assert!(expired.duration_ms >= 300, "{expired:?}");
    within("the handler to be dropped", async {
        while !DROPPED.lock().unwrap().iter().any(|tag| tag == "stopped-at-its-ttl") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // Its record is gone with its time to live: nobody can read it, nor cancel what is left.
    within("the record to expire", async {
        while get(&client, &task).await.error_code() != -32602 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // And it no longer counts as running: two more may start (the bound is 2).
    created(&client, "forever", json!({})).await;
    created(&client, "forever", json!({})).await;
}

#[tokio::test]
async fn a_read_of_another_persons_data_names_them_in_the_log() {
    let log = Arc::new(Recorded::default());
    let client = as_user(client_of(logged_service(log.clone(), options(), AccessLogOptions::default())), "bob");
    assert_complete(&client.call_tool("reads_ann", json!({})).await);
    assert_complete(&client.call_tool("sleepy", json!({"ms": 0})).await);
    let entries = log.until_written("sleepy").await;
    let read = entries.iter().find(|e| e.name == "reads_ann").unwrap();
    assert_eq!((read.user.as_str(), read.subject.as_deref()), ("bob", Some("ann")));
    let own = entries.iter().find(|e| e.name == "sleepy").unwrap();
    assert_eq!(own.subject, None, "one's own data names nobody");
}

#[tokio::test]
async fn a_read_of_another_persons_data_fails_clearly_when_the_log_stays_full() {
    // A queue of one place, and a writer that never finishes a write.
    let log = Arc::new(Recorded { blocked: true, ..Recorded::default() });
    let access = AccessLogOptions::default().with_queue(1).with_read_wait(Duration::from_millis(50));
    let client = as_user(client_of(logged_service(log.clone(), options(), access)), "bob");
    // The writer takes the first record and blocks; the second fills the queue; the third, of
    // bob's own data, is dropped: none of them fails.
    assert_complete(&client.call_tool("sleepy", json!({"ms": 0})).await);
    within("the writer to take the first record", async {
        while log.begun.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    for _ in 0..2 {
        assert_complete(&client.call_tool("sleepy", json!({"ms": 0})).await);
    }
    let refused = client.call_tool("reads_ann", json!({})).await;
    let result = assert_complete(&refused);
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("too busy to record this read of another person's data"), "{text}");
    assert!(log.entries().is_empty());
}
