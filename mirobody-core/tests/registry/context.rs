//! `ToolContext`: what a missing backend says (to the tool, and to the model as an error result),
//! the application's own state reaching its tool by type through the extensions, and what a
//! tool sends its client (progress, logs, requests) with and without a `ClientPeer`.

use async_trait::async_trait;
use mirobody_core::{ClientPeer, PeerError};

use super::*;

#[test]
fn missing_backends_give_the_documented_messages() {
    let ctx = ToolContext::new();
    assert_eq!(ctx.cache().err().unwrap().to_string(), "The cache is not configured on this server.");
    assert_eq!(ctx.storage().err().unwrap().to_string(), "Object storage is not configured on this server.");
    assert!(ctx.extension::<String>().is_none(), "no application state");
    assert_eq!(ctx.memory().err().unwrap().to_string(), "Long-term memory is not enabled on this server.");
    assert!(ctx.client().is_none());
}

// The application's own state, which core knows nothing of, reaches its tool by type.
struct Clinic {
    name: &'static str,
}

async fn clinic_name(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    match ctx.extension::<std::sync::Arc<Clinic>>() {
        Some(clinic) => ToolResult::text(clinic.name),
        None => ToolResult::error("no clinic"),
    }
}

#[tokio::test]
async fn a_tool_reads_the_applications_state_from_the_extensions() {
    let reg = registry([Tool::new("clinic_name", "Names the clinic.").handler(clinic_name)]);
    let mut state = http::Extensions::new();
    state.insert(std::sync::Arc::new(Clinic { name: "Riverside" }));
    state.insert(7_u32);
    let ctx = ToolContext::new().with_extensions(&state);
    assert_eq!(reg.run("clinic_name", json!({}), &alice(), &ctx).await.first_text(), Some("Riverside"));
    assert_eq!(ctx.extension::<u32>(), Some(&7), "one value per type");
    let without = reg.run("clinic_name", json!({}), &alice(), &ToolContext::new()).await;
    assert_eq!(without.first_text(), Some("no clinic"));
}

async fn needs_memory(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> Result<ToolResult, ToolError> {
    let _memory = ctx.memory().map_err(|e| ToolError::new(e.to_string()))?;
    Ok(ToolResult::text("remembered"))
}

#[tokio::test]
async fn a_missing_backend_reaches_the_model_as_an_error_result() {
    let reg = registry([Tool::new("remember", "Needs memory.").handler(needs_memory)]);
    let result = reg.run("remember", json!({}), &alice(), &ToolContext::new()).await;
    assert!(result.is_error());
    assert_eq!(result.first_text(), Some("Long-term memory is not enabled on this server."));
}

#[tokio::test]
async fn without_a_client_requests_are_unsupported_and_notifications_are_dropped() {
    let ctx = ToolContext::new();
    ctx.progress(0.5, Some(1.0), Some("halfway")).await;
    ctx.log("info", json!("hello")).await;
    let err = ctx.request("elicitation/create", json!({})).await.unwrap_err();
    assert_eq!(err, PeerError::Unsupported("elicitation/create".into()));
    assert_eq!(err.to_string(), "the client cannot answer elicitation/create requests");
}

#[derive(Default)]
struct RecordingPeer(Mutex<Vec<String>>);

#[async_trait]
impl ClientPeer for RecordingPeer {
    async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.0.lock().unwrap().push(format!("progress {progress} {total:?} {message:?}"));
    }
    async fn log(&self, level: &str, data: Value) {
        self.0.lock().unwrap().push(format!("log {level} {data}"));
    }
    async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        self.0.lock().unwrap().push(format!("request {method} {params}"));
        Ok(json!({"action": "accept"}))
    }
    fn supports(&self, capability: &str) -> bool {
        capability == "elicitation"
    }
}

#[tokio::test]
async fn a_client_receives_what_the_tool_sends() {
    let peer = RecordingPeer::default();
    let ctx = ToolContext::new().with_client(&peer);
    ctx.progress(1.0, Some(2.0), None).await;
    ctx.log("warning", json!({"x": 1})).await;
    let answer = ctx.request("elicitation/create", json!({"message": "?"})).await.unwrap();
    assert_eq!(answer, json!({"action": "accept"}));
    assert!(ctx.client().unwrap().supports("elicitation"));
    assert_eq!(
        *peer.0.lock().unwrap(),
        ["progress 1 Some(2.0) None", "log warning {\"x\":1}", "request elicitation/create {\"message\":\"?\"}"]
    );
}
