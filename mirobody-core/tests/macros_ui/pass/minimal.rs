//! The smallest tools: sync and async, no parameters, self-registered.

use mirobody_core::{tool, Registry, ToolContext, UserInfo};

/// Answer pong.
#[tool]
fn ping() -> &'static str {
    "pong"
}

/// Answer pong, later.
#[tool]
async fn ping_later() -> String {
    "pong".to_owned()
}

fn main() {
    let registry = Registry::from_registered().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["ping", "ping_later"]);
    let result = futures::executor::block_on(registry.run(
        "ping_later",
        serde_json::json!({}),
        &UserInfo::anonymous(),
        &ToolContext::new(),
    ));
    assert_eq!(result.first_text(), Some("pong"));
}
