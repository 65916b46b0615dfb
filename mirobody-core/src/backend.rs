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
