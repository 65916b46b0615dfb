//! Durability of the embedded default: SIGKILL the real server in the middle of many concurrent
//! `remember` calls, restart it on the same data folder, and find every memory whose call was
//! acknowledged.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{assert_none_lost, call, fresh_data_dir, server_port, session, start, token, unrecalled};
use serde_json::json;

#[test]
fn every_acknowledged_memory_survives_sigkill() {
    let data_dir = fresh_data_dir("durability");
    let port = server_port();
    let token = token(&data_dir, port, "durable-user");
    let mut server = start(&data_dir, port);
    let sid = session(port, &token);

    // Eight writers, each remembering numbered facts until the server dies under them.
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (token, sid, acknowledged) = (token.clone(), sid.clone(), Arc::clone(&acknowledged));
            std::thread::spawn(move || {
                for n in 0..10_000u64 {
                    let marker = format!("durablemarker{writer}x{n}");
                    let text = format!("The user noted {marker} today.");
                    match call(port, &token, &sid, n + 1, "remember", json!({"text": text})) {
                        Some(reply) if reply["result"]["isError"] == false => acknowledged.lock().unwrap().push(marker),
                        _ => return,
                    }
                }
            })
        })
        .collect();
    // Let the writers get going, then kill the server without warning.
    let deadline = Instant::now() + Duration::from_secs(20);
    while acknowledged.lock().unwrap().len() < 150 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    server.kill().expect("SIGKILL");
    server.wait().unwrap();
    for writer in writers {
        writer.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= 150, "only {} writes were acknowledged before the kill", acknowledged.len());

    let mut server = start(&data_dir, port);
    let sid = session(port, &token);
    let missing = unrecalled(port, &token, std::slice::from_ref(&sid), &acknowledged);
    server.kill().unwrap();
    server.wait().unwrap();
    let _ = std::fs::remove_dir_all(&data_dir);
    assert_none_lost(&missing, acknowledged.len());
    println!("{} acknowledged memories, all found after SIGKILL and restart", acknowledged.len());
}
