//! Runs the example binary and checks what it prints.

use std::process::Command;

#[test]
fn lists_functions_and_calls_the_tool_in_process() {
    let output = Command::new(env!("CARGO_BIN_EXE_example-embed-registry")).output().expect("the example runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let functions_line = stdout.lines().find_map(|l| l.strip_prefix("functions: ")).expect("a functions line");
    let functions: serde_json::Value = serde_json::from_str(functions_line).expect("functions are JSON");
    assert_eq!(functions[0]["type"], "function");
    assert_eq!(functions[0]["function"]["name"], "body_mass_index");
    assert_eq!(functions[0]["function"]["parameters"]["required"], serde_json::json!(["weight_kg", "height_cm"]));
    assert!(stdout.contains(r#"result: {"bmi":22.9}"#), "{stdout}");
    assert!(stdout.contains("error: Invalid arguments: argument 'weight_kg' must be a number, not string"), "{stdout}");
    assert!(stdout.contains("missing required argument 'height_cm'"), "{stdout}");
}
