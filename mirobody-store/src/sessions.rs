//! MCP sessions shared through Redis (core's `SessionBackplane`), so that every instance of
//! the server behind one load balancer serves every session: a record per session (and a
//! client's answer on its way to another instance) under `<prefix>session:<id>` with an expiry,
//! each person's index of their sessions there too (a sorted set, by when each was added),
//! apart from the cache's `<prefix>cache:` keys, and events on the `<prefix>session-events`
//! channel. What is kept and carried comes sealed and signed from the MCP layer: Redis only
//! keeps and carries bytes it cannot read.
//!
//! The commands used, for a Redis ACL user limited to the prefix: `GET` (the cache's),
//! `GETRANGE`, `SET`, `DEL`, `PEXPIRE`, `ZADD`, `ZREMRANGEBYRANK`, `ZRANGE`, `PUBLISH`,
//! `SUBSCRIBE` (and `PING`, `HELLO` and `CLIENT` the client sends itself);
//! the README's deployment guide gives the line.

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{BoxStream, StreamExt};
use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_ports::MAX_SESSION_VALUE_BYTES;
use mirobody_ports::SessionBackplane;

use super::redis::{RedisCache, redis_error};

// Ids renewed per pipeline: one round trip each, of a bounded size.
const RENEW_BATCH: usize = 1_000;

impl RedisCache {
    fn session_key(&self, id: &str) -> String {
        self.key(&format!("session:{id}"))
    }

    fn session_channel(&self) -> String {
        self.key("session-events")
    }
}

fn millis(ttl: Duration) -> u64 {
    // PX and PEXPIRE need at least 1 ms.
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[async_trait]
impl SessionBackplane for RedisCache {
    async fn save(&self, id: &str, record: Vec<u8>, ttl: Duration) -> BackendResult<()> {
        let mut conn = self.connection();
        redis::cmd("SET")
            .arg(self.session_key(id))
            .arg(record)
            .arg("PX")
            .arg(millis(ttl))
            .query_async::<()>(&mut conn)
            .await
            .map_err(redis_error)
    }

    async fn load(&self, id: &str) -> BackendResult<Option<Vec<u8>>> {
        let mut conn = self.connection();
        // At most one byte past the largest value an instance writes: a longer one was put there
        // by someone else, and fails to open however it is cut. A missing key reads as empty,
        // which no sealed value is.
        let bytes: Vec<u8> = redis::cmd("GETRANGE")
            .arg(self.session_key(id))
            .arg(0)
            .arg(MAX_SESSION_VALUE_BYTES)
            .query_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok(Some(bytes).filter(|bytes| !bytes.is_empty()))
    }

    async fn remove(&self, id: &str) -> BackendResult<()> {
        let mut conn = self.connection();
        redis::cmd("DEL").arg(self.session_key(id)).query_async::<()>(&mut conn).await.map_err(redis_error)
    }

    async fn renew(&self, ids: &[String], ttl: Duration) -> BackendResult<()> {
        let mut conn = self.connection();
        for batch in ids.chunks(RENEW_BATCH) {
            let mut pipe = redis::pipe();
            for id in batch {
                // A key that expired meanwhile stays gone: PEXPIRE does not make one.
                pipe.cmd("PEXPIRE").arg(self.session_key(id)).arg(millis(ttl)).ignore();
            }
            pipe.query_async::<()>(&mut conn).await.map_err(redis_error)?;
        }
        Ok(())
    }

    async fn add_member(&self, id: &str, member: Vec<u8>, max: usize, ttl: Duration) -> BackendResult<()> {
        let key = self.session_key(id);
        // Scored by when it was added: the bound drops the lowest ranks, those added first.
        let at = mirobody_core::clock::now_ms();
        let keep = i64::try_from(max.max(1)).unwrap_or(i64::MAX);
        let mut pipe = redis::pipe();
        pipe.cmd("ZADD").arg(&key).arg(at).arg(member).ignore();
        pipe.cmd("ZREMRANGEBYRANK").arg(&key).arg(0).arg(-keep - 1).ignore();
        pipe.cmd("PEXPIRE").arg(&key).arg(millis(ttl)).ignore();
        let mut conn = self.connection();
        pipe.query_async::<()>(&mut conn).await.map_err(redis_error)
    }

    async fn members(&self, id: &str, max: usize) -> BackendResult<Vec<Vec<u8>>> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let last = i64::try_from(max - 1).unwrap_or(i64::MAX);
        let mut conn = self.connection();
        redis::cmd("ZRANGE")
            .arg(self.session_key(id))
            .arg(0)
            .arg(last)
            .query_async(&mut conn)
            .await
            .map_err(redis_error)
    }

    async fn publish(&self, event: Vec<u8>) -> BackendResult<()> {
        let mut conn = self.connection();
        redis::cmd("PUBLISH")
            .arg(self.session_channel())
            .arg(event)
            .query_async::<()>(&mut conn)
            .await
            .map_err(redis_error)
    }

    async fn events(&self) -> BackendResult<BoxStream<'static, Vec<u8>>> {
        let subscribe = async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(self.session_channel()).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let pubsub = match tokio::time::timeout(Duration::from_secs(5), subscribe).await {
            Ok(subscribed) => subscribed.map_err(redis_error)?,
            Err(_) => return Err(BackendError::new("Redis did not answer the subscription within 5 seconds.")),
        };
        Ok(pubsub.into_on_message().map(|message| message.get_payload_bytes().to_vec()).boxed())
    }
}
