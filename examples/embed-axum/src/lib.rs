//! An application that embeds mirobody's MCP endpoint in its own axum router.
//!
//! The application keeps notes. People read them at `GET /notes`, the application's own route;
//! a model adds and lists them through two MCP tools at `/mcp`. The tools reach the same notes
//! as the route through the context's extensions (`ToolContext::extension`), where the
//! application put them with `McpEngineBuilder::extension`. It depends on mirobody-core and
//! mirobody-mcp only, not on the mirobody-server application.

use std::sync::{Arc, Mutex, PoisonError};

use mirobody_core::{Args, Param, Registry, Tool, ToolContext, ToolResult, Type, UserInfo};
use mirobody_mcp::McpEngine;
use mirobody_mcp::axum::extract::State;
use mirobody_mcp::axum::routing::get;
use mirobody_mcp::axum::{Json, Router};
use mirobody_mcp::http::{HttpOptions, McpHttp, Mounted};
use serde_json::{Value, json};

/// The application's state: its notes, shared by its route and its tools.
#[derive(Debug, Default)]
pub struct Notes(Mutex<Vec<String>>);

impl Notes {
    /// Adds a note and says how many there are.
    pub fn add(&self, text: &str) -> usize {
        let mut notes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        notes.push(text.to_owned());
        notes.len()
    }

    /// Every note, oldest first.
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

// The tools find the application's notes in the context; a server built without them (a
// mistake of the application's) answers with an error the model can read.
const NO_NOTES: &str = "The notes are not available on this server.";

async fn add_note(args: Args, _user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let Some(notes) = ctx.extension::<Arc<Notes>>() else { return ToolResult::error(NO_NOTES) };
    ToolResult::ok(json!({"count": notes.add(args.str_or("text", ""))}))
}

async fn list_notes(_args: Args, _user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let Some(notes) = ctx.extension::<Arc<Notes>>() else { return ToolResult::error(NO_NOTES) };
    ToolResult::ok(json!({"notes": notes.all()}))
}

/// The application's tools.
pub fn registry() -> Registry {
    Registry::builder()
        .tool(
            Tool::new("add_note", "Adds a note to the application's notes.")
                .param(Param::required("text", Type::String, "The note, e.g. \"buy milk\""))
                .handler(add_note),
        )
        .tool(Tool::new("list_notes", "Lists the application's notes, oldest first.").read_only().handler(list_notes))
        .build()
        .expect("the tools are valid")
}

/// The application's own route.
async fn read_notes(State(notes): State<Arc<Notes>>) -> Json<Value> {
    Json(json!({"notes": notes.all()}))
}

/// The whole application: its routes, with MCP mounted at `/mcp` in front of them, and the
/// engine (for [`mirobody_mcp::serve_with`], which ends its streams on shutdown).
pub fn app(notes: Arc<Notes>, options: HttpOptions) -> (Mounted, McpEngine) {
    let engine = McpEngine::builder(Arc::new(registry())).extension(Arc::clone(&notes)).build();
    let routes = Router::new().route("/notes", get(read_notes)).with_state(notes);
    (McpHttp::new(engine.clone(), options).mount("/mcp", routes), engine)
}
