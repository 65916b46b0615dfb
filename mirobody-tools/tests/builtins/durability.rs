//! Durability: a process serving many concurrent `remember` calls through the MCP router, on
//! the embedded SQLite database, is killed with SIGKILL mid-way; reopened, the database holds
//! every memory whose call was acknowledged.
//!
//! The writer is this test binary run again as a child (`durability_writer`, which does
//! nothing unless `MIROBODY_DURABILITY_DIR` is set): it prints `ACK <id> <text>` for each
//! acknowledged call, and the parent kills it after enough acknowledgements.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::json;

use crate::support::{Env, config_in};

const DIR_VAR: &str = "MIROBODY_DURABILITY_DIR";

/// The child: remembers as fast as 16 concurrent callers can, forever, printing each ack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durability_writer() {
    let Ok(dir) = std::env::var(DIR_VAR) else { return };
    let backends = Arc::new(mirobody_store::open(&config_in(std::path::Path::new(&dir))).await.unwrap());
    let env = Env {
        router: crate::support::router(&backends, |b| b),
        backends,
        dir: tempfile::tempdir().unwrap(),
        _schema: None,
    };
    let client = env.user("writer").await;
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let mut tasks = Vec::new();
    for worker in 0..16 {
        let (client, out) = (client.clone(), Arc::clone(&out));
        tasks.push(tokio::spawn(async move {
            for n in 0.. {
                let text = format!("memory {worker}-{n}");
                let reply = client.tool("remember", json!({"text": text})).await;
                let id = reply.ok()["id"].as_i64().unwrap();
                let mut out = out.lock().unwrap();
                writeln!(out, "ACK {id} {text}").unwrap();
                out.flush().unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

#[tokio::test]
async fn sigkill_during_concurrent_remember_loses_no_acknowledged_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "durability::durability_writer", "--nocapture", "--test-threads=1"])
        .env(DIR_VAR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the test binary runs as the writer");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut acked = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.strip_prefix("ACK ") {
                let (id, text) = rest.split_once(' ').unwrap();
                acked.push((id.parse::<i64>().unwrap(), text.to_owned()));
                if acked.len() == 300 {
                    return (acked, true);
                }
            }
        }
        (acked, false)
    });
    let (mut acked, reached) = tokio::task::spawn_blocking(move || reader.join().unwrap()).await.unwrap();
    // SIGKILL, while the 16 writers are mid-call.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(reached, "the writer acknowledged only {} memories before its output ended", acked.len());
    acked.sort();

    let backends = mirobody_store::open(&config_in(dir.path())).await.expect("the database reopens after SIGKILL");
    let stored = backends.sql().memory_ids("writer").await.unwrap();
    let missing: Vec<&(i64, String)> = acked.iter().filter(|(id, _)| stored.binary_search(id).is_err()).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    assert!(stored.len() >= acked.len());
    println!("{} memories acknowledged before SIGKILL, {} stored after restart", acked.len(), stored.len());
    // Spot-check the text of the last acknowledged memory.
    let (_, text) = acked.last().unwrap();
    let words = text.replace('-', " ");
    let found = mirobody_core::Memory::recall(backends.sql().as_ref(), "writer", &words, 50).await.unwrap();
    assert!(found.iter().any(|m| &m.text == text), "{text} not found by recall");
}
