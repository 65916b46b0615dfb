//! The built-ins are found by self-registration alone, with nothing listing them by hand.

#[test]
fn registered_tools_include_echo() {
    let registry = mirobody_tools::builtin_registry().unwrap();
    let names: Vec<&str> = registry.names().collect();
    assert!(names.contains(&"echo"), "{names:?}");
}
