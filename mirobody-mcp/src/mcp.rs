//! The MCP methods, independent of any transport: a request and the caller in, response bytes
//! out. The HTTP and stdio transports both call [`McpService`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mirobody_core::{
    AccessKind, AccessLog, AccessOutcome, Cache, CallError, ClientPeer, Db, Memory, PromptMessage, PromptRegistry,
    Registry, ResourceContents, ResourceError, ResourceRegistry, Storage, ToolContext, ToolResult, UserInfo,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::access::AccessWriter;
use crate::changes::ChangeNotifier;
use crate::jsonrpc::{self, ClientResponse, Id, Notification, Request, RpcError, code};
use crate::modern::ModernState;
use crate::mrtr::StateKey;
use crate::peer::PendingRequests;
use crate::scan::{Cursor, once};
use crate::session::{ClientInfo, Session, log_rank};

/// The protocol revisions served with the `initialize` handshake and sessions, newest first.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The newest revision served with the `initialize` handshake.
pub const LATEST_VERSION: &str = SUPPORTED_VERSIONS[0];

/// The backends tools may use; each optional.
#[derive(Clone, Default)]
pub struct Backends {
    /// The cache.
    pub cache: Option<Arc<dyn Cache>>,
    /// Object storage.
    pub storage: Option<Arc<dyn Storage>>,
    /// The relational store.
    pub db: Option<Arc<dyn Db>>,
    /// Long-term memory.
    pub memory: Option<Arc<dyn Memory>>,
}

impl Backends {
    /// A context borrowing these backends and the call's client.
    pub fn context<'a>(&'a self, client: Option<&'a dyn ClientPeer>) -> ToolContext<'a> {
        let mut ctx = ToolContext::new();
        if let Some(cache) = &self.cache {
            ctx = ctx.with_cache(cache.as_ref());
        }
        if let Some(storage) = &self.storage {
            ctx = ctx.with_storage(storage.as_ref());
        }
        if let Some(db) = &self.db {
            ctx = ctx.with_db(db.as_ref());
        }
        if let Some(memory) = &self.memory {
            ctx = ctx.with_memory(memory.as_ref());
        }
        if let Some(client) = client {
            ctx = ctx.with_client(client);
        }
        ctx
    }
}

/// What the server says about itself in `initialize`.
#[derive(Clone, Debug)]
pub struct ServerInfo {
    /// The name.
    pub name: String,
    /// The version.
    pub version: String,
    /// Instructions for the model, if any.
    pub instructions: Option<String>,
}

impl Default for ServerInfo {
    fn default() -> Self {
        ServerInfo { name: "mirobody".into(), version: env!("CARGO_PKG_VERSION").into(), instructions: None }
    }
}

/// Protocol options.
#[derive(Clone, Debug)]
pub struct McpOptions {
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Leave tools that need authentication out of anonymous `tools/list` replies.
    pub hide_auth_tools_from_anonymous: bool,
    /// How long a tool waits for the client to answer a question.
    pub answer_timeout: Duration,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions { page_size: 100, hide_auth_tools_from_anonymous: false, answer_timeout: Duration::from_secs(300) }
    }
}

/// How a reply should travel, beyond its JSON-RPC body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// A normal reply.
    Ok,
    /// The method needs an authenticated caller (HTTP 401 with a challenge).
    Unauthenticated,
    /// The caller's token lacks these scopes (HTTP 403).
    Forbidden(Vec<String>),
}

/// A response to one request.
#[derive(Debug)]
pub struct Reply {
    /// The JSON-RPC response.
    pub body: Vec<u8>,
    /// How it should travel.
    pub status: Status,
}

impl Reply {
    fn ok(body: Vec<u8>) -> Self {
        Reply { body, status: Status::Ok }
    }

    fn error(id: &Id, error: RpcError) -> Self {
        Reply::ok(jsonrpc::error_bytes(Some(id), &error))
    }
}

/// The surroundings of one request, supplied by the transport.
pub struct Exchange<'a> {
    /// The verified caller.
    pub user: &'a UserInfo,
    /// The session.
    pub session: &'a Arc<Session>,
    /// The client, when the transport can carry messages back during the call.
    pub client: Option<&'a dyn ClientPeer>,
}

/// The MCP protocol engine: cheap to clone, shared by every transport.
#[derive(Clone)]
pub struct McpService {
    inner: Arc<Inner>,
}

/// Lists resources that depend on the caller (such as their uploads as `file://` resources),
/// appended to the registered ones in `resources/list`.
pub type ResourceLister = Arc<
    dyn for<'a> Fn(
            &'a UserInfo,
            &'a ToolContext<'a>,
        ) -> futures::future::BoxFuture<'a, Result<Vec<mirobody_core::ResourceInfo>, ResourceError>>
        + Send
        + Sync,
>;

/// Decides whether a caller may see and call a tool (per-agent allow and deny lists, say).
pub type ToolVisibility = Arc<dyn Fn(&UserInfo, &mirobody_core::Tool) -> bool + Send + Sync>;

/// Resources under a URI prefix that are the data of tools: listing them needs what calling
/// `list_tool` needs, reading one what calling `read_tool` needs.
#[derive(Clone, Debug)]
pub(crate) struct ResourceGuard {
    prefix: String,
    list_tool: String,
    read_tool: String,
}

// A resource read's outcome, for the access log.
pub(crate) fn resource_outcome<T>(read: &Result<T, ResourceError>) -> AccessOutcome {
    match read {
        Ok(_) => AccessOutcome::Ok,
        Err(ResourceError::NotFound(_)) => AccessOutcome::UnknownTool,
        Err(ResourceError::Unauthenticated(_)) => AccessOutcome::Forbidden,
        Err(_) => AccessOutcome::Failed,
    }
}

pub(crate) struct Inner {
    pub(crate) resource_lister: Option<ResourceLister>,
    pub(crate) resource_guards: Vec<ResourceGuard>,
    pub(crate) visibility: Option<ToolVisibility>,
    pub(crate) access_log: Option<AccessWriter>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) resources: ResourceRegistry,
    pub(crate) prompts: PromptRegistry,
    pub(crate) backends: Backends,
    pub(crate) info: ServerInfo,
    pub(crate) options: McpOptions,
    pub(crate) pending: Arc<PendingRequests>,
    pub(crate) changes: ChangeNotifier,
    pub(crate) modern: ModernState,
}

/// Builds an [`McpService`].
pub struct McpServiceBuilder {
    inner: Inner,
    state_key: Option<StateKey>,
    state_ttl: Duration,
    list_ttl: Duration,
}

impl McpServiceBuilder {
    /// Serves these resources.
    pub fn resources(mut self, resources: ResourceRegistry) -> Self {
        self.inner.resources = resources;
        self
    }

    /// Serves these prompts.
    pub fn prompts(mut self, prompts: PromptRegistry) -> Self {
        self.inner.prompts = prompts;
        self
    }

    /// Gives tools these backends.
    pub fn backends(mut self, backends: Backends) -> Self {
        self.inner.backends = backends;
        self
    }

    /// Sets what the server says about itself.
    pub fn info(mut self, info: ServerInfo) -> Self {
        self.inner.info = info;
        self
    }

    /// Hides tools from callers: a hidden tool is left out of `tools/list` and answered as
    /// unknown by `tools/call`.
    pub fn visibility(mut self, visibility: ToolVisibility) -> Self {
        self.inner.visibility = Some(visibility);
        self
    }

    /// Adds the caller's own resources to `resources/list`.
    pub fn resource_lister(mut self, lister: ResourceLister) -> Self {
        self.inner.resource_lister = Some(lister);
        self
    }

    /// Serves the resources whose URIs start with `prefix` only to callers who may call the
    /// tools that serve the same data: `resources/list` shows them to a caller who may call
    /// `list_tool`, and `resources/read` reads one for a caller who may call `read_tool`
    /// (visible to it under [`visibility`](Self::visibility), and its auth and scopes held).
    /// Others get the list without them, and "not found" for a read. Then an agent denied a
    /// tool cannot reach its data by another method.
    pub fn guard_resources(
        mut self,
        prefix: impl Into<String>,
        list_tool: impl Into<String>,
        read_tool: impl Into<String>,
    ) -> Self {
        let guard = ResourceGuard { prefix: prefix.into(), list_tool: list_tool.into(), read_tool: read_tool.into() };
        self.inner.resource_guards.push(guard);
        self
    }

    /// Records every tool call and resource read of an authenticated caller.
    pub fn access_log(mut self, log: Arc<dyn AccessLog>) -> Self {
        self.inner.access_log = Some(AccessWriter::new(log));
        self
    }

    /// Sets protocol options.
    pub fn options(mut self, options: McpOptions) -> Self {
        self.inner.options = options;
        self
    }

    /// The key that signs the `requestState` of multi-round-trip calls (MCP 2026-07-28), at
    /// least 32 random bytes. Every instance behind one load balancer needs the same key, since
    /// a client's retry may reach any of them; without one, a random key is made at start, so
    /// a state survives neither a restart nor a hop to another instance.
    pub fn request_state_key(mut self, key: StateKey) -> Self {
        self.state_key = Some(key);
        self
    }

    /// How long a `requestState` stays valid (default 10 minutes): the time a client has to
    /// answer a question and call again.
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// The caching hint (`ttlMs`, MCP 2026-07-28) on `server/discover` and the tool, prompt,
    /// resource and template listings (default 60 seconds; a registry does not change while it
    /// serves). Resource reads always say 0: their contents may change at any time.
    pub fn list_ttl(mut self, ttl: Duration) -> Self {
        self.list_ttl = ttl;
        self
    }

    /// Announces list changes through this notifier (to `subscriptions/listen` streams, MCP
    /// 2026-07-28): keep a clone to call [`ChangeNotifier::tools_changed`] and the like.
    pub fn change_notifier(mut self, changes: ChangeNotifier) -> Self {
        self.inner.changes = changes;
        self
    }

    /// The service.
    pub fn build(self) -> McpService {
        let McpServiceBuilder { mut inner, state_key, state_ttl, list_ttl } = self;
        inner.modern = ModernState::new(&inner, state_key.unwrap_or_else(StateKey::random), state_ttl, list_ttl);
        McpService { inner: Arc::new(inner) }
    }
}

/// The params of a `tools/call`.
#[derive(Deserialize)]
pub(crate) struct ToolCall<'a> {
    // Borrowed from the request unless it has escapes: no allocation per call.
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Value,
    // Any JSON: a `_meta` of another shape means no progress token, not a refused call. Boxed:
    // most calls have none, and the params move about whole (past 128 bytes, each move is a
    // call to memcpy).
    #[serde(rename = "_meta", default)]
    meta: Option<Box<Value>>,
}

impl ToolCall<'_> {
    /// The `_meta.progressToken`, if the call asked for progress.
    pub(crate) fn progress_token(&self) -> Option<Value> {
        token_in(self.meta.as_deref())
    }

    /// The same params, owning the tool name.
    pub(crate) fn into_owned(self) -> ToolCall<'static> {
        ToolCall { name: Cow::Owned(self.name.into_owned()), arguments: self.arguments, meta: self.meta }
    }
}

/// A `tools/call` request read in one pass, params and all. Reading the envelope first (as
/// [`jsonrpc::Message::parse`] does) skips over the params only for `tools/call` to read them
/// again: 4% of the instructions of a call. `None` for any other message, and for any this
/// pass cannot read (escapes in `jsonrpc` or `method` or a member's name, a missing or null
/// `id`, a member given twice, bad params, bad JSON): `Message::parse` then reads it and
/// judges it, as for every other message.
pub(crate) fn read_tool_call(bytes: &[u8]) -> Option<(Id, ToolCall<'static>)> {
    read_call(bytes, ToolCall::read).map(|(id, params)| (id, params.into_owned()))
}

impl<'a> ToolCall<'a> {
    // The params at `cursor`, as their derived `Deserialize` reads them.
    fn read(cursor: &mut Cursor<'a>) -> Option<ToolCall<'a>> {
        let (mut name, mut arguments, mut meta) = (None, None, None);
        cursor.members(|member, value| match member {
            "name" => once(&mut name, value.plain_str().map(Cow::Borrowed).or_else(|| value.value().map(Cow::Owned))?),
            "arguments" => once(&mut arguments, value.json_value()?),
            "_meta" => once(&mut meta, value.value::<Option<Box<Value>>>()?),
            _ => value.skip(),
        })?;
        Some(ToolCall { name: name?, arguments: arguments.unwrap_or_default(), meta: meta.flatten() })
    }
}

/// The id and params of a `tools/call` request, read in one pass, the params by
/// `read_params`; `None` as [`read_tool_call`] says. Both revisions' one-pass readers share
/// it, so both give up on exactly the same envelopes.
pub(crate) fn read_call<'a, P>(
    bytes: &'a [u8],
    read_params: impl FnOnce(&mut Cursor<'a>) -> Option<P>,
) -> Option<(Id, P)> {
    let mut cursor = Cursor::new(std::str::from_utf8(bytes).ok()?);
    let (mut version, mut id, mut method, mut params) = (None, None, None, None);
    let mut read_params = Some(read_params);
    cursor.members(|member, value| match member {
        "jsonrpc" => once(&mut version, (value.plain_str()? == "2.0").then_some(())?),
        "id" => once(&mut id, value.plain_u64().map(|n| Id::Number(n.into())).or_else(|| value.value())?),
        // Gives up at the method when it is another one, before reading the params.
        "method" => once(&mut method, (value.plain_str()? == "tools/call").then_some(())?),
        // Read once: a second `params` finds the reader gone.
        "params" => once(&mut params, read_params.take()?(value)?),
        _ => value.skip(),
    })?;
    (cursor.at_end() && version.is_some() && method.is_some()).then_some(())?;
    Some((id?, params?))
}

// What `initialize` reads of its params: the version, which known capabilities are declared,
// and the client's name and version. Everything else is skipped as it is read, never built into
// a value, so a client's capabilities cost nothing however large it makes them.
#[derive(Deserialize)]
struct InitializeParams<'a> {
    #[serde(rename = "protocolVersion")]
    protocol_version: std::borrow::Cow<'a, str>,
    #[serde(default)]
    capabilities: DeclaredCapabilities,
    #[serde(rename = "clientInfo", default)]
    #[serde(borrow)]
    client_info: InitializeClientInfo<'a>,
}

#[derive(Deserialize, Default)]
struct DeclaredCapabilities {
    roots: Option<serde::de::IgnoredAny>,
    sampling: Option<serde::de::IgnoredAny>,
    elicitation: Option<serde::de::IgnoredAny>,
    tasks: Option<serde::de::IgnoredAny>,
}

impl DeclaredCapabilities {
    fn names(&self) -> impl Iterator<Item = &'static str> {
        [
            ("roots", &self.roots),
            ("sampling", &self.sampling),
            ("elicitation", &self.elicitation),
            ("tasks", &self.tasks),
        ]
        .into_iter()
        .filter_map(|(name, declared)| declared.is_some().then_some(name))
    }
}

#[derive(Deserialize, Default)]
struct InitializeClientInfo<'a> {
    #[serde(default, borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    version: std::borrow::Cow<'a, str>,
}

#[derive(Deserialize, Default)]
struct CursorParams {
    cursor: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct UriParams {
    pub(crate) uri: String,
}

#[derive(Deserialize)]
pub(crate) struct PromptParams {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) arguments: HashMap<String, String>,
}

#[derive(Deserialize)]
struct LevelParams {
    level: String,
}

#[derive(Deserialize)]
struct CancelParams {
    #[serde(rename = "requestId")]
    request_id: Id,
}

pub(crate) fn parse<'de, T: Deserialize<'de>>(params: Option<&'de RawValue>, method: &str) -> Result<T, RpcError> {
    let raw = params.map(RawValue::get).unwrap_or("{}");
    serde_json::from_str(raw).map_err(|e| RpcError::invalid_params(format!("Invalid params for {method}: {e}")))
}

/// The `_meta.progressToken` of a request, if it asked for progress.
pub fn progress_token(request: &Request) -> Option<Value> {
    #[derive(Deserialize)]
    struct WithMeta {
        #[serde(rename = "_meta")]
        meta: Option<Value>,
    }
    let raw = request.params.as_deref()?.get();
    // Most calls carry no token: look before parsing the params a second time.
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("progressToken"));
    FINDER.find(raw.as_bytes())?;
    token_in(serde_json::from_str::<WithMeta>(raw).ok()?.meta.as_ref())
}

// The token in a `_meta`: a `_meta` of another shape, or a null token, asks for no progress.
fn token_in(meta: Option<&Value>) -> Option<Value> {
    meta?.get("progressToken").filter(|token| !token.is_null()).cloned()
}

impl McpService {
    /// A service over a tool registry, with no resources, prompts or backends yet.
    pub fn builder(registry: Arc<Registry>) -> McpServiceBuilder {
        McpServiceBuilder {
            inner: Inner {
                resource_lister: None,
                resource_guards: Vec::new(),
                visibility: None,
                access_log: None,
                registry,
                resources: ResourceRegistry::default(),
                prompts: PromptRegistry::default(),
                backends: Backends::default(),
                info: ServerInfo::default(),
                options: McpOptions::default(),
                pending: Arc::default(),
                changes: ChangeNotifier::new(),
                modern: ModernState::placeholder(),
            },
            state_key: None,
            state_ttl: Duration::from_secs(600),
            list_ttl: Duration::from_secs(60),
        }
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Where list changes are announced: call [`ChangeNotifier::tools_changed`] (and the like)
    /// to tell every open `subscriptions/listen` stream.
    pub fn changes(&self) -> &ChangeNotifier {
        &self.inner.changes
    }

    /// The tool registry.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The options.
    pub fn options(&self) -> &McpOptions {
        &self.inner.options
    }

    /// Server-to-client requests awaiting answers.
    pub fn pending(&self) -> &Arc<PendingRequests> {
        &self.inner.pending
    }

    /// Answers one request.
    pub async fn handle_request(&self, request: &Request, exchange: &Exchange<'_>) -> Reply {
        let id = &request.id;
        let params = request.params.as_deref();
        let outcome = match request.method.as_str() {
            "tools/call" => return self.call_tool(id, params, exchange).await,
            "tools/list" => return self.list_tools(id, params, exchange.user),
            "initialize" => self.initialize(params, exchange.session),
            "ping" => Ok(json!({})),
            "resources/list" => self.list_resources(params, exchange.user).await,
            "resources/templates/list" => single_page(params, "resources/templates/list").map(|()| self.list_templates()),
            "resources/read" => return self.read_resource(id, params, exchange).await,
            "resources/subscribe" | "resources/unsubscribe" => {
                parse::<UriParams>(params, &request.method).and_then(|p| {
                    if request.method == "resources/subscribe" {
                        exchange.session.subscribe(&p.uri).map_err(|e| RpcError::invalid_params(e.to_string()))?;
                    } else {
                        exchange.session.unsubscribe(&p.uri);
                    }
                    Ok(json!({}))
                })
            }
            "prompts/list" => self.list_prompts(params),
            "prompts/get" => self.get_prompt(params).await,
            "logging/setLevel" => parse::<LevelParams>(params, "logging/setLevel").and_then(|p| {
                let rank = log_rank(&p.level).ok_or_else(|| {
                    RpcError::invalid_params(format!("Unknown log level '{}'; use one of debug, info, notice, warning, error, critical, alert, emergency", p.level))
                })?;
                exchange.session.set_log_level(rank);
                Ok(json!({}))
            }),
            "completion/complete" => self.complete(params),
            other => Err(RpcError::new(code::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        };
        match outcome {
            Ok(result) => Reply::ok(jsonrpc::result_bytes(id, &result)),
            Err(error) => Reply::error(id, error),
        }
    }

    /// Takes a notification: `notifications/cancelled` stops the named request; others need
    /// no action.
    pub fn handle_notification(&self, notification: &Notification, session: &Session) {
        if notification.method == "notifications/cancelled"
            && let Ok(p) = parse::<CancelParams>(notification.params.as_deref(), &notification.method)
        {
            let cancelled = session.cancel_request(&p.request_id);
            tracing::debug!(request = %p.request_id, cancelled, "cancel requested");
        }
    }

    /// Delivers a client's answer to a server-to-client request; false when nothing waits for
    /// it from this session and user.
    pub fn handle_response(&self, response: ClientResponse, session: &Session, user: &UserInfo) -> bool {
        self.inner.pending.complete(&response.id, session.id(), user.user_id(), response.outcome)
    }

    /// Reads one message and answers it, with no client channel (requests to the client get
    /// [`PeerError::Unsupported`](mirobody_core::PeerError)). `None` for messages that get no
    /// response. A request whose `_meta` names a protocol version, or `server/discover`, is
    /// answered as 2026-07-28 (statelessly, `session` unused), as stdio does; every other
    /// message belongs to `session`. For in-process use and benchmarks; the transports add
    /// streaming.
    pub async fn handle_bytes(&self, bytes: &[u8], user: &UserInfo, session: &Arc<Session>) -> Option<Vec<u8>> {
        match jsonrpc::Message::parse(bytes) {
            Ok(jsonrpc::Message::Request(request)) if crate::modern::is_modern_request(&request) => {
                Some(self.serve_modern(&request, user, None).await.body)
            }
            Ok(jsonrpc::Message::Request(request)) => {
                let exchange = Exchange { user, session, client: None };
                Some(self.handle_request(&request, &exchange).await.body)
            }
            Ok(jsonrpc::Message::Notification(n)) => {
                self.handle_notification(&n, session);
                None
            }
            Ok(jsonrpc::Message::Response(r)) => {
                self.handle_response(r, session, user);
                None
            }
            Err(failure) => Some(jsonrpc::error_bytes(failure.id.as_ref(), &failure.error)),
        }
    }

    fn initialize(&self, params: Option<&RawValue>, session: &Session) -> Result<Value, RpcError> {
        let p: InitializeParams<'_> = parse(params, "initialize")?;
        let version = SUPPORTED_VERSIONS.iter().copied().find(|v| *v == p.protocol_version).unwrap_or(LATEST_VERSION);
        let client = ClientInfo::new(p.capabilities.names(), &p.client_info.name, &p.client_info.version);
        tracing::debug!(client = %client.name, client_version = %client.version, version, "initialize");
        if !session.initialize(version, client) {
            return Err(RpcError::new(code::INVALID_REQUEST, "Invalid request: the session is already initialized"));
        }
        let info = &self.inner.info;
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": false},
                "resources": {"subscribe": true, "listChanged": false},
                "prompts": {"listChanged": false},
                "logging": {},
                "completions": {},
            },
            "serverInfo": {"name": info.name, "version": info.version},
        });
        if let Some(instructions) = &info.instructions {
            result["instructions"] = json!(instructions);
        }
        Ok(result)
    }

    fn list_tools(&self, id: &Id, params: Option<&RawValue>, user: &UserInfo) -> Reply {
        match self.tools_page(params, user) {
            Ok(result) => Reply::ok(jsonrpc::raw_result_bytes(id, &result)),
            Err(e) => Reply::error(id, e),
        }
    }

    /// One page of `tools/list` as the JSON text of its result object (`{"tools":[...]}`, with
    /// `nextCursor` when more follow): the same for both protocol eras.
    pub(crate) fn tools_page(&self, params: Option<&RawValue>, user: &UserInfo) -> Result<String, RpcError> {
        let cursor = parse::<Option<CursorParams>>(params, "tools/list")?.unwrap_or_default().cursor;
        let registry = &self.inner.registry;
        let include_auth = user.authed() || !self.inner.options.hide_auth_tools_from_anonymous;
        let page_size = self.inner.options.page_size.max(1);
        // The common case, one page of every tool, is served from the pre-rendered listing.
        if cursor.is_none() && registry.len() <= page_size && self.inner.visibility.is_none() {
            let tools = registry.mcp_tools_json(include_auth);
            let mut result = String::with_capacity(tools.len() + 10);
            result.push_str(r#"{"tools":"#);
            result.push_str(tools);
            result.push('}');
            return Ok(result);
        }
        let start = match cursor.as_deref().map(decode_cursor) {
            None => 0,
            Some(Some(name)) => match registry.mcp_entries().position(|(t, _)| t.name() == name) {
                Some(i) => i,
                None => return Err(RpcError::invalid_params("Invalid cursor")),
            },
            Some(None) => return Err(RpcError::invalid_params("Invalid cursor")),
        };
        let visible: Vec<(&mirobody_core::Tool, &str)> = registry
            .mcp_entries()
            .skip(start)
            .filter(|(t, _)| (include_auth || !t.is_auth()) && self.visible(user, t))
            .take(page_size + 1)
            .collect();
        let mut result = String::from(r#"{"tools":["#);
        for (i, (_, entry)) in visible.iter().take(page_size).enumerate() {
            if i > 0 {
                result.push(',');
            }
            result.push_str(entry);
        }
        result.push(']');
        if let Some((next, _)) = visible.get(page_size) {
            result.push_str(r#","nextCursor":"#);
            result.push_str(&Value::from(encode_cursor(next.name())).to_string());
        }
        result.push('}');
        Ok(result)
    }

    /// Whether the tools/list answer depends on who asks (a visibility hook, or auth tools hidden
    /// from anonymous callers).
    pub(crate) fn tools_listing_is_per_caller(&self) -> bool {
        self.inner.visibility.is_some()
            || (self.inner.options.hide_auth_tools_from_anonymous && self.inner.registry.tools().any(|t| t.is_auth()))
    }

    pub(crate) fn visible(&self, user: &UserInfo, tool: &mirobody_core::Tool) -> bool {
        self.inner.visibility.as_ref().is_none_or(|visible| visible(user, tool))
    }

    // Whether `user` may call the tool named `name` as far as who they are goes: it exists, is
    // visible to them, and its auth and scopes hold (its arguments are not in question).
    fn may_call(&self, user: &UserInfo, name: &str) -> bool {
        self.inner.registry.get(name).is_some_and(|tool| {
            self.visible(user, tool)
                && (!tool.is_auth() || user.authed())
                && tool.scopes().iter().all(|scope| user.has_scope(scope))
        })
    }

    // Whether `user` may see (`list`) or read the resource at `uri`.
    fn may_reach(&self, user: &UserInfo, uri: &str, list: bool) -> bool {
        self.inner.resource_guards.iter().filter(|g| uri.starts_with(&g.prefix)).all(|guard| {
            let tool = if list { &guard.list_tool } else { &guard.read_tool };
            self.may_call(user, tool)
        })
    }

    // When an access by `user` starts: only an authenticated caller's accesses are logged, and
    // only theirs read the clock (a noticeable cost on every call otherwise).
    pub(crate) fn access_started(&self, user: &UserInfo) -> Option<Instant> {
        (self.inner.access_log.is_some() && user.user_id().is_some()).then(Instant::now)
    }

    // Best effort and off the reply's path: the log never delays or fails a call.
    pub(crate) fn record_access(
        &self,
        user: &UserInfo,
        kind: AccessKind,
        name: &str,
        outcome: AccessOutcome,
        started: Option<Instant>,
    ) {
        let (Some(log), Some(user_id), Some(started)) = (&self.inner.access_log, user.user_id(), started) else {
            return;
        };
        log.record(user_id, kind, name, outcome, started.elapsed());
    }

    // A tool call's outcome, for the access log, recorded when the caller is signed in.
    pub(crate) fn record_call(
        &self,
        user: &UserInfo,
        name: &str,
        outcome: &Result<ToolResult, CallError>,
        started: Option<Instant>,
    ) {
        let outcome = match outcome {
            Ok(result) if result.is_error() => AccessOutcome::Failed,
            Ok(_) => AccessOutcome::Ok,
            Err(CallError::UnknownTool { .. }) => AccessOutcome::UnknownTool,
            Err(CallError::InvalidArguments { .. }) => AccessOutcome::InvalidArguments,
            Err(_) => AccessOutcome::Forbidden,
        };
        self.record_access(user, AccessKind::Tool, name, outcome, started);
    }

    async fn call_tool(&self, id: &Id, params: Option<&RawValue>, exchange: &Exchange<'_>) -> Reply {
        match parse(params, "tools/call") {
            Ok(call) => self.run_tool_call(id, call, exchange).await,
            Err(e) => Reply::error(id, e),
        }
    }

    /// Runs a `tools/call` whose params are read.
    pub(crate) async fn run_tool_call(&self, id: &Id, call: ToolCall<'_>, exchange: &Exchange<'_>) -> Reply {
        let ToolCall { name, arguments, .. } = call;
        // Looked up here only when a hook decides what is visible: the registry looks again.
        if let Some(visible) = &self.inner.visibility
            && let Some(tool) = self.inner.registry.get(&name)
            && !visible(exchange.user, tool)
        {
            let started = self.access_started(exchange.user);
            self.record_access(exchange.user, AccessKind::Tool, &name, AccessOutcome::Hidden, started);
            let unknown = CallError::UnknownTool { name: name.into_owned() };
            return Reply::error(id, RpcError::invalid_params(unknown.to_string()));
        }
        let started = self.access_started(exchange.user);
        let ctx = self.inner.backends.context(exchange.client);
        let outcome = self.inner.registry.call(&name, arguments, exchange.user, &ctx).await;
        self.record_call(exchange.user, &name, &outcome, started);
        match outcome.map_err(call_failure) {
            Ok(result) | Err(CallFailure::Result(result)) => Reply::ok(jsonrpc::tool_result_bytes(id, &result)),
            Err(CallFailure::Error(error, status)) => Reply { body: jsonrpc::error_bytes(Some(id), &error), status },
        }
    }

    pub(crate) async fn list_resources(&self, params: Option<&RawValue>, user: &UserInfo) -> Result<Value, RpcError> {
        single_page(params, "resources/list")?;
        let mut resources: Vec<Value> = self
            .inner
            .resources
            .resources()
            .iter()
            .filter(|r| self.may_reach(user, &r.info().uri, true))
            .map(|r| serde_json::to_value(r.info()).unwrap_or_default())
            .collect();
        if let Some(lister) = &self.inner.resource_lister {
            let ctx = self.inner.backends.context(None);
            let own = lister(user, &ctx).await.map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))?;
            let reachable = own.iter().filter(|r| self.may_reach(user, &r.uri, true));
            resources.extend(reachable.map(|r| serde_json::to_value(r).unwrap_or_default()));
        }
        Ok(json!({"resources": resources}))
    }

    /// Whether `resources/list` depends on the caller.
    pub(crate) fn resources_listing_is_per_caller(&self) -> bool {
        self.inner.resource_lister.is_some()
    }

    pub(crate) fn list_templates(&self) -> Value {
        let templates: Vec<Value> = self.inner.resources.templates().iter().map(|t| t.to_json()).collect();
        json!({"resourceTemplates": templates})
    }

    async fn read_resource(&self, id: &Id, params: Option<&RawValue>, exchange: &Exchange<'_>) -> Reply {
        let p: UriParams = match parse(params, "resources/read") {
            Ok(p) => p,
            Err(e) => return Reply::error(id, e),
        };
        let started = self.access_started(exchange.user);
        let ctx = self.inner.backends.context(exchange.client);
        let read = self.read_contents(&p.uri, exchange.user, &ctx).await;
        self.record_access(exchange.user, AccessKind::Resource, &p.uri, resource_outcome(&read), started);
        match read {
            Ok(contents) => Reply::ok(jsonrpc::result_bytes(id, &json!({"contents": contents}))),
            Err(ResourceError::NotFound(uri)) => Reply::error(
                id,
                RpcError::new(code::RESOURCE_NOT_FOUND, format!("Resource not found: {uri}"))
                    .with_data(json!({"uri": uri})),
            ),
            Err(e @ ResourceError::Unauthenticated(_)) => Reply {
                body: jsonrpc::error_bytes(Some(id), &RpcError::new(code::UNAUTHORIZED, e.to_string())),
                status: Status::Unauthenticated,
            },
            Err(e) => Reply::error(id, RpcError::new(code::INTERNAL_ERROR, e.to_string())),
        }
    }

    /// Reads a resource or templated resource by URI (not logged: the caller records it).
    pub(crate) async fn read_contents(
        &self,
        uri: &str,
        user: &UserInfo,
        ctx: &ToolContext<'_>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let resources = &self.inner.resources;
        if !self.may_reach(user, uri, false) {
            return Err(ResourceError::NotFound(uri.to_owned()));
        }
        if let Some(resource) = resources.get(uri) {
            resource.read(user, ctx).await
        } else if let Some(template) = resources.template_for(uri) {
            template.read(uri, user, ctx).await
        } else {
            Err(ResourceError::NotFound(uri.to_owned()))
        }
    }

    pub(crate) fn list_prompts(&self, params: Option<&RawValue>) -> Result<Value, RpcError> {
        single_page(params, "prompts/list")?;
        let prompts: Vec<Value> = self.inner.prompts.prompts().iter().map(|p| p.to_json()).collect();
        Ok(json!({"prompts": prompts}))
    }

    async fn get_prompt(&self, params: Option<&RawValue>) -> Result<Value, RpcError> {
        let p: PromptParams = parse(params, "prompts/get")?;
        let ctx = self.inner.backends.context(None);
        let messages = self.render_prompt(&p.name, p.arguments, &ctx).await?;
        Ok(self.prompt_result(&p.name, messages))
    }

    /// Renders a prompt with the call's context.
    pub(crate) async fn render_prompt(
        &self,
        name: &str,
        arguments: HashMap<String, String>,
        ctx: &ToolContext<'_>,
    ) -> Result<Vec<PromptMessage>, RpcError> {
        let prompt = self
            .inner
            .prompts
            .get(name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown prompt: '{name}'")))?;
        prompt.get_with(arguments, ctx).await.map_err(RpcError::invalid_params)
    }

    /// The `prompts/get` result for rendered messages.
    pub(crate) fn prompt_result(&self, name: &str, messages: Vec<PromptMessage>) -> Value {
        let description = self.inner.prompts.get(name).map(|p| p.description()).unwrap_or_default();
        json!({"description": description, "messages": messages})
    }

    pub(crate) fn complete(&self, params: Option<&RawValue>) -> Result<Value, RpcError> {
        #[derive(Deserialize)]
        struct Ref {
            #[serde(rename = "type")]
            kind: String,
            name: Option<String>,
            uri: Option<String>,
        }
        #[derive(Deserialize)]
        struct CompleteParams {
            #[serde(rename = "ref")]
            reference: Ref,
        }
        let p: CompleteParams = parse(params, "completion/complete")?;
        let known = match p.reference.kind.as_str() {
            "ref/prompt" => p.reference.name.as_deref().is_some_and(|n| self.inner.prompts.get(n).is_some()),
            "ref/resource" => p.reference.uri.as_deref().is_some_and(|uri| {
                self.inner.resources.get(uri).is_some()
                    || self.inner.resources.templates().iter().any(|t| t.uri_template() == uri)
            }),
            _ => false,
        };
        if !known {
            return Err(RpcError::invalid_params("Unknown completion reference"));
        }
        // No completion sources are declared yet: an empty list is the honest answer.
        Ok(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
    }
}

/// How a [`CallError`] is answered: argument problems are results the model can read and correct
/// (SEP-1303); the rest are protocol errors, with the HTTP treatment they need.
pub(crate) enum CallFailure {
    /// An error result.
    Result(ToolResult),
    /// A JSON-RPC error.
    Error(RpcError, Status),
}

pub(crate) fn call_failure(error: CallError) -> CallFailure {
    match error {
        e @ CallError::InvalidArguments { .. } => CallFailure::Result(e.into_tool_result()),
        e @ CallError::UnknownTool { .. } => CallFailure::Error(RpcError::invalid_params(e.to_string()), Status::Ok),
        e @ CallError::Unauthenticated { .. } => {
            CallFailure::Error(RpcError::new(code::UNAUTHORIZED, e.to_string()), Status::Unauthenticated)
        }
        CallError::InsufficientScope { tool, missing } => {
            let message = format!("Insufficient scope for tool '{tool}': the token lacks {}", missing.join(", "));
            CallFailure::Error(RpcError::new(code::UNAUTHORIZED, message), Status::Forbidden(missing))
        }
        other => CallFailure::Error(RpcError::new(code::INTERNAL_ERROR, other.to_string()), Status::Ok),
    }
}

// Resources and prompts are listed in one page, so no cursor is ever valid for them.
pub(crate) fn single_page(params: Option<&RawValue>, method: &str) -> Result<(), RpcError> {
    match parse::<Option<CursorParams>>(params, method)? {
        Some(CursorParams { cursor: Some(_) }) => Err(RpcError::invalid_params("Invalid cursor")),
        _ => Ok(()),
    }
}

fn encode_cursor(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_cursor(cursor: &str) -> Option<String> {
    if !cursor.len().is_multiple_of(2) || cursor.len() > 256 {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..cursor.len()).step_by(2).map(|i| u8::from_str_radix(cursor.get(i..i + 2)?, 16).ok()).collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::scan::testing::{gaps, mangled_objects, object, walked_as_serde_reads};

    fn read(message: &str) -> Option<(Id, String, Value, Option<Value>)> {
        read_tool_call(message.as_bytes()).map(|(id, call)| {
            let token = call.progress_token();
            (id, call.name.into_owned(), call.arguments, token)
        })
    }

    #[test]
    fn a_tool_call_is_read_in_one_pass_with_its_params() {
        let (id, name, arguments, token) = read(
            r#" {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ec\u0068o","arguments":{"text":"hi"},"_meta":{"progressToken":"p-1"}}}"#,
        )
        .unwrap();
        assert_eq!(
            (id, name.as_str(), arguments, token),
            (Id::Number(7.into()), "echo", json!({"text": "hi"}), Some(json!("p-1")))
        );
        // Params before the method, no arguments, a string id.
        let (id, name, arguments, token) =
            read(r#"{"params":{"name":"echo"},"id":"a","method":"tools/call","jsonrpc":"2.0"}"#).unwrap();
        assert_eq!((id, name.as_str(), arguments, token), (Id::String("a".into()), "echo", Value::Null, None));
        // A `_meta` of another shape, or a null token, asks for no progress; the call still runs.
        for meta in [r#""x""#, r#"{"progressToken":null}"#, "null"] {
            let message =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"e","_meta":{meta}}}}}"#);
            assert_eq!(read(&message).unwrap().3, None, "{meta}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_envelope_reader() {
        let others = [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}} trailing"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"["2.0",1,"tools/call",{"name":"echo"}]"#,
            "{not json",
        ];
        for message in others {
            assert!(read(message).is_none(), "{message}");
        }
        let not_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\xff\"}}";
        assert!(read_tool_call(not_utf8).is_none());
    }

    // What the one-pass walk stands in for: serde's derived readers over the whole text.
    fn read_with_serde(bytes: &[u8]) -> Option<(Id, ToolCall<'_>)> {
        #[derive(Deserialize)]
        struct Envelope<'a> {
            jsonrpc: &'a str,
            id: Id,
            method: &'a str,
            #[serde(borrow)]
            params: ToolCall<'a>,
        }
        // serde would also read an array of the fields in order as the struct.
        if bytes.trim_ascii_start().first() != Some(&b'{') {
            return None;
        }
        let envelope: Envelope<'_> = serde_json::from_str(std::str::from_utf8(bytes).ok()?).ok()?;
        (envelope.jsonrpc == "2.0" && envelope.method == "tools/call").then_some((envelope.id, envelope.params))
    }

    // The arguments as their JSON text too: maps compare equal whatever their order, and the
    // order of the arguments must be the order serde_json reads.
    type Read = (Id, String, Value, String, Option<Value>);

    fn fields((id, call): (Id, ToolCall<'_>)) -> Read {
        let text = call.arguments.to_string();
        (id, call.name.into_owned(), call.arguments, text, call.meta.map(|meta| *meta))
    }

    // Members of envelopes and params, well and badly formed, as JSON text.
    const ENVELOPE_MEMBERS: &[&str] = &[
        r#""jsonrpc":"2.0""#,
        r#""jsonrpc":"1.0""#,
        r#""jsonrpc":"2\u002e0""#,
        r#""jsonrpc":2"#,
        r#""id":1"#,
        r#""id":-3"#,
        r#""id":1.5e3"#,
        r#""id":01"#,
        r#""id":12345678901234567890"#,
        r#""id":"a\"b""#,
        r#""id":null"#,
        r#""id":[]"#,
        r#""method":"tools/call""#,
        r#""method":"tools\/call""#,
        r#""method":"tools/list""#,
        r#""method":null"#,
        r#""params":[]"#,
        r#""params":null"#,
        r#""j\u0073onrpc":"2.0""#,
        r#""extra":{"jsonrpc":"1.0","id":[1,{"x":null}]}"#,
        r#""\u00e9":true"#,
    ];
    const PARAMS_MEMBERS: &[&str] = &[
        r#""name":"echo""#,
        r#""name":"ec\u0068o""#,
        r#""name":"caf\u00e9 \ud83d\ude00""#,
        r#""name":5"#,
        r#""name":null"#,
        r#""arguments":{"text":"hello, mirobody"}"#,
        r#""arguments":{"a":{"b":[1,2.5,{"c":null}]},"d":"\n"}"#,
        r#""arguments":{"n":1,"n":-2,"f":1.5e3,"big":123456789012345678901,"t":true,"u":false,"z":null}"#,
        r#""arguments":{"zero":0,"lead":012,"exp":1E2,"s":"caf\u00e9"}"#,
        r#""arguments":{"k\u0065y":1}"#,
        r#""arguments":{ }"#,
        r#""arguments":{"t":tru}"#,
        r#""arguments":{"a":[],"b":{},"c":"x","a":"again"}"#,
        r#""arguments":null"#,
        r#""arguments":[1]"#,
        r#""arguments":"s""#,
        r#""_meta":{"progressToken":"p"}"#,
        r#""_meta":{"progressToken":null}"#,
        r#""_meta":null"#,
        r#""_meta":"x""#,
        r#""n\u0061me":"echo""#,
        r#""other":[true,false]"#,
    ];

    // Envelopes of a call and of near misses: the members a call needs, others, some left
    // out, all shuffled, with any whitespace; now and then a byte changed, the text cut
    // short, or more after it.
    fn envelope_strategy() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::collection::vec;
        use proptest::prelude::*;
        use proptest::sample::select;
        let owned = |members: Vec<&str>| members.into_iter().map(str::to_owned).collect::<Vec<_>>();
        let params = (vec(select(PARAMS_MEMBERS), 0..4).prop_map(owned).prop_shuffle(), gaps()).prop_map(
            |(mut members, gaps)| {
                if !members.iter().any(|m| m.starts_with("\"name\"")) {
                    members.push(r#""name":"echo""#.to_owned());
                }
                object(&members, &gaps)
            },
        );
        let members =
            (params, vec(select(ENVELOPE_MEMBERS), 0..2), any::<u8>()).prop_map(move |(params, extra, left_out)| {
                let mut members = owned(vec![r#""jsonrpc":"2.0""#, r#""id":1"#, r#""method":"tools/call""#]);
                members.push(format!(r#""params":{params}"#));
                if left_out % 16 < 4 {
                    members.remove(usize::from(left_out % 16));
                }
                members.extend(owned(extra));
                members
            });
        mangled_objects(members)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The walk reads every call serde reads, the same, except those whose member names
        /// have escapes, which it leaves (with everything else it gives up on) to
        /// `Message::parse`; and it reads nothing serde would refuse.
        #[test]
        fn the_one_pass_walk_reads_what_serde_reads(text in envelope_strategy()) {
            let walked = read_call(&text, ToolCall::read).map(fields);
            walked_as_serde_reads(&text, walked, read_with_serde(&text).map(fields))?;
        }
    }

    #[test]
    fn the_strategy_makes_calls_both_readers_read_and_ones_they_refuse() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut both, mut neither) = (0, 0);
        for _ in 0..500 {
            let text = envelope_strategy().new_tree(&mut runner).unwrap().current();
            match (read_call(&text, ToolCall::read), read_with_serde(&text)) {
                (Some(_), Some(_)) => both += 1,
                (None, None) => neither += 1,
                _ => {}
            }
        }
        assert!(both > 50 && neither > 50, "both read {both}, neither {neither}");
    }
}
