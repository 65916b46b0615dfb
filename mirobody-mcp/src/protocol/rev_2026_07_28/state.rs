//! What the 2026-07-28 side derives once per engine: the server-info `_meta` text, the sealer
//! of request states, each tool's `Mcp-Param-*` headers and the listings' time to live. Built by
//! the engine's builder from plain inputs, so the engine need not know this revision's
//! methods.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mirobody_core::Registry;
use serde_json::{Value, json};

use super::headers::{HeaderParam, header_params_of};
use super::meta::META_SERVER_INFO;
use super::mrtr::{Sealer, StateKey};

/// What the 2026-07-28 side derives once per engine.
pub(crate) struct State {
    pub(super) server_info: Arc<str>,
    pub(super) sealer: Sealer,
    header_params: HashMap<String, Vec<HeaderParam>>,
    pub(super) list_ttl_ms: u64,
}

impl State {
    pub(crate) fn placeholder() -> Self {
        State {
            server_info: Arc::from(""),
            sealer: Sealer::new(StateKey::random(), Duration::ZERO),
            header_params: HashMap::new(),
            list_ttl_ms: 0,
        }
    }

    pub(crate) fn new(
        name: &str,
        version: &str,
        registry: &Registry,
        key: StateKey,
        state_ttl: Duration,
        list_ttl: Duration,
    ) -> Self {
        let server_info = format!(r#""_meta":{{"{META_SERVER_INFO}":{}}}"#, json!({"name": name, "version": version}));
        let mut header_params = HashMap::new();
        for (tool, entry) in registry.mcp_entries() {
            if !entry.contains("x-mcp-header") {
                continue;
            }
            let Ok(entry) = serde_json::from_str::<Value>(entry) else { continue };
            match header_params_of(&entry["inputSchema"]) {
                Some(params) if !params.is_empty() => {
                    header_params.insert(tool.name().to_owned(), params);
                }
                Some(_) => {}
                None => tracing::warn!(
                    tool = tool.name(),
                    "invalid x-mcp-header annotation: its Mcp-Param headers are not checked, and clients drop the tool"
                ),
            }
        }
        State {
            server_info: Arc::from(server_info),
            sealer: Sealer::new(key, state_ttl),
            header_params,
            list_ttl_ms: list_ttl.as_millis() as u64,
        }
    }

    /// The `Mcp-Param-*` headers a call of `tool` must carry, if it declares any.
    pub(crate) fn header_params(&self, tool: &str) -> Option<&[HeaderParam]> {
        self.header_params.get(tool).map(Vec::as_slice)
    }
}
