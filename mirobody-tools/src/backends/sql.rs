//! The relational store on sqlx: one embedded SQLite file (WAL) by default, PostgreSQL when the
//! database URL says so. One type, [`SqlStore`], implements [`Db`], [`Memory`],
//! [`SecretStore`] and [`AccessLog`] over either.
//!
//! Both databases run the same SQL wherever they agree (SQLite reads `$1` placeholders as
//! PostgreSQL does); the schema and full-text search are written once per database. Queries
//! are runtime-checked `sqlx::query` calls with binds: no user input is ever formatted into SQL.
//! Every method that touches user data takes the owner's id and scopes its query to it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::backend::{
    BackendError, BackendResult, CircleMember, FileRecord, MemoryRecord, NewMemory, ObservationPage,
};
use mirobody_core::{AccessKind, AccessLog, AccessOutcome, Db, Memory, SecretOwner, SecretStore};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, Row};

use crate::text::{now_ms, parse_time_ms, rfc3339};

/// The migrations, in order: (version, name, SQLite script, PostgreSQL script). A released
/// migration is never edited; a schema change is a new entry.
const MIGRATIONS: &[(i64, &str, &str, &str)] = &[
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
];

/// Where a SQLite migration hands over to Rust to compute every memory's indexed terms.
const FILL_MEMORY_TERMS: &str = "-- @fill-memory-terms";

/// Which database a [`SqlStore`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Embedded SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

#[derive(Clone)]
enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs the same code against whichever pool the store has: the body is compiled once per
/// database, so each gets its own types while the SQL and the logic stay written once.
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.pool {
            Pool::Sqlite($pool) => $body,
            Pool::Postgres($pool) => $body,
        }
    };
}

/// The SQL store: users, care-circle sharing, FHIR Observations, the file index,
/// conversations, memories, personal-secret hashes and the access log.
///
/// Cheap to clone (a pool handle).
#[derive(Clone)]
pub struct SqlStore {
    pool: Pool,
}

impl fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlStore").field("dialect", &self.dialect()).finish()
    }
}

/// A message safe to show for a database error; the details go to the log only.
fn db_error(e: sqlx::Error) -> BackendError {
    tracing::warn!(error = %e, "database error");
    let what = match &e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => "the database is busy or closed",
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) => "the database could not be reached",
        sqlx::Error::Database(d) if d.is_unique_violation() => "the record already exists",
        _ => "the database could not complete the request",
    };
    BackendError::new(format!("Database error: {what}; try again later."))
}

/// A 20-digit token standing for `owner` in the full-text index, prefixed to each of their
/// words. Digits are consonants to the porter stemmer, so a prefixed word stems as the word
/// alone; a fixed length keeps `<token><word>` unambiguous. Collisions (one in 2^64) are
/// harmless: every search also filters on the owner column.
fn owner_tag(owner: &str) -> String {
    let digest = Sha256::digest(owner.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    format!("{:020}", u64::from_be_bytes(first))
}

/// Runs of letters and digits, lower-cased: the words of a text or a query.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// The indexed form of `owner`'s memory: each word prefixed with the owner's token.
fn index_terms(owner: &str, text: &str) -> String {
    let tag = owner_tag(owner);
    let mut out = String::with_capacity(text.len() * 2);
    for word in words(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&tag);
        out.push_str(&word);
    }
    out
}

/// Common English words dropped from a recall query when other words remain: they match
/// nearly every memory and only slow the search.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "did", "do", "does", "for", "from", "i", "in", "is", "it",
    "me", "my", "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where", "which", "who", "with",
    "you", "your",
];

/// The searchable words of a query: runs of letters and digits, lower-cased, de-duplicated,
/// at most 32, stop words left out unless nothing else remains.
pub(crate) fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in words(query) {
        if !terms.contains(&word) {
            terms.push(word);
        }
    }
    let content: Vec<String> = terms.iter().filter(|t| !STOP_WORDS.contains(&t.as_str())).cloned().collect();
    let mut chosen = if content.is_empty() { terms } else { content };
    chosen.truncate(32);
    chosen
}

/// The code an Observation is indexed under: `code.coding[0].code`, else `code.text`.
fn observation_code(resource: &Value) -> String {
    let code = &resource["code"];
    code["coding"][0]["code"].as_str().or_else(|| code["text"].as_str()).unwrap_or("unknown").to_owned()
}

/// When an Observation happened: `effectiveDateTime`, `effectiveInstant`,
/// `effectivePeriod.start` or `issued`.
fn observation_time_ms(resource: &Value) -> Option<i64> {
    ["effectiveDateTime", "effectiveInstant", "issued"]
        .iter()
        .filter_map(|k| resource[*k].as_str())
        .chain(resource["effectivePeriod"]["start"].as_str())
        .find_map(parse_time_ms)
}

fn valid_schema_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !name.starts_with("pg_")
}

// Whether SQLite, opening `url` (read as sqlx reads it), makes a file: not for `:memory:` or
// `mode=memory`, nor read-only (`mode=ro`), which never creates one.
fn sqlite_url_makes_a_file(url: &str) -> bool {
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
                // Keeps the planner's statistics current, as SQLite recommends.
                .optimize_on_close(true, 400);
            let path = options.get_filename();
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                super::private::create_private_dir(dir)
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
                restrict(path, super::private::create_private_file(path))?;
                for suffix in ["-wal", "-shm", "-journal"] {
                    let mut side = path.as_os_str().to_owned();
                    side.push(suffix);
                    let side = std::path::PathBuf::from(side);
                    restrict(&side, super::private::tighten_file(&side))?;
                }
            }
            // Lazily: the migrations open the first connection, and say when the file cannot
            // be opened. An eager pool opens a test connection first, whose return to the pool
            // is asynchronous, so the migrations opened a second one that then stayed idle.
            let pool = SqlitePoolOptions::new().max_connections(max_connections.max(1)).connect_lazy_with(options);
            SqlStore { pool: Pool::Sqlite(pool) }
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let mut options = PgConnectOptions::from_str(url)
                .map_err(|e| BackendError::new(format!("invalid PostgreSQL URL: {e}")))?;
            if let Some(schema) = schema {
                if !valid_schema_name(schema) {
                    return Err(BackendError::new(format!(
                        "invalid database_schema '{schema}': use 1 to 63 of a-z 0-9 _, not starting with a digit or pg_"
                    )));
                }
                let mut conn = options
                    .connect()
                    .await
                    .map_err(|e| BackendError::new(format!("cannot connect to PostgreSQL: {e}")))?;
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
            SqlStore { pool: Pool::Postgres(pool) }
        } else {
            return Err(BackendError::new(
                "database_url must start with sqlite:// or postgres:// (e.g. sqlite://./.mirobody/mirobody.db)",
            ));
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The database this store runs on.
    pub fn dialect(&self) -> Dialect {
        match self.pool {
            Pool::Sqlite(_) => Dialect::Sqlite,
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
            Pool::Postgres(pool) => {
                for &(version, name, _, script) in MIGRATIONS {
                    let mut tx = pool.begin().await.map_err(failed)?;
                    sqlx::query("SELECT pg_advisory_xact_lock(7243541853)").execute(&mut *tx).await.map_err(failed)?;
                    sqlx::query(CREATE).execute(&mut *tx).await.map_err(failed)?;
                    if !applied!(tx, version) {
                        sqlx::raw_sql(script).execute(&mut *tx).await.map_err(failed)?;
                        record!(tx, version, name);
                    }
                    tx.commit().await.map_err(failed)?;
                }
            }
        }
        Ok(())
    }

    // The FTS5 query for `terms` of `owner`: each word as the owner's token (an FTS5 string of
    // letters and digits only, so no query syntax comes from the caller), any of them, less the
    // words common among the owner's memories when rarer ones are there.
    async fn sqlite_search(&self, owner: &str, terms: &[String]) -> BackendResult<String> {
        let tag = owner_tag(owner);
        let quoted: Vec<String> = terms.iter().map(|t| format!("\"{tag}{t}\"")).collect();
        let Pool::Sqlite(pool) = &self.pool else { return Ok(quoted.join(" OR ")) };
        let rows = sqlx::query(SQLITE_TERM_COUNTS)
            .bind(serde_json::to_string(&quoted).unwrap_or_default())
            .fetch_all(pool)
            .await
            .map_err(db_error)?;
        let mut rare = Vec::new();
        for row in &rows {
            let n: i64 = row.try_get("n").map_err(db_error)?;
            if n <= COMMON_MATCHES {
                rare.push(row.try_get::<String, _>("term").map_err(db_error)?);
            }
        }
        Ok(if rare.is_empty() { quoted.join(" OR ") } else { rare.join(" OR ") })
    }

    // ---- Writes for set-up, uploads, the demo and tests (not part of the tool traits) ----

    /// Adds or updates a user.
    pub async fn upsert_user(&self, id: &str, display_name: Option<&str>, email: Option<&str>) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO users (id, display_name, email, created_at_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, email = excluded.email";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(id)
                .bind(display_name)
                .bind(email)
                .bind(now_ms())
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }

    /// `owner` shares their health data with `reader`, who knows them as `nickname`.
    pub async fn share_health(&self, owner: &str, reader: &str, nickname: Option<&str>) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO health_shares (reader, owner, nickname, created_at_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (reader, owner) DO UPDATE SET nickname = excluded.nickname";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(reader)
                .bind(owner)
                .bind(nickname)
                .bind(now_ms())
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }

    /// `owner` stops sharing with `reader`; whether they were sharing.
    pub async fn unshare_health(&self, owner: &str, reader: &str) -> BackendResult<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query("DELETE FROM health_shares WHERE reader = $1 AND owner = $2")
                .bind(reader)
                .bind(owner)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
                .map_err(db_error)
        })?;
        Ok(done > 0)
    }

    /// Stores FHIR Observations of `subject` in one transaction; their ids. The indexed code
    /// and time are read from each resource (a resource without a time gets now).
    pub async fn add_observations(&self, subject: &str, resources: &[Value]) -> BackendResult<Vec<i64>> {
        const SQL: &str = "INSERT INTO observations (subject, code, effective_ms, resource, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id";
        let now = now_ms();
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let mut ids = Vec::with_capacity(resources.len());
            for resource in resources {
                let id: i64 = sqlx::query_scalar(SQL)
                    .bind(subject)
                    .bind(observation_code(resource))
                    .bind(observation_time_ms(resource).unwrap_or(now))
                    .bind(resource.to_string())
                    .bind(now)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_error)?;
                ids.push(id);
            }
            tx.commit().await.map_err(db_error)?;
            Ok(ids)
        })
    }

    /// Adds a file to `owner`'s index (after its bytes are stored).
    pub async fn add_file(&self, owner: &str, file: &FileRecord) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO files (file_key, owner, filename, mime_type, size, text_key, uploaded_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)";
        let uploaded = parse_time_ms(&file.uploaded_at).unwrap_or_else(now_ms);
        let size = i64::try_from(file.size).unwrap_or(i64::MAX);
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(&file.file_key)
                .bind(owner)
                .bind(&file.filename)
                .bind(&file.mime_type)
                .bind(size)
                .bind(&file.text_key)
                .bind(uploaded)
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }

    /// The summary of `owner`'s conversation `session_id`, if it exists and has one.
    pub async fn conversation_summary(&self, owner: &str, session_id: &str) -> BackendResult<Option<String>> {
        on_pool!(self, |pool| {
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT summary FROM conversations WHERE owner = $1 AND session_id = $2",
            )
            .bind(owner)
            .bind(session_id)
            .fetch_optional(pool)
            .await
            .map(Option::flatten)
            .map_err(db_error)
        })
    }

    /// Stores many memories of `owner` in one transaction (bulk loads); their ids.
    pub async fn add_memories(&self, owner: &str, memories: &[NewMemory]) -> BackendResult<Vec<i64>> {
        let now = now_ms();
        let (sql, with_terms) = self.insert_memory_sql();
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let mut ids = Vec::with_capacity(memories.len());
            for memory in memories {
                let query = sqlx::query_scalar(sql)
                    .bind(owner)
                    .bind(&memory.text)
                    .bind(&memory.kind)
                    .bind(&memory.session_id)
                    .bind(now);
                let query = if with_terms { query.bind(index_terms(owner, &memory.text)) } else { query };
                ids.push(query.fetch_one(&mut *tx).await.map_err(db_error)?);
            }
            tx.commit().await.map_err(db_error)?;
            Ok(ids)
        })
    }

    // The insert of one memory, and whether it takes the indexed terms as $6 (SQLite).
    fn insert_memory_sql(&self) -> (&'static str, bool) {
        match self.dialect() {
            Dialect::Sqlite => (
                "INSERT INTO memories (owner, text, kind, session_id, created_at_ms, terms) \
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                true,
            ),
            Dialect::Postgres => (
                "INSERT INTO memories (owner, text, kind, session_id, created_at_ms) \
                 VALUES ($1, $2, $3, $4, $5) RETURNING id",
                false,
            ),
        }
    }

    /// The ids of all of `owner`'s memories, oldest first.
    pub async fn memory_ids(&self, owner: &str) -> BackendResult<Vec<i64>> {
        on_pool!(self, |pool| {
            sqlx::query_scalar("SELECT id FROM memories WHERE owner = $1 ORDER BY id")
                .bind(owner)
                .fetch_all(pool)
                .await
                .map_err(db_error)
        })
    }

    /// `user_id`'s access-log rows, oldest first: (kind, name, outcome, duration in ms). Rows
    /// logged before outcomes were (schema 4) read as [`AccessOutcome::Ok`] or
    /// [`AccessOutcome::Failed`]; a name this version does not know reads as `Failed`.
    pub async fn access_log_of(&self, user_id: &str) -> BackendResult<Vec<(AccessKind, String, AccessOutcome, u64)>> {
        const SQL: &str =
            "SELECT kind, name, success, outcome, duration_ms FROM access_log WHERE user_id = $1 ORDER BY id";
        on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(user_id).fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let kind =
                        if row.try_get::<i64, _>("kind")? == 2 { AccessKind::Resource } else { AccessKind::Tool };
                    let success: bool = row.try_get("success")?;
                    let outcome = match row.try_get::<Option<String>, _>("outcome")? {
                        Some(name) => AccessOutcome::from_name(&name).unwrap_or(AccessOutcome::Failed),
                        None if success => AccessOutcome::Ok,
                        None => AccessOutcome::Failed,
                    };
                    let duration: i64 = row.try_get("duration_ms")?;
                    Ok((kind, row.try_get("name")?, outcome, duration.max(0) as u64))
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }
}

/// A word matching more of one owner's memories than this says little about which are
/// relevant: it is left out of the search when rarer words are in the query. And at most the
/// newest this many matches are ranked, which bounds the work of any one search. Owners with
/// fewer memories than this are never affected.
const COMMON_MATCHES: i64 = 2000;

// How many of the owner's memories each word matches (FTS5 counts a posting list without
// reading rows, faster than stopping early); the words come as a JSON array of FTS5 strings.
const SQLITE_TERM_COUNTS: &str = "SELECT j.value AS term, \
     (SELECT count(*) FROM memories_fts WHERE memories_fts MATCH j.value) AS n \
     FROM json_each($1) AS j";

// FTS5 ranks the owner's own postings (bm25) among the newest COMMON_MATCHES matches, and
// only the top rows are joined to their content, where the owner column is checked again.
// CROSS JOIN keeps that order: left to itself, SQLite 3.46 would walk every memory of the
// owner through the owner index and probe the ranked rows (8 ms instead of 0.7 ms for an owner
// with 100,000 memories).
const SQLITE_RECALL: &str = "SELECT m.id, m.text, m.kind, m.created_at_ms, -f.rank AS score \
     FROM (SELECT rowid, bm25(memories_fts) AS rank FROM memories_fts \
           WHERE memories_fts MATCH $2 AND rowid >= COALESCE((SELECT rowid FROM memories_fts \
               WHERE memories_fts MATCH $2 ORDER BY rowid DESC LIMIT 1 OFFSET $4 - 1), 0) \
           ORDER BY rank LIMIT $3) AS f \
     CROSS JOIN memories m ON m.id = f.rowid \
     WHERE m.owner = $1 \
     ORDER BY f.rank, m.id DESC";

const POSTGRES_RECALL: &str = "SELECT id, text, kind, created_at_ms, ts_rank_cd(tsv, q)::float8 AS score \
     FROM memories, to_tsquery('english', $2) AS q \
     WHERE owner = $1 AND tsv @@ q \
     ORDER BY score DESC, id DESC LIMIT $3";

#[async_trait]
impl Db for SqlStore {
    async fn health_sharers(&self, user_id: &str) -> BackendResult<Vec<CircleMember>> {
        const SQL: &str = "SELECT s.owner, s.nickname, u.email FROM health_shares s \
             LEFT JOIN users u ON u.id = s.owner WHERE s.reader = $1 ORDER BY s.created_at_ms, s.owner";
        on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(user_id).fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    Ok(CircleMember {
                        user_id: row.try_get("owner")?,
                        nickname: row.try_get("nickname")?,
                        email: row.try_get("email")?,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }

    async fn can_read_health(&self, reader: &str, subject: &str) -> BackendResult<bool> {
        if reader == subject {
            return Ok(true);
        }
        let found: Option<i64> = on_pool!(self, |pool| {
            sqlx::query_scalar("SELECT CAST(1 AS BIGINT) FROM health_shares WHERE reader = $1 AND owner = $2")
                .bind(reader)
                .bind(subject)
                .fetch_optional(pool)
                .await
                .map_err(db_error)
        })?;
        Ok(found.is_some())
    }

    async fn observations(&self, reader: &str, subject: &str, limit: u32) -> BackendResult<Option<ObservationPage>> {
        // The access check and the total in one statement (-1: not allowed), then the page,
        // which repeats the access condition so a share revoked in between returns nothing.
        const TOTAL: &str = "SELECT CASE WHEN $2 = $1 \
             OR EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1) \
             THEN COALESCE((SELECT total FROM observation_totals WHERE subject = $1), 0) ELSE -1 END";
        const PAGE: &str = "SELECT resource FROM observations WHERE subject = $1 \
             AND ($2 = $1 OR EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1)) \
             ORDER BY effective_ms DESC, id DESC LIMIT $3";
        let total: i64 = on_pool!(self, |pool| {
            sqlx::query_scalar(TOTAL).bind(subject).bind(reader).fetch_one(pool).await.map_err(db_error)
        })?;
        if total < 0 {
            return Ok(None);
        }
        let resources: Vec<String> = on_pool!(self, |pool| {
            sqlx::query_scalar(PAGE)
                .bind(subject)
                .bind(reader)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
                .map_err(db_error)
        })?;
        let observations = resources.iter().filter_map(|text| serde_json::from_str(text).ok()).collect();
        Ok(Some(ObservationPage { total: total as u64, observations }))
    }

    async fn files(&self, owner: &str) -> BackendResult<Vec<FileRecord>> {
        const SQL: &str = "SELECT file_key, filename, mime_type, size, text_key, uploaded_at_ms FROM files \
             WHERE owner = $1 ORDER BY uploaded_at_ms DESC, file_key";
        on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(owner).fetch_all(pool).await.map_err(db_error)?;
            rows.iter().map(file_record).collect::<Result<Vec<_>, sqlx::Error>>().map_err(db_error)
        })
    }

    async fn file(&self, owner: &str, file_key: &str) -> BackendResult<Option<FileRecord>> {
        const SQL: &str = "SELECT file_key, filename, mime_type, size, text_key, uploaded_at_ms FROM files \
             WHERE owner = $1 AND file_key = $2";
        on_pool!(self, |pool| {
            let row = sqlx::query(SQL).bind(owner).bind(file_key).fetch_optional(pool).await.map_err(db_error)?;
            row.as_ref().map(file_record).transpose().map_err(db_error)
        })
    }

    async fn set_conversation_summary(&self, owner: &str, session_id: &str, summary: &str) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO conversations (owner, session_id, summary, created_at_ms, updated_at_ms) \
             VALUES ($1, $2, $3, $4, $4) ON CONFLICT (owner, session_id) \
             DO UPDATE SET summary = excluded.summary, updated_at_ms = excluded.updated_at_ms";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(owner)
                .bind(session_id)
                .bind(summary)
                .bind(now_ms())
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }
}

fn file_record<R: Row>(row: &R) -> Result<FileRecord, sqlx::Error>
where
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let size: i64 = row.try_get("size")?;
    Ok(FileRecord {
        file_key: row.try_get("file_key")?,
        filename: row.try_get("filename")?,
        mime_type: row.try_get("mime_type")?,
        size: size.max(0) as u64,
        uploaded_at: rfc3339(row.try_get("uploaded_at_ms")?),
        text_key: row.try_get("text_key")?,
    })
}

#[async_trait]
impl Memory for SqlStore {
    async fn remember(&self, owner: &str, memory: NewMemory) -> BackendResult<i64> {
        // One statement, one implicit transaction (the index is kept by a trigger): committed,
        // and with SQLite's synchronous=FULL on disk, before the id comes back.
        let (sql, with_terms) = self.insert_memory_sql();
        on_pool!(self, |pool| {
            let query = sqlx::query_scalar(sql)
                .bind(owner)
                .bind(&memory.text)
                .bind(&memory.kind)
                .bind(&memory.session_id)
                .bind(now_ms());
            let query = if with_terms { query.bind(index_terms(owner, &memory.text)) } else { query };
            query.fetch_one(pool).await.map_err(db_error)
        })
    }

    async fn recall(&self, owner: &str, query: &str, top_k: usize) -> BackendResult<Vec<MemoryRecord>> {
        let terms = query_terms(query);
        if terms.is_empty() || top_k == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(top_k).unwrap_or(i64::MAX);
        let search = match self.dialect() {
            Dialect::Sqlite => self.sqlite_search(owner, &terms).await?,
            Dialect::Postgres => terms.join(" | "),
        };
        // SQLite's query also takes the common-match bound, as $4.
        let (sql, sqlite) = match self.dialect() {
            Dialect::Sqlite => (SQLITE_RECALL, true),
            Dialect::Postgres => (POSTGRES_RECALL, false),
        };
        on_pool!(self, |pool| {
            let query = sqlx::query(sql).bind(owner).bind(&search).bind(limit);
            let query = if sqlite { query.bind(COMMON_MATCHES) } else { query };
            let rows = query.fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    Ok(MemoryRecord {
                        id: row.try_get("id")?,
                        text: row.try_get("text")?,
                        kind: row.try_get("kind")?,
                        score: row.try_get("score")?,
                        created_at: rfc3339(row.try_get("created_at_ms")?),
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }

    async fn forget(&self, owner: &str, id: i64) -> BackendResult<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query("DELETE FROM memories WHERE owner = $1 AND id = $2")
                .bind(owner)
                .bind(id)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
                .map_err(db_error)
        })?;
        Ok(done > 0)
    }
}

/// What storing a secret does when the user already has one.
enum SecretWrite {
    /// The new secret replaces it.
    Replace,
    /// Nothing is stored, unless the one they have has expired (then it is replaced).
    IfAbsent,
}

impl SqlStore {
    // Stores a secret's hash; the number of rows written.
    async fn write_secret(
        &self,
        mode: SecretWrite,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<u64> {
        let sql = match mode {
            SecretWrite::Replace => {
                "INSERT INTO personal_secrets (user_id, secret_hash, agent, created_at_ms, expires_at_ms) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id) DO UPDATE SET \
                 secret_hash = excluded.secret_hash, agent = excluded.agent, created_at_ms = excluded.created_at_ms, \
                 expires_at_ms = excluded.expires_at_ms"
            }
            // An expired secret is no secret: it is replaced, in the same one statement.
            SecretWrite::IfAbsent => {
                "INSERT INTO personal_secrets (user_id, secret_hash, agent, created_at_ms, expires_at_ms) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id) DO UPDATE SET \
                 secret_hash = excluded.secret_hash, agent = excluded.agent, created_at_ms = excluded.created_at_ms, \
                 expires_at_ms = excluded.expires_at_ms \
                 WHERE personal_secrets.expires_at_ms IS NOT NULL AND personal_secrets.expires_at_ms <= $4"
            }
        };
        let expires_at_ms = expires_at_ms.map(|ms| i64::try_from(ms).unwrap_or(i64::MAX));
        on_pool!(self, |pool| {
            sqlx::query(sql)
                .bind(user_id)
                .bind(&secret_hash[..])
                .bind(agent)
                .bind(now_ms())
                .bind(expires_at_ms)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
                .map_err(db_error)
        })
    }
}

#[async_trait]
impl SecretStore for SqlStore {
    async fn secret_owner(&self, secret_hash: &[u8; 32]) -> BackendResult<Option<SecretOwner>> {
        // An expired secret is found by nobody, as a revoked one.
        const SQL: &str = "SELECT user_id, agent FROM personal_secrets \
             WHERE secret_hash = $1 AND (expires_at_ms IS NULL OR expires_at_ms > $2)";
        on_pool!(self, |pool| {
            let row =
                sqlx::query(SQL).bind(&secret_hash[..]).bind(now_ms()).fetch_optional(pool).await.map_err(db_error)?;
            row.map(|row| Ok(SecretOwner { user_id: row.try_get("user_id")?, agent: row.try_get("agent")? }))
                .transpose()
                .map_err(db_error)
        })
    }

    async fn put_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<()> {
        self.write_secret(SecretWrite::Replace, user_id, secret_hash, agent, expires_at_ms).await.map(|_| ())
    }

    async fn add_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<bool> {
        // One statement, so two concurrent first secrets cannot both be stored.
        Ok(self.write_secret(SecretWrite::IfAbsent, user_id, secret_hash, agent, expires_at_ms).await? == 1)
    }

    async fn has_secret(&self, user_id: &str) -> BackendResult<bool> {
        const SQL: &str = "SELECT CAST(1 AS BIGINT) FROM personal_secrets \
             WHERE user_id = $1 AND (expires_at_ms IS NULL OR expires_at_ms > $2)";
        let found: Option<i64> = on_pool!(self, |pool| {
            sqlx::query_scalar(SQL).bind(user_id).bind(now_ms()).fetch_optional(pool).await.map_err(db_error)
        })?;
        Ok(found.is_some())
    }

    async fn revoke_secret(&self, user_id: &str) -> BackendResult<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query("DELETE FROM personal_secrets WHERE user_id = $1")
                .bind(user_id)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
                .map_err(db_error)
        })?;
        Ok(done > 0)
    }
}

/// The longest name stored in the access log, in bytes (cut on a character boundary).
const MAX_LOGGED_NAME: usize = 128;

#[async_trait]
impl AccessLog for SqlStore {
    async fn record(
        &self,
        user_id: &str,
        kind: AccessKind,
        name: &str,
        outcome: AccessOutcome,
        duration_ms: u64,
    ) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO access_log (user_id, kind, name, success, outcome, duration_ms, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)";
        let kind: i64 = match kind {
            AccessKind::Tool => 1,
            AccessKind::Resource => 2,
        };
        let (name, _) = crate::text::cap_bytes(name, MAX_LOGGED_NAME);
        let duration = i64::try_from(duration_ms).unwrap_or(i64::MAX);
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(user_id)
                .bind(kind)
                .bind(name)
                .bind(outcome.is_ok())
                .bind(outcome.as_str())
                .bind(duration)
                .bind(now_ms())
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A new SQLite database in a folder of its own, which lasts as long as the returned folder.
    async fn new_sqlite_store(max_connections: u32) -> (tempfile::TempDir, SqlStore) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());
        let store = SqlStore::connect(&url, None, max_connections).await.unwrap();
        (dir, store)
    }

    fn sqlite_pool(store: &SqlStore) -> &SqlitePool {
        let Pool::Sqlite(pool) = &store.pool else { panic!("a sqlite: URL opens SQLite") };
        pool
    }

    #[tokio::test]
    async fn opening_a_new_sqlite_database_leaves_one_connection() {
        let (_dir, store) = new_sqlite_store(8).await;
        // Each SQLite connection is a thread with its own page cache; idle ones are memory.
        assert_eq!(sqlite_pool(&store).size(), 1, "connections open after the migrations");
        assert_eq!(store.schema_version().await.unwrap(), latest_version());
    }

    // The newest migration's version (versions may skip a number while one is being written).
    fn latest_version() -> i64 {
        MIGRATIONS.last().unwrap().0
    }

    #[tokio::test]
    async fn settling_waits_for_every_connection_to_be_back_in_the_pool() {
        let (_dir, store) = new_sqlite_store(4).await;
        let pool = sqlite_pool(&store);
        // Two connections in use at once, then dropped: each goes back in a task of its own.
        let (first, second) = (pool.acquire().await.unwrap(), pool.acquire().await.unwrap());
        // The pool may open one more on its own while both are out (seen once in CI).
        let opened = pool.size();
        assert!(opened >= 2, "two connections out at once");
        drop((first, second));
        store.settle().await;
        assert_eq!(pool.num_idle(), opened as usize, "every connection is back in the pool");
        // Settling again does no harm, and the store still answers.
        store.settle().await;
        assert_eq!(store.schema_version().await.unwrap(), latest_version());
    }

    #[tokio::test]
    async fn the_sqlite_migrations_leave_no_prepared_statements_behind() {
        // One connection at most, so the one acquired here is the one that ran the migrations.
        let (_dir, store) = new_sqlite_store(1).await;
        let mut conn = sqlite_pool(&store).acquire().await.unwrap();
        assert_eq!(conn.cached_statements_size(), 0, "statements cached after the migrations");
        // The count is live: a statement run now is cached and counted.
        sqlx::query("SELECT 1").execute(&mut *conn).await.unwrap();
        assert_eq!(conn.cached_statements_size(), 1);
    }

    #[tokio::test]
    async fn the_access_log_keeps_success_beside_the_outcome_and_reads_old_rows() {
        let (_dir, store) = new_sqlite_store(1).await;
        for outcome in AccessOutcome::ALL {
            store.record("u1", AccessKind::Tool, "t", outcome, 0).await.unwrap();
        }
        let pool = sqlite_pool(&store);
        let success: Vec<bool> =
            sqlx::query_scalar("SELECT success FROM access_log ORDER BY id").fetch_all(pool).await.unwrap();
        let expected: Vec<bool> = AccessOutcome::ALL.iter().map(|o| o.is_ok()).collect();
        assert_eq!(success, expected, "success is true exactly when the outcome is ok");
        // Rows logged before schema 4 have no outcome: they read from `success`.
        sqlx::query(
            "INSERT INTO access_log (user_id, kind, name, success, duration_ms, created_at_ms) \
             VALUES ('u2', 1, 'old', 1, 0, 0), ('u2', 1, 'old', 0, 0, 0), ('u2', 1, 'new', 0, 0, 0)",
        )
        .execute(pool)
        .await
        .unwrap();
        sqlx::query("UPDATE access_log SET outcome = 'from_a_newer_version' WHERE name = 'new'")
            .execute(pool)
            .await
            .unwrap();
        let outcomes: Vec<AccessOutcome> =
            store.access_log_of("u2").await.unwrap().into_iter().map(|(_, _, outcome, _)| outcome).collect();
        assert_eq!(outcomes, [AccessOutcome::Ok, AccessOutcome::Failed, AccessOutcome::Failed]);
    }

    #[test]
    fn only_a_sqlite_file_url_makes_a_file() {
        assert!(sqlite_url_makes_a_file("sqlite://./.mirobody/mirobody.db"));
        assert!(sqlite_url_makes_a_file("sqlite:data.db?mode=rwc"));
        assert!(!sqlite_url_makes_a_file("sqlite::memory:"));
        assert!(!sqlite_url_makes_a_file("sqlite://x.db?cache=shared&mode=memory"));
        assert!(!sqlite_url_makes_a_file("sqlite://x.db?mode=ro"));
    }

    #[tokio::test]
    async fn an_in_memory_database_makes_no_file() {
        for url in ["sqlite::memory:", "sqlite://in-memory-test.db?mode=memory"] {
            let store = SqlStore::connect(url, None, 1).await.unwrap();
            assert_eq!(store.schema_version().await.unwrap(), latest_version());
            store.close().await;
        }
        let made: Vec<_> = std::fs::read_dir(".")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name.contains("in-memory"))
            .collect();
        assert!(made.is_empty(), "files made for an in-memory database: {made:?}");
    }

    #[tokio::test]
    async fn a_sqlite_file_that_cannot_be_opened_is_reported_at_connect() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the database file should be.
        let url = format!("sqlite://{}", dir.path().display());
        let err = SqlStore::connect(&url, None, 2).await.unwrap_err().to_string();
        assert!(err.starts_with("cannot open the SQLite database: "), "{err}");
    }

    #[test]
    fn query_terms_are_words_only() {
        assert_eq!(query_terms("What did I say about my SLEEP?"), ["say", "sleep"]);
        assert_eq!(query_terms("\" OR owner_tag : 1 --"), ["owner", "tag", "1"]);
        assert_eq!(query_terms("the"), ["the"], "stop words stay when nothing else is left");
        assert!(query_terms("!!! ---").is_empty());
        assert_eq!(query_terms(&"word ".repeat(100)), ["word"]);
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(query_terms(&many).len(), 32);
    }

    #[test]
    fn owner_tags_are_digits_and_differ() {
        let (a, b) = (owner_tag("alice"), owner_tag("bob"));
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_digit()) && a.len() == 20, "{a}");
        assert_eq!(index_terms("alice", "Ran 10k, café!"), format!("{a}ran {a}10k {a}café"));
    }

    #[test]
    fn observation_index_columns_come_from_the_resource() {
        let obs = serde_json::json!({
            "resourceType": "Observation",
            "code": {"coding": [{"system": "http://loinc.org", "code": "8867-4", "display": "Heart rate"}]},
            "effectiveDateTime": "2026-01-02T03:04:05Z",
        });
        assert_eq!(observation_code(&obs), "8867-4");
        assert_eq!(observation_time_ms(&obs).map(rfc3339).as_deref(), Some("2026-01-02T03:04:05Z"));
        assert_eq!(observation_code(&serde_json::json!({"code": {"text": "Mood"}})), "Mood");
        assert_eq!(observation_time_ms(&serde_json::json!({})), None);
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(valid_schema_name("t_123abc"));
        for bad in ["", "1abc", "pg_x", "a-b", "A", "a;drop", &"a".repeat(64)] {
            assert!(!valid_schema_name(bad), "{bad}");
        }
    }
}
