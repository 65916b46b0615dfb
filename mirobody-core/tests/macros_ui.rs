//! The macros' compile-time behaviour: what must build, and the message of every error they
//! give. Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test -p mirobody-core --test macros_ui` and read every changed
//! `.stderr` before keeping it.
//!
//! Here rather than in mirobody-macros: trybuild builds its cases against the testing crate's
//! dependencies and dev-dependencies, from scratch and with its own flags. The macros crate's
//! dev-dependencies include mirobody-tools (for its golden tests), whose tree took 11 of CI's
//! minutes to build for these cases; core's are a handful of small crates.

#[test]
fn macros_ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/macros_ui/pass/*.rs");
    t.compile_fail("tests/macros_ui/fail/*.rs");
}
