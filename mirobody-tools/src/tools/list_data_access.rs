//! `list_data_access`: who read the caller's health data, and when: the care-circle members'
//! reads of it, newest first, a bounded page at a time. Only the caller's own data: the
//! subject is the verified caller, never an argument (nor the member the caller acts for).

use std::sync::Arc;

use mirobody_core::backend::{BackendKind, MissingBackend};
use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use mirobody_ports::{AccessLog, DataRead, MAX_READS_PAGE};
use serde_json::{Value, json};

use super::{caller, fail};

/// The default number of entries.
const DEFAULT_COUNT: i64 = 20;

/// Who read the user's health data and when: each time a care-circle member the user shares
/// with read it (through a tool), newest first, with what they used and what came of it. Call it
/// when the user asks who looked at their data. Only the user's own data.
///
/// Args:
///     count: How many entries to return (1-100).
///     before: Only entries older than this one: the `next_before` of the previous page.
#[tool(annotations(read_only, idempotent), output_schema = crate::tools::output_schemas::list_data_access())]
async fn list_data_access(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    #[arg(default = DEFAULT_COUNT)] count: i64,
    before: Option<i64>,
) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let log = ctx.extension::<Arc<dyn AccessLog>>().ok_or(MissingBackend(BackendKind::Db)).map_err(fail)?;
    let count = count.clamp(1, i64::from(MAX_READS_PAGE)) as u32;
    let reads = log.reads_of(me, before, count).await.map_err(fail)?;
    let next_before = (reads.len() == count as usize).then(|| reads.last().map(|read| read.id)).flatten();
    let entries: Vec<Value> = reads.iter().map(entry).collect();
    Ok(ToolResult::ok(json!({
        "reads": entries,
        "next_before": next_before,
    })))
}

/// One read as the model sees it: who, through what, when, what came of it.
fn entry(read: &DataRead) -> Value {
    json!({
        "id": read.id,
        "reader": read.reader_name.as_deref().unwrap_or(&read.reader),
        "what": read.name,
        "at": mirobody_health::text::rfc3339(read.at_ms),
        "outcome": read.outcome.as_str(),
    })
}
