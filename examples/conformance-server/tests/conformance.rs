//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, Node 22) against the
//! fixture server over loopback: every scenario must pass, with no expected-failures baseline,
//! for 2025-11-25 (0.1.16's active suite, and 0.2.0-alpha.12's full suite), for 2026-07-28
//! (0.2.0-alpha.12's full suite), and with no revision named, which adds the extensions'
//! scenarios (the tasks extension's among them), on the same endpoint.

mod support;

use std::process::Command;
use std::time::Duration;

fn run_suite(version: &str, extra: &[&str], min_passed: u32) {
    let (node, package) = match support::node22()
        .and_then(|n| Ok((n, support::npm_package(&format!("@modelcontextprotocol/conformance@{version}"))?)))
    {
        Ok(found) => found,
        Err(e) => return support::skip(&format!("conformance {version}: {e}")),
    };
    let fixture = support::Fixture::start();
    let entry = package.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    // One folder per suite and revision, so parallel runs keep apart.
    let revision = extra.last().map(|v| format!("-{v}")).unwrap_or_default();
    let results = support::tools_dir().join(format!("results-{version}{revision}"));
    let output = support::run_with_timeout(
        Command::new(node).arg(entry).args(["server", "--url", &fixture.url, "-o"]).arg(&results).args(extra),
        Duration::from_secs(600),
    );
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

#[test]
fn conformance_0_1_16_active_suite() {
    run_suite("0.1.16", &[], 30);
}

#[test]
fn conformance_0_2_0_alpha_12_all_scenarios_2025_11_25() {
    run_suite("0.2.0-alpha.12", &["--suite", "all", "--spec-version", "2025-11-25"], 30);
}

#[test]
fn conformance_0_2_0_alpha_12_all_scenarios_2026_07_28() {
    // 152 checks today: the stateless wire, MRTR, caching, header validation and the reused
    // scenarios.
    run_suite("0.2.0-alpha.12", &["--suite", "all", "--spec-version", "2026-07-28"], 140);
}

#[test]
fn conformance_0_2_0_alpha_12_every_scenario_and_extension() {
    // 230 checks today: both revisions' scenarios and the extensions' (tasks: 45 checks, one
    // scenario skipped by the suite itself).
    run_suite("0.2.0-alpha.12", &["--suite", "all"], 220);
}
