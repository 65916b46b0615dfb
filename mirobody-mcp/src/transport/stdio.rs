//! MCP over stdin/stdout: one JSON-RPC message per line, for desktop clients that start the
//! server as a child process. Logs go to stderr, never stdout.
//!
//! Both revisions are served, chosen per request like on HTTP: a request carrying a `_meta`
//! protocol version (or `server/discover`) is a stateless 2026-07-28 one; anything else is
//! served on the process's 2025-11-25 session. `notifications/cancelled` stops a request of
//! either kind, `subscriptions/listen` included.

use std::sync::Arc;

use futures::future::{AbortHandle, Abortable};
use mirobody_core::UserInfo;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::jsonrpc::{self, Message, RpcError, code};
use crate::protocol::peer::ChannelPeer;
use crate::protocol::rev_2026_07_28;
use crate::protocol::{self, Exchange, McpEngine};
use crate::session::{Session, random_token};

/// How long requests already read may run on once the input has closed: enough for ordinary
/// calls to answer (`printf ... | mirobody-server stdio` works), short enough that a client
/// shutting down is not kept waiting by a long tool.
pub const DRAIN_ON_EOF: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves one client over a reader and a writer (stdin and stdout in the binary) until the
/// reader ends. `user` is the identity the launching process vouches for.
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
    let (out_tx, mut out_rx) = mpsc::channel::<Vec<u8>>(256);
    let writer_task = tokio::spawn(async move {
        let mut writer = writer;
        while let Some(mut message) = out_rx.recv().await {
            message.push(b'\n');
            if writer.write_all(&message).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });

    // The id is internal (never sent): it keeps this client's pending questions apart.
    let session = Arc::new(Session::new(Some(random_token())));
    let mut running = JoinSet::new();
    let user = Arc::new(user);
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        // Reap finished requests so a long session does not accumulate them.
        while running.try_join_next().is_some() {}
        line.clear();
        let read = (&mut reader).take(max_message_bytes as u64 + 1).read_until(b'\n', &mut line).await?;
        if read == 0 {
            break;
        }
        if line.len() > max_message_bytes && !line.ends_with(b"\n") {
            // Skip the rest of the oversized line, a buffer at a time and keeping none of it,
            // then say why.
            skip_line(&mut reader).await?;
            let error = RpcError::new(
                code::INVALID_REQUEST,
                format!("Message too large: the limit is {max_message_bytes} bytes"),
            );
            let _ = out_tx.send(jsonrpc::error_bytes(None, &error)).await;
            continue;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match Message::parse(text) {
            Err(failure) => {
                let _ = out_tx.send(jsonrpc::error_bytes(failure.id.as_ref(), &failure.error)).await;
            }
            Ok(Message::Notification(n)) => {
                let _ = engine.handle_notification(&n, &session);
            }
            Ok(Message::Response(r)) => {
                let _ = engine.handle_response(r, &session, &user);
            }
            Ok(Message::Request(request)) => {
                // Each request runs on its own task, so a tool waiting for the client's answer
                // does not stop this loop from reading it.
                let engine = engine.clone();
                let session = Arc::clone(&session);
                let user = Arc::clone(&user);
                let out = out_tx.clone();
                let (abort, registration) = AbortHandle::new_pair();
                let guard = session.start_request(request.id.clone(), abort);
                if rev_2026_07_28::is_request(&request) {
                    running.spawn(async move {
                        let _running = guard;
                        let call = engine.serve_rev_2026_07_28(&request, &user, Some(out.clone()));
                        if let Ok(reply) = Abortable::new(call, registration).await {
                            let _ = out.send(reply.body).await;
                        }
                    });
                    continue;
                }
                running.spawn(async move {
                    let _running = guard;
                    let peer = ChannelPeer::new(
                        out.clone(),
                        Arc::clone(&session),
                        Arc::clone(engine.pending()),
                        user.user_id().map(str::to_owned),
                        protocol::progress_token(&request),
                        engine.options().answer_timeout,
                    );
                    let exchange = Exchange { user: &user, session: &session, client: Some(&peer) };
                    let reply = Abortable::new(engine.handle_request(&request, &exchange), registration).await;
                    if let Ok(reply) = reply {
                        let _ = out.send(reply.body).await;
                    }
                });
            }
        }
    }
    // The input is closed: nobody can answer a question any more, but every request already
    // read still gets its reply.
    session.set_closing();
    engine.pending().abandon(session.id());
    let drained = tokio::time::timeout(DRAIN_ON_EOF, async { while running.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        // The client is gone and will not read these; stop them rather than keep the process.
        running.abort_all();
        while running.join_next().await.is_some() {}
    }
    drop(out_tx);
    session.close();
    let _ = writer_task.await;
    Ok(())
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
