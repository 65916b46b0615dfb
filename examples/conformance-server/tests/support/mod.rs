//! Setting up the real outside peers these tests drive (Node 22, npm packages, a Python
//! virtualenv) and the fixture server, under `target/tmp`, reused across runs.
//!
//! When a peer cannot be set up here (no npm, no python3, no registry), the test prints
//! `SKIPPED: <why>` and returns; with `MIROBODY_REQUIRE_EXTERNAL=1` (as `.ci/run` sets) it fails
//! instead, so CI never passes silently.

#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use mirobody_testkit::{KillOnDrop, Nginx, assert_client_passes, free_port, run_with_timeout, skip};

/// The peers, installed under this package's scratch folder.
pub fn peers() -> mirobody_testkit::Peers {
    mirobody_testkit::Peers::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("external"))
}

/// The folder for installed tools.
pub fn tools_dir() -> PathBuf {
    peers().root().to_owned()
}

/// Installs an npm package (name@version) into its own folder; the folder.
pub fn npm_package(spec: &str) -> Result<PathBuf, String> {
    peers().npm_package(spec)
}

/// A Node.js 22 binary: the machine's if it is 22 or newer, else one installed from npm.
pub fn node22() -> Result<PathBuf, String> {
    peers().node22()
}

/// A Python virtualenv with these pip requirements; its python.
pub fn python_venv(name: &str, requirements: &[&str]) -> Result<PathBuf, String> {
    Ok(peers().python_venv(name, requirements)?.join("python"))
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
        Fixture::start_with(&[])
    }

    /// [`Fixture::start`] with these environment variables (`MIROBODY_FIXTURE_REDIS_URL` and
    /// its siblings, to share sessions with other fixtures).
    pub fn start_with(env: &[(&str, &str)]) -> Fixture {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(fixture_binary())
            .envs(env.iter().copied())
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

/// Runs the official conformance suite `version` (with `extra` arguments) against `url`; fails
/// on any failed check or fewer than `min_passed` passed.
pub fn conformance(version: &str, url: &str, extra: &[&str], min_passed: u32) {
    let (node, package) =
        match node22().and_then(|n| Ok((n, npm_package(&format!("@modelcontextprotocol/conformance@{version}"))?))) {
            Ok(found) => found,
            Err(e) => return skip(&format!("conformance {version}: {e}")),
        };
    let entry = package.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    // One folder per run, so parallel runs keep apart.
    let results = tools_dir().join(format!("results-{version}-{}", free_port()));
    let output = run_with_timeout(
        Command::new(node).arg(entry).args(["server", "--url", url, "-o"]).arg(&results).args(extra),
        Duration::from_secs(600),
    );
    let _ = std::fs::remove_dir_all(&results);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let total = stdout.lines().find(|l| l.starts_with("Total:")).unwrap_or_else(|| panic!("no Total line:\n{stdout}"));
    println!("conformance {version} {}: {total}", extra.join(" "));
    // "Total: N passed, M failed"
    let numbers: Vec<u32> = total.split(|c: char| !c.is_ascii_digit()).filter_map(|s| s.parse().ok()).collect();
    assert_eq!(numbers.len(), 2, "{total}");
    assert!(numbers[0] >= min_passed, "too few checks passed: {total}\n{stdout}");
    assert_eq!(
        numbers[1],
        0,
        "failures:\n{}",
        stdout.lines().filter(|l| l.contains('✗')).collect::<Vec<_>>().join("\n")
    );
    assert!(output.status.success(), "the suite exited with {}:\n{stdout}", output.status);
}

/// The SDK client scripts.
pub fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// The Python SDK client script against `target` (a URL, or the fixture binary for stdio) in
/// `mode` (auto or legacy), expecting the revision `expected_version`.
pub fn check_python(target: &str, mode: &str, expected_version: &str) {
    let python = match python_venv("mcp-2.3", &["mcp==2.3.0"]) {
        Ok(python) => python,
        Err(e) => return skip(&format!("Python SDK: {e}")),
    };
    let script = clients_dir().join("python_client.py");
    assert_client_passes(Command::new(python).arg(script).args([target, mode, expected_version]), "PYTHON-SDK-OK");
}

/// The TypeScript SDK client script against `target` (a URL, or the fixture binary).
pub fn check_typescript(target: &str) {
    let found = node22().and_then(|node| Ok((node, npm_package("@modelcontextprotocol/sdk@1")?)));
    let (node, package) = match found {
        Ok(found) => found,
        Err(e) => return skip(&format!("TypeScript SDK: {e}")),
    };
    // The script imports the SDK by name, so it runs from inside the package folder.
    let script = package.join("typescript_client.mjs");
    std::fs::copy(clients_dir().join("typescript_client.mjs"), &script).expect("copy the client script");
    assert_client_passes(Command::new(node).arg(&script).arg(target), "TS-SDK-OK");
}
