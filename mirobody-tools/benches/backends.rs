//! `family_health` and `recall_memory` over the embedded SQLite backend with 1,000,000
//! observations and 1,000,000 memories in the tables, beside a baseline measured in the same
//! run: a primary-key lookup (`HealthStore::file`) through the same store.
//!
//! Run with `cargo bench -p mirobody-tools --bench backends`. The data set is built once per
//! run in a temp dir (`MIROBODY_BENCH_ROWS` rows of each kind, default 1,000,000), in batched
//! transactions: one heavy user (`bench`, a tenth of all rows, as a wearable would produce),
//! and 900 users with the rest. The lines printed at the end give each call's mean time and
//! its ratio to the baseline, measured interleaved. `MIROBODY_BENCH_DIR=<folder>` keeps the
//! data set there and reuses it on the next run.

use mirobody_health::prelude::*;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use mirobody_core::backend::NewMemory;
use mirobody_core::{Registry, ToolContext, UserInfo};
use mirobody_health::FileRecord;
use mirobody_store::{BackendConfig, OpenedBackends, StorageConfig, open};
use serde_json::{Value, json};

const OTHER_USERS: usize = 900;

// A small deterministic generator (xorshift64*), so every run builds the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A vocabulary of 4,000 pronounceable words, drawn with a skew so some are common.
fn vocabulary() -> Vec<String> {
    let (consonants, vowels) = (b"bdfgklmnprstvz", b"aeiou");
    let mut rng = Rng(7);
    let mut words = std::collections::BTreeSet::new();
    while words.len() < 4000 {
        let syllables = 2 + rng.below(2);
        let word: String = (0..syllables)
            .flat_map(|_| [consonants[rng.below(consonants.len())] as char, vowels[rng.below(vowels.len())] as char])
            .collect();
        words.insert(word);
    }
    words.into_iter().collect()
}

fn sentence(rng: &mut Rng, words: &[String]) -> String {
    let n = 8 + rng.below(8);
    let picked: Vec<&str> = (0..n)
        .map(|_| {
            // Squaring skews the draw toward the front of the vocabulary.
            let r = rng.below(1 << 16) as f64 / f64::from(1 << 16);
            words[((r * r) * words.len() as f64) as usize].as_str()
        })
        .collect();
    picked.join(" ")
}

fn observation(rng: &mut Rng, i: usize) -> Value {
    let (code, unit, base) =
        [("8867-4", "beats/minute", 60.0), ("55423-8", "steps", 5000.0), ("29463-7", "kg", 70.0)][i % 3];
    json!({
        "resourceType": "Observation",
        "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": code}]},
        "valueQuantity": {"value": base + rng.below(40) as f64, "unit": unit},
        "effectiveDateTime": format!("20{:02}-{:02}-{:02}T{:02}:{:02}:00Z", 16 + i % 10, 1 + i % 12, 1 + i % 28, i % 24, i % 60),
    })
}

/// Opens the data set in `MIROBODY_BENCH_DIR` if it is there (to rerun without rebuilding),
/// or builds it (in that folder, or in a temp dir).
async fn build(rows: usize) -> (Option<tempfile::TempDir>, Arc<OpenedBackends>) {
    let (temp, path) = match std::env::var_os("MIROBODY_BENCH_DIR") {
        Some(dir) => (None, std::path::PathBuf::from(dir)),
        None => {
            let temp = tempfile::tempdir().expect("a temp dir");
            let path = temp.path().to_owned();
            (Some(temp), path)
        }
    };
    let config = BackendConfig {
        storage: StorageConfig::None,
        signing_key: Some("b".repeat(32)),
        ..BackendConfig::embedded(&path)
    };
    let backends = Arc::new(open(&config).await.expect("the backends open"));
    if backends.db().file("bench", "bench-file").await.expect("lookup").is_some() {
        println!("reusing the data set in {}", path.display());
        return (temp, backends);
    }
    let sql = backends.sql();
    let words = vocabulary();
    let mut rng = Rng(42);
    let started = Instant::now();
    let heavy = rows / 10;
    let per_other = (rows - heavy) / OTHER_USERS;
    let owners: Vec<(String, usize)> = std::iter::once(("bench".to_owned(), heavy))
        .chain((0..OTHER_USERS).map(|u| (format!("user{u}"), per_other)))
        .collect();
    for (owner, count) in &owners {
        for chunk_start in (0..*count).step_by(10_000) {
            let n = (*count - chunk_start).min(10_000);
            let obs: Vec<Value> = (0..n).map(|i| observation(&mut rng, chunk_start + i)).collect();
            sql.add_observations(owner, &obs).await.expect("observations insert");
            let memories: Vec<NewMemory> = (0..n)
                .map(|_| NewMemory { text: sentence(&mut rng, &words), kind: "fact".into(), session_id: None })
                .collect();
            sql.add_memories(owner, &memories).await.expect("memories insert");
        }
    }
    sql.share_health("user0", "bench", Some("Mom")).await.expect("share");
    let file = FileRecord {
        file_key: "bench-file".into(),
        filename: "report.pdf".into(),
        mime_type: "application/pdf".into(),
        size: 1,
        uploaded_at: "2026-01-01T00:00:00Z".into(),
        text_key: None,
        text_state: Default::default(),
    };
    sql.add_file("bench", &file).await.expect("file");
    let db_size = std::fs::metadata(path.join("mirobody.db")).map(|m| m.len()).unwrap_or(0);
    println!(
        "built {} observations and {} memories ({} for user `bench`) in {:.1} s; database {:.0} MiB",
        heavy + per_other * OTHER_USERS,
        heavy + per_other * OTHER_USERS,
        heavy,
        started.elapsed().as_secs_f64(),
        db_size as f64 / (1024.0 * 1024.0)
    );
    (temp, backends)
}

fn benches(c: &mut Criterion) {
    let rows: usize = std::env::var("MIROBODY_BENCH_ROWS").ok().and_then(|r| r.parse().ok()).unwrap_or(1_000_000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (_dir, backends) = runtime.block_on(build(rows));
    let registry = Registry::builder()
        .tool(mirobody_tools::builtin_tool("family_health").expect("family_health is built in"))
        .tool(mirobody_tools::builtin_tool("recall_memory").expect("recall_memory is built in"))
        .build()
        .expect("the tools register");
    let (db, memory) = (backends.db(), backends.memory().expect("memory is on"));
    let mut state = http::Extensions::new();
    state.insert(std::sync::Arc::clone(&db));
    let ctx = ToolContext::new().with_extensions(&state).with_memory(memory.as_ref());
    let user = UserInfo::authenticated("bench");
    let words = vocabulary();
    let query = format!("{} {} {}", words[3], words[400], words[1500]);

    // Each call must do real work, or the comparison is unfair.
    let check = |name: &str, args: Value| {
        let result = runtime.block_on(registry.call(name, args, &user, &ctx)).expect("the call runs");
        assert!(!result.is_error(), "{name}: {:?}", result.first_text());
        result.structured_content().cloned().unwrap_or_default()
    };
    let own = check("family_health", json!({}));
    assert_eq!(own["observation_count"], json!(rows / 10));
    assert_eq!(own["observations"].as_array().map(Vec::len), Some(20));
    assert_eq!(check("family_health", json!({"member": "Mom"}))["subject"], "Mom");
    let recalled = check("recall_memory", json!({"query": query}));
    assert_eq!(recalled["memories"].as_array().map(Vec::len), Some(5), "{recalled:?}");

    type Call<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let calls: Vec<Call<'_>> = vec![
        (
            "baseline: HealthStore::file primary-key lookup",
            Box::new(|| {
                black_box(runtime.block_on(db.file("bench", "bench-file")).expect("lookup"));
            }),
        ),
        (
            "family_health (self, 100k rows, count 20)",
            Box::new(|| {
                black_box(runtime.block_on(registry.call("family_health", json!({}), &user, &ctx)).expect("call"));
            }),
        ),
        (
            "family_health (member \"Mom\", 1k rows)",
            Box::new(|| {
                black_box(
                    runtime
                        .block_on(registry.call("family_health", json!({"member": "Mom"}), &user, &ctx))
                        .expect("call"),
                );
            }),
        ),
        (
            "recall_memory (3 words, 100k memories, top_k 5)",
            Box::new(|| {
                black_box(
                    runtime
                        .block_on(registry.call("recall_memory", json!({"query": query}), &user, &ctx))
                        .expect("call"),
                );
            }),
        ),
        (
            "recall_memory (3 words, 1k memories, top_k 5)",
            Box::new(|| {
                let other = UserInfo::authenticated("user7");
                black_box(
                    runtime
                        .block_on(registry.call("recall_memory", json!({"query": query}), &other, &ctx))
                        .expect("call"),
                );
            }),
        ),
        (
            "HealthStore::observations (backend alone)",
            Box::new(|| {
                black_box(runtime.block_on(db.observations("bench", "bench", 20)).expect("page"));
            }),
        ),
        (
            "Memory::recall (backend alone)",
            Box::new(|| {
                black_box(runtime.block_on(memory.recall("bench", &query, 5)).expect("recall"));
            }),
        ),
    ];

    let mut group = c.benchmark_group("backends_1m");
    for (name, call) in &calls {
        group.bench_function(*name, |b| b.iter(call));
    }
    group.finish();

    // Interleaved rounds, so that machine noise hits every call alike.
    const ROUNDS: usize = 10;
    const BATCH: usize = 100;
    let mut totals = vec![Duration::ZERO; calls.len()];
    for _ in 0..ROUNDS {
        for (i, (_, call)) in calls.iter().enumerate() {
            let start = Instant::now();
            for _ in 0..BATCH {
                call();
            }
            totals[i] += start.elapsed();
        }
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / (ROUNDS * BATCH) as f64;
    let base = per(totals[0]);
    println!("\nper call, {} rows of each kind (mean of {} interleaved calls):", rows, ROUNDS * BATCH);
    for (i, (name, _)) in calls.iter().enumerate() {
        println!("  {:<52} {:>9.1} µs  {:>6.1}x baseline", name, per(totals[i]), per(totals[i]) / base);
    }
}

criterion_group! {
    name = backends;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(backends);
