//! The relational store on sqlx: one embedded SQLite file (WAL) by default, PostgreSQL when the
//! database URL says so. One type, [`SqlStore`], implements [`HealthStore`](mirobody_health::HealthStore),
//! [`Memory`](mirobody_core::Memory), [`SecretStore`](mirobody_ports::SecretStore),
//! [`AccessLog`](mirobody_ports::AccessLog), [`AccountStore`](mirobody_ports::AccountStore),
//! [`WebSessionStore`](mirobody_ports::WebSessionStore) and
//! [`OAuthStore`](mirobody_ports::OAuthStore) and [`PasskeyStore`](mirobody_ports::PasskeyStore)
//! over either.
//!
//! Both databases run the same SQL wherever they agree (SQLite reads `$1` placeholders as
//! PostgreSQL does); the schema and full-text search are written once per database. Queries
//! are runtime-checked `sqlx::query` calls with binds: no user input is ever formatted into SQL.
//! Every method that touches user data takes the owner's id and scopes its query to it.
//!
//! This file holds the store and its pool; `connect.rs` opens and migrates it, `setup.rs` has
//! the writes the tool traits leave out, and one file each implements a trait: `db.rs`,
//! `memory.rs`, `secrets.rs`, `access_log.rs`, `tasks.rs`; `accounts.rs` (accounts and web
//! sessions), `oauth.rs` (the authorization server's state) and `passkeys.rs`.

use std::fmt;

use mirobody_core::backend::BackendError;
#[cfg(feature = "postgres")]
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;

/// A [`SqlStore`]'s pool at one moment ([`SqlStore::pool_usage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolUsage {
    /// Connections open, busy or idle.
    pub open: u32,
    /// Open connections waiting for work.
    pub idle: usize,
}

/// Which database a [`SqlStore`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dialect {
    /// Embedded SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

#[derive(Clone)]
enum Pool {
    Sqlite(SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(PgPool),
}

/// Runs the same code against whichever pool the store has: the body is compiled once per
/// database, so each gets its own types while the SQL and the logic stay written once.
///
/// Each run within a span is a `db` span (target `mirobody::trace`, for exported traces) naming
/// the database and the store operation, never a bound value; when nobody listens to it the
/// body runs as it is, with no span made. Each run's duration goes to
/// [`DB_OPERATION_DURATION`] through the `metrics` facade (a no-op without a recorder).
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.pool {
            Pool::Sqlite($pool) => on_pool!(@traced "sqlite", $body),
            #[cfg(feature = "postgres")]
            Pool::Postgres($pool) => on_pool!(@traced "postgresql", $body),
        }
    };
    (@traced $system:literal, $body:expr) => {{
        // Named only to give its enclosing function's name (the store operation).
        fn operation() {}
        // Made before the body and closed after it (or when a `?` in it returns): its start and
        // end are the operation's. Never entered, as nothing runs inside it but the driver.
        // Only within a span (a request's, a tool call's): a background sweep's queries alone
        // would each be a trace of their own.
        let operation = $crate::sql::operation_label(std::any::type_name_of_val(&operation));
        let traced = tracing::enabled!(kind: tracing::metadata::Kind::SPAN, target: "mirobody::trace", tracing::Level::DEBUG)
            && !tracing::Span::current().is_none();
        let span = if traced {
            tracing::debug_span!(
                target: "mirobody::trace",
                "db",
                otel.name = format!("db {operation}"),
                otel.kind = "client",
                db.system.name = $system
            )
        } else {
            tracing::Span::none()
        };
        let started = std::time::Instant::now();
        let value = $body;
        // Timed here rather than from sqlx's statement events: those need a DEBUG-level
        // subscriber, whose filtering every request would pay for.
        metrics::histogram!($crate::sql::DB_OPERATION_DURATION, "operation" => operation).record(started.elapsed());
        drop(span);
        value
    }};
}

/// How long each store operation took (its statements, from the pool's connection to the last
/// row), in seconds, by `operation`: the store method's name, a fixed set written in this
/// crate, never a value. Recorded through the `metrics` facade: nothing without a recorder.
pub const DB_OPERATION_DURATION: &str = "mirobody_db_operation_duration_seconds";

/// The store operation a run is named after: the function `type_name` names `path` in
/// (`...::SqlStore>::health_sharers::{{closure}}::operation` gives `health_sharers`), or
/// `other` for a path of another shape.
pub(crate) fn operation_label(path: &'static str) -> &'static str {
    let mut segments = path.rsplit("::").filter(|segment| *segment != "operation" && !segment.starts_with('{'));
    match segments.next() {
        Some(name) if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => name,
        _ => "other",
    }
}

pub use circle::MAX_INVITEE_CHARS;
pub use erase::{EMAIL_COLUMNS, ErasedPerson, MAX_RESOURCES_PER_PAGE, PERSONAL_TABLES, TABLES_OF_NO_ONE};
pub use quotas::StoreQuotas;
pub use seed::{MAX_SEED_PATTERN, MAX_SEED_VALUES, SeedValues};
pub use tasks::SqlTaskStore;

// Declared after `on_pool!`, so that the macro is in scope in each of them.
mod access_log;
mod accounts;
mod aggregate;
mod circle;
mod connect;
mod db;
mod erase;
mod files;
mod history;
mod identities;
mod import;
#[cfg(test)]
mod import_tests;
mod memory;
mod oauth;
mod passkeys;
mod quotas;
mod rows;
mod secrets;
mod seed;
mod series;
mod setup;
mod tasks;
#[cfg(test)]
mod tests;
mod upload_links;

/// The SQL store: users, care-circle sharing, FHIR Observations, the file index,
/// conversations, memories, personal-secret hashes, the access log, sign-in accounts and
/// the OAuth authorization server's state.
///
/// Cheap to clone (a pool handle).
#[derive(Clone)]
pub struct SqlStore {
    pool: Pool,
    quotas: StoreQuotas,
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
