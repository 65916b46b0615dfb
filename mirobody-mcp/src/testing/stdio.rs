//! The stdio transport over in-memory pipes: a client writing lines to `stdio::serve` and
//! reading what it writes back.

use std::time::Duration;

use mirobody_core::UserInfo;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

use super::{DEFAULT_TIMEOUT, TestError, parse_json, within};
use crate::McpEngine;

/// How many bytes each pipe holds before a writer waits for its reader.
const PIPE_CAPACITY: usize = 64 * 1024;

/// A client of [`stdio::serve`](crate::stdio::serve) running on a task, over in-memory pipes
/// instead of stdin and stdout.
///
/// ```
/// use std::sync::Arc;
/// use mirobody_core::{Registry, UserInfo};
/// use mirobody_mcp::McpEngine;
/// use mirobody_mcp::testing::StdioClient;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let engine = McpEngine::builder(Arc::new(Registry::builder().build()?)).build();
/// let mut stdio = StdioClient::start(engine, UserInfo::anonymous(), 1 << 20);
/// stdio.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await?;
/// assert_eq!(stdio.receive().await?, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
/// stdio.close().await??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct StdioClient {
    to_server: DuplexStream,
    from_server: Lines<BufReader<DuplexStream>>,
    task: JoinHandle<std::io::Result<()>>,
    timeout: Duration,
}

impl StdioClient {
    /// Serves `engine` to `user` on a new task, refusing lines over `max_line` bytes.
    /// Must be called inside a tokio runtime.
    pub fn start(engine: McpEngine, user: UserInfo, max_line: usize) -> Self {
        let (to_server, server_in) = tokio::io::duplex(PIPE_CAPACITY);
        let (server_out, from_server) = tokio::io::duplex(PIPE_CAPACITY);
        let task = tokio::spawn(crate::stdio::serve(engine, user, server_in, server_out, max_line));
        StdioClient { to_server, from_server: BufReader::new(from_server).lines(), task, timeout: DEFAULT_TIMEOUT }
    }

    /// The same client, waiting at most `timeout` for each write, line and the end.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Writes one line to the server (the newline is added), whatever it holds.
    pub async fn send_line(&mut self, line: &str) -> Result<(), TestError> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        within(self.timeout, "writing to the server", self.to_server.write_all(&bytes)).await??;
        Ok(())
    }

    /// Writes one JSON message as a line.
    pub async fn send(&mut self, message: &Value) -> Result<(), TestError> {
        self.send_line(&message.to_string()).await
    }

    /// The next line the server writes, as JSON.
    pub async fn receive(&mut self) -> Result<Value, TestError> {
        let line = within(self.timeout, "a line from the server", self.from_server.next_line()).await??;
        parse_json(line.ok_or(TestError::Ended)?.as_bytes())
    }

    /// Closes the server's input, reads every line it still writes until its output ends, and
    /// waits for `serve` to return: what `serve` returned, and those lines.
    pub async fn close_and_drain(self) -> Result<(std::io::Result<()>, Vec<Value>), TestError> {
        let StdioClient { to_server, mut from_server, task, timeout } = self;
        drop(to_server);
        let mut lines = Vec::new();
        while let Some(line) = within(timeout, "the server's output to end", from_server.next_line()).await?? {
            lines.push(parse_json(line.as_bytes())?);
        }
        let served = within(timeout, "serve to return", task).await?.map_err(|_| TestError::ServerPanicked)?;
        Ok((served, lines))
    }

    /// Closes the server's input and waits for `serve` to return: what it returned.
    pub async fn close(self) -> Result<std::io::Result<()>, TestError> {
        let StdioClient { to_server, from_server, task, timeout } = self;
        drop(to_server);
        let served = within(timeout, "serve to return", task).await?.map_err(|_| TestError::ServerPanicked)?;
        drop(from_server);
        Ok(served)
    }
}
