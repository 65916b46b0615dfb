//! One client's conversation with the engine, message by message: what a transport that
//! frames JSON-RPC messages itself (stdio's lines, WebSocket frames, a queue, an in-process
//! pipe) hands its messages to. stdio is written on it; a transport outside the crate can be.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{AbortHandle, Abortable};
use mirobody_core::UserInfo;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::jsonrpc::{self, Message, Request, RpcError, code};
use crate::protocol::peer::ChannelPeer;
use crate::protocol::rev_2026_07_28;
use crate::protocol::{self, Exchange, McpEngine};
use crate::session::{Session, random_token};

/// The bounds of one [`Connection`]: what one client can cost.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ConnectionOptions {
    /// The largest message taken, in bytes; a larger one is answered with an error and not
    /// read. The default is HTTP's body limit,
    /// [`HttpOptions::max_body_bytes`](crate::http::HttpOptions::max_body_bytes).
    pub max_message_bytes: usize,
    /// Requests one connection may have running at once; beyond it a request is answered
    /// with a JSON-RPC error (`-32000`) at once. Zero turns the bound off.
    pub max_running_requests: usize,
    /// Outgoing messages held before the engine waits for the transport to take them: a
    /// client that stops reading stops being answered, rather than growing the server's memory.
    pub outgoing_capacity: usize,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions { max_message_bytes: 4 * 1024 * 1024, max_running_requests: 32, outgoing_capacity: 256 }
    }
}

impl ConnectionOptions {
    /// These options with another message size limit.
    #[must_use]
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// These options with another bound on running requests (zero: none).
    #[must_use]
    pub fn with_max_running_requests(mut self, requests: usize) -> Self {
        self.max_running_requests = requests;
        self
    }
}

/// One client's message-level conversation with an [`McpEngine`], for writing a transport:
/// hand each complete incoming JSON-RPC message to [`handle`](Connection::handle), and send
/// the client what comes out of the receiver [`Connection::new`] gives back, each item one
/// complete JSON-RPC message (responses, notifications, and the server's own requests such as
/// `elicitation/create`).
///
/// Both protocol revisions are served, chosen per request as on HTTP and stdio: a request
/// carrying a `_meta` protocol version (or `server/discover`) is a stateless 2026-07-28 one;
/// anything else is served on the connection's 2025-11-25 session. Each request runs on its
/// own task, so a tool waiting for the client's answer does not stop the transport reading
/// it; `notifications/cancelled` stops a running request of either kind, which then sends
/// nothing. Dropping the connection stops every request still running;
/// [`close`](Connection::close) first lets them finish for a while.
///
/// The outgoing channel is bounded ([`ConnectionOptions::outgoing_capacity`]): a transport
/// that stops taking messages stops the requests that write them, and `handle` too when it
/// has an error to send.
///
/// ```
/// use std::sync::Arc;
/// use mirobody_core::{Registry, UserInfo};
/// use mirobody_mcp::{Connection, McpEngine};
/// use serde_json::{Value, json};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let engine = McpEngine::builder(Arc::new(Registry::builder().build()?)).build();
/// let (mut connection, mut outgoing) = Connection::new(engine, UserInfo::anonymous());
/// connection.handle(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#).await;
/// let reply: Value = serde_json::from_slice(&outgoing.recv().await.unwrap())?;
/// assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
/// connection.close(std::time::Duration::from_secs(1)).await;
/// assert!(outgoing.recv().await.is_none(), "the channel ends with the connection");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct Connection {
    engine: McpEngine,
    user: Arc<UserInfo>,
    // The id is internal (never sent): it keeps this client's pending questions apart.
    session: Arc<Session>,
    out: mpsc::Sender<Vec<u8>>,
    running: JoinSet<()>,
    options: ConnectionOptions,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("user", &self.user.user_id())
            .field("running", &self.running.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection of `user` (the identity the transport vouches for) with the default
    /// [`ConnectionOptions`], and the receiver of what it sends the client.
    pub fn new(engine: McpEngine, user: UserInfo) -> (Connection, mpsc::Receiver<Vec<u8>>) {
        Self::with_options(engine, user, ConnectionOptions::default())
    }

    /// A connection of `user` bounded by `options`, and the receiver of what it sends.
    pub fn with_options(
        engine: McpEngine,
        user: UserInfo,
        options: ConnectionOptions,
    ) -> (Connection, mpsc::Receiver<Vec<u8>>) {
        let (out, outgoing) = mpsc::channel(options.outgoing_capacity.max(1));
        let connection = Connection {
            engine,
            user: Arc::new(user),
            session: Arc::new(Session::new(Some(random_token()))),
            out,
            running: JoinSet::new(),
            options,
        };
        (connection, outgoing)
    }

    /// The bounds this connection keeps.
    pub fn options(&self) -> &ConnectionOptions {
        &self.options
    }

    /// How many of this connection's requests are running.
    pub fn running_requests(&mut self) -> usize {
        self.reap();
        self.running.len()
    }

    /// Takes one incoming message, the bytes of one JSON-RPC message. A request starts on its
    /// own task and this returns; a notification or a response to the server's question is
    /// handled here. Whatever is malformed, too large or over the bound of running requests is
    /// answered with an error. A blank message (only whitespace) is skipped. Must be called
    /// inside a tokio runtime.
    pub async fn handle(&mut self, message: &[u8]) {
        self.reap();
        if message.len() > self.options.max_message_bytes {
            self.refuse_oversized().await;
            return;
        }
        let text = message.trim_ascii();
        if text.is_empty() {
            return;
        }
        match Message::parse(text) {
            Err(failure) => self.send(jsonrpc::error_bytes(failure.id.as_ref(), &failure.error)).await,
            Ok(Message::Notification(notification)) => {
                let _ = self.engine.handle_notification(&notification, &self.session);
            }
            Ok(Message::Response(response)) => {
                let _ = self.engine.handle_response(response, &self.session, &self.user);
            }
            Ok(Message::Request(request)) => {
                let bound = self.options.max_running_requests;
                if bound != 0 && self.running.len() >= bound {
                    let error = RpcError::new(
                        code::TRANSPORT,
                        format!(
                            "Too many requests running on this connection (the limit is {bound}); wait for one to finish"
                        ),
                    );
                    self.send(jsonrpc::error_bytes(Some(&request.id), &error)).await;
                    return;
                }
                self.start(request);
            }
        }
    }

    /// Answers a message the transport stopped reading because it passed
    /// [`ConnectionOptions::max_message_bytes`] (as stdio does, keeping none of it): an error
    /// naming the limit, without an id.
    pub async fn refuse_oversized(&self) {
        let limit = self.options.max_message_bytes;
        let error = RpcError::new(code::INVALID_REQUEST, format!("Message too large: the limit is {limit} bytes"));
        self.send(jsonrpc::error_bytes(None, &error)).await;
    }

    /// Ends the conversation: nobody can answer the server's questions any more (the tools
    /// waiting get no answer at once), but the requests still running may finish and send
    /// their replies for up to `grace`; then those left are stopped. The outgoing channel ends
    /// once the last message is in it, so the transport should keep taking messages meanwhile.
    pub async fn close(mut self, grace: Duration) {
        self.session.set_closing();
        self.engine.pending().abandon(self.session.id());
        let running = &mut self.running;
        let drained = tokio::time::timeout(grace, async { while running.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            // The client is gone and will not read these; stop them rather than keep them.
            self.running.abort_all();
            while self.running.join_next().await.is_some() {}
        }
    }

    async fn send(&self, message: Vec<u8>) {
        // A closed receiver means the transport is gone; there is nobody left to tell.
        let _ = self.out.send(message).await;
    }

    // Forgets finished requests, so a long conversation does not accumulate them.
    fn reap(&mut self) {
        while self.running.try_join_next().is_some() {}
    }

    fn start(&mut self, request: Request) {
        let engine = self.engine.clone();
        let session = Arc::clone(&self.session);
        let user = Arc::clone(&self.user);
        let out = self.out.clone();
        let (abort, registration) = AbortHandle::new_pair();
        let guard = session.start_request(request.id.clone(), abort);
        if rev_2026_07_28::is_request(&request) {
            self.running.spawn(async move {
                let _running = guard;
                let call = engine.serve_rev_2026_07_28(&request, &user, Some(out.clone()));
                if let Ok(reply) = Abortable::new(call, registration).await {
                    let _ = out.send(reply.body).await;
                }
            });
            return;
        }
        self.running.spawn(async move {
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

impl Drop for Connection {
    // Stops what still runs: the registered requests here, the rest as the task set drops.
    fn drop(&mut self) {
        self.engine.pending().abandon(self.session.id());
        self.session.close();
    }
}
