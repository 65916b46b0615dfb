//! The access log: every tool call and resource read, refused attempts included.

use std::fmt;

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use serde::{Deserialize, Serialize};

/// What was accessed, for the access log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccessKind {
    /// A tool call.
    Tool,
    /// A resource read.
    Resource,
}

/// What came of an access, for the access log: whether it ran, and if not, why it was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AccessOutcome {
    /// It ran and succeeded.
    Ok,
    /// It ran and failed: the tool returned an error result, or the read failed.
    Failed,
    /// No tool or resource has that name.
    UnknownTool,
    /// It exists but is not visible to this caller or agent.
    Hidden,
    /// Refused before running: authentication or a scope it needs is missing.
    Forbidden,
    /// Refused before running: the arguments do not match the declared parameters.
    InvalidArguments,
    /// Stopped before its end: a task its caller cancelled, or a call that ended before it
    /// returned a result after it had reached another person's data.
    Cancelled,
    /// A task still running when its time to live ran out, stopped then.
    Expired,
}

impl AccessOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [AccessOutcome; 8] = [
        AccessOutcome::Ok,
        AccessOutcome::Failed,
        AccessOutcome::UnknownTool,
        AccessOutcome::Hidden,
        AccessOutcome::Forbidden,
        AccessOutcome::InvalidArguments,
        AccessOutcome::Cancelled,
        AccessOutcome::Expired,
    ];

    /// The outcome's name, in snake case as serde writes it: `"ok"`, `"failed"`,
    /// `"unknown_tool"`, `"hidden"`, `"forbidden"`, `"invalid_arguments"`, `"cancelled"`,
    /// `"expired"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AccessOutcome::Ok => "ok",
            AccessOutcome::Failed => "failed",
            AccessOutcome::UnknownTool => "unknown_tool",
            AccessOutcome::Hidden => "hidden",
            AccessOutcome::Forbidden => "forbidden",
            AccessOutcome::InvalidArguments => "invalid_arguments",
            AccessOutcome::Cancelled => "cancelled",
            AccessOutcome::Expired => "expired",
        }
    }

    /// The outcome [`as_str`](Self::as_str) names, if any.
    pub fn from_name(name: &str) -> Option<AccessOutcome> {
        AccessOutcome::ALL.into_iter().find(|outcome| outcome.as_str() == name)
    }

    /// Whether the access ran and succeeded.
    pub const fn is_ok(self) -> bool {
        matches!(self, AccessOutcome::Ok)
    }
}

impl fmt::Display for AccessOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The most reads of a person's data one listing returns ([`AccessLog::reads_of`]).
pub const MAX_READS_PAGE: u32 = 100;

/// One access to a person's data by someone else, as that person lists them: who read it,
/// through what, when, and what came of it. Nothing of the reader but their id and the name
/// or email they are known by.
// Not non-exhaustive: a store outside this crate builds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DataRead {
    /// The entry's id: the next page is the entries before it.
    pub id: i64,
    /// The reader's user id.
    pub reader: String,
    /// The reader's display name, else their email, where the server knows one.
    pub reader_name: Option<String>,
    /// A tool call or a resource read.
    pub kind: AccessKind,
    /// The tool or resource.
    pub name: String,
    /// What came of it.
    pub outcome: AccessOutcome,
    /// When it ended, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
}

/// The record of tool calls and resource reads, refused attempts included: who, whose data
/// (when another person's), what, what came of it, how long.
#[async_trait]
pub trait AccessLog: Send + Sync {
    /// Records one access by `user_id`; `subject` is the person whose data it read when that
    /// is someone else (a care-circle member), else `None`.
    async fn record(
        &self,
        user_id: &str,
        subject: Option<&str>,
        kind: AccessKind,
        name: &str,
        outcome: AccessOutcome,
        duration_ms: u64,
    ) -> BackendResult<()>;

    /// The accesses of others to `subject`'s data, newest first: at most `limit` (itself at
    /// most [`MAX_READS_PAGE`]), those before the entry `before` when given.
    async fn reads_of(&self, subject: &str, before: Option<i64>, limit: u32) -> BackendResult<Vec<DataRead>>;

    /// Forgets entries older than `before_ms`, at most `max` of them; how many it forgot.
    async fn purge_before(&self, before_ms: i64, max: u64) -> BackendResult<u64>;
}

#[cfg(test)]
mod tests {
    use super::AccessOutcome;

    #[test]
    fn access_outcome_names_are_serde_names_and_read_back() {
        for outcome in AccessOutcome::ALL {
            let name = outcome.as_str();
            assert_eq!(serde_json::to_value(outcome).unwrap(), serde_json::Value::from(name));
            assert_eq!(serde_json::from_value::<AccessOutcome>(name.into()).unwrap(), outcome);
            assert_eq!(AccessOutcome::from_name(name), Some(outcome));
            assert_eq!(outcome.to_string(), name);
            assert_eq!(outcome.is_ok(), outcome == AccessOutcome::Ok);
        }
        assert_eq!(AccessOutcome::from_name("Ok"), None);
        assert_eq!(AccessOutcome::InvalidArguments.as_str(), "invalid_arguments");
    }
}
