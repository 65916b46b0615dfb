//! A server started for one attack, killed when the test ends however it ends, and the honest
//! user who must be served throughout.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{call, fresh_data_dir, request, server_port, session, start_logged, token};

/// A running server, its data folder, and a token for the honest user `honest`.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) data_dir: PathBuf,
    pub(crate) log: PathBuf,
    /// A bearer token for the honest user.
    pub(crate) token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// A server on a fresh data folder named after the test, with `env` as its settings.
    pub(crate) fn start(name: &str, env: &[(&str, &str)]) -> Server {
        let data_dir = fresh_data_dir(name);
        let port = server_port();
        let token = token(&data_dir, port, "honest");
        let (child, log) = start_logged(&data_dir, port, &with_info_log(env));
        Server { child, port, data_dir, log, token }
    }

    /// A bearer token for `user`, minted by the server's own CLI.
    pub(crate) fn token_for(&self, user: &str) -> String {
        token(&self.data_dir, self.port, user)
    }

    /// Whether the process is still running.
    pub(crate) fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Fails the test, with the end of the log, when the process has ended.
    pub(crate) fn assert_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("the server ended ({status}); its log ends with:\n{}", self.log_tail(40));
        }
    }

    /// The last `lines` lines of the server's log.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The server's resident memory now and its peak, in KiB (`VmRSS`, `VmHWM`).
    pub(crate) fn memory_kib(&self) -> (u64, u64) {
        crate::common::memory_kib(self.child.id())
    }

    /// A request to the server with the honest user's token; status, head, body.
    pub(crate) fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String, Vec<u8>) {
        let bearer = format!("Bearer {}", self.token);
        let mut all = vec![("Authorization", bearer.as_str())];
        all.extend_from_slice(headers);
        request(self.port, method, path, &all, body)
    }

    /// The honest user uploads a small text file: it must be stored (201).
    pub(crate) fn assert_honest_upload(&self) {
        let started = Instant::now();
        let (status, _, body) =
            self.send("POST", "/files?filename=honest.txt", &[("Content-Type", "text/plain")], b"Glucose 5.4 mmol/L\n");
        assert_eq!(status, 201, "the honest upload was refused: {}", String::from_utf8_lossy(&body));
        assert!(started.elapsed() < Duration::from_secs(10), "the honest upload took {:?}", started.elapsed());
    }

    /// The honest user opens a session and calls `echo` and `remember`: both answered.
    pub(crate) fn assert_honest_calls(&self) {
        let sid = session(self.port, &self.token);
        let reply = call(self.port, &self.token, &sid, 7, "echo", json!({"text": "still here"}))
            .expect("the honest client was not answered");
        assert_eq!(reply["result"]["structuredContent"], json!({"echo": "still here"}), "{reply}");
        let reply = call(self.port, &self.token, &sid, 8, "remember", json!({"text": "honest note"}))
            .expect("the honest remember was not answered");
        assert_ne!(reply["result"]["isError"], Value::Bool(true), "{reply}");
    }

    /// The honest user is served: an upload and two calls.
    pub(crate) fn assert_serves_honest_user(&mut self) {
        self.assert_alive();
        self.assert_honest_upload();
        self.assert_honest_calls();
    }
}

// RUST_LOG=info unless the test sets it: a trace log of an attack is too large to keep.
fn with_info_log<'a>(env: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut all = env.to_vec();
    if !env.iter().any(|(key, _)| *key == "RUST_LOG") {
        all.push(("RUST_LOG", "info"));
    }
    all
}
