//! TLS to PostgreSQL and Redis, for real: each test starts its own server on a free port with
//! a certificate signed by a CA it makes (openssl), reachable over TLS only, and opens the
//! backends through `mirobody_store::open` with `?sslmode=...` or `rediss://`, then writes and reads.
//! A server that cannot be started here (no openssl, initdb, or Redis built with TLS) makes the
//! test print `SKIPPED: <why>`, or fail under `MIROBODY_REQUIRE_EXTERNAL=1`. The servers are
//! stopped and their folders removed when a test ends, passing or not.

#![cfg(unix)]

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mirobody_core::Cache;
use mirobody_ports::{AccessKind, AccessLog, AccessOutcome};
use mirobody_store::{BackendConfig, RedisCache, RedisConnectError, SqlStore, open};

use crate::support::config_in;

/// Prints `SKIPPED: <test>: <why>`; fails the test instead under `MIROBODY_REQUIRE_EXTERNAL=1`.
fn skip(test: &str, why: &str) {
    if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
        panic!("{test}: {why}, and MIROBODY_REQUIRE_EXTERNAL=1 requires it");
    }
    println!("SKIPPED: {test}: {why}");
}

/// A server process, stopped (SIGTERM, then SIGKILL after 10 s) when dropped.
struct Server {
    child: Child,
    log: PathBuf,
}

impl Server {
    /// The server's output so far, for a failure message.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether it has exited.
    fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.exited() {
            return;
        }
        // A clean stop: PostgreSQL removes its shared memory and socket files.
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.exited() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A folder for one test's servers (the servers are declared first, so they stop before the
/// folder goes).
struct Setup {
    servers: Vec<Server>,
    dir: tempfile::TempDir,
    /// The CA certificate (PEM) that signed the servers' certificate.
    ca: PathBuf,
    /// The servers' certificate, for 127.0.0.1 and localhost, and its key.
    cert: PathBuf,
    key: PathBuf,
}

fn run(command: &mut Command) -> Result<(), String> {
    let output = command.stdin(Stdio::null()).output().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!("{command:?} failed: {}", String::from_utf8_lossy(&output.stderr).trim()))
}

impl Setup {
    /// A temp folder with a CA and a server certificate it signed.
    fn new() -> Result<Setup, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = |name: &str| dir.path().join(name);
        let openssl = || {
            let mut command = Command::new("openssl");
            command.current_dir(dir.path());
            command
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
        run(openssl().args(["req", "-x509"]).args(ec).args([
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=mirobody test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]))?;
        run(openssl().arg("req").args(ec).args([
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ]))?;
        std::fs::write(
            path("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .map_err(|e| e.to_string())?;
        run(openssl().args(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key"]).args([
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ]))?;
        Ok(Setup { servers: Vec::new(), ca: path("ca.pem"), cert: path("server.pem"), key: path("server.key"), dir })
    }

    /// Starts `command` with its output in `<name>.log`, and keeps it to stop at the end.
    fn spawn(&mut self, name: &str, command: &mut Command) -> Result<&mut Server, String> {
        let log = self.dir.path().join(format!("{name}.log"));
        let file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        let child = command
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        self.servers.push(Server { child, log });
        Ok(self.servers.last_mut().unwrap())
    }
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits until `ready` says yes, the server exits, or 30 s pass.
async fn wait_until<F, Fut>(server_index: usize, setup: &mut Setup, mut ready: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let last = match ready().await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let server = &mut setup.servers[server_index];
        if server.exited() {
            return Err(format!("the server exited: {}", server.log()));
        }
        if Instant::now() > deadline {
            return Err(format!("not ready after 30 s ({last}): {}", server.log()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The newest PostgreSQL server programs (`initdb`, `postgres`) on this machine.
fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").exists() && bin.join("postgres").exists())
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let found = Command::new("sh").args(["-c", "command -v initdb"]).output().ok()?;
    let initdb = PathBuf::from(String::from_utf8(found.stdout).ok()?.trim());
    let bin = std::fs::canonicalize(initdb).ok()?.parent()?.to_path_buf();
    bin.join("postgres").exists().then_some(bin)
}

/// The uid and gid to run PostgreSQL as: ours, unless we are root (initdb refuses root), then
/// the `postgres` user's.
fn postgres_user() -> Result<Option<(u32, u32)>, String> {
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).map_err(|e| format!("who am I: {e}"))?;
    if me != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| e.to_string())?;
    let line = passwd
        .lines()
        .find(|line| line.starts_with("postgres:"))
        .ok_or("running as root and there is no postgres user to run PostgreSQL as")?;
    let fields: Vec<&str> = line.split(':').collect();
    let id = |i: usize| fields.get(i).and_then(|f| f.parse().ok()).ok_or("an unreadable postgres user");
    Ok(Some((id(2)?, id(3)?)))
}

/// Gives the folder and everything in it to `user`.
fn chown_all(dir: &Path, (uid, gid): (u32, u32)) -> Result<(), String> {
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            chown_all(&path, (uid, gid))?;
        } else {
            std::os::unix::fs::chown(&path, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Starts PostgreSQL in the setup's folder on `port`, accepting TLS connections only
/// (`hostssl`, no `host` line), and waits until it answers. Its URL, without TLS parameters.
async fn start_postgres(setup: &mut Setup, port: u16) -> Result<String, String> {
    let bin = postgres_bin().ok_or("no PostgreSQL server programs (initdb, postgres)")?;
    let user = postgres_user()?;
    let dir = setup.dir.path().to_path_buf();
    let data = dir.join("pg");
    std::fs::write(dir.join("pg_hba.conf"), "local all all trust\nhostssl all all 127.0.0.1/32 trust\n")
        .map_err(|e| e.to_string())?;
    if let Some(user) = user {
        chown_all(&dir, user)?;
    }
    let as_user = |program: PathBuf| {
        let mut command = Command::new(program);
        command.current_dir(&dir).env("LC_ALL", "C").env_remove("PGDATA");
        if let Some((uid, gid)) = user {
            command.uid(uid).gid(gid);
        }
        command
    };
    run(as_user(bin.join("initdb")).arg("-D").arg(&data).args(["-U", "postgres", "-A", "trust", "--no-sync"]))?;
    let setting = |name: &str, value: &Path| format!("{name}={}", value.display());
    let mut postgres = as_user(bin.join("postgres"));
    postgres
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "ssl=on"])
        .args(["-c", &setting("ssl_cert_file", &setup.cert), "-c", &setting("ssl_key_file", &setup.key)])
        .args(["-c", &setting("hba_file", &dir.join("pg_hba.conf"))])
        .args(["-c", &setting("unix_socket_directories", &dir)])
        .args(["-c", "fsync=off", "-c", "shared_buffers=16MB", "-c", "max_connections=20"]);
    let index = setup.servers.len();
    setup.spawn("postgres", &mut postgres)?;
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let probe = format!("{url}?sslmode=require");
    wait_until(index, setup, || {
        let probe = probe.clone();
        async move {
            use sqlx::Connection;
            let conn = sqlx::PgConnection::connect(&probe).await.map_err(|e| e.to_string())?;
            conn.close().await.map_err(|e| e.to_string())
        }
    })
    .await?;
    Ok(url)
}

/// Starts Redis on `port` for TLS only (`--port 0`), and waits until it accepts TLS.
async fn start_redis(setup: &mut Setup, port: u16) -> Result<String, String> {
    let mut redis = Command::new("redis-server");
    redis
        .current_dir(setup.dir.path())
        .args(["--port", "0", "--tls-port", &port.to_string(), "--bind", "127.0.0.1"])
        .arg("--tls-cert-file")
        .arg(&setup.cert)
        .arg("--tls-key-file")
        .arg(&setup.key)
        .arg("--tls-ca-cert-file")
        .arg(&setup.ca)
        .args(["--tls-auth-clients", "no", "--save", "", "--appendonly", "no"]);
    let index = setup.servers.len();
    setup.spawn("redis", &mut redis).map_err(|e| format!("no redis-server ({e})"))?;
    let url = format!("rediss://127.0.0.1:{port}");
    let ca = setup.ca.clone();
    wait_until(index, setup, || {
        let (url, ca) = (url.clone(), ca.clone());
        async move { RedisCache::connect_with_ca_file(&url, "probe:", Some(&ca)).await.map(drop).map_err(|e| e.to_string()) }
    })
    .await?;
    Ok(url)
}

#[tokio::test]
async fn postgres_over_tls_through_backends_open() {
    const TEST: &str = "tls::postgres_over_tls_through_backends_open";
    let mut setup = match Setup::new() {
        Ok(setup) => setup,
        Err(why) => return skip(TEST, &format!("no certificates: {why}")),
    };
    let url = match start_postgres(&mut setup, free_port()).await {
        Ok(url) => url,
        Err(why) => return skip(TEST, &format!("PostgreSQL with TLS cannot be started here: {why}")),
    };
    let data = tempfile::tempdir().unwrap();
    let ca = setup.ca.display().to_string();
    // Encrypted, and the server verified against the CA given in the URL.
    let verified = format!("{url}?sslmode=verify-full&sslrootcert={ca}");
    let config = BackendConfig { database_url: Some(verified), ..config_in(data.path()) };
    let backends = open(&config).await.expect("the backends open on PostgreSQL over TLS");
    backends.sql().record("u1", None, AccessKind::Tool, "echo", AccessOutcome::Ok, 2).await.unwrap();
    let rows = backends.sql().access_log_of("u1").await.unwrap();
    assert_eq!(rows, [(AccessKind::Tool, "echo".to_owned(), AccessOutcome::Ok, 2)]);
    backends.close().await;
    // `require` encrypts without verifying: the row is there.
    let encrypted = SqlStore::connect(&format!("{url}?sslmode=require"), None, 1).await.expect("sslmode=require");
    assert_eq!(encrypted.access_log_of("u1").await.unwrap().len(), 1);
    encrypted.close().await;
    // The server takes TLS only, so these worked over TLS; and verification is real: without
    // the CA the self-signed server is refused.
    let plain = SqlStore::connect(&format!("{url}?sslmode=disable"), None, 1).await.unwrap_err().to_string();
    assert!(plain.contains("cannot connect to PostgreSQL"), "{plain}");
    let unverified = SqlStore::connect(&format!("{url}?sslmode=verify-full"), None, 1).await.unwrap_err();
    assert!(unverified.to_string().contains("cannot connect to PostgreSQL"), "{unverified}");
}

#[tokio::test]
async fn redis_over_tls_through_backends_open() {
    const TEST: &str = "tls::redis_over_tls_through_backends_open";
    let mut setup = match Setup::new() {
        Ok(setup) => setup,
        Err(why) => return skip(TEST, &format!("no certificates: {why}")),
    };
    let url = match start_redis(&mut setup, free_port()).await {
        Ok(url) => url,
        Err(why) => return skip(TEST, &format!("Redis with TLS cannot be started here: {why}")),
    };
    let data = tempfile::tempdir().unwrap();
    let config = BackendConfig {
        redis_url: Some(url.clone()),
        redis_ca_file: Some(setup.ca.clone()),
        redis_key_prefix: "tls:".into(),
        ..config_in(data.path())
    };
    let backends = open(&config).await.expect("the backends open with Redis over TLS");
    backends.cache().set("k", b"over tls", Some(Duration::from_secs(60))).await.unwrap();
    assert_eq!(backends.cache().get("k").await.unwrap().as_deref(), Some(&b"over tls"[..]));
    let direct = RedisCache::connect_with_ca_file(&url, "tls:", Some(&setup.ca)).await.unwrap();
    assert_eq!(direct.get("k").await.unwrap().as_deref(), Some(&b"over tls"[..]), "stored in that Redis");
    // Verification is real: the system's CAs do not trust this server.
    let unverified = RedisCache::connect(&url, "tls:").await.unwrap_err();
    assert!(matches!(unverified, RedisConnectError::Unreachable(_)), "{unverified}");
    assert!(unverified.to_string().contains("cannot connect to Redis"), "{unverified}");
    // A CA file with a plain URL is a mistake, said at start.
    let plain = format!("redis://{}", url.trim_start_matches("rediss://"));
    let refused = RedisCache::connect_with_ca_file(&plain, "tls:", Some(&setup.ca)).await.unwrap_err();
    assert!(matches!(refused, RedisConnectError::CaFileWithoutTls), "{refused}");
    assert!(refused.to_string().contains("rediss://"), "{refused}");
}
