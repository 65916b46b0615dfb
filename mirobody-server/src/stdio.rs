//! MCP over stdin/stdout: one JSON-RPC message per line, for desktop clients that start the
//! server as a child process. Logs go to stderr, never stdout.

use std::sync::Arc;

use futures::future::{AbortHandle, Abortable};
use mirobody_core::UserInfo;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::jsonrpc::{self, Message, RpcError, code};
use crate::mcp::{self, Exchange, McpService};
use crate::peer::ChannelPeer;
use crate::session::Session;

/// Serves one client over a reader and a writer (stdin and stdout in the binary) until the
/// reader ends. `user` is the identity the launching process vouches for.
pub async fn serve<R, W>(
    service: McpService,
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

    let session = Arc::new(Session::new(None));
    let user = Arc::new(user);
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader).take(max_message_bytes as u64 + 1).read_until(b'\n', &mut line).await?;
        if read == 0 {
            break;
        }
        if line.len() > max_message_bytes && !line.ends_with(b"\n") {
            // Skip the rest of the oversized line, then say why.
            let mut rest = Vec::new();
            reader.read_until(b'\n', &mut rest).await?;
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
            Ok(Message::Notification(n)) => service.handle_notification(&n, &session),
            Ok(Message::Response(r)) => {
                service.handle_response(r, &session, &user);
            }
            Ok(Message::Request(request)) => {
                // Each request runs on its own task, so a tool waiting for the client's answer
                // does not stop this loop from reading it.
                let service = service.clone();
                let session = Arc::clone(&session);
                let user = Arc::clone(&user);
                let out = out_tx.clone();
                let (abort, registration) = AbortHandle::new_pair();
                session.start_request(request.id.clone(), abort);
                tokio::spawn(async move {
                    let peer = ChannelPeer::new(
                        out.clone(),
                        Arc::clone(&session),
                        Arc::clone(service.pending()),
                        user.user_id().map(str::to_owned),
                        mcp::progress_token(&request),
                        service.options().answer_timeout,
                    );
                    let exchange = Exchange { user: &user, session: &session, client: Some(&peer) };
                    let reply = Abortable::new(service.handle_request(&request, &exchange), registration).await;
                    session.finish_request(&request.id);
                    if let Ok(reply) = reply {
                        let _ = out.send(reply.body).await;
                    }
                });
            }
        }
    }
    drop(out_tx);
    session.close();
    let _ = writer_task.await;
    Ok(())
}
