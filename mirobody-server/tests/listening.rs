//! Where the real binary listens: on port 0 it binds a free port, reports it in its log and
//! names it in its default public URL; handed a socket by a service manager (systemd socket
//! activation, as the tests hand theirs), it serves on that socket and keeps it from the
//! children it starts.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{KillOnDrop, clean_command, fresh_data_dir, request, server_port, start_with};
use serde_json::Value;

#[test]
fn on_port_zero_the_log_and_the_public_url_name_the_port_bound() {
    let data_dir = fresh_data_dir("listen-port-zero");
    let mut child = clean_command()
        .args(["--bind", "127.0.0.1:0", "serve"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let stderr = child.stderr.take().unwrap();
    let server = KillOnDrop(child);
    // The log line that reports the address, read on a thread so a silent server fails the
    // test at the deadline instead of hanging it.
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("serving MCP") {
                let _ = sender.send(line);
            }
        }
    });
    let line = receiver.recv_timeout(Duration::from_secs(30)).expect("a 'serving MCP' line within 30 s");
    let address = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix("address="))
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let port: u16 = address.rsplit(':').next().unwrap().parse().unwrap_or_else(|e| panic!("{address}: {e}"));
    assert_ne!(port, 0, "the real port, not the one asked for: {line}");

    let (status, _, body) = request(port, "GET", "/.well-known/oauth-protected-resource", &[], b"");
    assert_eq!(status, 200);
    let document: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(document["resource"], format!("http://127.0.0.1:{port}/mcp"), "{document}");
    drop(server);
}

#[test]
fn a_handed_over_socket_is_served_and_not_inherited_by_children() {
    let data_dir = fresh_data_dir("listen-handed-over");
    let port = server_port();
    // `start_with` hands the reserved socket over and also passes `--bind` with its port: a
    // server that bound the port itself would fail, since the socket already holds it.
    let server = KillOnDrop(start_with(&data_dir, port, Stdio::null(), &[]));
    let (status, _, body) = request(port, "GET", "/healthz", &[], b"");
    assert_eq!((status, body.as_slice()), (200, b"ok".as_slice()));

    // The socket is the server's fd 3, now close-on-exec (O_CLOEXEC is 02000000 in fdinfo's
    // octal flags), so the sandboxed document reader never holds it.
    let pid = server.0.id();
    let deadline = Instant::now() + Duration::from_secs(5);
    let flags = loop {
        let fdinfo = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/3")).expect("the server's fd 3");
        let flags = fdinfo.lines().find_map(|l| l.strip_prefix("flags:")).map(|f| f.trim().to_owned()).unwrap();
        if u32::from_str_radix(&flags, 8).unwrap() & 0o2000000 != 0 || Instant::now() > deadline {
            break flags;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_ne!(u32::from_str_radix(&flags, 8).unwrap() & 0o2000000, 0, "fd 3 flags {flags}: not close-on-exec");
    let socket = std::fs::read_link(format!("/proc/{pid}/fd/3")).unwrap();
    assert!(socket.to_string_lossy().starts_with("socket:"), "fd 3 is {}", socket.display());
}
