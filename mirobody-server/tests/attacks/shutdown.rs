//! SIGTERM while a client holds a request open: the process is gone within its grace and a
//! few seconds, rather than waiting for whatever still runs.

use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::Server;

#[test]
fn sigterm_ends_the_process_within_the_grace_while_a_slow_upload_is_in_flight() {
    let mut server = Server::start("attack-shutdown-slow-upload", &[("MIROBODY_SERVE__SHUTDOWN_GRACE", "2s")]);
    let mut slow = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(
        slow,
        "POST /files?filename=slow.txt HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         Content-Type: text/plain\r\nContent-Length: 1048576\r\n\r\nslow",
        server.token
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    server.assert_alive();
    let asked = Instant::now();
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    // The grace (2 s), what is left of it for the backends and the runtime (at least 2 s
    // each), and a wide margin for a loaded machine.
    let bound = Duration::from_secs(2 + 2 + 2 + 6);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(asked.elapsed() < bound, "still running {:?} after SIGTERM:\n{}", asked.elapsed(), server.log_tail(20));
        std::thread::sleep(Duration::from_millis(50));
    };
    println!("exited {:?} after SIGTERM (grace 2 s)", asked.elapsed());
    assert!(status.success(), "{status}:\n{}", server.log_tail(20));
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(log.contains("shutting down") && log.contains("stopped"), "{}", server.log_tail(20));
    drop(slow);
}
