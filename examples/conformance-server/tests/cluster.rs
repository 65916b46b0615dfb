//! Three fixtures sharing their sessions through this machine's Redis and their task records
//! through its PostgreSQL, behind Debian's nginx with plain round-robin (no stickiness), so
//! that consecutive requests of one client land on different instances: the official
//! conformance suites for both revisions and the extensions' (tasks), and the Python (auto and
//! legacy mode) and TypeScript SDK clients, all through nginx, with no failures.
//!
//! Without Redis (`MIROBODY_TEST_REDIS_URL`), PostgreSQL (`MIROBODY_TEST_POSTGRES_URL`) or
//! nginx the tests say `SKIPPED: <why>`; with `MIROBODY_REQUIRE_EXTERNAL=1` they fail instead.

mod support;

use mirobody_testkit::PostgresSchema;
use support::{Fixture, Nginx, check_python, check_typescript, conformance, peers, skip};

struct Cluster {
    nginx: Nginx,
    _fixtures: Vec<Fixture>,
    // Dropped after the fixtures, which use it.
    _schema: PostgresSchema,
}

fn external(test: &str, var: &str) -> Option<String> {
    let url = std::env::var(var).ok().filter(|url| !url.is_empty());
    if url.is_none() {
        skip(&format!("{test}: {var} is not set"));
    }
    url
}

fn cluster(test: &str) -> Option<Cluster> {
    let redis = external(test, "MIROBODY_TEST_REDIS_URL")?;
    let postgres = external(test, "MIROBODY_TEST_POSTGRES_URL")?;
    let nginx = match peers().nginx() {
        Ok(nginx) => nginx,
        Err(e) => {
            skip(&format!("{test}: nginx: {e}"));
            return None;
        }
    };
    // A prefix of the test's own in the shared Redis, a schema of its own in the PostgreSQL,
    // and one requestState key for all three.
    let prefix = format!("mirobody-cluster-{test}-{}:", std::process::id());
    let schema =
        PostgresSchema { url: postgres.clone(), name: format!("fixture_cluster_{test}_{}", std::process::id()) };
    let env = [
        ("MIROBODY_FIXTURE_REDIS_URL", redis.as_str()),
        ("MIROBODY_FIXTURE_REDIS_PREFIX", prefix.as_str()),
        ("MIROBODY_FIXTURE_DATABASE_URL", postgres.as_str()),
        ("MIROBODY_FIXTURE_DATABASE_SCHEMA", schema.name.as_str()),
        ("MIROBODY_FIXTURE_STATE_KEY", "cluster-test-key-0123456789-0123456789"),
    ];
    let fixtures: Vec<Fixture> = (0..3).map(|_| Fixture::start_with(&env)).collect();
    let ports: Vec<u16> = fixtures
        .iter()
        .map(|f| f.url.rsplit(':').next().and_then(|p| p.trim_end_matches("/mcp").parse().ok()).expect("a port"))
        .collect();
    let dir = peers().root().join(format!("nginx-{test}-{}", std::process::id()));
    let nginx = Nginx::start(&nginx, &dir, &ports).unwrap_or_else(|e| panic!("{e}"));
    Some(Cluster { nginx, _fixtures: fixtures, _schema: schema })
}

#[test]
fn conformance_suites_pass_through_nginx_across_three_instances() {
    let Some(cluster) = cluster("conformance") else { return };
    let url = cluster.nginx.url("/mcp");
    conformance("0.2.0-alpha.12", &url, &["--suite", "all", "--spec-version", "2025-11-25"], 30);
    conformance("0.2.0-alpha.12", &url, &["--suite", "all", "--spec-version", "2026-07-28"], 140);
    // Every scenario and the extensions': a task one fixture runs is read, answered and
    // cancelled through the others.
    conformance("0.2.0-alpha.12", &url, &["--suite", "all"], 220);
}

#[test]
fn sdk_clients_work_through_nginx_across_three_instances() {
    let Some(cluster) = cluster("sdk") else { return };
    let url = cluster.nginx.url("/mcp");
    check_python(&url, "legacy", "2025-11-25");
    check_python(&url, "auto", "2026-07-28");
    check_typescript(&url);
}
