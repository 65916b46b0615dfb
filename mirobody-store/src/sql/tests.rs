//! Unit tests of the SQL store: opening and migrating SQLite, the access log's columns, and the
//! pure helpers (indexed terms, observation columns, schema names).

use mirobody_ports::{AccessKind, AccessLog, AccessOutcome};
use sqlx::Connection;
use sqlx::sqlite::SqlitePool;

use super::connect::{MIGRATIONS, sqlite_url_makes_a_file, valid_schema_name};
use super::memory::{index_terms, owner_tag, query_terms};
use super::{Pool, SqlStore};

// A new SQLite database in a folder of its own, which lasts as long as the returned folder.
pub(super) async fn new_sqlite_store(max_connections: u32) -> (tempfile::TempDir, SqlStore) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());
    let store = SqlStore::connect(&url, None, max_connections).await.unwrap();
    (dir, store)
}

pub(super) fn sqlite_pool(store: &SqlStore) -> &SqlitePool {
    #[allow(irrefutable_let_patterns)] // SQLite is the only pool without the postgres feature.
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
        store.record("u1", None, AccessKind::Tool, "t", outcome, 0).await.unwrap();
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
fn schema_names_are_plain_identifiers() {
    assert!(valid_schema_name("t_123abc"));
    for bad in ["", "1abc", "pg_x", "a-b", "A", "a;drop", &"a".repeat(64)] {
        assert!(!valid_schema_name(bad), "{bad}");
    }
}

#[test]
fn operations_are_labelled_by_their_method_name() {
    assert_eq!(
        super::operation_label("mirobody_store::sql::circle::<impl SqlStore>::health_sharers::{{closure}}::operation"),
        "health_sharers"
    );
    assert_eq!(super::operation_label("operation"), "other");
    assert_eq!(super::operation_label("a::b c::operation"), "other", "never a label outside the fixed shape");
}
