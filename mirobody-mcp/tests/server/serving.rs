//! `serve_with` and `serve_until` over real sockets: keep-alive connections, the header timeout
//! (a connection whose client never finishes its headers, or leaves it idle, is closed; one
//! with a call running is not), and graceful shutdown (in-flight calls finish, new connections
//! are refused, and the grace period is a limit).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use http::Request;
use hyper::body::Incoming;

use mirobody_mcp::http::{HttpOptions, McpHttp};
use mirobody_mcp::{McpOptions, ServeOptions, serve_until, serve_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::engine;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

// A server on a free port with these options; it stops when the test's runtime ends.
async fn start(options: ServeOptions) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let engine = engine(McpOptions::default());
    let app = McpHttp::new(engine.clone(), HttpOptions::default()).router_at("/mcp");
    tokio::spawn(serve_with(listener, app, engine, options));
    port
}

fn post(body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

// Reads one response with a Content-Length body.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().to_owned()))
                .and_then(|v| v.parse::<usize>().ok())
                .expect("a content-length");
            if bytes.len() >= end + 4 + length {
                return text;
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
            .await
            .expect("a response within 5 s")
            .unwrap();
        assert!(n > 0, "the connection closed mid-response: {text}");
        bytes.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test]
async fn one_connection_carries_many_requests() {
    let port = start(ServeOptions::default()).await;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    for _ in 0..3 {
        stream.write_all(post(INITIALIZE).as_bytes()).await.unwrap();
        let response = read_response(&mut stream).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.contains("\"protocolVersion\":\"2025-11-25\""), "{response}");
    }
}

// An app that is not ready until the test opens its gate, and then wakes whoever asked last.
#[derive(Clone)]
struct Gated<S> {
    app: S,
    open: Arc<AtomicBool>,
    waiting: Arc<Mutex<Option<Waker>>>,
}

impl<S: tower::Service<Request<Incoming>>> tower::Service<Request<Incoming>> for Gated<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if !self.open.load(Ordering::SeqCst) {
            *self.waiting.lock().unwrap() = Some(cx.waker().clone());
            return Poll::Pending;
        }
        self.app.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Incoming>) -> S::Future {
        assert!(self.open.load(Ordering::SeqCst), "called before it was ready");
        self.app.call(request)
    }
}

#[tokio::test]
async fn an_app_that_is_not_ready_is_called_once_it_is() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let engine = engine(McpOptions::default());
    let (open, waiting) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(None::<Waker>)));
    let app = Gated {
        app: McpHttp::new(engine.clone(), HttpOptions::default()).router_at("/mcp"),
        open: Arc::clone(&open),
        waiting: Arc::clone(&waiting),
    };
    tokio::spawn(serve_with(listener, app, engine, ServeOptions::default()));
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(post(INITIALIZE).as_bytes()).await.unwrap();
    let mut early = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut early)).await;
    assert!(read.is_err(), "answered before the app was ready");
    // Opened, and woken through the waker it was last asked with: the connection's own.
    open.store(true, Ordering::SeqCst);
    waiting.lock().unwrap().take().expect("the app was asked").wake();
    let response = read_response(&mut stream).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"protocolVersion\":\"2025-11-25\""), "{response}");
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let timeout = Duration::from_millis(300);
    let port = start(crate::support::with(|o: &mut ServeOptions| o.header_read_timeout = timeout)).await;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let started = Instant::now();
    stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: app").await.unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest)).await;
    let elapsed = started.elapsed();
    assert!(read.is_ok(), "the server kept the half-sent request open for 10 s");
    assert!(elapsed >= timeout, "closed after {elapsed:?}, before the {timeout:?} timeout");
    // hyper answers 408 where it can; either way no request was served.
    let answer = String::from_utf8_lossy(&rest);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test]
async fn a_connection_left_idle_is_closed_after_the_header_timeout() {
    let timeout = Duration::from_millis(300);
    let port = start(crate::support::with(|o: &mut ServeOptions| o.header_read_timeout = timeout)).await;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(post(INITIALIZE).as_bytes()).await.unwrap();
    assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
    let answered = Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest)).await;
    let idle = answered.elapsed();
    assert!(read.is_ok(), "the idle connection was kept open for 10 s");
    assert!(idle >= timeout, "closed after {idle:?} idle, before the {timeout:?} timeout");
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
}

#[tokio::test]
async fn requests_closer_together_than_the_header_timeout_keep_the_connection() {
    // A margin a loaded 2-core machine keeps: 200 ms apart against a 1 s timeout, 1.6 s in all.
    let timeout = Duration::from_secs(1);
    let port = start(crate::support::with(|o: &mut ServeOptions| o.header_read_timeout = timeout)).await;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stream.write_all(post(INITIALIZE).as_bytes()).await.unwrap();
        let response = read_response(&mut stream).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }
}

#[tokio::test]
async fn a_call_running_longer_than_the_header_timeout_is_answered() {
    let timeout = Duration::from_millis(300);
    // Stateless, so the call needs no session; `_stop` keeps the server up until the test ends.
    let (port, _stop, _server) =
        start_until(crate::support::with(|o: &mut ServeOptions| o.header_read_timeout = timeout)).await;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let started = Instant::now();
    stream.write_all(slow_call(1200).as_bytes()).await.unwrap();
    let response = read_response(&mut stream).await;
    assert!(started.elapsed() >= Duration::from_millis(1200), "answered after {:?}", started.elapsed());
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"isError\":false"), "{response}");
}

// A stateless server that stops when the returned sender fires; the handle says when it has.
async fn start_until(options: ServeOptions) -> (u16, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let engine = engine(McpOptions::default());
    let http = crate::support::with(|o: &mut HttpOptions| o.stateless = true);
    let app = McpHttp::new(engine.clone(), http).router_at("/mcp");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let signal = async move {
            let _ = stopped.await;
        };
        serve_until(listener, app, engine, options, signal).await.unwrap();
    });
    (port, stop, server)
}

fn slow_call(ms: u64) -> String {
    post(&format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"slow","arguments":{{"ms":{ms}}}}}}}"#
    ))
}

#[tokio::test]
async fn shutdown_lets_the_call_in_flight_finish_and_refuses_new_connections() {
    let (port, stop, server) = start_until(ServeOptions::default()).await;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(slow_call(300).as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    stop.send(()).unwrap();

    let response = read_response(&mut stream).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"isError\":false"), "the call in flight was answered: {response}");
    tokio::time::timeout(Duration::from_secs(5), server).await.expect("serve_until returns").unwrap();
    assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err(), "no new connections after shutdown");
}

#[tokio::test]
async fn the_grace_period_bounds_the_shutdown() {
    let grace = Duration::from_millis(200);
    let (port, stop, server) = start_until(crate::support::with(|o: &mut ServeOptions| o.shutdown_grace = grace)).await;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(slow_call(20_000).as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    stop.send(()).unwrap();

    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the shutdown waits no longer than its grace")
        .unwrap();
    assert!(started.elapsed() >= grace, "returned after {:?}, before the grace period", started.elapsed());
    // The connection of the call that did not finish is closed, unanswered.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the unfinished call's connection was left open");
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
}
