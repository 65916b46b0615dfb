//! The official Python (`mcp` on PyPI) and TypeScript (`@modelcontextprotocol/sdk`) clients drive
//! the fixture over Streamable HTTP and over stdio: list tools, call `echo`, receive progress,
//! answer an elicitation, see an invalid call come back as an error result. The Python client in
//! its default (auto) mode speaks 2026-07-28 (stateless, questions as input_required results,
//! a subscriptions/listen stream), in legacy mode 2025-11-25: the same fixture tools on both.

mod support;

use support::{check_python, check_typescript};

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

#[test]
fn typescript_sdk_over_streamable_http() {
    let fixture = support::Fixture::start();
    check_typescript(&fixture.url);
}

#[test]
fn typescript_sdk_over_stdio() {
    check_typescript(support::fixture_binary());
}
