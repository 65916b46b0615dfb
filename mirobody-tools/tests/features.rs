//! What each feature set of the crate serves, run in every build: the default one in CI, and
//! `cargo test -p mirobody-tools --no-default-features` for the minimal one. Without `uploads`,
//! files another program stored are still listed and read, through the traits alone.

use std::sync::Arc;

use mirobody_core::{Registry, ToolContext, ToolResult, UserInfo};
use mirobody_health::prelude::*;
use mirobody_health::{FileRecord, TextState};
use mirobody_store::{BackendConfig, OpenedBackends, open};
use serde_json::{Value, json};

/// The tools every build has: those that need only mirobody-health's traits (and ports' access
/// log) and the client.
const CORE_TOOLS: [&str; 16] = [
    "ask_user",
    "delete_health_data",
    "echo",
    "family_health",
    "fetch_health_data",
    "fetch_health_trends",
    "get_user_health_profile",
    "list_data_access",
    "list_files",
    "read_file",
    "recall_memory",
    "record_health_data",
    "remember",
    "search_health_indicators",
    "summarize_conversation",
    "whoami",
];

#[test]
fn each_feature_brings_its_tools_and_no_other() {
    let registry = mirobody_tools::builtin_registry().expect("the built-ins register");
    let mut expected: Vec<&str> = CORE_TOOLS.to_vec();
    if cfg!(feature = "uploads") {
        expected.extend(["upload_file", "upload_link"]);
    }
    if cfg!(feature = "charts") {
        expected.push("render_chart");
    }
    expected.sort_unstable();
    let listed: Value = serde_json::from_str(registry.mcp_tools_json(true)).unwrap();
    let mut names: Vec<&str> = listed.as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, expected);
}

/// A user's file stored as the upload path stores it, without the upload path.
async fn stage(backends: &OpenedBackends, owner: &str, file_key: &str, content: &str, text_state: TextState) {
    let storage = backends.storage().expect("local storage is on");
    storage.put(file_key, content.as_bytes().to_vec(), "text/plain").await.expect("put");
    let file = FileRecord {
        file_key: file_key.into(),
        filename: format!("{file_key}.txt"),
        mime_type: "text/plain".into(),
        size: content.len() as u64,
        uploaded_at: "2026-01-01T00:00:00Z".into(),
        text_key: None,
        text_state,
    };
    backends.sql().add_file(owner, &file).await.expect("the file is indexed");
}

async fn call(registry: &Registry, ctx: &ToolContext<'_>, user: &str, tool: &str, arguments: Value) -> ToolResult {
    registry.call(tool, arguments, &UserInfo::authenticated(user), ctx).await.expect("the call runs")
}

#[tokio::test]
async fn stored_files_are_listed_and_read_in_every_build() {
    let dir = tempfile::tempdir().unwrap();
    let config = BackendConfig {
        signing_key: Some("k".repeat(32)),
        signed_url_base: "http://localhost/files".into(),
        ..BackendConfig::embedded(dir.path())
    };
    let backends = open(&config).await.expect("the backends open");
    stage(&backends, "ann", "up-notes", "HbA1c 5.4 % on 2026-01-02", TextState::Settled).await;
    stage(&backends, "ann", "up-fresh", "not read yet", TextState::Waiting).await;

    let registry = mirobody_tools::builtin_registry().expect("the built-ins register");
    let storage = backends.storage().unwrap();
    let mut extensions = http::Extensions::new();
    extensions.insert(Arc::clone(&backends.db()));
    let ctx = ToolContext::new().with_extensions(&extensions).with_storage(storage.as_ref());

    let listed = call(&registry, &ctx, "ann", "list_files", json!({})).await;
    let keys: Vec<&str> = listed.structured_content().unwrap()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| file["file_key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.contains(&"up-notes") && keys.contains(&"up-fresh"), "{keys:?}");

    let read = call(&registry, &ctx, "ann", "read_file", json!({"file_key": "up-notes"})).await;
    assert!(!read.is_error(), "{:?}", read.first_text());
    assert_eq!(read.structured_content().unwrap()["content"], "HbA1c 5.4 % on 2026-01-02");

    // No reader in this program (no Uploader among the extensions): the answer says so at once.
    let waiting = call(&registry, &ctx, "ann", "read_file", json!({"file_key": "up-fresh"})).await;
    assert!(waiting.is_error());
    assert!(waiting.first_text().unwrap().contains("still being read"), "{:?}", waiting.first_text());

    // The key is checked before any store is asked, and another user's file is not found.
    let bad = call(&registry, &ctx, "ann", "read_file", json!({"file_key": "../up-notes"})).await;
    assert!(bad.first_text().unwrap().contains("not a file_key this server uses"), "{:?}", bad.first_text());
    let theirs = call(&registry, &ctx, "bob", "read_file", json!({"file_key": "up-notes"})).await;
    assert!(theirs.first_text().unwrap().contains("File not found"), "{:?}", theirs.first_text());

    // The file:// resource reads the same text.
    let template = mirobody_tools::resources::file_template();
    let contents = template.read("file://up-notes", &UserInfo::authenticated("ann"), &ctx).await.expect("read");
    assert_eq!(contents[0].text.as_deref(), Some("HbA1c 5.4 % on 2026-01-02"));
    let refused = template.read("file://..", &UserInfo::authenticated("ann"), &ctx).await;
    assert!(matches!(refused, Err(mirobody_core::ResourceError::NotFound(_))), "{refused:?}");
    backends.close().await;
}
