//! MCP over stdin/stdout: one JSON-RPC message per line, for desktop clients that start the
//! server as a child process. Logs go to stderr, never stdout.
//!
//! Both revisions are served, chosen per request like on HTTP: a request carrying a `_meta`
//! protocol version (or `server/discover`) is a stateless 2026-07-28 one; anything else is
//! served on the process's 2025-11-25 session. `notifications/cancelled` stops a request of
//! either kind, `subscriptions/listen` included.

use mirobody_core::UserInfo;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use super::messages::{Connection, ConnectionOptions};
use crate::protocol::McpEngine;

/// How long requests already read may run on once the input has closed: enough for ordinary
/// calls to answer (`printf ... | mirobody-server stdio` works), short enough that a client
/// shutting down is not kept waiting by a long tool.
pub const DRAIN_ON_EOF: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves one client over a reader and a writer (stdin and stdout in the binary) until the
/// reader ends, refusing lines over `max_message_bytes`. `user` is the identity the launching
/// process vouches for. The other bounds are [`ConnectionOptions`]' defaults; [`serve_with`]
/// takes them all.
pub async fn serve<R, W>(
    engine: McpEngine,
    user: UserInfo,
    reader: R,
    writer: W,
    max_message_bytes: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let options = ConnectionOptions::default().with_max_message_bytes(max_message_bytes);
    serve_with(engine, user, reader, writer, options).await
}

/// [`serve`] with every bound of the client's [`Connection`]: what is not line framing is the
/// connection's.
pub async fn serve_with<R, W>(
    engine: McpEngine,
    user: UserInfo,
    reader: R,
    writer: W,
    options: ConnectionOptions,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let max_message_bytes = options.max_message_bytes;
    let (mut connection, mut outgoing) = Connection::with_options(engine, user, options);
    let writer_task = tokio::spawn(async move {
        let mut writer = writer;
        while let Some(mut message) = outgoing.recv().await {
            message.push(b'\n');
            if writer.write_all(&message).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });
    let read = read_lines(&mut connection, reader, max_message_bytes).await;
    if read.is_ok() {
        // The input is closed: every request already read still gets its reply.
        connection.close(DRAIN_ON_EOF).await;
    } else {
        drop(connection);
    }
    let _ = writer_task.await;
    read
}

// Hands `connection` each line until the input ends.
async fn read_lines<R: AsyncRead + Unpin>(
    connection: &mut Connection,
    reader: R,
    max_message_bytes: usize,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader).take(max_message_bytes as u64 + 1).read_until(b'\n', &mut line).await?;
        if read == 0 {
            return Ok(());
        }
        if line.len() > max_message_bytes && !line.ends_with(b"\n") {
            // Skip the rest of the oversized line, a buffer at a time and keeping none of it,
            // then say why.
            skip_line(&mut reader).await?;
            connection.refuse_oversized().await;
            continue;
        }
        // The newline is framing, not the message's: a line of the limit and its newline fits.
        let message = line.strip_suffix(b"\n").unwrap_or(&line);
        connection.handle(message).await;
    }
}

// Reads up to and including the next newline (or to the end), keeping nothing: what an
// oversized line costs is its buffer's worth of memory, however long it is.
async fn skip_line<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        match memchr::memchr(b'\n', buffer) {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(());
            }
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    }
}
