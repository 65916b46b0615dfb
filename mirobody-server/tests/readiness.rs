//! `/readyz`, the readiness check a load balancer polls, through the real binary: ready on the
//! embedded defaults; on a Redis of its own, ready, then 503 naming the cache once that Redis
//! is gone, while `/healthz` (liveness) still answers.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, fresh_data_dir, request, server_port, start_with};
use serde_json::Value;

fn readyz(port: u16) -> (u16, Value) {
    let (status, _, body) = request(port, "GET", "/readyz", &[], b"");
    (status, serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body))))
}

#[test]
fn ready_on_the_embedded_defaults() {
    let data_dir = fresh_data_dir("readyz");
    let port = server_port();
    let _server = common::KillOnDrop(start_with(&data_dir, port, Stdio::null(), &[]));
    let (status, body) = readyz(port);
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["ready"].as_bool(), &body["database"], &body["cache"]), (Some(true), &"ok".into(), &"ok".into()));
}

#[test]
fn not_ready_when_the_cache_is_gone() {
    if let Err(why) = mirobody_testkit::peers_off() {
        return println!("SKIPPED: not_ready_when_the_cache_is_gone: {why}");
    }
    let redis_port = free_port();
    let redis = Command::new("redis-server")
        .args(["--port", &redis_port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn();
    let redis = match redis {
        Ok(redis) => common::KillOnDrop(redis),
        Err(e) if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") => {
            panic!("redis-server is required (MIROBODY_REQUIRE_EXTERNAL=1): {e}")
        }
        Err(e) => return println!("SKIPPED: not_ready_when_the_cache_is_gone: no redis-server ({e})"),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", redis_port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let data_dir = fresh_data_dir("readyz-redis");
    let port = server_port();
    let url = format!("redis://127.0.0.1:{redis_port}");
    let _server = common::KillOnDrop(start_with(
        &data_dir,
        port,
        Stdio::null(),
        &[("MIROBODY_BACKENDS__REDIS_URL", &url), ("MIROBODY_SHARED_SESSIONS", "false")],
    ));
    assert_eq!(readyz(port).0, 200);

    drop(redis);
    let (status, body) = readyz(port);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["ready"], false);
    assert_eq!(body["database"], "ok");
    assert!(body["cache"]["error"].is_string(), "{body}");
    assert!(!body.to_string().contains(&url), "no URL in the answer: {body}");
    let (status, _, _) = request(port, "GET", "/healthz", &[], b"");
    assert_eq!(status, 200, "liveness does not depend on the backends");
}
