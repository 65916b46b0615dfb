//! What instances of one server share so that any of them serves any request of a session.

use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;

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
/// answer on its way to another instance, kept a minute; each person's sessions are a set of
/// sealed references under a keyed hash of their id. Whoever reads the store learns how many
/// sessions there are (and how many a person holds) and when messages go by, nothing of what
/// they hold or whose they are; whoever writes it can make no instance believe anything.
#[async_trait]
pub trait SessionBackplane: Send + Sync {
    /// Keeps `record` under `id` for `ttl`, replacing what was there.
    async fn save(&self, id: &str, record: Vec<u8>, ttl: Duration) -> BackendResult<()>;
    /// The record under `id`, if it has not expired or been removed (of a value longer than
    /// [`MAX_SESSION_VALUE_BYTES`], possibly only its beginning).
    async fn load(&self, id: &str) -> BackendResult<Option<Vec<u8>>>;
    /// Forgets `id` (a record or a set).
    async fn remove(&self, id: &str) -> BackendResult<()>;
    /// Makes each of `ids` that still exists (a record or a set) live `ttl` from now.
    async fn renew(&self, ids: &[String], ttl: Duration) -> BackendResult<()>;
    /// Adds `member` to the set kept under `id` (a name no record is kept under), keeps at
    /// most `max` members (those added longest ago dropped first) and makes the set live `ttl`
    /// from now. [`remove`](Self::remove) forgets a set and [`renew`](Self::renew) renews it as
    /// they do a record. The MCP layer keeps each person's sessions in one (sealed references,
    /// under a keyed hash of the person's id), to end them all when their account is deleted.
    ///
    /// The default keeps nothing: on an implementation that keeps no sets, a deleted account's
    /// sessions are ended on the instance that deletes it and expire elsewhere.
    async fn add_member(&self, id: &str, member: Vec<u8>, max: usize, ttl: Duration) -> BackendResult<()> {
        let _ = (id, member, max, ttl);
        Ok(())
    }
    /// The members of the set under `id`, those added longest ago first, at most `max`; none
    /// when there is no such set. The default (which keeps no sets) has none.
    async fn members(&self, id: &str, max: usize) -> BackendResult<Vec<Vec<u8>>> {
        let _ = (id, max);
        Ok(Vec::new())
    }
    /// Sends `event` to every instance subscribed through [`events`](Self::events), this one
    /// included. Delivery is at most once: an instance that is not subscribed at that moment
    /// never sees it.
    async fn publish(&self, event: Vec<u8>) -> BackendResult<()>;
    /// The events published from now on by any instance. The stream ends when the connection
    /// under it is lost; the caller subscribes again.
    async fn events(&self) -> BackendResult<futures::stream::BoxStream<'static, Vec<u8>>>;
}
