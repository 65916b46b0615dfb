//! The `tasks` settings: how long calls run as tasks are kept and how many each caller has.

use serde::Deserialize;

/// The `tasks` settings. Task records live in the database, so with PostgreSQL every
/// instance answers for every task.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TaskSettings {
    /// Seconds a task and its result are kept after it starts (`ttlMs`).
    pub ttl_secs: u64,
    /// The most tasks one caller has running at once.
    pub max_running_per_caller: u64,
    /// The most task records one signed-in caller keeps at once, running or ended.
    pub max_kept_per_caller: u64,
    /// Milliseconds a call of a tool with optional task support runs before it becomes a task.
    pub sync_budget_ms: u64,
    /// Seconds a running task's record vouches for it unrenewed: a task whose instance died
    /// reads as failed this long after.
    pub lease_secs: u64,
}

impl Default for TaskSettings {
    fn default() -> Self {
        let options = mirobody_mcp::TaskOptions::default();
        TaskSettings {
            ttl_secs: options.ttl.as_secs(),
            max_running_per_caller: options.max_live_per_caller,
            max_kept_per_caller: options.max_kept_per_caller,
            sync_budget_ms: options.sync_budget.as_millis() as u64,
            lease_secs: options.lease.as_secs(),
        }
    }
}

impl TaskSettings {
    /// The options the MCP service applies.
    pub fn options(&self) -> mirobody_mcp::TaskOptions {
        mirobody_mcp::TaskOptions::default()
            .with_ttl(std::time::Duration::from_secs(self.ttl_secs))
            .with_max_live_per_caller(self.max_running_per_caller)
            .with_max_kept_per_caller(self.max_kept_per_caller)
            .with_sync_budget(std::time::Duration::from_millis(self.sync_budget_ms))
            .with_lease(std::time::Duration::from_secs(self.lease_secs))
    }
}
