//! `crate = path` names mirobody-core by another path (a re-export, a renamed dependency).

use mirobody_core as mc;

mod facade {
    pub use mirobody_core as core_again;
}

/// Through an alias.
#[mc::tool(crate = mc, register = false)]
fn aliased(n: i64) -> i64 {
    n
}

#[derive(Default)]
struct Service;

#[mc::tool_service(crate = facade::core_again)]
impl Service {
    /// Through a module path.
    pub fn nested() -> bool {
        true
    }
}

fn main() {
    assert_eq!(aliased_tool().name(), "aliased");
    let registry = mc::Registry::from_registered().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["nested"]);
}
