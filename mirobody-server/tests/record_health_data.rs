//! The model turn, over the real binary and the official Python SDK: the demo's PDF
//! lab report read with `read_file`, its values recorded with `record_health_data` (one
//! refused first, with why), found by `fetch_health_data` flagged and linked to the file, and
//! gone once the person confirms deleting the file (`tests/clients/record_client.py`).
//!
//! Without Python or PyPI the test says `SKIPPED: <why>`; with `MIROBODY_REQUIRE_EXTERNAL=1` it
//! fails instead.

mod common;

use std::path::Path;
use std::process::Command;

use common::{KillOnDrop, clean_command, fresh_data_dir, server_port, start};
use mirobody_testkit::{Peers, assert_client_passes, skip};

fn peers() -> Peers {
    Peers::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("external"))
}

/// The server's CLI on the test's data folder; its output.
fn cli(data_dir: &Path, port: u16, args: &[&str]) -> String {
    let output = clean_command()
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .expect("run the CLI");
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[test]
fn the_python_sdk_records_the_demo_lab_reports_values_and_they_leave_with_the_file() {
    let python = match peers().python_venv("mcp-2.3", &["mcp==2.3.0"]) {
        Ok(bin) => bin.join("python"),
        Err(e) => return skip(&format!("record_health_data over the Python SDK: {e}")),
    };
    let data_dir = fresh_data_dir("record-health-data");
    let port = server_port();
    cli(&data_dir, port, &["demo"]);
    // The demo made Alex a personal URL, shown once: a new one.
    let personal = cli(&data_dir, port, &["secret", "rotate", "--user", "demo"]);
    assert!(personal.starts_with(&format!("http://127.0.0.1:{port}/mcp/")), "{personal}");
    let _server = KillOnDrop(start(&data_dir, port));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/record_client.py");
    assert_client_passes(Command::new(python).arg(script).args([&personal, "recorded"]), "RECORD-SDK-OK");
}
