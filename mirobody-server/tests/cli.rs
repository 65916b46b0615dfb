//! The `tools` CLI through `cli::run_tools` and once through the real binary, and
//! configuration errors from `Config::load`.

use std::path::PathBuf;
use std::process::{Command, Output};

use mirobody_core::{Format, Registry};
use mirobody_server::cli::{ToolsCommand, run_tools};
use mirobody_server::config::Config;
use serde_json::{Value, json};

use support::{TOOL_NAMES, registry};

// The library's test registry and its tool names, shared rather than written again.
#[allow(dead_code, unreachable_pub)]
#[path = "../../mirobody-mcp/tests/server/support.rs"]
mod support;

async fn run(registry: &Registry, action: ToolsCommand) -> (i32, String) {
    let mut out = Vec::new();
    let code = run_tools(registry, action, &mut out).await.expect("writing to a Vec cannot fail");
    (code, String::from_utf8(out).expect("the output is UTF-8"))
}

fn parse(output: &str) -> Value {
    serde_json::from_str(output).unwrap_or_else(|e| panic!("the output is not JSON ({e}): {output}"))
}

fn call(name: &str, arguments: &str, user: Option<&str>) -> ToolsCommand {
    ToolsCommand::Call { name: name.into(), arguments: Some(arguments.into()), user: user.map(str::to_owned) }
}

#[tokio::test]
async fn list_prints_one_line_per_tool_with_its_auth_marker() {
    let registry = registry();
    let (code, out) = run(&registry, ToolsCommand::List).await;
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), TOOL_NAMES.len(), "{out}");
    for (line, name) in lines.iter().zip(TOOL_NAMES) {
        let mut columns = line.split_whitespace();
        assert_eq!(columns.next(), Some(name), "{line}");
        let marker = columns.next().unwrap();
        let expected = if ["scoped", "whoami"].contains(&name) { "auth" } else { "-" };
        assert_eq!(marker, expected, "{line}");
    }
    assert!(lines[0].contains("Echo back the provided text."), "{}", lines[0]);
}

#[tokio::test]
async fn schema_prints_every_tool_or_one() {
    let registry = registry();
    let (code, out) = run(&registry, ToolsCommand::Schema { name: None }).await;
    assert_eq!(code, 0);
    let all = parse(&out);
    let names: Vec<&str> = all["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);

    let (code, out) = run(&registry, ToolsCommand::Schema { name: Some("echo".into()) }).await;
    assert_eq!(code, 0);
    let echo = parse(&out);
    assert_eq!(echo["name"], "echo");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(echo, all["tools"][0], "the same entry as in the full listing");

    let (code, out) = run(&registry, ToolsCommand::Schema { name: Some("nope".into()) }).await;
    assert_eq!(code, 2);
    assert!(out.contains("nope"), "{out}");
}

#[tokio::test]
async fn functions_prints_each_format() {
    let registry = registry();
    for format in Format::ALL {
        let (code, out) = run(&registry, ToolsCommand::Functions { format }).await;
        assert_eq!(code, 0, "{format:?}");
        let functions = parse(&out);
        let functions = functions.as_array().unwrap_or_else(|| panic!("{format:?} is an array: {out}"));
        assert_eq!(functions.len(), TOOL_NAMES.len(), "{format:?}");
        let echo = &functions[0];
        match format {
            Format::Mcp => {
                assert_eq!(echo["name"], "echo");
                assert_eq!(echo["inputSchema"]["type"], "object");
            }
            Format::OpenAi => {
                assert_eq!(echo["type"], "function");
                assert_eq!(echo["function"]["name"], "echo");
                assert_eq!(echo["function"]["parameters"]["type"], "object");
            }
            Format::Responses => {
                assert_eq!(echo["type"], "function");
                assert_eq!(echo["name"], "echo");
                assert_eq!(echo["strict"], false);
            }
            Format::Gemini => {
                assert_eq!(echo["name"], "echo");
                assert!(echo["parameters"].is_object(), "{echo}");
            }
            Format::Anthropic => {
                assert_eq!(echo["name"], "echo");
                assert_eq!(echo["input_schema"]["type"], "object");
            }
            // A format added later is still checked against the registry below.
            _ => {}
        }
        assert_eq!(functions, registry.functions(format).as_array().unwrap(), "{format:?}");
    }
}

#[tokio::test]
async fn call_prints_the_result_and_exits_by_outcome() {
    let registry = registry();

    let (code, out) = run(&registry, call("echo", r#"{"text":"hi"}"#, None)).await;
    assert_eq!(code, 0);
    let result = parse(&out);
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"], json!({"echo": "hi"}));

    let (code, out) = run(&registry, call("echo", r#"{"text":5}"#, None)).await;
    assert_eq!(code, 1);
    let result = parse(&out);
    assert_eq!(result["isError"], true);
    assert!(result["content"][0]["text"].as_str().unwrap().contains("'text'"), "{result}");

    let (code, out) = run(&registry, call("echo", r#"{"text":"#, None)).await;
    assert_eq!(code, 2);
    assert!(out.contains("not valid JSON"), "{out}");

    let (code, out) = run(&registry, call("nope", "{}", None)).await;
    assert_eq!(code, 1);
    assert_eq!(parse(&out)["isError"], true);
}

#[tokio::test]
async fn call_acts_as_the_given_user() {
    let registry = registry();
    let (code, out) = run(&registry, call("whoami", "{}", None)).await;
    assert_eq!(code, 1, "anonymous: {out}");
    assert_eq!(parse(&out)["isError"], true);

    let (code, out) = run(&registry, call("whoami", "{}", Some("u7"))).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(parse(&out)["structuredContent"], json!({"user": "u7"}));

    let (code, _) = run(&registry, call("echo", "", None)).await;
    assert_eq!(code, 1, "empty arguments are no arguments, and echo needs text");
}

fn binary(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mirobody-server"));
    for (key, _) in std::env::vars() {
        if key.starts_with("MIROBODY_") {
            command.env_remove(key);
        }
    }
    // The binary keeps its data under a folder of its own, never in the source tree.
    let data_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-binary-data");
    command
        .args(args)
        .env("RUST_LOG", "error")
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .output()
        .expect("the binary runs")
}

#[test]
fn the_binary_lists_and_calls_the_builtin_tools() {
    let list = binary(&["tools", "list"]);
    assert!(list.status.success(), "{list:?}");
    let stdout = String::from_utf8(list.stdout).unwrap();
    assert!(stdout.lines().any(|line| line.split_whitespace().next() == Some("echo")), "{stdout}");

    let call = binary(&["tools", "call", "echo", r#"{"text":"hi"}"#]);
    assert!(call.status.success(), "{call:?}");
    let result = parse(&String::from_utf8(call.stdout).unwrap());
    assert_eq!(result["structuredContent"], json!({"echo": "hi"}));
    assert_eq!(result["isError"], false);

    let bad = binary(&["tools", "call", "echo", r#"{"text":1}"#]);
    assert_eq!(bad.status.code(), Some(1));
}

fn temp_config(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mirobody-server-tests-{}-{name}.yaml", std::process::id()));
    std::fs::write(&path, text).expect("the temp dir is writable");
    path
}

#[test]
fn an_unknown_config_key_is_named_with_its_file() {
    let path = temp_config("unknown-key", "bind: 127.0.0.1:9000\npage_sise: 5\n");
    let err = Config::load(Some(&path), Vec::new()).expect_err("an unknown key is refused").to_string();
    std::fs::remove_file(&path).ok();
    assert!(err.contains("page_sise"), "the key is named: {err}");
    assert!(err.contains(&path.display().to_string()), "the file is named: {err}");
}

#[test]
fn a_good_config_file_loads() {
    let path = temp_config("good", "bind: 127.0.0.1:9000\nhttp:\n  stateless: true\n  max_body_bytes: 2048\n");
    let config = Config::load(Some(&path), Vec::new());
    std::fs::remove_file(&path).ok();
    let config = config.expect("a valid file loads");
    assert_eq!(config.bind.to_string(), "127.0.0.1:9000");
    assert!(config.http_options().stateless);
    assert_eq!(config.http_options().max_body_bytes, 2048);
}

#[test]
fn the_binary_refuses_a_bad_config_with_exit_2() {
    let path = temp_config("binary-bad", "no_such_setting: 1\n");
    let output = binary(&["--config", path.to_str().unwrap(), "tools", "list"]);
    std::fs::remove_file(&path).ok();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no_such_setting"), "{stderr}");
}
