//! The in-process cache, with per-entry expiry (moka): the default; `redis.rs` has the Redis
//! one. Nothing durable lives only here.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mirobody_core::Cache;
use mirobody_core::backend::BackendResult;
use moka::Expiry;

#[derive(Clone)]
struct Entry {
    bytes: Arc<[u8]>,
    ttl: Option<Duration>,
}

// Each entry lives for its own TTL from its last write; reads do not extend it.
struct PerEntryTtl;

impl Expiry<String, Entry> for PerEntryTtl {
    fn expire_after_create(&self, _key: &String, value: &Entry, _created_at: Instant) -> Option<Duration> {
        value.ttl
    }

    fn expire_after_update(
        &self,
        _key: &String,
        value: &Entry,
        _updated_at: Instant,
        _duration_until_expiry: Option<Duration>,
    ) -> Option<Duration> {
        value.ttl
    }
}

/// An in-process cache, bounded by total bytes, each entry with its own expiry.
#[derive(Clone)]
pub struct MemoryCache {
    inner: moka::future::Cache<String, Entry>,
}

impl fmt::Debug for MemoryCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryCache").field("entries", &self.inner.entry_count()).finish()
    }
}

impl MemoryCache {
    /// A cache holding at most `max_bytes` of keys and values; the least useful entries go
    /// first when it is full.
    pub fn new(max_bytes: u64) -> Self {
        let inner = moka::future::Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|key: &String, value: &Entry| {
                u32::try_from(key.len() + value.bytes.len() + 64).unwrap_or(u32::MAX)
            })
            .expire_after(PerEntryTtl)
            .build();
        MemoryCache { inner }
    }
}

#[async_trait]
impl Cache for MemoryCache {
    async fn get(&self, key: &str) -> BackendResult<Option<Vec<u8>>> {
        Ok(self.inner.get(key).await.map(|e| e.bytes.to_vec()))
    }

    async fn set(&self, key: &str, value: &[u8], ttl: Option<Duration>) -> BackendResult<()> {
        if ttl == Some(Duration::ZERO) {
            self.inner.invalidate(key).await;
            return Ok(());
        }
        self.inner.insert(key.to_owned(), Entry { bytes: value.into(), ttl }).await;
        Ok(())
    }

    async fn delete(&self, key: &str) -> BackendResult<bool> {
        Ok(self.inner.remove(key).await.is_some())
    }
}
