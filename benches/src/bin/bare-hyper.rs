//! The load benchmark's baselines: a bare hyper server that answers every request with the
//! bytes `mirobody-server` answers a `tools/call` of `echo` with, doing no work at all; or, with
//! `--json`, the least a JSON-RPC server must do for that call: read the request into a
//! `serde_json::Value`, take the text, and write the same response.
//! Run with `cargo run --release -p mirobody-benches --bin bare-hyper -- 127.0.0.1:18081 [--json]`.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

const BODY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"echo\":\"hello, mirobody\"}"}],"structuredContent":{"echo":"hello, mirobody"},"isError":false}}"#;

async fn answer(request: Request<hyper::body::Incoming>, json: bool) -> Result<Response<Full<Bytes>>, Infallible> {
    // Read the body as a real server must.
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let bytes = if json { Bytes::from(mirobody_benches::json_rpc_echo(&body)) } else { Bytes::from_static(BODY) };
    let mut response = Response::new(Full::new(bytes));
    response.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
    Ok(response)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let address = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:18081".to_owned());
    let json = std::env::args().any(|a| a == "--json");
    let listener = tokio::net::TcpListener::bind(&address).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, json));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}
