//! The real binary with `worker_threads: 1`, as it runs on one CPU: every request answered on
//! one thread (tokio's current-thread scheduler), and still concurrent callers are served,
//! including tools that write to and read from the embedded database, after start-up has
//! given back its pages (`release_startup_memory`, which is off unless set).

mod common;

use common::{call, fresh_data_dir, server_port, session, start_logged, token};
use serde_json::json;

#[test]
fn one_thread_serves_concurrent_callers_and_the_database() {
    let data_dir = fresh_data_dir("single-thread");
    let port = server_port();
    let token = token(&data_dir, port, "one-thread-user");
    let (mut server, log_path) = start_logged(
        &data_dir,
        port,
        &[
            ("MIROBODY_WORKER_THREADS", "1"),
            ("MIROBODY_RELEASE_STARTUP_MEMORY", "true"),
            ("RUST_LOG", "info,mirobody_server=debug"),
        ],
    );
    let sid = session(port, &token);

    // Eight callers at once, each storing facts in the database and calling echo.
    let callers: Vec<_> = (0..8)
        .map(|caller| {
            let (token, sid) = (token.clone(), sid.clone());
            std::thread::spawn(move || {
                for n in 0..10u64 {
                    let marker = format!("onethreadmarker{caller}x{n}");
                    let text = format!("The user noted {marker} today.");
                    let stored = call(port, &token, &sid, n + 1, "remember", json!({"text": text})).expect("remember");
                    assert_eq!(stored["result"]["isError"], false, "{stored}");
                }
                let echoed =
                    call(port, &token, &sid, 99, "echo", json!({"text": format!("caller {caller}")})).expect("echo");
                assert_eq!(echoed["result"]["structuredContent"]["echo"], format!("caller {caller}"));
            })
        })
        .collect();
    for caller in callers {
        caller.join().expect("a caller failed");
    }
    let recalled =
        call(port, &token, &sid, 100, "recall_memory", json!({"query": "onethreadmarker3x9"})).expect("recall");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(recalled["result"]["isError"], false, "{recalled}");
    let text = recalled["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("onethreadmarker3x9"), "a stored fact was recalled: {text}");
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("workers=1"), "the start-up line names one worker: {log}");
    // Start-up gave back its pages (`startup_pages::release_startup_pages`), and every call above was
    // served after that.
    let advised: usize = log
        .split("advised_kib=")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .expect("a line says how much start-up gave back");
    assert!(advised > 1024, "the program's read-only mappings were given back: {advised} KiB");
}

#[test]
fn start_up_pages_are_kept_unless_asked() {
    let data_dir = fresh_data_dir("single-thread-default");
    let port = server_port();
    let token = token(&data_dir, port, "default-user");
    let (mut server, log_path) = start_logged(&data_dir, port, &[("RUST_LOG", "info,mirobody_server=debug")]);
    let sid = session(port, &token);
    let echoed = call(port, &token, &sid, 1, "echo", json!({"text": "hi"})).expect("echo");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(echoed["result"]["structuredContent"]["echo"], "hi");
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("serving MCP"), "{log}");
    assert!(!log.contains("start-up pages"), "nothing was given back or tried: {log}");
}
