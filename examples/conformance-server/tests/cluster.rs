//! Three fixtures sharing their sessions through this machine's Redis, behind Debian's nginx
//! with plain round-robin (no stickiness), so that consecutive requests of one client land on
//! different instances: the official conformance suites for both revisions, and the Python
//! (auto and legacy mode) and TypeScript SDK clients, all through nginx, with no failures.
//!
//! Without Redis (`MIROBODY_TEST_REDIS_URL`) or nginx the tests say `SKIPPED: <why>`; with
//! `MIROBODY_REQUIRE_EXTERNAL=1` they fail instead.

mod support;

use support::{Fixture, Nginx, check_python, check_typescript, conformance, peers, skip};

struct Cluster {
    nginx: Nginx,
    _fixtures: Vec<Fixture>,
}

fn cluster(test: &str) -> Option<Cluster> {
    let Some(redis) = std::env::var("MIROBODY_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        skip(&format!("{test}: MIROBODY_TEST_REDIS_URL is not set"));
        return None;
    };
    let nginx = match peers().nginx() {
        Ok(nginx) => nginx,
        Err(e) => {
            skip(&format!("{test}: nginx: {e}"));
            return None;
        }
    };
    // A prefix of the test's own in the shared Redis, and one requestState key for all three.
    let prefix = format!("mirobody-cluster-{test}-{}:", std::process::id());
    let env = [
        ("MIROBODY_FIXTURE_REDIS_URL", redis.as_str()),
        ("MIROBODY_FIXTURE_REDIS_PREFIX", prefix.as_str()),
        ("MIROBODY_FIXTURE_STATE_KEY", "cluster-test-key-0123456789-0123456789"),
    ];
    let fixtures: Vec<Fixture> = (0..3).map(|_| Fixture::start_with(&env)).collect();
    let ports: Vec<u16> = fixtures
        .iter()
        .map(|f| f.url.rsplit(':').next().and_then(|p| p.trim_end_matches("/mcp").parse().ok()).expect("a port"))
        .collect();
    let dir = peers().root().join(format!("nginx-{test}-{}", std::process::id()));
    let nginx = Nginx::start(&nginx, &dir, &ports).unwrap_or_else(|e| panic!("{e}"));
    Some(Cluster { nginx, _fixtures: fixtures })
}

#[test]
fn conformance_suites_pass_through_nginx_across_three_instances() {
    let Some(cluster) = cluster("conformance") else { return };
    let url = cluster.nginx.url("/mcp");
    conformance("0.2.0-alpha.12", &url, &["--suite", "all", "--spec-version", "2025-11-25"], 30);
    conformance("0.2.0-alpha.12", &url, &["--suite", "all", "--spec-version", "2026-07-28"], 140);
}

#[test]
fn sdk_clients_work_through_nginx_across_three_instances() {
    let Some(cluster) = cluster("sdk") else { return };
    let url = cluster.nginx.url("/mcp");
    check_python(&url, "legacy", "2025-11-25");
    check_python(&url, "auto", "2026-07-28");
    check_typescript(&url);
}
