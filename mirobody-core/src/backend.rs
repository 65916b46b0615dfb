//! The backends a tool may use, as traits: implementations live outside core (SQLite and
//! PostgreSQL through sqlx, object stores, Redis), chosen by the server or the embedding app.
//!
//! Every method that reads or writes user data takes the owner's id, and implementations scope
//! every query to it: a tool passes `user.user_id()`, never an argument.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A backend failure. The message may reach a model, so implementations keep it free of
/// secrets, SQL and internal addresses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BackendError(pub String);

impl BackendError {
    /// An error with a message safe to show.
    pub fn new(message: impl Into<String>) -> Self {
        BackendError(message.into())
    }
}

/// A result from a backend.
pub type BackendResult<T> = Result<T, BackendError>;

/// A key-value cache with expiry. Nothing durable lives only here.
#[async_trait]
pub trait Cache: Send + Sync {
    /// The value under `key`, if present and not expired.
    async fn get(&self, key: &str) -> BackendResult<Option<Vec<u8>>>;
    /// Stores a value, expiring after `ttl` when given.
    async fn set(&self, key: &str, value: &[u8], ttl: Option<Duration>) -> BackendResult<()>;
    /// Removes a value; whether it was there.
    async fn delete(&self, key: &str) -> BackendResult<bool>;
}

/// Object storage for uploaded files.
#[async_trait]
pub trait Storage: Send + Sync {
    /// The object's bytes (decrypted, when the store encrypts at rest).
    async fn get(&self, key: &str) -> BackendResult<Vec<u8>>;
    /// Stores an object.
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> BackendResult<()>;
    /// Deletes an object.
    async fn delete(&self, key: &str) -> BackendResult<()>;
    /// A URL that reads the object until it expires.
    async fn signed_url(&self, key: &str, expires_in: Duration) -> BackendResult<String>;
}

/// A memory to store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewMemory {
    /// The text.
    pub text: String,
    /// `fact`, `preference` or `episode`.
    pub kind: String,
    /// The session it came from.
    pub session_id: Option<String>,
}

/// A stored memory, with its relevance to a query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// Its id.
    pub id: i64,
    /// The text.
    pub text: String,
    /// Its kind.
    pub kind: String,
    /// Relevance to the query, higher is better.
    pub score: f64,
    /// When it was stored, RFC 3339.
    pub created_at: String,
}

/// Long-term memory with ranked retrieval.
#[async_trait]
pub trait Memory: Send + Sync {
    /// Stores a memory for `owner`; its id. Returns only once it is durable.
    async fn remember(&self, owner: &str, memory: NewMemory) -> BackendResult<i64>;
    /// `owner`'s memories most relevant to `query`, best first.
    async fn recall(&self, owner: &str, query: &str, top_k: usize) -> BackendResult<Vec<MemoryRecord>>;
    /// Deletes one of `owner`'s memories; whether it existed.
    async fn forget(&self, owner: &str, id: i64) -> BackendResult<bool>;
}

/// Which backend a tool needed and did not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendKind {
    /// [`Cache`].
    Cache,
    /// [`Storage`].
    Storage,
    /// An application's database (in mirobody-tools, the health store).
    Db,
    /// [`Memory`].
    Memory,
}

/// A backend the tool needs is not configured on this server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub struct MissingBackend(pub BackendKind);

impl fmt::Display for MissingBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            BackendKind::Cache => "The cache is not configured on this server.",
            BackendKind::Storage => "Object storage is not configured on this server.",
            BackendKind::Db => "The database is not configured on this server.",
            BackendKind::Memory => "Long-term memory is not enabled on this server.",
        })
    }
}

/// Who a personal MCP secret belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretOwner {
    /// The user the secret identifies.
    pub user_id: String,
    /// The agent the secret is bound to, for per-agent tool lists.
    pub agent: Option<String>,
}

/// Personal MCP secrets, stored only as hashes: the server never keeps a secret it could leak.
///
/// Not for tools: the server's auth layer uses it. Every method takes the SHA-256 of the
/// secret, never the secret.
///
/// A secret may expire: `expires_at_ms` is the time (milliseconds since the Unix epoch) from
/// which it identifies nobody, `None` for never. An expired secret is treated as absent by
/// every method: its lookup finds no owner, `has_secret` is false, and `add_secret` replaces it.
#[async_trait]
pub trait SecretStore: Send + Sync {
    /// The owner of the secret with this hash, if it exists, is not revoked and has not
    /// expired.
    async fn secret_owner(&self, secret_hash: &[u8; 32]) -> BackendResult<Option<SecretOwner>>;
    /// Stores the hash of `user_id`'s new secret, replacing any earlier one (so the old secret
    /// stops working).
    async fn put_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<()>;
    /// Stores the hash of `user_id`'s first secret: false, storing nothing, when they already
    /// have a live one (an expired one is replaced). Atomic: of two concurrent calls for one
    /// user, one stores and one gets false.
    async fn add_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<bool>;
    /// Whether `user_id` has a live (stored, unexpired) secret.
    async fn has_secret(&self, user_id: &str) -> BackendResult<bool>;
    /// Revokes `user_id`'s secret; whether there was one (an expired one counts).
    async fn revoke_secret(&self, user_id: &str) -> BackendResult<bool>;
}

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

/// The largest record or payload the MCP layer keeps through a [`SessionBackplane`] (16 MiB).
/// An implementation need read no more of a value than one byte past it: a longer value, which
/// no instance wrote, is refused however it is cut, so whoever writes to the store cannot make an
/// instance read a huge one.
pub const MAX_SESSION_VALUE_BYTES: usize = 16 * 1024 * 1024;

/// What instances of one server share so that any of them serves any request of an MCP
/// session (the 2025-11-25 revision's `Mcp-Session-Id`): each session's summary, kept with an
/// expiry, and events carried from one instance to all. The records and events are opaque
/// bytes the MCP layer writes and reads; an implementation only keeps and carries them (Redis:
/// keys with `PX`, and a pub/sub channel).
///
/// An implementation is not trusted: the MCP layer seals every record and event and signs
/// every event under keys only the instances hold, and drops what does not verify. The ids it
/// keeps records under are keyed hashes of session ids, or random references to a client's
/// answer on its way to another instance, kept a minute. Whoever reads the store learns how
/// many sessions there are and when messages go by, nothing of what they hold; whoever writes
/// it can make no instance believe anything.
#[async_trait]
pub trait SessionBackplane: Send + Sync {
    /// Keeps `record` under `id` for `ttl`, replacing what was there.
    async fn save(&self, id: &str, record: Vec<u8>, ttl: Duration) -> BackendResult<()>;
    /// The record under `id`, if it has not expired or been removed (of a value longer than
    /// [`MAX_SESSION_VALUE_BYTES`], possibly only its beginning).
    async fn load(&self, id: &str) -> BackendResult<Option<Vec<u8>>>;
    /// Forgets `id`.
    async fn remove(&self, id: &str) -> BackendResult<()>;
    /// Makes each of `ids` that still exists live `ttl` from now.
    async fn renew(&self, ids: &[String], ttl: Duration) -> BackendResult<()>;
    /// Sends `event` to every instance subscribed through [`events`](Self::events), this one
    /// included. Delivery is at most once: an instance that is not subscribed at that moment
    /// never sees it.
    async fn publish(&self, event: Vec<u8>) -> BackendResult<()>;
    /// The events published from now on by any instance. The stream ends when the connection
    /// under it is lost; the caller subscribes again.
    async fn events(&self) -> BackendResult<futures::stream::BoxStream<'static, Vec<u8>>>;
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
