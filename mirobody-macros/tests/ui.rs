//! Compile-time behaviour: what must build, and the message of every error the macros give.
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p mirobody-macros --test ui`
//! and read every changed `.stderr` before keeping it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
