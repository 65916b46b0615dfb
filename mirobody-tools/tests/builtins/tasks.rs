//! Tasks kept in the SQL store outlive the process: a task finished before a restart is
//! fetched after it, with its result; a task that was running when its process ended reads as
//! failed once its lease passes, never "working" forever.
//!
//! The process is a tokio runtime of its own, shut down without a chance to write anything
//! more (its running futures are dropped where they stand), then a new runtime opens the same
//! SQLite file, as a restarted server would.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use mirobody_core::{Args, Registry, TaskSupport, Tool, ToolContext, ToolResult, UserInfo};
use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_mcp::{McpService, TaskOptions};
use mirobody_tools::backends::SqlStore;
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
    let service = McpService::builder(Arc::new(registry)).task_store(Arc::new(store)).task_options(options).build();
    McpHttp::new(service, HttpOptions::default()).router()
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
