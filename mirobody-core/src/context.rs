//! What a handler may use besides its arguments: borrowed backend handles and the client.

use std::fmt;

use async_trait::async_trait;
use serde_json::Value;

use crate::backend::{BackendKind, Cache, Memory, MissingBackend, Storage};

/// The client on the other end of the call, for progress, logs and questions.
///
/// A transport implements it per call (over SSE on MCP 2025-11-25; as multi-round-trip
/// results on 2026-07-28); tools use it through [`ToolContext`].
///
/// # Asking the client on MCP 2026-07-28
///
/// The 2026-07-28 revision has no server-to-client requests: a call that needs an answer ends
/// with an `input_required` result listing its questions, and the client calls again with the
/// answers. The server then runs the handler again *from the start*, and each question the
/// handler asks returns the answer the client gave to it. So a handler that asks must ask
/// deterministically: the same questions, in the same order, for the same arguments, and it
/// should ask before it changes anything (or make its changes idempotent), because the code
/// before a question runs once per round. Questions asked concurrently (with `join!`) travel
/// to the client together in one round.
#[async_trait]
pub trait ClientPeer: Send + Sync {
    /// Reports progress (ignored when the client did not ask for progress).
    async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>);
    /// Sends a log message at `level` (`debug`, `info`, `warning`, `error`, ...), if the client's
    /// log level lets it through.
    async fn log(&self, level: &str, data: Value);
    /// Sends a request to the client (`elicitation/create`, `sampling/createMessage`,
    /// `roots/list`) and waits for its answer.
    async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError>;
    /// Like [`ClientPeer::request`], naming the question `key`: on 2026-07-28 the key of the
    /// question in the `inputRequests` the client receives (unique within one call). Transports
    /// that have no use for a key ignore it, which the default does.
    ///
    /// ```
    /// use async_trait::async_trait;
    /// use mirobody_core::{ClientPeer, PeerError, ToolContext};
    /// use serde_json::{Value, json};
    ///
    /// struct Echo;
    /// #[async_trait]
    /// impl ClientPeer for Echo {
    ///     async fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
    ///     async fn log(&self, _: &str, _: Value) {}
    ///     async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
    ///         Ok(json!({"method": method, "params": params}))
    ///     }
    ///     fn supports(&self, _: &str) -> bool { true }
    /// }
    ///
    /// let ctx = ToolContext::new().with_client(&Echo);
    /// let answer = futures::executor::block_on(ctx.request_keyed("k", "roots/list", json!({}))).unwrap();
    /// assert_eq!(answer["method"], "roots/list");
    /// assert!(ctx.client_supports("roots"));
    /// ```
    async fn request_keyed(&self, key: &str, method: &str, params: Value) -> Result<Value, PeerError> {
        let _ = key;
        self.request(method, params).await
    }
    /// Whether the client declared a capability (`elicitation`, `sampling`, `roots`).
    fn supports(&self, capability: &str) -> bool;
    /// Lets a call of a tool with [task support](crate::Tool::task_support) go on as a task
    /// from here (see [`ToolContext::become_task`]); the default, for clients without tasks,
    /// does nothing.
    fn become_task(&self) {}
}

/// Where a call says whose data it reads, for the access log: the MCP engine gives each call of
/// a signed-in caller one, and the read of another person's data (a care-circle member's) is
/// then recorded with its subject, never dropped (see [`ToolContext::reads_data_of`]).
#[async_trait]
pub trait ReadRecorder: Send + Sync {
    /// Notes that the call reads `subject`'s data, holding room in the access log for the
    /// call's record; an error when the log cannot take it in time (the read must not happen).
    async fn reads_data_of(&self, subject: &str) -> Result<(), ReadNotRecorded>;
}

/// A read of another person's data that the access log cannot record: the read must not
/// happen. Its message is for the model or person who asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReadNotRecorded(pub String);

/// Why a request to the client did not get an answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// There is no client to ask (an in-process call), or it lacks the capability.
    #[error("the client cannot answer {0} requests")]
    Unsupported(String),
    /// The client answered with an error.
    #[error("the client answered with error {code}: {message}")]
    Client {
        /// The JSON-RPC error code.
        code: i64,
        /// The message.
        message: String,
    },
    /// The client did not answer in time, or went away.
    #[error("the client did not answer")]
    NoAnswer,
}

/// Borrowed handles to what a tool may use. Each is `None` when that backend is not configured;
/// the accessors turn that into a clean error a handler can return with `?`.
///
/// ```
/// use mirobody_core::ToolContext;
///
/// let ctx = ToolContext::new();
/// let err = ctx.memory().err().unwrap();
/// assert_eq!(err.to_string(), "Long-term memory is not enabled on this server.");
/// ```
#[derive(Clone, Copy, Default)]
pub struct ToolContext<'a> {
    cache: Option<&'a dyn Cache>,
    storage: Option<&'a dyn Storage>,
    extensions: Option<&'a http::Extensions>,
    memory: Option<&'a dyn Memory>,
    client: Option<&'a dyn ClientPeer>,
    reads: Option<&'a dyn ReadRecorder>,
}

impl fmt::Debug for ToolContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("cache", &self.cache.is_some())
            .field("storage", &self.storage.is_some())
            .field("extensions", &self.extensions.map_or(0, http::Extensions::len))
            .field("memory", &self.memory.is_some())
            .field("client", &self.client.is_some())
            .field("reads", &self.reads.is_some())
            .finish()
    }
}

impl<'a> ToolContext<'a> {
    /// A context with no backends and no client.
    pub fn new() -> Self {
        ToolContext::default()
    }

    /// Sets the cache.
    pub fn with_cache(mut self, cache: &'a dyn Cache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Sets the object storage.
    pub fn with_storage(mut self, storage: &'a dyn Storage) -> Self {
        self.storage = Some(storage);
        self
    }

    /// Sets the application's own state, which its tools read with
    /// [`extension`](Self::extension): a database pool, an HTTP client, a store trait object.
    /// One value per type, as in an HTTP request's extensions.
    pub fn with_extensions(mut self, extensions: &'a http::Extensions) -> Self {
        self.extensions = Some(extensions);
        self
    }

    /// Sets the long-term memory.
    pub fn with_memory(mut self, memory: &'a dyn Memory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Sets the client peer.
    pub fn with_client(mut self, client: &'a dyn ClientPeer) -> Self {
        self.client = Some(client);
        self
    }

    /// Sets where the call records whose data it reads (the MCP engine does, per call).
    pub fn with_read_recorder(mut self, reads: &'a dyn ReadRecorder) -> Self {
        self.reads = Some(reads);
        self
    }

    /// The cache, or the error that it is not configured.
    pub fn cache(&self) -> Result<&'a dyn Cache, MissingBackend> {
        self.cache.ok_or(MissingBackend(BackendKind::Cache))
    }

    /// The object storage, or the error that it is not configured.
    pub fn storage(&self) -> Result<&'a dyn Storage, MissingBackend> {
        self.storage.ok_or(MissingBackend(BackendKind::Storage))
    }

    /// The application's value of type `T`, if it put one in the
    /// [extensions](Self::with_extensions).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mirobody_core::ToolContext;
    ///
    /// struct Greeting(&'static str);
    ///
    /// let mut state = http::Extensions::new();
    /// state.insert(Arc::new(Greeting("hello")));
    /// let ctx = ToolContext::new().with_extensions(&state);
    /// assert_eq!(ctx.extension::<Arc<Greeting>>().unwrap().0, "hello");
    /// assert!(ctx.extension::<String>().is_none());
    /// assert!(ToolContext::new().extension::<Arc<Greeting>>().is_none());
    /// ```
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&'a T> {
        self.extensions?.get::<T>()
    }

    /// The long-term memory, or the error that it is not enabled.
    pub fn memory(&self) -> Result<&'a dyn Memory, MissingBackend> {
        self.memory.ok_or(MissingBackend(BackendKind::Memory))
    }

    /// The client, when the call came from one that can be talked to.
    pub fn client(&self) -> Option<&'a dyn ClientPeer> {
        self.client
    }

    /// Reports progress to the client; does nothing when there is none.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(client) = self.client {
            client.progress(progress, total, message).await;
        }
    }

    /// Logs to the client; does nothing when there is none.
    pub async fn log(&self, level: &str, data: Value) {
        if let Some(client) = self.client {
            client.log(level, data).await;
        }
    }

    /// Asks the client something (an MCP request such as `elicitation/create`) and waits for
    /// the answer.
    ///
    /// One API for both protocol revisions: on 2025-11-25 the question travels as a request on
    /// the call's SSE stream; on 2026-07-28 as an `input_required` result, after which the
    /// handler runs again with the answer (see [`ClientPeer`] for what that asks of a handler).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        match self.client {
            Some(client) => client.request(method, params).await,
            None => Err(PeerError::Unsupported(method.to_owned())),
        }
    }

    /// Like [`ToolContext::request`], naming the question `key` (its key in a 2026-07-28
    /// `inputRequests` map; unique within one call). Unnamed questions are numbered in the
    /// order they are asked.
    ///
    /// ```
    /// use mirobody_core::{PeerError, ToolContext};
    /// use serde_json::json;
    ///
    /// let ctx = ToolContext::new();
    /// let answer = futures::executor::block_on(ctx.request_keyed("user_name", "elicitation/create", json!({})));
    /// assert_eq!(answer, Err(PeerError::Unsupported("elicitation/create".into())));
    /// ```
    pub async fn request_keyed(&self, key: &str, method: &str, params: Value) -> Result<Value, PeerError> {
        match self.client {
            Some(client) => client.request_keyed(key, method, params).await,
            None => Err(PeerError::Unsupported(method.to_owned())),
        }
    }

    /// Marks the point from which a call of a tool with [task
    /// support](crate::Tool::task_support) goes on as a task, when its client negotiated
    /// tasks: the client gets the task's handle now, and questions asked from here on reach it
    /// through the task. Questions asked before it are answered the 2026-07-28 way (an
    /// `input_required` result and a retry). Without it, a call becomes a task when it is
    /// still working after a short while. Does nothing for other calls.
    ///
    /// ```
    /// use mirobody_core::ToolContext;
    ///
    /// // An in-process call has no client: nothing happens.
    /// ToolContext::new().become_task();
    /// ```
    pub fn become_task(&self) {
        if let Some(client) = self.client {
            client.become_task();
        }
    }

    /// Says that the call is about to read `subject`'s data, before it reads it: when that is
    /// another person's (a care-circle member's), the access log holds room for the call's
    /// record, which names `subject` and is written when the call ends. An error means the log
    /// could not take it in time: the call must not read, and should return the error. Does
    /// nothing where no access log is kept (an in-process call).
    ///
    /// ```
    /// use mirobody_core::ToolContext;
    ///
    /// let read = futures::executor::block_on(ToolContext::new().reads_data_of("mom"));
    /// assert_eq!(read, Ok(()));
    /// ```
    pub async fn reads_data_of(&self, subject: &str) -> Result<(), ReadNotRecorded> {
        match self.reads {
            Some(reads) => reads.reads_data_of(subject).await,
            None => Ok(()),
        }
    }

    /// Whether the call's client declared a capability (`elicitation`, `sampling`, `roots`);
    /// false when there is no client.
    pub fn client_supports(&self, capability: &str) -> bool {
        self.client.is_some_and(|client| client.supports(capability))
    }
}
