//! Opening a [`SqlStore`]: the connection pool for either database, and the versioned
//! migrations that bring its schema up to date.

use std::str::FromStr;
use std::time::Duration;

use mirobody_core::backend::{BackendError, BackendResult};
#[cfg(feature = "postgres")]
use sqlx::ConnectOptions;
#[cfg(feature = "postgres")]
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, Row};

use super::import::insert_point;
use super::memory::index_terms;
use super::{Dialect, Pool, PoolUsage, SqlStore, StoreQuotas, db_error};
use crate::private;
use mirobody_health::fhir::{EntryInput, ImportItem};
use mirobody_health::text::now_ms;

/// The migrations, in order: (version, name, SQLite script, PostgreSQL script). A released
/// migration is never edited; a schema change is a new entry.
pub(super) const MIGRATIONS: &[(i64, &str, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../../migrations/sqlite/0001_init.sql"),
        include_str!("../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "owner_terms",
        include_str!("../../migrations/sqlite/0002_owner_terms.sql"),
        include_str!("../../migrations/postgres/0002_owner_terms.sql"),
    ),
    (
        3,
        "secret_expiry",
        include_str!("../../migrations/sqlite/0003_secret_expiry.sql"),
        include_str!("../../migrations/postgres/0003_secret_expiry.sql"),
    ),
    (
        4,
        "access_outcome",
        include_str!("../../migrations/sqlite/0004_access_outcome.sql"),
        include_str!("../../migrations/postgres/0004_access_outcome.sql"),
    ),
    (
        5,
        "health_data",
        include_str!("../../migrations/sqlite/0005_health_data.sql"),
        include_str!("../../migrations/postgres/0005_health_data.sql"),
    ),
    (
        6,
        "tasks",
        include_str!("../../migrations/sqlite/0006_tasks.sql"),
        include_str!("../../migrations/postgres/0006_tasks.sql"),
    ),
    (
        7,
        "file_text",
        include_str!("../../migrations/sqlite/0007_file_text.sql"),
        include_str!("../../migrations/postgres/0007_file_text.sql"),
    ),
    (
        8,
        "upload_links",
        include_str!("../../migrations/sqlite/0008_upload_links.sql"),
        include_str!("../../migrations/postgres/0008_upload_links.sql"),
    ),
    (
        9,
        "link_last_use",
        include_str!("../../migrations/sqlite/0009_link_last_use.sql"),
        include_str!("../../migrations/postgres/0009_link_last_use.sql"),
    ),
    (
        10,
        "accounts_oauth",
        include_str!("../../migrations/sqlite/0010_accounts_oauth.sql"),
        include_str!("../../migrations/postgres/0010_accounts_oauth.sql"),
    ),
    (
        11,
        "signup_tokens",
        include_str!("../../migrations/sqlite/0011_signup_tokens.sql"),
        include_str!("../../migrations/postgres/0011_signup_tokens.sql"),
    ),
    (
        12,
        "passkeys",
        include_str!("../../migrations/sqlite/0012_passkeys.sql"),
        include_str!("../../migrations/postgres/0012_passkeys.sql"),
    ),
    (
        13,
        "identity_links",
        include_str!("../../migrations/sqlite/0013_identity_links.sql"),
        include_str!("../../migrations/postgres/0013_identity_links.sql"),
    ),
    (
        14,
        "record_detail",
        include_str!("../../migrations/sqlite/0014_record_detail.sql"),
        include_str!("../../migrations/postgres/0014_record_detail.sql"),
    ),
    (
        15,
        "imports_history",
        include_str!("../../migrations/sqlite/0015_imports_history.sql"),
        include_str!("../../migrations/postgres/0015_imports_history.sql"),
    ),
    (
        18,
        "access_subject",
        include_str!("../../migrations/sqlite/0018_access_subject.sql"),
        include_str!("../../migrations/postgres/0018_access_subject.sql"),
    ),
    (
        19,
        "point_ranges",
        include_str!("../../migrations/sqlite/0019_point_ranges.sql"),
        include_str!("../../migrations/postgres/0019_point_ranges.sql"),
    ),
    (
        21,
        "point_buckets",
        include_str!("../../migrations/sqlite/0021_point_buckets.sql"),
        include_str!("../../migrations/postgres/0021_point_buckets.sql"),
    ),
    (
        22,
        "point_judged",
        include_str!("../../migrations/sqlite/0022_point_judged.sql"),
        include_str!("../../migrations/postgres/0022_point_judged.sql"),
    ),
];

/// Where a SQLite migration hands over to Rust to compute every memory's indexed terms.
const FILL_MEMORY_TERMS: &str = "-- @fill-memory-terms";
/// Where a migration (either database) hands over to Rust to read the indicator values of the
/// Observations stored before there were any.
const FILL_HEALTH_POINTS: &str = "-- @fill-health-points";

/// Reads every stored Observation into its indicator values, on `$tx` (a transaction of either
/// database). A resource the importer would refuse keeps its row and gets no values.
macro_rules! fill_health_points {
    ($tx:ident, $failed:expr) => {{
        let rows: Vec<(i64, String, String)> = sqlx::query_as("SELECT id, subject, resource FROM observations")
            .fetch_all(&mut *$tx)
            .await
            .map_err($failed)?;
        for (id, subject, resource) in rows {
            let Ok(resource) = serde_json::from_str::<serde_json::Value>(&resource) else { continue };
            let Ok(mut request) = mirobody_health::fhir::parse_observation(&resource) else { continue };
            if let Some(EntryInput::Item(ImportItem::Observation(o))) = request.entries.pop() {
                for point in &o.points {
                    insert_point!($tx, subject.as_str(), id, point, None::<&str>);
                }
            }
        }
    }};
}

#[cfg(any(feature = "postgres", test))]
pub(super) fn valid_schema_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !name.starts_with("pg_")
}

// Whether SQLite, opening `url` (read as sqlx reads it), makes a file: not for `:memory:` or
// `mode=memory`, nor read-only (`mode=ro`), which never creates one.
pub(super) fn sqlite_url_makes_a_file(url: &str) -> bool {
    let rest = url.trim_start_matches("sqlite://").trim_start_matches("sqlite:");
    let (database, params) = rest.split_once('?').unwrap_or((rest, ""));
    let mode = params.split('&').filter_map(|pair| pair.split_once('=')).find(|(key, _)| *key == "mode");
    database != ":memory:" && !matches!(mode, Some((_, "memory" | "ro")))
}

impl SqlStore {
    /// Connects to `url` and brings the schema up to date.
    ///
    /// `sqlite://path/to/file.db` (the file and its folder are created, WAL mode,
    /// `synchronous=FULL` so an acknowledged write survives power loss; on Unix the file and
    /// its `-wal`/`-shm` files are `0600`, a folder created for them `0700`) or
    /// `postgres://...` (TLS with `?sslmode=require`, or `verify-full` with
    /// `&sslrootcert=<CA file>`); on PostgreSQL, `schema` names a schema to create if missing
    /// and to use for every table (tests and tenants that share a database).
    pub async fn connect(url: &str, schema: Option<&str>, max_connections: u32) -> Result<SqlStore, BackendError> {
        let store = if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|e| BackendError::new(format!("invalid SQLite URL: {e}")))?;
            let on_disk = sqlite_url_makes_a_file(url);
            let options = options
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(Duration::from_secs(10))
                .foreign_keys(true)
                // What is deleted is overwritten, not left in free pages: a person's erased
                // data must not stay readable in the file.
                .pragma("secure_delete", "ON")
                // Keeps the planner's statistics current, as SQLite recommends.
                .optimize_on_close(true, 400);
            let path = options.get_filename();
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                private::create_private_dir(dir)
                    .map_err(|e| BackendError::new(format!("cannot create {}: {e}", dir.display())))?;
            }
            if on_disk {
                // The file is made here, 0600, before SQLite opens it: SQLite would create it
                // with the umask's bits, and gives the -wal, -shm and -journal files it makes the
                // mode of the database file. An existing file (and any of those left beside
                // it) is made owner-only too.
                let restrict = |file: &std::path::Path, result: std::io::Result<()>| {
                    result.map_err(|e| BackendError::new(format!("cannot restrict {}: {e}", file.display())))
                };
                restrict(path, private::create_private_file(path))?;
                for suffix in ["-wal", "-shm", "-journal"] {
                    let mut side = path.as_os_str().to_owned();
                    side.push(suffix);
                    let side = std::path::PathBuf::from(side);
                    restrict(&side, private::tighten_file(&side))?;
                }
            }
            // Lazily: the migrations open the first connection, and say when the file cannot
            // be opened. An eager pool opens a test connection first, whose return to the pool
            // is asynchronous, so the migrations opened a second one that then stayed idle.
            let pool = SqlitePoolOptions::new().max_connections(max_connections.max(1)).connect_lazy_with(options);
            SqlStore { pool: Pool::Sqlite(pool), quotas: StoreQuotas::default() }
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Self::connect_postgres(url, schema, max_connections).await?
        } else {
            return Err(BackendError::new(
                "database_url must start with sqlite:// or postgres:// (e.g. sqlite://./.mirobody/mirobody.db)",
            ));
        };
        store.migrate().await?;
        Ok(store)
    }

    #[cfg(feature = "postgres")]
    async fn connect_postgres(url: &str, schema: Option<&str>, max_connections: u32) -> Result<SqlStore, BackendError> {
        let mut options =
            PgConnectOptions::from_str(url).map_err(|e| BackendError::new(format!("invalid PostgreSQL URL: {e}")))?;
        if let Some(schema) = schema {
            if !valid_schema_name(schema) {
                return Err(BackendError::new(format!(
                    "invalid database_schema '{schema}': use 1 to 63 of a-z 0-9 _, not starting with a digit or pg_"
                )));
            }
            let mut conn =
                options.connect().await.map_err(|e| BackendError::new(format!("cannot connect to PostgreSQL: {e}")))?;
            // The name is checked above to be a plain identifier; identifiers cannot be bound.
            sqlx::raw_sql(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .execute(&mut conn)
                .await
                .map_err(|e| BackendError::new(format!("cannot create schema {schema}: {e}")))?;
            conn.close().await.ok();
            options = options.options([("search_path", schema)]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .connect_with(options)
            .await
            .map_err(|e| BackendError::new(format!("cannot connect to PostgreSQL: {e}")))?;
        Ok(SqlStore { pool: Pool::Postgres(pool), quotas: StoreQuotas::default() })
    }

    #[cfg(not(feature = "postgres"))]
    async fn connect_postgres(_: &str, _: Option<&str>, _: u32) -> Result<SqlStore, BackendError> {
        Err(BackendError::new(
            "database_url is a PostgreSQL URL, which this build leaves out (the `postgres` feature of mirobody-store)",
        ))
    }

    /// The database this store runs on.
    pub fn dialect(&self) -> Dialect {
        match self.pool {
            Pool::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            Pool::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Waits, for a second at most, until every open connection is back in the pool: a
    /// connection goes back after its last use in a task of its own, which checks it first.
    /// For a caller that wants the start-up's work over (`mirobody_server::memory`).
    pub async fn settle(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        while on_pool!(self, |pool| pool.num_idle() < pool.size() as usize) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The pool's connections now: open, and idle among them (for a gauge; no query).
    pub fn pool_usage(&self) -> PoolUsage {
        on_pool!(self, |pool| PoolUsage { open: pool.size(), idle: pool.num_idle() })
    }

    /// Closes every connection (waiting for running queries).
    pub async fn close(&self) {
        on_pool!(self, |pool| pool.close().await)
    }

    /// The schema version the database is at.
    pub async fn schema_version(&self) -> BackendResult<i64> {
        on_pool!(self, |pool| {
            sqlx::query("SELECT COALESCE(MAX(version), 0) AS v FROM mirobody_migrations")
                .fetch_one(pool)
                .await
                .and_then(|row| row.try_get::<i64, _>("v"))
                .map_err(db_error)
        })
    }

    // Applies the pending migrations, each in its own transaction, holding the database's
    // write lock (SQLite) or an advisory lock (PostgreSQL) so that two servers starting at
    // once migrate once.
    async fn migrate(&self) -> Result<(), BackendError> {
        const CREATE: &str = "CREATE TABLE IF NOT EXISTS mirobody_migrations \
             (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)";
        let failed = |e: sqlx::Error| BackendError::new(format!("database migration failed: {e}"));
        // The bookkeeping is the same SQL on either database, run on transactions of different
        // types: a macro, as `on_pool!` is.
        macro_rules! applied {
            ($tx:ident, $version:expr) => {
                sqlx::query_scalar::<_, i64>("SELECT version FROM mirobody_migrations WHERE version = $1")
                    .bind($version)
                    .fetch_optional(&mut *$tx)
                    .await
                    .map_err(failed)?
                    .is_some()
            };
        }
        macro_rules! record {
            ($tx:ident, $version:expr, $name:expr) => {
                sqlx::query("INSERT INTO mirobody_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)")
                    .bind($version)
                    .bind($name)
                    .bind(now_ms())
                    .execute(&mut *$tx)
                    .await
                    .map_err(failed)?
            };
        }
        match &self.pool {
            Pool::Sqlite(pool) => {
                // Every migration on one connection. Through the pool, a statement could find
                // the connection the last one released not yet back and open another: a fresh
                // server kept three connections (three threads and their caches) idle.
                let mut conn = pool
                    .acquire()
                    .await
                    .map_err(|e| BackendError::new(format!("cannot open the SQLite database: {e}")))?;
                for &(version, name, script, _) in MIGRATIONS {
                    sqlx::query(CREATE).execute(&mut *conn).await.map_err(failed)?;
                    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
                    if !applied!(tx, version) {
                        let (before, after) = script.split_once(FILL_MEMORY_TERMS).unwrap_or((script, ""));
                        sqlx::raw_sql(before).execute(&mut *tx).await.map_err(failed)?;
                        if script.contains(FILL_MEMORY_TERMS) {
                            let rows: Vec<(i64, String, String)> =
                                sqlx::query_as("SELECT id, owner, text FROM memories")
                                    .fetch_all(&mut *tx)
                                    .await
                                    .map_err(failed)?;
                            for (id, owner, text) in rows {
                                sqlx::query("UPDATE memories SET terms = $1 WHERE id = $2")
                                    .bind(index_terms(&owner, &text))
                                    .bind(id)
                                    .execute(&mut *tx)
                                    .await
                                    .map_err(failed)?;
                            }
                        }
                        if !after.trim().is_empty() {
                            sqlx::raw_sql(after).execute(&mut *tx).await.map_err(failed)?;
                        }
                        if script.contains(FILL_HEALTH_POINTS) {
                            fill_health_points!(tx, failed);
                        }
                        record!(tx, version, name);
                    }
                    tx.commit().await.map_err(failed)?;
                }
                // The migrations' prepared statements and cached pages are not needed again;
                // the connection would otherwise keep them for the life of the server.
                conn.clear_cached_statements().await.map_err(failed)?;
                // Not `query`: that would cache this statement in turn.
                sqlx::raw_sql("PRAGMA shrink_memory").execute(&mut *conn).await.map_err(failed)?;
            }
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => {
                for &(version, name, _, script) in MIGRATIONS {
                    let mut tx = pool.begin().await.map_err(failed)?;
                    sqlx::query("SELECT pg_advisory_xact_lock(7243541853)").execute(&mut *tx).await.map_err(failed)?;
                    sqlx::query(CREATE).execute(&mut *tx).await.map_err(failed)?;
                    if !applied!(tx, version) {
                        sqlx::raw_sql(script).execute(&mut *tx).await.map_err(failed)?;
                        if script.contains(FILL_HEALTH_POINTS) {
                            fill_health_points!(tx, failed);
                        }
                        record!(tx, version, name);
                    }
                    tx.commit().await.map_err(failed)?;
                }
            }
        }
        Ok(())
    }
}
