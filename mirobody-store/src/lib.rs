//! The stores mirobody runs on, implementing the traits of `mirobody-health` and
//! `mirobody-core`.
//!
//! - [`SqlStore`]: [`HealthData`] (every health trait), [`Memory`], [`SecretStore`],
//!   [`AccessLog`], [`TaskStore`], [`AccountStore`], [`WebSessionStore`], [`OAuthStore`] and
//!   [`IdentityStore`] on sqlx; one SQLite file (WAL) by default, PostgreSQL when the database
//!   URL says so (feature `postgres`), migrated on start.
//! - [`ObjectStorage`]: [`Storage`] on `object_store`; a local folder by default, any
//!   S3-compatible store when configured (feature `s3`); optional AES-256-GCM encryption at rest
//!   ([`FileCipher`]); signed read URLs ([`UrlSigner`] for those the server serves).
//! - [`MemoryCache`] and `RedisCache` (feature `redis`, also the shared sessions'
//!   `SessionBackplane`): [`Cache`].
//!
//! A server reads a [`BackendConfig`], calls [`open`], and hands the handles of the
//! [`OpenedBackends`] to its tools:
//!
//! ```no_run
//! # async fn run() -> Result<(), mirobody_store::OpenError> {
//! use mirobody_store::{BackendConfig, open};
//!
//! let backends = open(&BackendConfig::default()).await?; // ./.mirobody/mirobody.db, ./.mirobody/files
//! let db = backends.db(); // Arc<dyn HealthStore>, for the context's extensions
//! let health = backends.health(); // Arc<dyn HealthData>, for imports, uploads and routes
//! let memory = backends.memory(); // Option<Arc<dyn Memory>>
//! # Ok(()) }
//! ```

mod cache;
mod cipher;
mod private;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod sessions;
mod signing;
mod sql;
mod storage;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use mirobody_core::{Cache, Memory, Storage};
use mirobody_ports::{
    AccessLog, AccountStore, IdentityStore, OAuthStore, PasskeyStore, SecretStore, SessionBackplane, TaskStore,
    WebSessionStore,
};

use mirobody_health::{HealthData, HealthStore};
use serde::Deserialize;

pub use cache::MemoryCache;
pub use cipher::{CipherError, FileCipher};
pub use private::write_private_atomically;
#[cfg(feature = "redis")]
pub use redis::{RedisCache, RedisConnectError};
pub use signing::{SignedUrlError, UrlSigner};
pub use sql::{
    DB_OPERATION_DURATION, Dialect, EMAIL_COLUMNS, ErasedPerson, MAX_INVITEE_CHARS, MAX_RESOURCES_PER_PAGE,
    MAX_SEED_PATTERN, MAX_SEED_VALUES, PERSONAL_TABLES, PoolUsage, SeedValues, SqlStore, SqlTaskStore, StoreQuotas,
    TABLES_OF_NO_ONE,
};
pub use storage::{LocalStorageError, ObjectStorage, valid_key};

/// Where uploaded files live.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum StorageConfig {
    /// A folder on this machine (default `<data_dir>/files`).
    Local {
        /// The folder.
        #[serde(default)]
        dir: Option<PathBuf>,
    },
    /// An S3-compatible bucket. Credentials left out are read from the usual `AWS_*`
    /// environment variables.
    S3 {
        /// The bucket.
        bucket: String,
        /// The endpoint, for S3-compatible stores (MinIO, R2, ...): `https://host:port`.
        #[serde(default)]
        endpoint: Option<String>,
        /// The region.
        #[serde(default)]
        region: Option<String>,
        /// The access key id.
        #[serde(default)]
        access_key_id: Option<String>,
        /// The secret access key.
        #[serde(default)]
        secret_access_key: Option<String>,
        /// Allow a plain `http://` endpoint (local MinIO).
        #[serde(default)]
        allow_http: bool,
    },
    /// No object storage: file tools answer that it is not configured.
    None,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig::Local { dir: None }
    }
}

impl fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageConfig::Local { dir } => f.debug_struct("Local").field("dir", dir).finish(),
            StorageConfig::S3 { bucket, endpoint, region, access_key_id, secret_access_key, allow_http } => f
                .debug_struct("S3")
                .field("bucket", bucket)
                .field("endpoint", endpoint)
                .field("region", region)
                .field("access_key_id", &access_key_id.as_ref().map(|_| "<set>"))
                .field("secret_access_key", &secret_access_key.as_ref().map(|_| "<redacted>"))
                .field("allow_http", allow_http)
                .finish(),
            StorageConfig::None => f.write_str("None"),
        }
    }
}

/// How the backends are set up. Every key has a default: an empty configuration gives the
/// embedded set-up (SQLite file, local files, in-process cache) under `./.mirobody`.
///
/// ```
/// let config: mirobody_store::BackendConfig = serde_json::from_value(serde_json::json!({
///     "database_url": "postgres://app@db/mirobody",
///     "storage": {"kind": "s3", "bucket": "uploads", "region": "eu-west-1"},
///     "redis_url": "redis://cache:6379",
/// })).unwrap();
/// assert!(config.redis_url.is_some());
/// let typo = serde_json::from_value::<mirobody_store::BackendConfig>(serde_json::json!({"databse_url": "x"}));
/// assert!(typo.unwrap_err().to_string().contains("databse_url"));
/// ```
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackendConfig {
    /// The folder for the embedded database, local files and the generated signing key.
    pub data_dir: PathBuf,
    /// `sqlite://<file>` or `postgres://...`; default `sqlite://<data_dir>/mirobody.db`.
    /// PostgreSQL over TLS: `?sslmode=require` (encrypted, server not verified),
    /// `?sslmode=verify-full` (and `&sslrootcert=<CA file>` for a CA the system does not trust).
    pub database_url: Option<String>,
    /// PostgreSQL only: a schema to create if missing and keep every table in.
    pub database_schema: Option<String>,
    /// The most database connections to keep open.
    pub database_max_connections: u32,
    /// Where uploaded files live.
    pub storage: StorageConfig,
    /// A 32-byte key (base64 or 64 hex digits) to encrypt stored files with (AES-256-GCM).
    pub file_encryption_key: Option<String>,
    /// `redis://...` to use Redis as the cache; the in-process cache otherwise. `rediss://...`
    /// for TLS, the server verified against the system's CA certificates or `redis_ca_file`.
    pub redis_url: Option<String>,
    /// A PEM file of the CA certificates to trust for a `rediss://` Redis instead of the
    /// system's (a private CA, a self-signed server).
    pub redis_ca_file: Option<PathBuf>,
    /// Prepended to every Redis key.
    pub redis_key_prefix: String,
    /// The in-process cache's size limit, in bytes.
    pub cache_max_bytes: u64,
    /// Whether long-term memory (`remember`, `recall_memory`) is on.
    pub memory: bool,
    /// The key (at least 32 characters) that signs the URLs the server serves for stored files;
    /// generated once and kept in `<data_dir>/signing.key` when not set. Instances behind one
    /// load balancer need the same key.
    pub signing_key: Option<String>,
    /// Where the server serves signed file URLs: `<public base URL><uri prefix>/files`.
    pub signed_url_base: String,
    /// What one person may keep in the database (memories, invitations waiting). Not read
    /// from this section: the server fills it from its own `quotas` settings.
    #[serde(skip)]
    pub quotas: StoreQuotas,
}

impl Default for BackendConfig {
    fn default() -> Self {
        BackendConfig {
            data_dir: PathBuf::from("./.mirobody"),
            database_url: None,
            database_schema: None,
            database_max_connections: 8,
            storage: StorageConfig::default(),
            file_encryption_key: None,
            redis_url: None,
            redis_ca_file: None,
            redis_key_prefix: "mirobody:".into(),
            cache_max_bytes: 64 * 1024 * 1024,
            memory: true,
            signing_key: None,
            signed_url_base: "http://127.0.0.1:8080/files".into(),
            quotas: StoreQuotas::default(),
        }
    }
}

/// A URL with any password replaced, for logs and `Debug`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return "<unparsed URL>".into() };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:<redacted>@{host}")
        }
        None => url.to_owned(),
    }
}

impl fmt::Debug for BackendConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendConfig")
            .field("data_dir", &self.data_dir)
            .field("database_url", &self.database_url())
            .field("database_schema", &self.database_schema)
            .field("database_max_connections", &self.database_max_connections)
            .field("storage", &self.storage)
            .field("file_encryption_key", &self.file_encryption_key.as_ref().map(|_| "<redacted>"))
            .field("redis_url", &self.redis_url.as_deref().map(redact_url))
            .field("redis_ca_file", &self.redis_ca_file)
            .field("redis_key_prefix", &self.redis_key_prefix)
            .field("cache_max_bytes", &self.cache_max_bytes)
            .field("memory", &self.memory)
            .field("signing_key", &self.signing_key.as_ref().map(|_| "<redacted>"))
            .field("signed_url_base", &self.signed_url_base)
            .field("quotas", &self.quotas)
            .finish()
    }
}

impl BackendConfig {
    /// The embedded set-up under `data_dir`.
    pub fn embedded(data_dir: impl Into<PathBuf>) -> Self {
        BackendConfig { data_dir: data_dir.into(), ..BackendConfig::default() }
    }

    /// The database URL in force, with any password redacted.
    pub fn database_url(&self) -> String {
        redact_url(&self.resolved_database_url())
    }

    fn resolved_database_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("mirobody.db").display()))
    }
}

/// Why the backends could not be opened; each names the configuration key to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The database could not be opened or migrated.
    #[error("database ({url}): {message}")]
    Database {
        /// The URL, password redacted.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// Object storage could not be set up.
    #[error("storage: {0}")]
    Storage(String),
    /// The encryption key is not usable.
    #[error("file_encryption_key: {0}")]
    EncryptionKey(#[source] CipherError),
    /// The signing key is not usable or could not be kept.
    #[error("signing_key: {0}")]
    SigningKey(String),
    /// Redis could not be set up or reached.
    #[cfg(feature = "redis")]
    #[error("redis_url: {0}")]
    Redis(#[source] RedisConnectError),
    /// The configuration asks for a backend this build left out (a cargo feature of
    /// `mirobody-store`).
    #[error("{setting} asks for {backend}, which this build leaves out (the `{feature}` feature of mirobody-store)")]
    NotBuiltIn {
        /// The setting that asks for it.
        setting: &'static str,
        /// What it asks for.
        backend: &'static str,
        /// The cargo feature that builds it in.
        feature: &'static str,
    },
}

/// What [`OpenedBackends::readiness`] found: each check's failure, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Readiness {
    /// The database.
    pub database: Result<(), NotReady>,
    /// The cache.
    pub cache: Result<(), NotReady>,
}

/// Why one backend failed [`OpenedBackends::readiness`] (its text is safe to show: no URL or
/// secret).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotReady {
    /// It answered with an error: the backend's message for callers.
    #[error("{0}")]
    Failed(String),
    /// It did not answer within the check's timeout, given here.
    #[error("no answer within {0:?}")]
    TimedOut(std::time::Duration),
}

impl Readiness {
    /// Whether every check passed.
    pub fn is_ready(&self) -> bool {
        self.database.is_ok() && self.cache.is_ok()
    }
}

/// The opened backends: concrete types for set-up and the demo, and the trait handles tools
/// and the auth layer use.
pub struct OpenedBackends {
    sql: Arc<SqlStore>,
    storage: Option<Arc<ObjectStorage>>,
    cache: Arc<dyn Cache>,
    memory: bool,
    signer: UrlSigner,
    sessions: Option<Arc<dyn SessionBackplane>>,
    // Seals what task records carry of a person's data, when files are encrypted at rest.
    task_cipher: Option<FileCipher>,
}

impl fmt::Debug for OpenedBackends {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenedBackends")
            .field("sql", &self.sql)
            .field("storage", &self.storage)
            .field("memory", &self.memory)
            .finish()
    }
}

impl OpenedBackends {
    /// Backends over an already opened store (tests, embedding applications).
    pub fn new(
        sql: Arc<SqlStore>,
        storage: Option<Arc<ObjectStorage>>,
        cache: Arc<dyn Cache>,
        memory: bool,
        signer: UrlSigner,
    ) -> Self {
        OpenedBackends { sql, storage, cache, memory, signer, sessions: None, task_cipher: None }
    }

    /// These backends, with task outcomes and questions sealed with `cipher` (the key of
    /// stored files) in the task store.
    pub fn with_task_cipher(mut self, cipher: Option<FileCipher>) -> Self {
        self.task_cipher = cipher;
        self
    }

    /// These backends, with MCP sessions shared through `backplane`.
    pub fn with_session_backplane(mut self, backplane: Arc<dyn SessionBackplane>) -> Self {
        self.sessions = Some(backplane);
        self
    }

    /// Where MCP sessions are shared with other instances: Redis, when it is configured.
    pub fn session_backplane(&self) -> Option<Arc<dyn SessionBackplane>> {
        self.sessions.clone()
    }

    /// The relational store for tools.
    pub fn db(&self) -> Arc<dyn HealthStore> {
        self.sql.clone()
    }

    /// Long-term memory, unless turned off.
    pub fn memory(&self) -> Option<Arc<dyn Memory>> {
        self.memory.then(|| self.sql.clone() as Arc<dyn Memory>)
    }

    /// Object storage, unless configured off.
    pub fn storage(&self) -> Option<Arc<dyn Storage>> {
        self.storage.clone().map(|s| s as Arc<dyn Storage>)
    }

    /// The cache.
    pub fn cache(&self) -> Arc<dyn Cache> {
        Arc::clone(&self.cache)
    }

    /// Personal-secret hashes, for the auth layer.
    pub fn secrets(&self) -> Arc<dyn SecretStore> {
        self.sql.clone()
    }

    /// The accounts people sign in with (an email and a password hash over a user id), for
    /// the sign-in pages and the operator's `user` commands.
    pub fn accounts(&self) -> Arc<dyn AccountStore> {
        self.sql.clone()
    }

    /// The signed-in browsers' sessions, keyed by their cookie token's SHA-256.
    pub fn web_sessions(&self) -> Arc<dyn WebSessionStore> {
        self.sql.clone()
    }

    /// The OAuth authorization server's clients, grants, codes and refresh tokens.
    pub fn oauth(&self) -> Arc<dyn OAuthStore> {
        self.sql.clone()
    }

    /// People's passkeys, and the state of passkey ceremonies under way.
    pub fn passkeys(&self) -> Arc<dyn PasskeyStore> {
        self.sql.clone()
    }

    /// The accounts' links to OpenID providers' subjects, and sign-ins in flight to them.
    pub fn identities(&self) -> Arc<dyn IdentityStore> {
        self.sql.clone()
    }

    /// The access log, for `McpEngineBuilder::access_log`.
    pub fn access_log(&self) -> Arc<dyn AccessLog> {
        self.sql.clone()
    }

    /// The task store, for `McpEngineBuilder::task_store`: tasks outlive the process.
    pub fn task_store(&self) -> Arc<dyn TaskStore> {
        Arc::new(SqlTaskStore::new(SqlStore::clone(&self.sql), self.task_cipher.clone()))
    }

    /// The health store, every trait of it: what routes, imports and uploads read and write.
    pub fn health(&self) -> Arc<dyn HealthData> {
        self.sql.clone()
    }

    /// The SQL store itself, for what only it does (its dialect, bulk set-up in tests).
    pub fn sql(&self) -> &Arc<SqlStore> {
        &self.sql
    }

    /// Whether the shared backends answer, each within `timeout`: the database (a query) and
    /// the cache (a read; Redis when configured). For a load balancer's readiness check: an
    /// instance that cannot reach them should get no traffic.
    pub async fn readiness(&self, timeout: std::time::Duration) -> Readiness {
        let database = match tokio::time::timeout(timeout, self.sql.schema_version()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(NotReady::Failed(e.to_string())),
            Err(_) => Err(NotReady::TimedOut(timeout)),
        };
        let cache = match tokio::time::timeout(timeout, self.cache.get("mirobody:readiness")).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(NotReady::Failed(e.to_string())),
            Err(_) => Err(NotReady::TimedOut(timeout)),
        };
        Readiness { database, cache }
    }

    /// The object storage itself.
    pub fn object_storage(&self) -> Option<&Arc<ObjectStorage>> {
        self.storage.as_ref()
    }

    /// Checks a signed file URL the server received at `<signed_url_base>/<path>?<query>`:
    /// the object key to serve (read it with `storage().get(key)`, which decrypts), or why not.
    /// Serve it as `application/octet-stream` with `Content-Disposition: attachment` and
    /// `X-Content-Type-Options: nosniff`: uploads are not trusted to run in the server's origin.
    pub fn verify_signed_url(&self, path: &str, query: &str) -> Result<String, SignedUrlError> {
        self.signer.verify(path, query)
    }

    /// Waits until the work that opening started is over: the database connections back in
    /// their pool ([`SqlStore::settle`]).
    pub async fn settle(&self) {
        self.sql.settle().await;
    }

    /// Closes the database connections.
    pub async fn close(&self) {
        self.sql.close().await;
    }
}

fn signing_key(config: &BackendConfig) -> Result<Vec<u8>, OpenError> {
    if let Some(key) = &config.signing_key {
        // The one key-length check, the signed-token type's.
        mirobody_core::signed::Signer::new(key.as_bytes()).map_err(|e| OpenError::SigningKey(e.to_string()))?;
        return Ok(key.as_bytes().to_vec());
    }
    let path = config.data_dir.join("signing.key");
    // Twice at most: when another process writes the key between our read and our write, its
    // key is the one to use.
    for _ in 0..2 {
        match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().len() >= 64 => return Ok(text.trim().as_bytes().to_vec()),
            // Never replaced silently: the URLs signed with it would stop working unannounced.
            Ok(text) => {
                return Err(OpenError::SigningKey(format!(
                    "{} is empty or too short ({} characters, 64 needed); delete it to make a new one \
                     (URLs signed with the old key stop working)",
                    path.display(),
                    text.trim().len()
                )));
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(OpenError::SigningKey(format!("cannot read {}: {e}", path.display())));
            }
            Err(_) => {}
        }
        let mut bytes = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
        let key = hex::encode(bytes);
        match write_private_atomically(&path, key.as_bytes()) {
            Ok(()) => return Ok(key.into_bytes()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(OpenError::SigningKey(format!("cannot write {}: {e}", path.display()))),
        }
    }
    Err(OpenError::SigningKey(format!("{} keeps changing; is another server writing it?", path.display())))
}

/// Opens every configured backend: connects to (and migrates) the database, sets up object
/// storage and the cache. Nothing needs setting up beforehand for the embedded defaults.
pub async fn open(config: &BackendConfig) -> Result<OpenedBackends, OpenError> {
    let url = config.resolved_database_url();
    let sql = SqlStore::connect(&url, config.database_schema.as_deref(), config.database_max_connections)
        .await
        .map_err(|e| OpenError::Database { url: redact_url(&url), message: e.to_string() })?
        .with_quotas(config.quotas);
    let cipher = config
        .file_encryption_key
        .as_deref()
        .map(FileCipher::from_config)
        .transpose()
        .map_err(OpenError::EncryptionKey)?;
    let task_cipher = cipher.clone();
    let signer = UrlSigner::new(signing_key(config)?, config.signed_url_base.clone())
        .map_err(|e| OpenError::SigningKey(e.to_string()))?;
    let storage = match &config.storage {
        StorageConfig::None => None,
        StorageConfig::Local { dir: Some(dir) } => {
            let storage =
                ObjectStorage::local(dir, signer.clone(), cipher).map_err(|e| OpenError::Storage(e.to_string()))?;
            private::warn_if_shared(dir, "uploaded files");
            Some(storage)
        }
        StorageConfig::Local { dir: None } => {
            // The folder mirobody names is mirobody's own: made owner-only even when an earlier
            // version created it with the umask's bits, since it holds that version's uploads.
            let dir = config.data_dir.join("files");
            let storage =
                ObjectStorage::local(&dir, signer.clone(), cipher).map_err(|e| OpenError::Storage(e.to_string()))?;
            private::tighten_dir(&dir)
                .map_err(|e| OpenError::Storage(format!("cannot restrict {}: {e}", dir.display())))?;
            Some(storage)
        }
        StorageConfig::S3 { .. } => Some(s3_storage(&config.storage, signer.clone(), cipher)?),
    };
    let redis = redis_cache(config).await?;
    let cache: Arc<dyn Cache> = match &redis {
        Some(redis) => Arc::clone(redis) as _,
        None => Arc::new(MemoryCache::new(config.cache_max_bytes)),
    };
    private::warn_if_shared(&config.data_dir, "the database, uploads and keys");
    tracing::info!(database = %redact_url(&url), storage = ?config.storage, memory = config.memory, "backends open");
    let opened = OpenedBackends::new(Arc::new(sql), storage.map(Arc::new), cache, config.memory, signer)
        .with_task_cipher(task_cipher);
    #[cfg(feature = "redis")]
    let opened = match redis {
        Some(redis) => opened.with_session_backplane(redis),
        None => opened,
    };
    Ok(opened)
}

#[cfg(feature = "s3")]
fn s3_storage(
    config: &StorageConfig,
    signer: UrlSigner,
    cipher: Option<FileCipher>,
) -> Result<ObjectStorage, OpenError> {
    let StorageConfig::S3 { bucket, endpoint, region, access_key_id, secret_access_key, allow_http } = config else {
        unreachable!("called for S3 storage only");
    };
    let mut builder = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
    if let Some(endpoint) = endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(region) = region {
        builder = builder.with_region(region);
    }
    if let Some(id) = access_key_id {
        builder = builder.with_access_key_id(id);
    }
    if let Some(secret) = secret_access_key {
        builder = builder.with_secret_access_key(secret);
    }
    let s3 = builder.with_allow_http(*allow_http).build().map_err(|e| OpenError::Storage(e.to_string()))?;
    Ok(ObjectStorage::s3(s3, signer, cipher))
}

#[cfg(not(feature = "s3"))]
fn s3_storage(_: &StorageConfig, _: UrlSigner, _: Option<FileCipher>) -> Result<ObjectStorage, OpenError> {
    Err(OpenError::NotBuiltIn { setting: "storage", backend: "S3", feature: "s3" })
}

#[cfg(feature = "redis")]
async fn redis_cache(config: &BackendConfig) -> Result<Option<Arc<RedisCache>>, OpenError> {
    let Some(url) = &config.redis_url else { return Ok(None) };
    let cache = RedisCache::connect_with_ca_file(url, &config.redis_key_prefix, config.redis_ca_file.as_deref())
        .await
        .map_err(OpenError::Redis)?;
    Ok(Some(Arc::new(cache)))
}

// Without Redis built in, a configured `redis_url` is an error rather than silently ignored:
// instances that were meant to share sessions would each keep their own.
#[cfg(not(feature = "redis"))]
async fn redis_cache(config: &BackendConfig) -> Result<Option<Arc<MemoryCache>>, OpenError> {
    match config.redis_url {
        Some(_) => Err(OpenError::NotBuiltIn { setting: "redis_url", backend: "Redis", feature: "redis" }),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirobody_core::backend::{BackendError, BackendResult};

    // A cache that refuses every read, or never answers one.
    struct BrokenCache {
        answers: bool,
    }

    #[async_trait::async_trait]
    impl Cache for BrokenCache {
        async fn get(&self, _key: &str) -> BackendResult<Option<Vec<u8>>> {
            if !self.answers {
                std::future::pending::<()>().await;
            }
            Err(BackendError::new("The cache is down."))
        }
        async fn set(&self, _key: &str, _value: &[u8], _ttl: Option<std::time::Duration>) -> BackendResult<()> {
            Err(BackendError::new("The cache is down."))
        }
        async fn delete(&self, _key: &str) -> BackendResult<bool> {
            Err(BackendError::new("The cache is down."))
        }
    }

    #[tokio::test]
    async fn readiness_tells_a_refusal_from_silence() {
        let dir = tempfile::tempdir().unwrap();
        let opened = open(&BackendConfig::embedded(dir.path())).await.unwrap();
        let timeout = std::time::Duration::from_millis(200);
        assert!(opened.readiness(timeout).await.is_ready());
        let with = |answers| {
            let cache = Arc::new(BrokenCache { answers });
            OpenedBackends::new(Arc::clone(&opened.sql), None, cache, false, opened.signer.clone())
        };
        let refused = with(true).readiness(timeout).await;
        assert_eq!(refused.database, Ok(()));
        assert_eq!(refused.cache, Err(NotReady::Failed("The cache is down.".into())));
        let silent = with(false).readiness(timeout).await;
        assert_eq!(silent.cache, Err(NotReady::TimedOut(timeout)));
        assert_eq!(silent.cache.unwrap_err().to_string(), "no answer within 200ms");
    }

    // A build without a backend says which feature would build it in, naming the setting,
    // rather than ignoring the setting or failing to parse the config. CI runs this with
    // `--no-default-features`.
    #[cfg(not(all(feature = "redis", feature = "s3", feature = "postgres")))]
    #[tokio::test]
    async fn a_backend_left_out_of_the_build_is_named_with_its_feature() {
        let dir = tempfile::tempdir().unwrap();
        let embedded = || BackendConfig::embedded(dir.path());
        let s3 = StorageConfig::S3 {
            bucket: "b".into(),
            endpoint: Some("http://127.0.0.1:1".into()),
            region: Some("us-east-1".into()),
            access_key_id: Some("k".into()),
            secret_access_key: Some("s".into()),
            allow_http: true,
        };
        let asks = [
            (
                cfg!(feature = "redis"),
                "redis",
                BackendConfig { redis_url: Some("redis://127.0.0.1:1".into()), ..embedded() },
            ),
            (cfg!(feature = "s3"), "s3", BackendConfig { storage: s3, ..embedded() }),
            (
                cfg!(feature = "postgres"),
                "postgres",
                BackendConfig { database_url: Some("postgres://nobody@127.0.0.1:1/none".into()), ..embedded() },
            ),
        ];
        let mut checked = 0;
        for (_, feature, config) in asks.into_iter().filter(|(built, ..)| !built) {
            let message = open(&config).await.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(message.contains(&format!("the `{feature}` feature of mirobody-store")), "{feature}: {message:?}");
            checked += 1;
        }
        assert!(checked > 0);
    }

    #[test]
    fn storage_kinds_and_unknown_keys() {
        let parse = |v: serde_json::Value| serde_json::from_value::<BackendConfig>(v);
        let local = parse(serde_json::json!({"storage": {"kind": "local", "dir": "/srv/files"}})).unwrap();
        assert_eq!(local.storage, StorageConfig::Local { dir: Some("/srv/files".into()) });
        assert_eq!(parse(serde_json::json!({"storage": {"kind": "none"}})).unwrap().storage, StorageConfig::None);
        let typo = parse(serde_json::json!({"storage": {"kind": "s3", "bucket": "b", "regoin": "x"}})).unwrap_err();
        assert!(typo.to_string().contains("regoin"), "{typo}");
        let kind = parse(serde_json::json!({"storage": {"kind": "ftp"}})).unwrap_err();
        assert!(kind.to_string().contains("ftp"), "{kind}");
    }

    #[test]
    fn defaults_and_redaction() {
        let config = BackendConfig::embedded("/data");
        assert_eq!(config.database_url(), "sqlite:///data/mirobody.db");
        assert!(config.memory && config.redis_url.is_none());
        assert_eq!(redact_url("postgres://app:pw@db:5432/x"), "postgres://app:<redacted>@db:5432/x");
        assert_eq!(redact_url("redis://cache:6379"), "redis://cache:6379");
        let s3 = StorageConfig::S3 {
            bucket: "b".into(),
            endpoint: None,
            region: None,
            access_key_id: Some("AKIA".into()),
            secret_access_key: Some("very-secret".into()),
            allow_http: false,
        };
        let shown = format!("{s3:?}");
        assert!(!shown.contains("very-secret") && !shown.contains("AKIA"), "{shown}");
    }

    #[test]
    fn the_signing_key_is_generated_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let config = BackendConfig::embedded(dir.path());
        let first = signing_key(&config).unwrap();
        assert_eq!(signing_key(&config).unwrap(), first, "the same key after a restart");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("signing.key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "readable by its owner only");
        }
        let short = BackendConfig { signing_key: Some("short".into()), ..config };
        assert!(signing_key(&short).unwrap_err().to_string().contains("at least 32"));
    }

    #[test]
    fn an_empty_or_short_signing_key_file_stops_the_start_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let config = BackendConfig::embedded(dir.path());
        let path = dir.path().join("signing.key");
        for text in ["", "\n", "abc123"] {
            std::fs::write(&path, text).unwrap();
            let err = signing_key(&config).unwrap_err().to_string();
            assert!(err.contains("empty or too short") && err.contains("delete it"), "{err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "never replaced silently");
        }
        std::fs::remove_file(&path).unwrap();
        assert_eq!(signing_key(&config).unwrap().len(), 64, "a deleted key is made again");
    }
}
