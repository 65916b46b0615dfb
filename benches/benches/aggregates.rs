//! `fetch_health_trends` at a million values of one person, against a bare SQL `GROUP BY` of the
//! same rows measured in the same run (issue 45 part 3, target: at most 1.5x), on SQLite and,
//! with `MIROBODY_TEST_POSTGRES_URL`, PostgreSQL.
//!
//! The call is a whole `tools/call` from request bytes to response bytes through
//! `McpEngine::handle_bytes` (arguments checked, the caller's indicators read, the buckets
//! summed in the database with low and high counted and each day's last value, rolled up,
//! serialized). The baseline is one `SELECT ... GROUP BY day` of count, min, max and avg on its
//! own sqlx pool over the same database, nothing else. Rounds alternate the two; the medians
//! and their ratio are printed.
//!
//! `cargo bench -p mirobody-benches --bench aggregates [-- VALUES [ROUNDS]]` (defaults one
//! million, 7 rounds).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mirobody_core::{Registry, UserInfo};
use mirobody_mcp::session::Session;
use mirobody_mcp::{Backends, McpEngine};
use mirobody_store::{BackendConfig, OpenedBackends, SeedValues};
use serde_json::Value;
use sqlx::{Connection, Executor};

const SUBJECT: &str = "bench";
/// A minute apart from 2024-01-01: a million values are about 694 days.
const START_MS: i64 = 1_704_067_200_000;
const PATTERN: [f64; 7] = [55.0, 64.5, 70.0, 78.25, 88.0, 101.0, 66.0];
/// By day (the newest 400 days shown) and by week (every day's sums fetched, rolled up).
const REQUESTS: [(&str, &[u8]); 2] = [
    ("day", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch_health_trends","arguments":{"indicators":["8867-4"],"interval":"day"}}}"#),
    ("week", br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch_health_trends","arguments":{"indicators":["8867-4"],"interval":"week"}}}"#),
];
const BARE: &str = "SELECT time_ms / 86400000 AS day, COUNT(*), MIN(value), MAX(value), AVG(value) FROM health_points \
     WHERE subject = $1 AND code = $2 AND time_ms >= $3 AND time_ms < $4 GROUP BY day ORDER BY day";

fn main() {
    // `cargo bench` passes `--bench`; the numbers are ours.
    let numbers: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let values = numbers.first().copied().unwrap_or(1_000_000) as u32;
    let rounds = numbers.get(1).copied().unwrap_or(7) as usize;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("a temp dir");
        let sqlite = BackendConfig::embedded(dir.path());
        let db_file = dir.path().join("mirobody.db");
        run("SQLite", &sqlite, values, rounds, Baseline::Sqlite(format!("sqlite://{}", db_file.display()))).await;
        match std::env::var("MIROBODY_TEST_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => {
                let schema = format!("mirobody_bench_{}", std::process::id());
                let config = BackendConfig {
                    database_url: Some(url.clone()),
                    database_schema: Some(schema.clone()),
                    ..BackendConfig::embedded(dir.path().join("pg"))
                };
                run("PostgreSQL", &config, values, rounds, Baseline::Postgres(url.clone(), schema.clone())).await;
                let mut conn = sqlx::PgConnection::connect(&url).await.expect("PostgreSQL connects");
                conn.execute(format!("DROP SCHEMA IF EXISTS {schema} CASCADE").as_str())
                    .await
                    .expect("the schema drops");
            }
            _ => println!("SKIPPED: PostgreSQL: MIROBODY_TEST_POSTGRES_URL is not set"),
        }
    });
}

enum Baseline {
    Sqlite(String),
    Postgres(String, String),
}

async fn run(name: &str, config: &BackendConfig, values: u32, rounds: usize, baseline: Baseline) {
    let backends = mirobody_store::open(config).await.expect("the store opens");
    let seeding = Instant::now();
    let seed = SeedValues::new("8867-4", "Heart rate", Some("/min"), (START_MS, 60_000)).values(values, &PATTERN);
    backends.sql().seed_values(SUBJECT, &seed).await.expect("the values are stored");
    println!("{name}: {values} values stored in {:.1} s", seeding.elapsed().as_secs_f64());
    let engine = engine(&backends);
    let user = UserInfo::authenticated(SUBJECT);
    let session = Arc::new(Session::new(None));
    let end_ms = START_MS + i64::from(values) * 60_000;
    let mut bare_conn = match &baseline {
        Baseline::Sqlite(url) => Bare::Sqlite(sqlx::SqliteConnection::connect(url).await.expect("SQLite opens")),
        Baseline::Postgres(url, schema) => {
            let mut conn = sqlx::PgConnection::connect(url).await.expect("PostgreSQL connects");
            conn.execute(format!("SET search_path TO {schema}").as_str()).await.expect("the schema is set");
            Bare::Postgres(conn)
        }
    };
    for (interval, request) in REQUESTS {
        // The same rows on both sides: every value is in the call's buckets (by week) or in
        // the days it shows (by day).
        let answer = engine.handle_bytes(request, &user, &session).await.expect("an answer");
        let answer: Value = serde_json::from_slice(&answer).expect("JSON");
        let series = &answer["result"]["structuredContent"]["indicators"]["Heart rate"];
        let buckets = series["buckets"].as_array().expect("buckets");
        let counted: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap_or(0)).sum();
        let chars = answer["result"]["content"][0]["text"].as_str().map_or(0, |t| t.chars().count());
        println!(
            "{name}: by {interval}: {} buckets holding {counted} values, truncated: {}, answer {chars} characters",
            buckets.len(),
            series["truncated"] == true
        );

        let (mut call, mut bare) = (Vec::new(), Vec::new());
        let mut bare_rows = 0;
        for _ in 0..rounds {
            let started = Instant::now();
            let reply = engine.handle_bytes(request, &user, &session).await.expect("an answer");
            call.push(started.elapsed());
            assert!(reply.len() > 1_000, "a real answer");
            let started = Instant::now();
            bare_rows = match &mut bare_conn {
                Bare::Sqlite(conn) => bare_sqlite(conn, end_ms).await,
                Bare::Postgres(conn) => bare_postgres(conn, end_ms).await,
            };
            bare.push(started.elapsed());
        }
        let (call, bare) = (median(call), median(bare));
        println!(
            "{name}: by {interval}: call {:.1} ms, bare GROUP BY ({bare_rows} days) {:.1} ms, RATIO call/bare {:.2} (target: at most 1.5)",
            ms(call),
            ms(bare),
            call.as_secs_f64() / bare.as_secs_f64()
        );
    }
}

enum Bare {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

/// The baseline on SQLite: the day sums of the same rows, nothing else.
async fn bare_sqlite(conn: &mut sqlx::SqliteConnection, end_ms: i64) -> usize {
    let rows: Vec<(i64, i64, f64, f64, f64)> = sqlx::query_as(BARE)
        .bind(SUBJECT)
        .bind("8867-4")
        .bind(START_MS)
        .bind(end_ms)
        .fetch_all(conn)
        .await
        .expect("the bare query");
    rows.len()
}

/// The baseline on PostgreSQL.
async fn bare_postgres(conn: &mut sqlx::PgConnection, end_ms: i64) -> usize {
    let rows: Vec<(i64, i64, f64, f64, f64)> = sqlx::query_as(BARE)
        .bind(SUBJECT)
        .bind("8867-4")
        .bind(START_MS)
        .bind(end_ms)
        .fetch_all(conn)
        .await
        .expect("the bare query");
    rows.len()
}

fn engine(backends: &OpenedBackends) -> McpEngine {
    let registry = Registry::builder()
        .tool(mirobody_tools::builtin_tool("fetch_health_trends").expect("fetch_health_trends is built in"))
        .build()
        .expect("the tool registers");
    let mut handles = Backends::default();
    handles.extensions.insert(backends.db());
    McpEngine::builder(Arc::new(registry)).backends(handles).build()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}
