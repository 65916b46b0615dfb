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
}

impl AccessOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [AccessOutcome; 6] = [
        AccessOutcome::Ok,
        AccessOutcome::Failed,
        AccessOutcome::UnknownTool,
        AccessOutcome::Hidden,
        AccessOutcome::Forbidden,
        AccessOutcome::InvalidArguments,
    ];

    /// The outcome's name, in snake case as serde writes it: `"ok"`, `"failed"`,
    /// `"unknown_tool"`, `"hidden"`, `"forbidden"`, `"invalid_arguments"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AccessOutcome::Ok => "ok",
            AccessOutcome::Failed => "failed",
            AccessOutcome::UnknownTool => "unknown_tool",
            AccessOutcome::Hidden => "hidden",
            AccessOutcome::Forbidden => "forbidden",
            AccessOutcome::InvalidArguments => "invalid_arguments",
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

/// The record of tool calls and resource reads, refused attempts included: who, what, what
/// came of it, how long.
#[async_trait]
pub trait AccessLog: Send + Sync {
    /// Records one access. Best effort: a failure here never fails the call.
    async fn record(
        &self,
        user_id: &str,
        kind: AccessKind,
        name: &str,
        outcome: AccessOutcome,
        duration_ms: u64,
    ) -> BackendResult<()>;
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
