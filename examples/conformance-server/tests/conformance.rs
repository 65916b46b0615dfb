//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, Node 22) against the
//! fixture server over loopback: every scenario must pass, with no expected-failures baseline,
//! for 2025-11-25 (0.1.16's active suite, and 0.2.0-alpha.12's full suite), for 2026-07-28
//! (0.2.0-alpha.12's full suite), and with no revision named, which adds the extensions'
//! scenarios (the tasks extension's among them), on the same endpoint.

mod support;

fn run_suite(version: &str, extra: &[&str], min_passed: u32) {
    let fixture = support::Fixture::start();
    support::conformance(version, &fixture.url, extra, min_passed);
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
