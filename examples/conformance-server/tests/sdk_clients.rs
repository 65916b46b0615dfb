//! The official Python (`mcp` on PyPI) and TypeScript (`@modelcontextprotocol/sdk`) clients drive
//! the fixture over Streamable HTTP and over stdio: list tools, call `echo`, receive progress,
//! answer an elicitation, see an invalid call come back as an error result. The Python client in
//! its default (auto) mode speaks 2026-07-28 (stateless, questions as input_required results,
//! a subscriptions/listen stream), in legacy mode 2025-11-25: the same fixture tools on both.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

fn python() -> Option<PathBuf> {
    match support::python_venv("mcp-2.3", &["mcp==2.3.0"]) {
        Ok(python) => Some(python),
        Err(e) => {
            support::skip(&format!("Python SDK: {e}"));
            None
        }
    }
}

fn check_python(target: &str, mode: &str, expected_version: &str) {
    let Some(python) = python() else { return };
    let output = support::run_with_timeout(
        Command::new(python).arg(clients_dir().join("python_client.py")).args([target, mode, expected_version]),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("PYTHON-SDK-OK"),
        "python client ({mode}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn python_sdk_over_streamable_http_auto_mode_speaks_2026_07_28() {
    let fixture = support::Fixture::start();
    check_python(&fixture.url, "auto", "2026-07-28");
}

#[test]
fn python_sdk_over_streamable_http_legacy_mode_speaks_2025_11_25() {
    let fixture = support::Fixture::start();
    check_python(&fixture.url, "legacy", "2025-11-25");
}

#[test]
fn python_sdk_over_stdio() {
    check_python(support::fixture_binary(), "legacy", "2025-11-25");
}

#[test]
fn python_sdk_over_stdio_auto_mode_speaks_2026_07_28() {
    check_python(support::fixture_binary(), "auto", "2026-07-28");
}

fn check_typescript(target: &str) {
    let found = support::node22().and_then(|node| Ok((node, support::npm_package("@modelcontextprotocol/sdk@1")?)));
    let (node, package) = match found {
        Ok(found) => found,
        Err(e) => return support::skip(&format!("TypeScript SDK: {e}")),
    };
    // The script imports the SDK by name, so it runs from inside the package folder.
    let script = package.join("typescript_client.mjs");
    std::fs::copy(clients_dir().join("typescript_client.mjs"), &script).expect("copy the client script");
    let output = support::run_with_timeout(Command::new(node).arg(&script).arg(target), Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("TS-SDK-OK"),
        "typescript client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn typescript_sdk_over_streamable_http() {
    let fixture = support::Fixture::start();
    check_typescript(&fixture.url);
}

#[test]
fn typescript_sdk_over_stdio() {
    check_typescript(support::fixture_binary());
}
