//! Many instances: three servers on this machine's PostgreSQL and Redis and an S3 server
//! (moto, from PyPI), behind Debian's nginx with plain round-robin (no stickiness), so
//! consecutive requests of one client land on different instances.
//!
//! Through nginx: the official Python SDK in legacy mode (one 2025-11-25 session served by all
//! three) and in auto mode (2026-07-28), each answering an `ask_user` question, writing and
//! reading memories, and seeing a file uploaded through another instance. Then one instance is
//! killed with SIGKILL in the middle of concurrent `remember` calls: every acknowledged write is
//! there, the sessions made on the dead instance go on through the others, and the clients
//! work again. (The conformance suites and the TypeScript SDK run through nginx across three
//! instances in `examples/conformance-server/tests/cluster.rs`: they need the fixture's tools.)
//!
//! Without PostgreSQL, Redis, Python or nginx the test says `SKIPPED: <why>`; with
//! `MIROBODY_REQUIRE_EXTERNAL=1` it fails instead.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{
    KillOnDrop, assert_none_lost, call, clean_command, free_port, fresh_data_dir, post, request, server_port,
    start_with, unrecalled,
};
use mirobody_testkit::{Moto, Nginx, Peers, PostgresSchema, assert_client_passes, skip};
use serde_json::json;

fn peers() -> Peers {
    Peers::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("external"))
}

fn external(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|url| !url.is_empty()).or_else(|| {
        skip(&format!("cluster: {var} is not set"));
        None
    })
}

struct Cluster {
    instances: Vec<KillOnDrop>,
    ports: Vec<u16>,
    nginx: Nginx,
    env: Vec<(String, String)>,
    data_dir: PathBuf,
    _moto: Moto,
    _schema: PostgresSchema,
}

impl Cluster {
    fn start() -> Option<Cluster> {
        let (postgres, redis) = (external("MIROBODY_TEST_POSTGRES_URL")?, external("MIROBODY_TEST_REDIS_URL")?);
        let peers = peers();
        let found = peers.nginx().and_then(|nginx| Ok((nginx, Moto::start(&peers)?)));
        let (nginx_binary, moto) = match found {
            Ok(found) => found,
            Err(e) => {
                skip(&format!("cluster: {e}"));
                return None;
            }
        };
        let unique = format!("cluster_{}_{}", std::process::id(), free_port());
        moto.create_bucket(&unique.replace('_', "-"));
        let schema = PostgresSchema { url: postgres.clone(), name: unique.clone() };
        let nginx_port = free_port();
        // What every instance shares: the data, and the keys that sign what another accepts.
        let env: Vec<(String, String)> = [
            ("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{nginx_port}")),
            ("MIROBODY_BACKENDS__DATABASE_URL", postgres),
            ("MIROBODY_BACKENDS__DATABASE_SCHEMA", unique.clone()),
            ("MIROBODY_BACKENDS__REDIS_URL", redis),
            ("MIROBODY_BACKENDS__REDIS_KEY_PREFIX", format!("{unique}.")),
            ("MIROBODY_BACKENDS__STORAGE__KIND", "s3".into()),
            ("MIROBODY_BACKENDS__STORAGE__BUCKET", unique.replace('_', "-")),
            ("MIROBODY_BACKENDS__STORAGE__ENDPOINT", moto.endpoint.clone()),
            ("MIROBODY_BACKENDS__STORAGE__REGION", "us-east-1".into()),
            ("MIROBODY_BACKENDS__STORAGE__ACCESS_KEY_ID", "test".into()),
            ("MIROBODY_BACKENDS__STORAGE__SECRET_ACCESS_KEY", "test".into()),
            ("MIROBODY_BACKENDS__STORAGE__ALLOW_HTTP", "true".into()),
            ("MIROBODY_REQUEST_STATE_KEY", "cluster-state-key-0123456789-0123456789".into()),
            ("MIROBODY_BACKENDS__SIGNING_KEY", "cluster-url-key-0123456789-0123456789".into()),
            ("MIROBODY_AUTH__HS256_SECRET", "cluster-token-key-0123456789-0123456789".into()),
            // One test client sends as fast as it can.
            ("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "0".into()),
            ("MIROBODY_HTTP__CALLER_LIMITS__MAX_CALLS", "0".into()),
            ("RUST_LOG", "warn".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let data_dir = fresh_data_dir("cluster");
        let ports: Vec<u16> = (0..3).map(|_| server_port()).collect();
        let mut cluster = Cluster {
            instances: Vec::new(),
            nginx: Nginx::start_on(&nginx_binary, &data_dir.join("nginx"), nginx_port, &ports)
                .unwrap_or_else(|e| panic!("{e}")),
            ports,
            env,
            data_dir,
            _moto: moto,
            _schema: schema,
        };
        for n in 0..3 {
            let instance = cluster.start_instance(n);
            cluster.instances.push(instance);
        }
        Some(cluster)
    }

    fn env(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    fn start_instance(&self, n: usize) -> KillOnDrop {
        let dir = self.data_dir.join(format!("instance-{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::File::create(dir.join("server.log")).unwrap();
        KillOnDrop(start_with(&dir, self.ports[n], log, &self.env()))
    }

    // The server's own CLI with the cluster's settings: `token`, `secret create`.
    fn cli(&self, args: &[&str]) -> String {
        let output = clean_command()
            .args(args)
            .env("MIROBODY_BACKENDS__DATA_DIR", self.data_dir.join("cli"))
            .envs(self.env())
            .stderr(Stdio::piped())
            .output()
            .expect("run the CLI");
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    // Runs the Python SDK client through nginx.
    fn python_client(&self, python: &Path, url: &str, mode: &str, expected: &str, marker: &str) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/cluster_client.py");
        assert_client_passes(Command::new(python).arg(script).args([url, mode, expected, marker]), "PYTHON-SDK-OK");
    }
}

// A session made on the instance at `port` directly.
fn session_on(port: u16, token: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cluster","version":"1"}}});
    let (head, _) = post(port, token, None, &init).expect("initialize");
    head.lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|s| s.trim().to_owned()))
        .expect("a session id")
}

#[test]
fn three_instances_behind_nginx_share_sessions_and_outlive_a_sigkill() {
    let Some(mut cluster) = Cluster::start() else { return };
    let python = match peers().python_venv("mcp-2.3", &["mcp==2.3.0"]) {
        Ok(bin) => bin.join("python"),
        Err(e) => return skip(&format!("cluster: Python SDK: {e}")),
    };
    let lb = cluster.nginx.port;
    let token = cluster.cli(&["token", "--user", "ada", "--ttl", "3600"]);
    let personal = cluster.cli(&["secret", "create", "--user", "ada"]);
    assert!(personal.starts_with(&cluster.nginx.url("/mcp/")), "{personal}");

    // A file uploaded through nginx to one instance lands in the bucket every instance reads.
    let bearer = format!("Bearer {token}");
    let headers = [("Authorization", bearer.as_str()), ("Content-Type", "text/plain")];
    let (status, _, body) = request(lb, "POST", "/files?filename=cluster.txt", &headers, b"Ferritin 80 ng/mL\n");
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));

    cluster.python_client(&python, &personal, "legacy", "2025-11-25", "legacybefore");
    cluster.python_client(&python, &personal, "auto", "2026-07-28", "autobefore");

    // Sessions made on the instance about to die, and eight writers through nginx.
    let doomed: Vec<String> = (0..4).map(|_| session_on(cluster.ports[0], &token)).collect();
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let refused = Arc::new(Mutex::new(0usize));
    let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (token, sid) = (token.clone(), doomed[writer % doomed.len()].clone());
            let (acknowledged, refused, killed) =
                (Arc::clone(&acknowledged), Arc::clone(&refused), Arc::clone(&killed));
            std::thread::spawn(move || {
                let mut after_kill = 0;
                for n in 0..100_000u64 {
                    let marker = format!("clustermarker{writer}x{n}");
                    let text = format!("The user noted {marker} today.");
                    match call(lb, &token, &sid, n + 1, "remember", json!({"text": text})) {
                        Some(reply) if reply["result"]["isError"] == false => acknowledged.lock().unwrap().push(marker),
                        // Sent to the instance as it died: not acknowledged, so not counted.
                        _ => *refused.lock().unwrap() += 1,
                    }
                    if killed.load(std::sync::atomic::Ordering::Relaxed) {
                        after_kill += 1;
                        if after_kill == 40 {
                            return;
                        }
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acknowledged.lock().unwrap().len() < 150 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let before_kill = acknowledged.lock().unwrap().len();
    let dead = cluster.instances.remove(0);
    drop(dead);
    killed.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    let refused = *refused.lock().unwrap();
    assert!(before_kill >= 150, "only {before_kill} writes were acknowledged before the kill");
    assert!(
        acknowledged.len() >= before_kill + 8 * 30,
        "the writers' sessions, made on the dead instance, did not go on through the others: {} acknowledged, \
         {before_kill} before the kill, {refused} refused",
        acknowledged.len()
    );
    assert!(refused <= 16, "{refused} calls failed: only those in flight at the kill may");

    // Every acknowledged write is there, read through nginx in a session made on the dead one.
    assert_none_lost(&unrecalled(lb, &token, &doomed, &acknowledged), acknowledged.len());

    // The clients work again through what is left, and with the instance back.
    cluster.python_client(&python, &personal, "legacy", "2025-11-25", "legacyafter");
    cluster.python_client(&python, &personal, "auto", "2026-07-28", "autoafter");
    let restarted = cluster.start_instance(0);
    cluster.instances.push(restarted);
    cluster.python_client(&python, &personal, "legacy", "2025-11-25", "legacyback");
    println!(
        "cluster: {} acknowledged memories ({before_kill} before the SIGKILL, {refused} calls in flight refused), \
         all found through nginx",
        acknowledged.len()
    );
}
