//! The Apple Health import benchmark's steps, each its own process so that `/usr/bin/time -v`
//! measures its peak resident memory alone (run by `benches/load/apple_health.sh`):
//!
//! - `generate DAYS FILE`: writes an `export.xml` of DAYS days (50 records each) with
//!   `mirobody_health::apple::generate`; prints its records and bytes.
//! - `import FILE DATA_DIR`: imports it into a fresh embedded store (SQLite) under DATA_DIR
//!   through `apple::import_apple_health_auto`, as `mirobody-server import` does.
//! - `xml FILE`: the first baseline, a bare `quick-xml` pass over the same file (every event
//!   read, every `Record`'s attributes unescaped, nothing kept).
//! - `parse FILE`: the import with a store that keeps nothing: the import's own work (reading,
//!   sorting, building the values) without the database's.
//! - `insert FROM_DATA_DIR DATA_DIR`: the second baseline, the rows the import stored (read
//!   from its database) written again into a fresh one by bare sqlx INSERTs, one a row, in
//!   transactions of 250 observations and their points (about the store's 500 rows), as the
//!   `health_data` bench's bare baseline writes; only the inserts are timed. Prints the rows the
//!   import stored (`STORED`) and the rows written (`ROWS`), and fails when they differ.
//! - `insert-multi FROM_DATA_DIR DATA_DIR`: the same rows by multi-row INSERTs (250
//!   observations, then their points 200 a statement), the fastest plain SQL can write them.
//!
//! With `MIROBODY_BENCH_POSTGRES_URL` set (`postgres://...`), the same steps run on that
//! PostgreSQL database: every DATA_DIR above names a schema instead (1 to 63 of `a-z 0-9 _`),
//! which `import` and `insert` require not to exist yet and have the store make (tables,
//! indexes and triggers as the server's); `insert` reads the import's rows from the FROM
//! schema. `drop-schemas SCHEMA...` drops them again (the script runs it on exit).
//!
//! Each step prints one `TIME <step> <seconds>` line.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, Executor, PgPool, Row, SqlitePool};

/// Observations per bare transaction (with their points, about the store's 500 rows).
const PER_TRANSACTION: i64 = 250;

/// The variable that moves the database steps to PostgreSQL.
const POSTGRES_URL_VAR: &str = "MIROBODY_BENCH_POSTGRES_URL";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let database = Database::from_env();
    let started = Instant::now();
    let timed = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["generate", days, file] => {
            let days: u64 = days.parse().expect("DAYS is a number");
            let out = std::fs::File::create(file).expect("FILE can be written");
            let generated = mirobody_health::apple::generate::write_xml(days, out).expect("the export is written");
            println!("RECORDS {} BYTES {}", generated.records, generated.xml_bytes);
            started.elapsed()
        }
        ["import", file, data_dir] => runtime.block_on(import(&database, Path::new(file), data_dir)),
        ["xml", file] => xml_pass(Path::new(file)),
        ["parse", file] => runtime.block_on(parse_only(Path::new(file))),
        ["insert", from, data_dir] => runtime.block_on(insert(&database, from, data_dir, false)),
        ["insert-multi", from, data_dir] => runtime.block_on(insert(&database, from, data_dir, true)),
        ["drop-schemas", ref schemas @ ..] => {
            runtime.block_on(drop_schemas(&database, schemas));
            return;
        }
        _ => {
            eprintln!(
                "usage: apple-health generate DAYS FILE | import FILE DATA_DIR | xml FILE | parse FILE \
                 | insert FROM DATA_DIR | insert-multi FROM DATA_DIR | drop-schemas SCHEMA...\n\
                 (with {POSTGRES_URL_VAR} set, each DATA_DIR and FROM is a PostgreSQL schema)"
            );
            std::process::exit(2);
        }
    };
    println!("TIME {} {:.3}", args[0], timed.as_secs_f64());
}

/// Where the database steps keep their rows.
enum Database {
    /// A fresh embedded store (SQLite) in each step's DATA_DIR.
    Sqlite,
    /// A fresh schema, named by each step's DATA_DIR, of this PostgreSQL database.
    Postgres(String),
}

impl Database {
    fn from_env() -> Self {
        match std::env::var(POSTGRES_URL_VAR) {
            Ok(url) if !url.is_empty() => Database::Postgres(url),
            _ => Database::Sqlite,
        }
    }

    /// The store's configuration for `place`: a folder, or on PostgreSQL a schema.
    fn config(&self, place: &str) -> mirobody_store::BackendConfig {
        match self {
            Database::Sqlite => mirobody_store::BackendConfig::embedded(place),
            Database::Postgres(url) => mirobody_store::BackendConfig {
                database_url: Some(url.clone()),
                database_schema: Some(schema_name(place).to_owned()),
                // Nothing of the store's on this machine: no uploads folder, no key file.
                storage: mirobody_store::StorageConfig::None,
                signing_key: Some("b".repeat(64)),
                ..mirobody_store::BackendConfig::embedded(PathBuf::from("/nonexistent/mirobody-bench"))
            },
        }
    }

    /// Stops unless `place` is fresh on PostgreSQL: a schema left by another run would add
    /// its rows to this one's.
    async fn require_fresh(&self, place: &str) {
        let Database::Postgres(url) = self else { return };
        let mut conn = sqlx::PgConnection::connect(url).await.expect("PostgreSQL connects");
        let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
            .bind(schema_name(place))
            .fetch_one(&mut conn)
            .await
            .expect("the schemas read");
        conn.close().await.expect("the connection closes");
        if exists {
            eprintln!("schema {place} exists already: drop it or name a fresh one");
            std::process::exit(1);
        }
    }
}

/// `name` when it is a schema name the store accepts (1 to 63 of `a-z 0-9 _`, not starting
/// with a digit or `pg_`), so that it can be written into SQL; the run stops otherwise.
fn schema_name(name: &str) -> &str {
    let valid = (1..=63).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !name.starts_with("pg_");
    if !valid {
        eprintln!("'{name}' is not a schema name: use 1 to 63 of a-z 0-9 _, not starting with a digit or pg_");
        std::process::exit(2);
    }
    name
}

async fn drop_schemas(database: &Database, schemas: &[&str]) {
    let Database::Postgres(url) = database else {
        eprintln!("drop-schemas needs {POSTGRES_URL_VAR}");
        std::process::exit(2);
    };
    let mut conn = sqlx::PgConnection::connect(url).await.expect("PostgreSQL connects");
    for schema in schemas {
        conn.execute(format!("DROP SCHEMA IF EXISTS {} CASCADE", schema_name(schema)).as_str())
            .await
            .expect("the schema drops");
    }
    conn.close().await.expect("the connection closes");
}

async fn import(database: &Database, file: &Path, data_dir: &str) -> Duration {
    database.require_fresh(data_dir).await;
    let backends = mirobody_store::open(&database.config(data_dir)).await.expect("the store opens");
    let started = Instant::now();
    let reader = BufReader::with_capacity(1 << 16, std::fs::File::open(file).expect("FILE opens"));
    let response = mirobody_health::apple::import_apple_health_auto(backends.health().as_ref(), "bench", reader)
        .await
        .expect("FILE is an Apple Health export");
    let took = started.elapsed();
    println!(
        "STATUS {} CREATED {} UNCHANGED {}",
        response.status, response.summary.created, response.summary.unchanged
    );
    assert_eq!(response.status, 200, "{}", response.body);
    backends.close().await;
    took
}

/// A store that keeps nothing and calls every value new.
struct NullStore;

#[async_trait::async_trait]
impl mirobody_health::RecordStore for NullStore {
    async fn upsert_user(
        &self,
        _: &str,
        _: Option<&str>,
        _: Option<&str>,
    ) -> mirobody_core::backend::BackendResult<()> {
        Ok(())
    }

    async fn begin_import(
        &self,
        _: &str,
        _: &mirobody_health::ImportSource,
    ) -> mirobody_core::backend::BackendResult<i64> {
        Ok(1)
    }

    async fn import_batch(
        &self,
        _: &str,
        _: i64,
        items: &[&mirobody_health::fhir::ImportItem],
    ) -> mirobody_core::backend::BackendResult<Result<Vec<mirobody_health::ItemOutcome>, mirobody_health::QuotaExceeded>>
    {
        // What the store does first with each: its JSON as text.
        let bytes: usize = items
            .iter()
            .map(|item| match item {
                mirobody_health::fhir::ImportItem::Observation(o) => o.resource.to_string().len(),
                mirobody_health::fhir::ImportItem::Record(r) => r.resource.to_string().len(),
                mirobody_health::fhir::ImportItem::Remove(r) => r.source_id.len(),
            })
            .sum();
        std::hint::black_box(bytes);
        Ok(Ok(vec![mirobody_health::ItemOutcome::Created; items.len()]))
    }

    async fn finish_import(
        &self,
        _: &str,
        _: i64,
        _: &mirobody_health::ImportCounts,
    ) -> mirobody_core::backend::BackendResult<()> {
        Ok(())
    }

    async fn imports(&self, _: &str) -> mirobody_core::backend::BackendResult<Vec<mirobody_health::ImportRecord>> {
        Ok(Vec::new())
    }

    async fn delete_import(
        &self,
        _: &str,
        _: i64,
    ) -> mirobody_core::backend::BackendResult<Option<mirobody_health::DeletedImport>> {
        Ok(None)
    }

    async fn add_observations(
        &self,
        _: &str,
        _: &[serde_json::Value],
    ) -> mirobody_core::backend::BackendResult<Vec<i64>> {
        Ok(Vec::new())
    }
}

async fn parse_only(file: &Path) -> Duration {
    let started = Instant::now();
    let reader = BufReader::with_capacity(1 << 16, std::fs::File::open(file).expect("FILE opens"));
    let response = mirobody_health::apple::import_apple_health_auto(&NullStore, "bench", reader)
        .await
        .expect("FILE is an Apple Health export");
    println!("STATUS {} VALUES {}", response.status, response.summary.created);
    started.elapsed()
}

fn xml_pass(file: &Path) -> Duration {
    use quick_xml::events::Event;
    let started = Instant::now();
    let mut reader = quick_xml::Reader::from_reader(BufReader::with_capacity(
        1 << 16,
        std::fs::File::open(file).expect("FILE opens"),
    ));
    let mut buf = Vec::with_capacity(4096);
    let (mut records, mut chars) = (0u64, 0usize);
    loop {
        buf.clear();
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"Record" => {
                records += 1;
                for attribute in e.attributes() {
                    chars += attribute.expect("an attribute").unescape_value().expect("unescaped").len();
                }
            }
            _ => {}
        }
    }
    println!("RECORDS {records} CHARS {chars}");
    started.elapsed()
}

async fn pool(data_dir: &Path) -> SqlitePool {
    let options = SqliteConnectOptions::new()
        .filename(data_dir.join("mirobody.db"))
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(10));
    SqlitePoolOptions::new().max_connections(1).connect_with(options).await.expect("the database opens")
}

/// The bare writes of `insert`: the rows of `$source` (a pool) into `$target`; the time of
/// the writes. A macro for the two pool types: sqlx's query builder, generic over the
/// database, would stay borrowed for its whole life.
macro_rules! copy_rows {
    ($source:expr, $target:expr, $multi_row:expr) => {{
        let (source, target, multi_row) = ($source, $target, $multi_row);
        let stored: i64 =
            sqlx::query_scalar("SELECT (SELECT count(*) FROM observations) + (SELECT count(*) FROM health_points)")
                .fetch_one(source)
                .await
                .expect("the import's rows count");
        println!("STORED {stored}");
        let mut took = Duration::ZERO;
        let (mut last, mut rows) = (0i64, 0u64);
        loop {
            let observations = sqlx::query(
                "SELECT id, subject, code, effective_ms, resource, created_at_ms, source_id FROM observations \
                 WHERE id > $1 ORDER BY id LIMIT $2",
            )
            .bind(last)
            .bind(PER_TRANSACTION)
            .fetch_all(source)
            .await
            .expect("the import's rows read");
            let Some(end) = observations.last().map(|row| row.get::<i64, _>(0)) else { break };
            let points = sqlx::query(
                "SELECT subject, observation_id, code, display, time_ms, value, value_text, unit FROM health_points \
                 WHERE observation_id > $1 AND observation_id <= $2",
            )
            .bind(last)
            .bind(end)
            .fetch_all(source)
            .await
            .expect("the import's points read");
            let started = Instant::now();
            let mut tx = target.begin().await.expect("a transaction");
            if multi_row {
                let mut statement = sqlx::QueryBuilder::new(
                    "INSERT INTO observations (id, subject, code, effective_ms, resource, created_at_ms, source_id) ",
                );
                statement.push_values(&observations, |mut b, row| {
                    b.push_bind(row.get::<i64, _>(0))
                        .push_bind(row.get::<String, _>(1))
                        .push_bind(row.get::<String, _>(2))
                        .push_bind(row.get::<i64, _>(3))
                        .push_bind(row.get::<String, _>(4))
                        .push_bind(row.get::<i64, _>(5))
                        .push_bind(row.get::<String, _>(6));
                });
                statement.build().execute(&mut *tx).await.expect("the bare observation insert");
                for chunk in points.chunks(200) {
                    let mut statement = sqlx::QueryBuilder::new(
                        "INSERT INTO health_points (subject, observation_id, code, \
                         display, time_ms, value, value_text, unit) ",
                    );
                    statement.push_values(chunk, |mut b, row| {
                        b.push_bind(row.get::<String, _>(0))
                            .push_bind(row.get::<i64, _>(1))
                            .push_bind(row.get::<String, _>(2))
                            .push_bind(row.get::<String, _>(3))
                            .push_bind(row.get::<i64, _>(4))
                            .push_bind(row.get::<Option<f64>, _>(5))
                            .push_bind(row.get::<Option<String>, _>(6))
                            .push_bind(row.get::<Option<String>, _>(7));
                    });
                    statement.build().execute(&mut *tx).await.expect("the bare point insert");
                }
            } else {
                for row in &observations {
                    sqlx::query(
                        "INSERT INTO observations (id, subject, code, \
                         effective_ms, resource, created_at_ms, source_id) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(row.get::<i64, _>(0))
                    .bind(row.get::<String, _>(1))
                    .bind(row.get::<String, _>(2))
                    .bind(row.get::<i64, _>(3))
                    .bind(row.get::<String, _>(4))
                    .bind(row.get::<i64, _>(5))
                    .bind(row.get::<String, _>(6))
                    .execute(&mut *tx)
                    .await
                    .expect("the bare observation insert");
                }
                for row in &points {
                    sqlx::query(
                        "INSERT INTO health_points (subject, observation_id, code, \
                         display, time_ms, value, value_text, unit) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    )
                    .bind(row.get::<String, _>(0))
                    .bind(row.get::<i64, _>(1))
                    .bind(row.get::<String, _>(2))
                    .bind(row.get::<String, _>(3))
                    .bind(row.get::<i64, _>(4))
                    .bind(row.get::<Option<f64>, _>(5))
                    .bind(row.get::<Option<String>, _>(6))
                    .bind(row.get::<Option<String>, _>(7))
                    .execute(&mut *tx)
                    .await
                    .expect("the bare point insert");
                }
            }
            tx.commit().await.expect("the commit");
            took += started.elapsed();
            rows += observations.len() as u64 + points.len() as u64;
            last = end;
        }
        println!("ROWS {rows}");
        assert_eq!(Some(rows), u64::try_from(stored).ok(), "the bare insert wrote every row the import stored");
        took
    }};
}

async fn pg_pool(url: &str, schema: &str) -> PgPool {
    let options =
        PgConnectOptions::from_str(url).expect("a PostgreSQL URL").options([("search_path", schema_name(schema))]);
    PgPoolOptions::new().max_connections(1).connect_with(options).await.expect("PostgreSQL connects")
}

async fn insert(database: &Database, from: &str, data_dir: &str, multi_row: bool) -> Duration {
    // The store makes the schema; the rows go in bare.
    database.require_fresh(data_dir).await;
    let backends = mirobody_store::open(&database.config(data_dir)).await.expect("the store opens");
    backends.close().await;
    match database {
        Database::Sqlite => {
            let (source, target) = (pool(Path::new(from)).await, pool(Path::new(data_dir)).await);
            copy_rows!(&source, &target, multi_row)
        }
        Database::Postgres(url) => {
            let (source, target) = (pg_pool(url, from).await, pg_pool(url, data_dir).await);
            copy_rows!(&source, &target, multi_row)
        }
    }
}
