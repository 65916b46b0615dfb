//! Upload links under attack: a link seen once (in a log, over a shoulder, in a model's
//! transcript) uploads one file and no more; uploads racing on it store one; a revoked link
//! and a guessed one store nothing; a person's dropped upload does not burn their link.

use std::io::Write;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{clean_command, request, session, tool};
use crate::harness::Server;

/// The path of a new link the honest user asked the model for.
fn new_link(server: &Server, sid: &str) -> String {
    let link = tool(server.port, &server.token, sid, "upload_link", json!({}));
    let url = link["url"].as_str().unwrap_or_else(|| panic!("no link: {link}"));
    url.strip_prefix(&format!("http://127.0.0.1:{}", server.port)).unwrap().to_owned()
}

fn files(server: &Server, sid: &str) -> Vec<Value> {
    tool(server.port, &server.token, sid, "list_files", json!({}))["files"].as_array().cloned().unwrap_or_default()
}

fn upload(server: &Server, path: &str, name: &str, body: &[u8]) -> (u16, String) {
    let (status, _, body) =
        request(server.port, "POST", &format!("{path}?filename={name}"), &[("Content-Type", "text/plain")], body);
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn a_used_link_is_refused_for_a_second_upload() {
    let mut server = Server::start("attack-link-reuse", &[]);
    let sid = session(server.port, &server.token);
    let path = new_link(&server, &sid);
    assert_eq!(upload(&server, &path, "mine.txt", b"Glucose 5.4 mmol/L\n").0, 201);
    // Whoever saw the link afterwards.
    for attempt in 0..5 {
        let (status, body) = upload(&server, &path, &format!("theirs-{attempt}.txt"), b"planted");
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("has been used"), "{body}");
    }
    let (status, _, _) = request(server.port, "GET", &path, &[], b"");
    assert_eq!(status, 403, "the page is not shown for a used link");
    let stored = files(&server, &sid);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0]["filename"], "mine.txt");
    server.assert_serves_honest_user();
}

#[test]
fn eight_parallel_uploads_on_one_single_use_link_store_one_file() {
    let mut server = Server::start("attack-link-race", &[]);
    let sid = session(server.port, &server.token);
    let path = new_link(&server, &sid);
    let start = Arc::new(Barrier::new(8));
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let (start, path, port) = (Arc::clone(&start), path.clone(), server.port);
            std::thread::spawn(move || {
                start.wait();
                let body = format!("racer {i}\n").repeat(2_000);
                request(port, "POST", &format!("{path}?filename=race-{i}.txt"), &[], body.as_bytes()).0
            })
        })
        .collect();
    let mut statuses: Vec<u16> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 403, 403, 403, 403, 403, 403, 403], "one upload stored, seven refused");
    assert_eq!(files(&server, &sid).len(), 1);
    server.assert_serves_honest_user();
}

#[test]
fn a_revoked_link_is_refused() {
    let mut server = Server::start("attack-link-revoked", &[]);
    let sid = session(server.port, &server.token);
    // Revoked by the operator for the person, from the command line, as after a leak.
    let cli = |args: &[&str]| {
        let output = clean_command()
            .args(["upload-link"])
            .args(args)
            .env("MIROBODY_BACKENDS__DATA_DIR", &server.data_dir)
            .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{}", server.port))
            .output()
            .expect("run upload-link");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let made = cli(&["create", "--user", "honest"]);
    let by_cli = made.strip_prefix(&format!("http://127.0.0.1:{}", server.port)).expect("a link").to_owned();
    let by_model = new_link(&server, &sid);
    assert_eq!(request(server.port, "GET", &by_cli, &[], b"").0, 200);
    assert_eq!(cli(&["revoke", "--user", "honest"]), "2 revoked");
    for path in [&by_cli, &by_model] {
        let (status, body) = upload(&server, path, "leaked.txt", b"planted");
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("revoked"), "{body}");
        assert_eq!(request(server.port, "GET", path, &[], b"").0, 403);
    }
    // Revoked by whoever holds it.
    let held = new_link(&server, &sid);
    assert_eq!(request(server.port, "DELETE", &held, &[], b"").0, 204);
    assert_eq!(upload(&server, &held, "late.txt", b"late").0, 403);
    assert!(files(&server, &sid).is_empty());
    server.assert_serves_honest_user();
}

#[test]
fn guessed_links_store_nothing() {
    let mut server = Server::start("attack-link-guess", &[]);
    let sid = session(server.port, &server.token);
    let real = new_link(&server, &sid);
    let id = real.rsplit('/').next().unwrap();
    // Near misses of a real id, other shapes, and the old signed format.
    let mut guesses: Vec<String> = (0..id.len())
        .step_by(3)
        .map(|i| {
            let mut bytes = id.as_bytes().to_vec();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            String::from_utf8(bytes).unwrap()
        })
        .collect();
    guesses.extend(["x".to_owned(), "a".repeat(33), "aG9uZXN0.9999999999.00".to_owned(), "%2e%2e".to_owned()]);
    for guess in &guesses {
        let (status, body) = upload(&server, &format!("/upload/{guess}"), "guess.txt", b"planted");
        assert!(status == 403 || status == 404, "{guess}: {status} {body}");
    }
    assert!(files(&server, &sid).is_empty());
    assert_eq!(upload(&server, &real, "mine.txt", b"mine").0, 201, "the real link still works");
    server.assert_serves_honest_user();
}

#[test]
fn an_upload_cut_off_midway_gives_the_link_its_use_back() {
    let mut server = Server::start("attack-link-dropped", &[("MIROBODY_HTTP__REQUEST_BODY_TIMEOUT", "2")]);
    let sid = session(server.port, &server.token);
    let path = new_link(&server, &sid);
    // A phone that loses its connection: the body stops halfway and the socket closes.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(stream, "POST {path}?filename=half.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\nhalf")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(stream);
    // The use comes back once the server notices; the page and an upload work again.
    let deadline = Instant::now() + Duration::from_secs(20);
    while request(server.port, "GET", &path, &[], b"").0 != 200 {
        assert!(Instant::now() < deadline, "the link stayed used after an upload that stored nothing");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(upload(&server, &path, "whole.txt", b"whole").0, 201);
    assert_eq!(files(&server, &sid).len(), 1);
    server.assert_serves_honest_user();
}

#[test]
fn a_link_is_never_written_to_the_log() {
    let mut server = Server::start("attack-link-log", &[("RUST_LOG", "trace")]);
    let sid = session(server.port, &server.token);
    let path = new_link(&server, &sid);
    let id = path.rsplit('/').next().unwrap().to_owned();
    assert_eq!(request(server.port, "GET", &path, &[], b"").0, 200);
    assert_eq!(upload(&server, &path, "mine.txt", b"mine").0, 201);
    assert_eq!(upload(&server, &path, "again.txt", b"again").0, 403);
    server.assert_serves_honest_user();
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(log.contains("upload"), "the log was written: {} bytes", log.len());
    assert!(!log.contains(&id), "the link's id is in the log:\n{}", server.log_tail(20));
}

// An upload through `path` from `client` (a trusted proxy's `X-Forwarded-For`) of `length`
// bytes whose first four bytes only are sent; the connection.
fn start_slow_link_upload(port: u16, path: &str, client: &str, length: usize) -> std::net::TcpStream {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        stream,
        "POST {path}?filename=slow.txt HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: {client}\r\n\
         Content-Type: text/plain\r\nContent-Length: {length}\r\nConnection: close\r\n\r\nslow"
    )
    .unwrap();
    stream
}

fn status_of(stream: &mut std::net::TcpStream) -> (u16, String) {
    use std::io::Read;
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    (reply.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), reply)
}

#[test]
fn one_persons_links_from_many_addresses_hold_that_persons_turns_only() {
    let mut server = Server::start(
        "attack-link-turns",
        &[
            ("MIROBODY_SERVE__TRUSTED_PROXIES", r#"["127.0.0.1/32"]"#),
            ("MIROBODY_UPLOADS__LINK_USES", "2"),
            ("MIROBODY_HTTP__REQUEST_BODY_TIMEOUT", "4"),
        ],
    );
    // Links of another person than the honest user, who must be served throughout.
    let owner = server.token_for("owner");
    let sid = session(server.port, &owner);
    let mint = || {
        let link = tool(server.port, &owner, &sid, "upload_link", json!({}));
        let url = link["url"].as_str().unwrap_or_else(|| panic!("no link: {link}"));
        url.strip_prefix(&format!("http://127.0.0.1:{}", server.port)).unwrap().to_owned()
    };
    let (first, second) = (mint(), mint());
    // Two slow uploads of one person, through two links, from two addresses: the person's
    // two turns (`uploads.max_concurrent_per_caller`).
    let mut slow = [
        start_slow_link_upload(server.port, &first, "198.51.100.1", 100_000),
        start_slow_link_upload(server.port, &second, "198.51.100.2", 100_000),
    ];
    std::thread::sleep(Duration::from_millis(700));
    // A third of theirs, from a third address: over the person's turns, refused at once.
    let headers = [("X-Forwarded-For", "198.51.100.3"), ("Content-Type", "text/plain")];
    let (status, head, body) = request(server.port, "POST", &format!("{first}?filename=third.txt"), &headers, b"3");
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 429, "{head}\n{body}");
    assert!(body.contains("as many files"), "{body}");
    // The honest user, another person, is not touched.
    server.assert_honest_upload();
    // The slow ones are cut at the body deadline (408), and keep the use they took: a link
    // whose use came back would hold a turn again and again.
    for stream in &mut slow {
        let (status, reply) = status_of(stream);
        assert_eq!(status, 408, "{reply}");
    }
    let headers = [("X-Forwarded-For", "198.51.100.4"), ("Content-Type", "text/plain")];
    let (status, head, body) = request(server.port, "POST", &format!("{first}?filename=last.txt"), &headers, b"4");
    assert_eq!(status, 201, "{head}\n{}", String::from_utf8_lossy(&body));
    // Two uses: one cut for its pace (kept), one refused for the turns (given back), this one.
    assert!(head.to_ascii_lowercase().contains("upload-link-uses-left: 0"), "{head}");
    assert_eq!(upload(&server, &first, "more.txt", b"more").0, 403, "the link is used up");
    let stored = tool(server.port, &owner, &sid, "list_files", json!({}))["files"].clone();
    assert_eq!(stored.as_array().map(Vec::len), Some(1), "{stored}");
    assert_eq!(stored[0]["filename"], "last.txt", "{stored}");
    server.assert_serves_honest_user();
}
