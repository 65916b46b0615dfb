//! Run with `cargo run -p example-embed-axum -- 127.0.0.1:3002`, then connect an MCP client to
//! `http://127.0.0.1:3002/mcp` and read the notes it adds at `http://127.0.0.1:3002/notes`.

use std::sync::Arc;

use example_embed_axum::{Notes, app};
use mirobody_mcp::ServeOptions;
use mirobody_mcp::http::HttpOptions;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let address = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3002".into());
    let (app, engine) = app(Arc::new(Notes::default()), HttpOptions::default());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!("MCP at http://{}/mcp, notes at http://{}/notes", listener.local_addr()?, listener.local_addr()?);
    mirobody_mcp::serve_with(listener, app, engine, ServeOptions::default()).await
}
