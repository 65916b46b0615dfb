//! The Redis cache (the `redis` feature), which also carries the shared MCP sessions
//! (`sessions.rs`). Nothing durable lives only here.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::Cache;
use mirobody_core::backend::{BackendError, BackendResult};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// A Redis cache through a reconnecting connection manager; every key gets a prefix so one
/// Redis can serve several deployments, and within it a namespace of its own: the cache's
/// keys are `<prefix>cache:<key>`, the shared sessions' `<prefix>session:<id>` (see
/// `sessions.rs`), so that no cache key ever names a session record.
#[derive(Clone)]
pub struct RedisCache {
    conn: ConnectionManager,
    // For the connections a pub/sub subscription takes (shared sessions' events).
    pub(super) client: redis::Client,
    prefix: String,
}

impl fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCache").field("prefix", &self.prefix).finish()
    }
}

pub(super) fn redis_error(e: redis::RedisError) -> BackendError {
    tracing::warn!(error = %e, "redis error");
    BackendError::new("The cache could not be reached; try again later.")
}

/// Why [`RedisCache::connect`] or [`RedisCache::connect_with_ca_file`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisConnectError {
    /// The URL is not a Redis URL this client can use (or its TLS set-up failed).
    #[error("invalid redis_url: {0}")]
    InvalidUrl(#[source] redis::RedisError),
    /// The CA file could not be read.
    #[error("redis_ca_file: cannot read {}: {source}", path.display())]
    CaFile {
        /// The file.
        path: std::path::PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// A CA file was given with a `redis://` URL: the file says TLS was meant.
    #[error("redis_ca_file is set, so redis_url must be rediss:// (TLS)")]
    CaFileWithoutTls,
    /// Redis did not answer, or refused the connection (TLS verification included).
    #[error("cannot connect to Redis: {0}")]
    Unreachable(#[source] redis::RedisError),
}

impl RedisCache {
    /// Connects to `url` (`redis://host:port/db`, or `rediss://` for TLS verified against the
    /// system's CA certificates), prefixing every key with `prefix`.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, RedisConnectError> {
        Self::connect_with_ca_file(url, prefix, None).await
    }

    /// [`connect`](Self::connect), trusting the CA certificates of the PEM file `ca_file`
    /// instead of the system's for a `rediss://` URL (a `redis://` URL with a CA file is
    /// refused: the file says TLS was meant).
    pub async fn connect_with_ca_file(
        url: &str,
        prefix: &str,
        ca_file: Option<&Path>,
    ) -> Result<Self, RedisConnectError> {
        let client = match ca_file {
            None => redis::Client::open(url).map_err(RedisConnectError::InvalidUrl)?,
            Some(ca_file) => {
                let root_cert = std::fs::read(ca_file)
                    .map_err(|source| RedisConnectError::CaFile { path: ca_file.to_owned(), source })?;
                if !url.starts_with("rediss://") {
                    return Err(RedisConnectError::CaFileWithoutTls);
                }
                let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(root_cert) };
                redis::Client::build_with_tls(url, certificates).map_err(RedisConnectError::InvalidUrl)?
            }
        };
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(3);
        let conn =
            ConnectionManager::new_with_config(client.clone(), config).await.map_err(RedisConnectError::Unreachable)?;
        Ok(RedisCache { conn, client, prefix: prefix.to_owned() })
    }

    // Under the deployment's prefix: the cache's keys and the sessions' each in their
    // namespace.
    pub(super) fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn cache_key(&self, key: &str) -> String {
        format!("{}cache:{key}", self.prefix)
    }

    pub(super) fn connection(&self) -> ConnectionManager {
        self.conn.clone()
    }
}

#[async_trait]
impl Cache for RedisCache {
    async fn get(&self, key: &str) -> BackendResult<Option<Vec<u8>>> {
        let mut conn = self.conn.clone();
        redis::cmd("GET").arg(self.cache_key(key)).query_async(&mut conn).await.map_err(redis_error)
    }

    async fn set(&self, key: &str, value: &[u8], ttl: Option<Duration>) -> BackendResult<()> {
        let mut conn = self.conn.clone();
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.cache_key(key)).arg(value);
        match ttl {
            Some(ttl) if ttl.is_zero() => return self.delete(key).await.map(|_| ()),
            // PX needs at least 1 ms.
            Some(ttl) => {
                cmd.arg("PX").arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
            }
            None => {}
        }
        cmd.query_async::<()>(&mut conn).await.map_err(redis_error)
    }

    async fn delete(&self, key: &str) -> BackendResult<bool> {
        let mut conn = self.conn.clone();
        let removed: i64 =
            redis::cmd("DEL").arg(self.cache_key(key)).query_async(&mut conn).await.map_err(redis_error)?;
        Ok(removed > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn set_up_mistakes_are_told_apart_before_any_connection() {
        assert!(matches!(RedisCache::connect("not a url", "p:").await, Err(RedisConnectError::InvalidUrl(_))));
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("ca.pem");
        let Err(RedisConnectError::CaFile { path, .. }) =
            RedisCache::connect_with_ca_file("rediss://127.0.0.1:1", "p:", Some(&missing)).await
        else {
            panic!("a missing CA file was accepted");
        };
        assert_eq!(path, missing);
        std::fs::write(&missing, b"not checked before the URL").unwrap();
        let plain = RedisCache::connect_with_ca_file("redis://127.0.0.1:1", "p:", Some(&missing)).await;
        assert!(matches!(plain, Err(RedisConnectError::CaFileWithoutTls)));
    }
}
