//! The operator's binary is the whole program: its `tools` command lists its own tool, its
//! `echo` in place of the built-in (logged), and not the built-ins the configuration switches
//! off; a call reaches its own handler.

use std::path::Path;
use std::process::{Command, Output};

fn own_server(data_dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_example-own-server"));
    for (key, _) in std::env::vars().filter(|(key, _)| key.starts_with("MIROBODY_")) {
        command.env_remove(key);
    }
    command
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("MIROBODY_TOOLS__DISABLED", "render_chart, upload_link")
        .env("RUST_LOG", "warn")
        .output()
        .expect("the example runs")
}

fn data_dir(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("own-server-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn its_own_tools_replace_and_join_the_built_ins() {
    let dir = data_dir("list");
    let output = own_server(&dir, &["tools", "list"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    let names: Vec<&str> = stdout.lines().filter_map(|line| line.split_whitespace().next()).collect();
    for name in ["clinic_hours", "echo", "whoami", "fetch_health_data"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for name in ["render_chart", "upload_link"] {
        assert!(!names.contains(&name), "{name} is switched off but listed: {names:?}");
    }
    let echo = stdout.lines().find(|line| line.starts_with("echo ")).unwrap();
    assert!(echo.contains("in capitals"), "the deployment's echo, not the built-in: {echo}");
    assert!(stderr.contains("Overriding tool: echo"), "the replacement is logged: {stderr}");
}

#[test]
fn a_call_reaches_the_deployments_handler() {
    let dir = data_dir("call");
    let output = own_server(&dir, &["tools", "call", "echo", r#"{"text":"hi"}"#]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("HI"), "{stdout}");
    let output = own_server(&dir, &["tools", "call", "render_chart", "{}"]);
    assert!(!output.status.success(), "a switched-off tool cannot be called");
}
