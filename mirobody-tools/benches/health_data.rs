//! `fetch_health_data` for one indicator over a year at 1,000,000 observations (1,000 people,
//! 1,000 glucose values each), on SQLite and on PostgreSQL, beside a baseline measured in the
//! same run: one hand-written sqlx query of the same rows on the same database. And the FHIR
//! import's throughput (`import::import_fhir`, what `POST /fhir` runs) beside the same rows
//! written by one bare sqlx transaction of plain INSERTs.
//!
//! Run with `cargo bench -p mirobody-tools --bench health_data`; PostgreSQL too with
//! `MIROBODY_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test` (a fresh schema, dropped
//! at the end; without it the PostgreSQL part prints a SKIPPED line). `MIROBODY_BENCH_PEOPLE`
//! (default 1000) shrinks the data set for a quick run, `MIROBODY_BENCH_CALLS` (default 2000)
//! the interleaved timing loop. Every figure the issue asks for is on a line starting `RATIO`
//! (or `LOAD` for the bulk import); criterion's own lines give each call's time.

use std::cell::Cell;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mirobody_core::clock::now_ms;
use mirobody_core::{Registry, ToolContext, UserInfo};
use mirobody_health::HealthStore;
use mirobody_health::import::import_fhir;
use mirobody_store::SqlStore;
use serde_json::{Value, json};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::runtime::Runtime;

/// Observations per person.
const PER_PERSON: usize = 1000;
/// LOINC glucose, mass/volume in blood.
const CODE: &str = "2339-0";
const DISPLAY: &str = "Glucose [Mass/volume] in Blood";
const UNIT: &str = "mg/dL";
const YEAR_MS: i64 = 365 * 24 * 3600 * 1000;
/// One value every 8.76 hours: 1,000 over the year, a whole number of seconds apart.
const STEP_MS: i64 = YEAR_MS / PER_PERSON as i64;
/// The most values a series returns, and what the bare query asks for.
const LIMIT: u32 = 1000;
/// Rounds of the import-throughput comparison.
const IMPORT_ROUNDS: usize = 5;
/// Rounds of the interleaved timing loop.
const ROUNDS: usize = 10;

// The same rows and columns the tool answers with (time, value or text, unit, source file),
// decoded into tuples, with no access check and no formatting.
const BARE_FETCH: &str = "SELECT time_ms, value, value_text, unit, file_key FROM health_points \
     WHERE subject = $1 AND code = $2 AND time_ms >= $3 AND time_ms < $4 ORDER BY time_ms DESC LIMIT 1000";
const BARE_OBSERVATION: &str = "INSERT INTO observations \
     (subject, code, effective_ms, resource, created_at_ms, source_id, file_key) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id";
const BARE_POINT: &str = "INSERT INTO health_points \
     (subject, observation_id, code, display, time_ms, value, value_text, unit, file_key) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

type BareRows = Vec<(i64, Option<f64>, Option<String>, Option<String>, Option<String>)>;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default).max(1)
}

fn rfc3339(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .expect("a time in range")
        .format(&Rfc3339)
        .expect("the time formats")
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

/// The year the data covers: `[start_ms, end_ms)`, whole seconds.
#[derive(Clone, Copy)]
struct Year {
    start_ms: i64,
    end_ms: i64,
}

impl Year {
    fn ending_now() -> Year {
        let end_ms = now_ms() / 1000 * 1000;
        Year { start_ms: end_ms - YEAR_MS, end_ms }
    }

    /// Person `person`'s `i`th value: its time (inside the year) and the value, varying.
    fn reading(self, person: usize, i: usize) -> (i64, f64) {
        let time_ms = self.start_ms + i as i64 * STEP_MS + (person % 60) as i64 * 1000;
        let value = 70.0 + ((person * 37 + i * 11) % 110) as f64 + (i % 10) as f64 / 10.0;
        (time_ms, value)
    }
}

fn subject(person: usize) -> String {
    format!("person-{person:04}")
}

/// The FHIR Observation with id `id` of a glucose value.
fn observation(id: &str, time_ms: i64, value: f64) -> Value {
    json!({
        "resourceType": "Observation",
        "id": id,
        "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": CODE, "display": DISPLAY}]},
        "effectiveDateTime": rfc3339(time_ms),
        "valueQuantity": {"value": value, "unit": UNIT, "system": "http://unitsofmeasure.org", "code": UNIT},
    })
}

/// A `batch` Bundle of person `person`'s 1,000 Observations (ids `p{person}-{i}`).
fn bundle(year: Year, person: usize) -> Value {
    let entries: Vec<Value> = (0..PER_PERSON)
        .map(|i| {
            let (time_ms, value) = year.reading(person, i);
            json!({
                "resource": observation(&format!("p{person}-{i}"), time_ms, value),
                "request": {"method": "POST", "url": "Observation"},
            })
        })
        .collect();
    json!({"resourceType": "Bundle", "type": "batch", "entry": entries})
}

/// The rows the bare insert writes: those an import of [`bundle`] writes, prepared beforehand
/// (the baseline is the database work alone).
struct BareRow {
    time_ms: i64,
    value: f64,
    resource: String,
    source_id: String,
}

fn bare_rows(year: Year, person: usize) -> Vec<BareRow> {
    (0..PER_PERSON)
        .map(|i| {
            let (time_ms, value) = year.reading(person, i);
            let id = format!("p{person}-{i}");
            let resource = observation(&id, time_ms, value).to_string();
            BareRow { time_ms, value, resource, source_id: format!("Observation/{id}") }
        })
        .collect()
}

/// The bench's own pool on the store's database.
enum Bare {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the pool of either database: the same SQL on both.
macro_rules! on_bare {
    ($bare:expr, |$pool:ident| $body:expr) => {
        match $bare {
            Bare::Sqlite($pool) => $body,
            Bare::Postgres($pool) => $body,
        }
    };
}

impl Bare {
    /// The baseline read: the same rows `HealthStore::series` returns, in one plain query.
    async fn fetch(&self, subject: &str, year: Year) -> BareRows {
        on_bare!(self, |pool| sqlx::query_as::<_, (i64, Option<f64>, Option<String>, Option<String>, Option<String>)>(
            BARE_FETCH
        )
        .bind(subject)
        .bind(CODE)
        .bind(year.start_ms)
        .bind(year.end_ms)
        .fetch_all(pool)
        .await
        .expect("the bare query"))
    }

    /// The baseline write: `rows` as `subject`'s, one transaction of plain INSERTs.
    async fn insert(&self, subject: &str, rows: &[BareRow]) {
        let now = now_ms();
        on_bare!(self, |pool| {
            let mut tx = pool.begin().await.expect("begin");
            for row in rows {
                let id: i64 = sqlx::query_scalar(BARE_OBSERVATION)
                    .bind(subject)
                    .bind(CODE)
                    .bind(row.time_ms)
                    .bind(row.resource.as_str())
                    .bind(now)
                    .bind(row.source_id.as_str())
                    .bind(None::<&str>)
                    .fetch_one(&mut *tx)
                    .await
                    .expect("the bare observation insert");
                sqlx::query(BARE_POINT)
                    .bind(subject)
                    .bind(id)
                    .bind(CODE)
                    .bind(DISPLAY)
                    .bind(row.time_ms)
                    .bind(Some(row.value))
                    .bind(None::<&str>)
                    .bind(Some(UNIT))
                    .bind(None::<&str>)
                    .execute(&mut *tx)
                    .await
                    .expect("the bare point insert");
            }
            tx.commit().await.expect("commit");
        })
    }

    async fn execute(&self, sql: &str) {
        on_bare!(self, |pool| {
            sqlx::raw_sql(sql).execute(pool).await.expect("the statement runs");
        })
    }

    async fn close(&self) {
        on_bare!(self, |pool| pool.close().await)
    }
}

/// A PostgreSQL schema dropped when this goes out of scope, even when the bench panics.
struct PgSchema {
    url: String,
    name: String,
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // A runtime of its own: Drop cannot await, and the bench's runtime may be busy or gone.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async {
                use sqlx::{Connection, Executor};
                if let Ok(mut conn) = sqlx::PgConnection::connect(&url).await {
                    let _ = conn.execute(format!("DROP SCHEMA IF EXISTS {name} CASCADE").as_str()).await;
                    let _ = conn.close().await;
                }
            });
        })
        .join();
    }
}

/// A database under test: the store, the bench's own pool on the same database, and what
/// must live as long as they do.
struct Db {
    label: &'static str,
    store: SqlStore,
    bare: Bare,
    _dir: Option<tempfile::TempDir>,
    _schema: Option<PgSchema>,
}

async fn open_sqlite() -> Db {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("health.db");
    let url = format!("sqlite://{}", path.display());
    let store = SqlStore::connect(&url, None, 4).await.expect("the SQLite store opens");
    // The store's settings, so the bare writes pay what the store's do.
    let options = SqliteConnectOptions::new()
        .filename(&path)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true);
    let pool = SqlitePoolOptions::new().max_connections(4).connect_with(options).await.expect("the bare pool opens");
    Db { label: "sqlite", store, bare: Bare::Sqlite(pool), _dir: Some(dir), _schema: None }
}

async fn open_postgres(url: &str) -> Db {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").subsec_nanos();
    let name = format!("mirobody_bench_{}_{nanos}", std::process::id());
    let schema = PgSchema { url: url.to_owned(), name: name.clone() };
    let store = SqlStore::connect(url, Some(&name), 4).await.expect("the PostgreSQL store opens");
    let options = PgConnectOptions::from_str(url).expect("a PostgreSQL URL").options([("search_path", name.as_str())]);
    let pool = PgPoolOptions::new().max_connections(4).connect_with(options).await.expect("the bare pool opens");
    Db { label: "postgres", store, bare: Bare::Postgres(pool), _dir: None, _schema: Some(schema) }
}

/// Loads `people` × 1,000 Observations through `import_fhir`, one `batch` Bundle per person.
async fn load(db: &Db, year: Year, people: usize) {
    let started = Instant::now();
    let mut importing = Duration::ZERO;
    for person in 0..people {
        let body = bundle(year, person);
        let t = Instant::now();
        let response = import_fhir(&db.store, &subject(person), &body).await;
        importing += t.elapsed();
        let summary = &response.summary;
        assert!(
            response.status == 200 && summary.invalid.is_empty() && summary.created + summary.unchanged == PER_PERSON,
            "person {person}: status {}, {summary:?}",
            response.status
        );
        if (person + 1).is_multiple_of(100) {
            println!("  {}: {} of {people} people loaded", db.label, person + 1);
        }
    }
    let total = people * PER_PERSON;
    println!(
        "LOAD {}: {total} observations ({people} people x {PER_PERSON}) in {:.1} s; \
         import_fhir alone {:.1} s = {:.0} observations/s",
        db.label,
        started.elapsed().as_secs_f64(),
        importing.as_secs_f64(),
        total as f64 / importing.as_secs_f64()
    );
    // Current planner statistics on both databases, for both the store's queries and the bare one.
    db.bare.execute("ANALYZE observations; ANALYZE health_points").await;
}

/// The import of 1,000 new Observations through `import_fhir` against the same rows written by
/// one bare transaction, `IMPORT_ROUNDS` times with fresh subjects, in alternating order.
async fn import_throughput(db: &Db, year: Year) {
    let body = bundle(year, 0);
    let rows = bare_rows(year, 0);
    let tag = now_ms();
    let (mut imports, mut bares, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..IMPORT_ROUNDS {
        let (import_subject, bare_subject) = (format!("import-{tag}-{round}"), format!("bare-{tag}-{round}"));
        let time_import = async {
            let t = Instant::now();
            let response = import_fhir(&db.store, &import_subject, &body).await;
            let elapsed = t.elapsed();
            assert_eq!(response.summary.created, PER_PERSON, "{:?}", response.summary);
            elapsed
        };
        let time_bare = async {
            let t = Instant::now();
            db.bare.insert(&bare_subject, &rows).await;
            t.elapsed()
        };
        let (import, bare) = if round.is_multiple_of(2) {
            let import = time_import.await;
            (import, time_bare.await)
        } else {
            let bare = time_bare.await;
            (time_import.await, bare)
        };
        let rate = |d: Duration| PER_PERSON as f64 / d.as_secs_f64();
        println!(
            "  {} import round {}: import_fhir {:.0} obs/s, bare sqlx {:.0} obs/s, time ratio {:.2}",
            db.label,
            round + 1,
            rate(import),
            rate(bare),
            import.as_secs_f64() / bare.as_secs_f64()
        );
        imports.push(rate(import));
        bares.push(rate(bare));
        ratios.push(import.as_secs_f64() / bare.as_secs_f64());
    }
    println!(
        "RATIO {} import/bare time = {:.2} (import_fhir {:.0} obs/s, bare sqlx transaction {:.0} obs/s; \
         median of {IMPORT_ROUNDS} rounds of {PER_PERSON})",
        db.label,
        median(ratios),
        median(imports),
        median(bares)
    );
}

/// The interleaved timing loop: `calls` of each of the three, in `ROUNDS` rounds, and each
/// call's time against the bare query's as the median of the rounds' ratios.
#[allow(clippy::too_many_arguments)]
fn interleaved(
    runtime: &Runtime,
    db: &Db,
    registry: &Registry,
    ctx: &ToolContext<'_>,
    subjects: &[String],
    users: &[UserInfo],
    args: &Value,
    year: Year,
    calls: usize,
) {
    let per_round = (calls / ROUNDS).max(1);
    let n = subjects.len();
    let mut totals = [Duration::ZERO; 3];
    let (mut series_ratios, mut tool_ratios) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        for round in 0..ROUNDS {
            let mut times = [Duration::ZERO; 3];
            // The order turns each round, so no call always runs after the same other.
            for step in 0..3 {
                let which = (round + step) % 3;
                let t = Instant::now();
                for k in 0..per_round {
                    let i = (round * per_round + k) % n;
                    let subject = subjects[i].as_str();
                    match which {
                        0 => {
                            std::hint::black_box(db.bare.fetch(subject, year).await);
                        }
                        1 => {
                            let found = HealthStore::series(
                                &db.store,
                                subject,
                                subject,
                                CODE,
                                year.start_ms,
                                year.end_ms,
                                LIMIT,
                            )
                            .await;
                            std::hint::black_box(found.expect("series"));
                        }
                        _ => {
                            std::hint::black_box(registry.run("fetch_health_data", args.clone(), &users[i], ctx).await);
                        }
                    }
                }
                times[which] = t.elapsed();
            }
            for (total, time) in totals.iter_mut().zip(times) {
                *total += time;
            }
            let bare = times[0].as_secs_f64();
            series_ratios.push(times[1].as_secs_f64() / bare);
            tool_ratios.push(times[2].as_secs_f64() / bare);
        }
    });
    let us = |d: Duration| d.as_secs_f64() * 1e6 / (ROUNDS * per_round) as f64;
    let (bare, series, tool) = (us(totals[0]), us(totals[1]), us(totals[2]));
    let calls = ROUNDS * per_round;
    println!(
        "RATIO {} health_store_series/bare = {:.2} ({series:.1} µs vs {bare:.1} µs per call; \
         median of {ROUNDS} rounds, {calls} calls each)",
        db.label,
        median(series_ratios)
    );
    println!(
        "RATIO {} fetch/bare = {:.2} (fetch_health_data tool {tool:.1} µs vs {bare:.1} µs per call; \
         median of {ROUNDS} rounds, {calls} calls each)",
        db.label,
        median(tool_ratios)
    );
}

/// Everything for one database: the load, the import comparison, the checks, the interleaved
/// ratios and criterion's group.
fn run(c: &mut Criterion, runtime: &Runtime, db: Db, people: usize, calls: usize) {
    let year = Year::ending_now();
    println!("\n== {}: loading {people} people x {PER_PERSON} observations", db.label);
    runtime.block_on(load(&db, year, people));
    runtime.block_on(import_throughput(&db, year));

    let subjects: Vec<String> = (0..people).map(subject).collect();
    let users: Vec<UserInfo> = subjects.iter().map(|s| UserInfo::authenticated(s.as_str())).collect();
    let registry = mirobody_tools::builtin_registry().expect("the built-ins register");
    let mut extensions = http::Extensions::new();
    let health: Arc<dyn HealthStore> = Arc::new(db.store.clone());
    extensions.insert(health);
    let ctx = ToolContext::new().with_extensions(&extensions);
    let args = json!({
        "indicators": [CODE],
        "start_time": rfc3339(year.start_ms),
        "end_time": rfc3339(year.end_ms),
        "limit": LIMIT,
    });

    // Each of the three must return the same 1,000 rows, or the comparison is unfair.
    let first = subjects[0].as_str();
    let rows = runtime.block_on(db.bare.fetch(first, year));
    assert_eq!(rows.len(), PER_PERSON, "bare query");
    let series = runtime
        .block_on(HealthStore::series(&db.store, first, first, CODE, year.start_ms, year.end_ms, LIMIT))
        .expect("series")
        .expect("readable");
    assert_eq!(series.points.len(), PER_PERSON, "HealthStore::series");
    assert_eq!(series.points.last().and_then(|p| p.value), rows[0].1, "the newest value");
    let result = runtime.block_on(registry.run("fetch_health_data", args.clone(), &users[0], &ctx));
    assert!(!result.is_error(), "fetch_health_data: {:?}", result.first_text());
    let content = result.structured_content().cloned().unwrap_or_default();
    let count: u64 = content
        .get("indicators")
        .and_then(Value::as_object)
        .map_or(0, |m| m.values().filter_map(|s| s["count"].as_u64()).sum());
    assert_eq!(count, PER_PERSON as u64, "fetch_health_data: {content:?}");

    interleaved(runtime, &db, &registry, &ctx, &subjects, &users, &args, year, calls);

    let mut group = c.benchmark_group("fetch_one_indicator_one_year");
    let (store, bare, registry, ctx, args) = (&db.store, &db.bare, &registry, &ctx, &args);
    let (subjects, users) = (&subjects[..], &users[..]);
    group.bench_function(BenchmarkId::new("bare_sqlx", db.label), |b| {
        let next = Cell::new(0usize);
        let next = &next;
        b.to_async(runtime).iter(move || {
            let i = next.get();
            next.set(i + 1);
            bare.fetch(subjects[i % subjects.len()].as_str(), year)
        })
    });
    group.bench_function(BenchmarkId::new("health_store_series", db.label), |b| {
        let next = Cell::new(0usize);
        let next = &next;
        b.to_async(runtime).iter(move || {
            let i = next.get();
            next.set(i + 1);
            let subject = subjects[i % subjects.len()].as_str();
            HealthStore::series(store, subject, subject, CODE, year.start_ms, year.end_ms, LIMIT)
        })
    });
    group.bench_function(BenchmarkId::new("fetch_health_data_tool", db.label), |b| {
        let next = Cell::new(0usize);
        let next = &next;
        b.to_async(runtime).iter(move || {
            let i = next.get();
            next.set(i + 1);
            registry.run("fetch_health_data", args.clone(), &users[i % users.len()], ctx)
        })
    });
    group.finish();

    runtime.block_on(async {
        db.bare.close().await;
        db.store.close().await;
    });
    // `db` drops here: the temp dir, or the PostgreSQL schema.
}

fn benches(c: &mut Criterion) {
    let people = env_usize("MIROBODY_BENCH_PEOPLE", 1000);
    let calls = env_usize("MIROBODY_BENCH_CALLS", 2000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");

    let sqlite = runtime.block_on(open_sqlite());
    run(c, &runtime, sqlite, people, calls);

    match std::env::var("MIROBODY_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => {
            let postgres = runtime.block_on(open_postgres(&url));
            run(c, &runtime, postgres, people, calls);
        }
        _ => println!("SKIPPED: health_data on PostgreSQL: MIROBODY_TEST_POSTGRES_URL is not set"),
    }
}

criterion_group! {
    name = health_data;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(health_data);
