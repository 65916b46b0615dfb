//! Each built-in tool of `mirobody-tools`, written again with `#[tool]`: the declarations must
//! be equal, field for field, and so must every rendering and the result of the same call.
//! When a built-in changes, its twin here changes with it.

use mirobody_core::{Format, Tool, tool};
use serde_json::{Value, json};

use crate::{registry, run};

/// Echo back the provided text.
///
/// Args:
///     text: The text to echo back.
#[tool(name = "echo", annotations(read_only, idempotent), register = false)]
async fn echo(text: String) -> Value {
    json!({ "echo": text })
}

/// Checks a built-in against its twin: declaration, auth, every rendering, and one call.
fn check(builtin: Tool, twin: Tool, call: Value) {
    assert_eq!(twin.spec(), builtin.spec());
    assert_eq!(twin.is_auth(), builtin.is_auth());
    assert_eq!(twin.scopes(), builtin.scopes());
    let name = builtin.name().to_owned();
    let (builtin, twin) = (registry([builtin]), registry([twin]));
    for format in Format::ALL {
        assert_eq!(twin.functions_json(format), builtin.functions_json(format), "{name} in {format}");
    }
    assert_eq!(run(&twin, &name, call.clone()), run(&builtin, &name, call), "{name}");
}

#[test]
fn echo_matches_the_builtin() {
    check(mirobody_tools::tools::echo::tool(), echo_tool(), json!({"text": "héllo"}));
}
