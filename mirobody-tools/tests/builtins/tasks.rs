//! Tasks kept in the SQL store outlive the process: a task finished before a restart is
//! fetched after it, with its result; a task that was running when its process ended reads as
//! failed once its lease passes, never "working" forever.
//!
//! The process is a tokio runtime of its own, shut down without a chance to write anything
//! more (its running futures are dropped where they stand), then a new runtime opens the same
//! SQLite file, as a restarted server would.
//!
//! With encryption at rest, what a task carries of a person's data (its result, its
//! questions) is ciphertext in the database, on SQLite and PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use mirobody_core::{Args, Registry, TaskSupport, Tool, ToolContext, ToolResult, UserInfo};
use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_mcp::{McpEngine, TaskOptions};
use mirobody_store::SqlStore;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn sleepy(args: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
    tokio::time::sleep(Duration::from_millis(args.integer("ms", 0) as u64)).await;
    ToolResult::text(format!("slept {}", args.integer("ms", 0)))
}

async fn router(url: &str) -> Router {
    let store = SqlStore::connect(url, None, 4).await.unwrap();
    let registry = Registry::builder()
        .tool(
            Tool::new("sleepy", "Sleeps.")
                .param(mirobody_core::Param::optional("ms", mirobody_core::Type::Integer, "How long."))
                .task_support(TaskSupport::Optional)
                .handler(sleepy),
        )
        .build()
        .unwrap();
    let options =
        TaskOptions::default().with_sync_budget(Duration::from_millis(20)).with_lease(Duration::from_millis(600));
    let engine = McpEngine::builder(Arc::new(registry)).task_store(Arc::new(store)).task_options(options).build();
    McpHttp::new(engine, HttpOptions::default()).router()
}

// One 2026-07-28 request by alice, with the tasks extension; its result.
async fn call(router: &Router, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    });
    let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).unwrap_or_default();
    let mut request = Request::post("/")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(Body::from(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()))
        .unwrap();
    request.extensions_mut().insert(UserInfo::authenticated("alice"));
    let response = router.clone().oneshot(request).await.unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(body.get("error").is_none(), "{method}: {body}");
    body["result"].clone()
}

async fn status(router: &Router, task: &str) -> Value {
    call(router, "tasks/get", json!({"taskId": task})).await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

#[test]
fn a_finished_task_outlives_a_restart_and_a_running_one_reads_failed() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());

    let first = runtime();
    let (finished, running) = first.block_on(async {
        let router = router(&url).await;
        let finished = call(&router, "tools/call", json!({"name": "sleepy", "arguments": {"ms": 100}})).await;
        let finished = finished["taskId"].as_str().expect("a task").to_owned();
        let running = call(&router, "tools/call", json!({"name": "sleepy", "arguments": {"ms": 600_000}})).await;
        let running = running["taskId"].as_str().expect("a task").to_owned();
        while status(&router, &finished).await["status"] != "completed" {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(status(&router, &running).await["status"], "working");
        (finished, running)
    });
    // The process ends: nothing it was running writes again.
    first.shutdown_background();

    runtime().block_on(async {
        let router = router(&url).await;
        let done = status(&router, &finished).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["result"]["content"][0]["text"], "slept 100");
        // Until its lease passes, the running task may still be alive elsewhere; then it
        // reads as failed, with an error and no result.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let gone = status(&router, &running).await;
        assert_eq!(gone["status"], "failed", "{gone}");
        assert_eq!(gone["error"]["code"], -32603);
        assert!(gone.get("result").is_none());
        // Cancelling it now changes nothing: it has ended.
        call(&router, "tasks/cancel", json!({"taskId": running})).await;
        assert_eq!(status(&router, &running).await["status"], "failed");
    });
}

// What a task of alice's carries of her data: a document's text, and a question about it.
const DOCUMENT: &str = "Diagnosis: hypothyroidism, TSH 9.8 mIU/L";

fn sealed_task(id: &str) -> mirobody_ports::TaskRecord {
    let mut task =
        mirobody_ports::TaskRecord::new(id.into(), "user:alice".into(), "read_file".into(), 1_000, 60_000, 30_000);
    task.state = mirobody_ports::TaskState::Completed;
    task.outcome = Some(json!({"result": {"content": [{"type": "text", "text": DOCUMENT}]}}));
    task.input_requests = Some(json!({"go": {"method": "elicitation/create", "params": {"message": DOCUMENT}}}));
    task
}

const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

// The stored columns of task `id` as they are in the database: (input_requests, outcome).
async fn raw_row(url: &str, schema: Option<&str>, id: &str) -> (Option<String>, Option<String>) {
    use sqlx::Connection;
    let sql = match schema {
        Some(schema) => format!("SELECT input_requests, outcome FROM {schema}.tasks WHERE id = $1"),
        None => "SELECT input_requests, outcome FROM tasks WHERE id = $1".to_owned(),
    };
    if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query_as(&sql).bind(id).fetch_one(&mut conn).await.unwrap()
    } else {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query_as(&sql).bind(id).fetch_one(&mut conn).await.unwrap()
    }
}

// Copies task `from`'s stored outcome over task `to`'s, as someone with the database would.
async fn move_outcome(url: &str, schema: Option<&str>, from: &str, to: &str) {
    use sqlx::Connection;
    let table = schema.map_or("tasks".to_owned(), |schema| format!("{schema}.tasks"));
    let sql = format!("UPDATE {table} SET outcome = (SELECT outcome FROM {table} WHERE id = $1) WHERE id = $2");
    if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query(&sql).bind(from).bind(to).execute(&mut conn).await.unwrap();
    } else {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query(&sql).bind(from).bind(to).execute(&mut conn).await.unwrap();
    }
}

// With encryption at rest, a task's outcome and questions are ciphertext in the database and
// come back whole through the store; without the key, or moved to another row, they do not
// open: an error, never another task's text.
async fn outcomes_are_sealed(store: &dyn mirobody_ports::TaskStore, url: &str, schema: Option<&str>) {
    use mirobody_ports::TaskStore;
    use mirobody_store::{FileCipher, SqlTaskStore};

    let task = sealed_task("sealed1");
    store.save(&task).await.unwrap();
    let (input, outcome) = raw_row(url, schema, "sealed1").await;
    for column in [input.as_deref().unwrap(), outcome.as_deref().unwrap()] {
        // Words of the document long enough that base64 ciphertext never holds them by chance.
        assert!(!column.contains("hypothyroidism") && !column.contains("TSH 9.8 mIU/L"), "clear text stored: {column}");
        assert!(column.starts_with("sealed:"), "{column}");
    }
    assert_eq!(store.load("sealed1", "user:alice", 2_000).await.unwrap(), Some(task.clone()), "read back whole");

    let sql = SqlStore::connect(url, schema, 2).await.unwrap();
    let other_key = SqlTaskStore::new(sql.clone(), Some(FileCipher::from_config(&"42".repeat(32)).unwrap()));
    let err = other_key.load("sealed1", "user:alice", 2_000).await.unwrap_err().to_string();
    assert!(err.contains("could not be opened"), "{err}");
    let no_key = SqlTaskStore::new(sql.clone(), None);
    let err = no_key.load("sealed1", "user:alice", 2_000).await.unwrap_err().to_string();
    assert!(err.contains("file_encryption_key"), "{err}");

    // A sealed outcome copied onto another task's row does not open there.
    store.save(&sealed_task("sealed2")).await.unwrap();
    move_outcome(url, schema, "sealed1", "sealed2").await;
    assert!(store.load("sealed2", "user:alice", 2_000).await.is_err(), "moved ciphertext opened");

    // A row written in clear before encryption was turned on still reads.
    let clear = sealed_task("clear1");
    no_key.save(&clear).await.unwrap();
    assert_eq!(store.load("clear1", "user:alice", 2_000).await.unwrap(), Some(clear));
}

#[tokio::test]
async fn task_outcomes_are_sealed_at_rest_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let config = mirobody_store::BackendConfig {
        file_encryption_key: Some(KEY.into()),
        signing_key: Some("k".repeat(32)),
        ..mirobody_store::BackendConfig::embedded(dir.path())
    };
    // Through the backends the server opens: the key of stored files seals the tasks too.
    let backends = mirobody_store::open(&config).await.unwrap();
    let url = format!("sqlite://{}", dir.path().join("mirobody.db").display());
    outcomes_are_sealed(&*backends.task_store(), &url, None).await;
}

#[tokio::test]
async fn task_outcomes_are_sealed_at_rest_on_postgres() {
    use mirobody_store::{FileCipher, SqlTaskStore};

    let test = "tasks::task_outcomes_are_sealed_at_rest_on_postgres";
    let Some(url) = crate::support::external("MIROBODY_TEST_POSTGRES_URL", test) else { return };
    let schema = crate::support::PgSchema { url: url.clone(), name: crate::support::unique("mirobody_test") };
    let sql = SqlStore::connect(&url, Some(&schema.name), 2).await.unwrap();
    let store = SqlTaskStore::new(sql, Some(FileCipher::from_config(KEY).unwrap()));
    outcomes_are_sealed(&store, &url, Some(&schema.name)).await;
}

// A line chart of `points` values.
fn chart(points: usize) -> Value {
    let data: Vec<i64> = (0..points).map(|i| 60 + (i % 40) as i64).collect();
    json!({"xAxis": {"type": "category"}, "yAxis": {"type": "value"}, "series": [{"name": "HR", "type": "line", "data": data}]})
}

#[tokio::test]
async fn a_drawing_that_is_not_done_at_once_becomes_a_task() {
    // With no sync budget, a call becomes a task as soon as it yields: a drawing yields, since
    // it waits for its blocking thread (drawn on the async thread, it was answered directly).
    let registry = Arc::new(mirobody_tools::builtin_registry().unwrap());
    let options = TaskOptions::default().with_sync_budget(Duration::ZERO);
    let engine = McpEngine::builder(registry).task_options(options).build();
    let router = McpHttp::new(engine, HttpOptions::default()).router();
    let created =
        call(&router, "tools/call", json!({"name": "render_chart", "arguments": {"option": chart(2_000)}})).await;
    assert_eq!(created["resultType"], "task", "{}", crate::short(&created));
    let task = created["taskId"].as_str().unwrap().to_owned();
    let done = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let now = status(&router, &task).await;
            if now["status"] != "working" {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the drawing ends");
    assert_eq!(done["status"], "completed", "{}", crate::short(&done));
    assert_eq!(done["result"]["structuredContent"]["image"], "image/png");
    assert_eq!(done["result"]["content"][1]["type"], "image");
}
