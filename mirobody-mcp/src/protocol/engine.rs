//! The MCP methods, independent of any transport: a request and the caller in, response bytes
//! out. The HTTP and stdio transports both call [`McpEngine`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mirobody_core::{
    Cache, CallError, ClientPeer, Memory, PromptMessage, PromptRegistry, Registry, ResourceContents, ResourceError,
    ResourceRegistry, Storage, ToolContext, ToolResult, UI_EXTENSION, UserInfo, VIEW_MIME_TYPE,
};
use mirobody_ports::{AccessKind, AccessLog, AccessOutcome, TaskStore};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::hooks::{ResourceLister, ToolVisibility, TracePropagation};
use super::rev_2026_07_28::state;
pub(crate) use super::versions::{LATEST_VERSION, SUPPORTED_VERSIONS};
pub(crate) use crate::jsonrpc::parse;
use crate::jsonrpc::{self, Id, RpcError, code};
use crate::metrics::McpMetrics;
use crate::protocol::access::{AccessLogOptions, AccessWriter, CallAccess};
use crate::protocol::changes::ChangeNotifier;
use crate::protocol::methods::Method;
pub(crate) use crate::protocol::outcome::{CallFailure, Status, call_failure};
use crate::protocol::peer::PendingRequests;
use crate::protocol::rev_2026_07_28::mrtr::StateKey;
use crate::protocol::tasks::{MemoryTaskStore, TaskOptions, Tasks};
use crate::session::Session;

/// The backends tools may use; each optional.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Backends {
    /// The cache.
    pub cache: Option<Arc<dyn Cache>>,
    /// Object storage.
    pub storage: Option<Arc<dyn Storage>>,
    /// Long-term memory.
    pub memory: Option<Arc<dyn Memory>>,
    /// The application's own state for its tools (a database pool, a client, a domain store),
    /// one value per type, read in a handler with
    /// [`ToolContext::extension`](mirobody_core::ToolContext::extension).
    pub extensions: http::Extensions,
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
        ctx = ctx.with_extensions(&self.extensions);
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
#[non_exhaustive]
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

/// Protocol options. They read from configuration too (durations by
/// [`human_duration`](crate::human_duration)), as mirobody-server's `mcp` section.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct McpOptions {
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Leave tools that need authentication out of anonymous `tools/list` replies.
    pub hide_auth_tools_from_anonymous: bool,
    /// How long a tool waits for the client to answer a question.
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub answer_timeout: Duration,
    /// How long a call of a tool that declares no time limit
    /// ([`Tool::time_limit`](mirobody_core::Tool::time_limit)) may work; `None`: no limit. Past
    /// it the call answers an error result. Time spent waiting for the client's answers does
    /// not count. Not read from configuration with the rest: it is the application's policy
    /// (mirobody-server's `tools` section, with a default of its own).
    #[serde(skip)]
    pub tool_time_limit: Option<Duration>,
    /// Time limits by tool name, over what the tools declare and `tool_time_limit` (`None`:
    /// no limit for that tool). Not read from configuration either.
    #[serde(skip)]
    pub tool_time_limits: std::collections::HashMap<String, Option<Duration>>,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            page_size: 100,
            hide_auth_tools_from_anonymous: false,
            answer_timeout: Duration::from_secs(300),
            tool_time_limit: None,
            tool_time_limits: std::collections::HashMap::new(),
        }
    }
}

/// A response to one request.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The JSON-RPC response.
    pub body: Vec<u8>,
    /// How it should travel.
    pub status: Status,
}

impl Reply {
    pub(crate) fn ok(body: Vec<u8>) -> Self {
        Reply { body, status: Status::Ok }
    }

    pub(crate) fn error(id: &Id, error: RpcError) -> Self {
        Reply::ok(jsonrpc::error_bytes(Some(id), &error))
    }
}

/// The surroundings of one request, supplied by the transport.
pub(crate) struct Exchange<'a> {
    /// The verified caller.
    pub user: &'a UserInfo,
    /// The session.
    pub session: &'a Arc<Session>,
    /// The client, when the transport can carry messages back during the call.
    pub client: Option<&'a dyn ClientPeer>,
}

/// The MCP protocol engine: cheap to clone, shared by every transport.
#[derive(Clone)]
pub struct McpEngine {
    pub(crate) inner: Arc<Inner>,
}

/// Resources under a URI prefix that are the data of tools: listing them needs what calling
/// `list_tool` needs, reading one what calling `read_tool` needs.
#[derive(Clone, Debug)]
pub(crate) struct ResourceGuard {
    pub(crate) prefix: String,
    pub(crate) list_tool: String,
    pub(crate) read_tool: String,
}

// A tool call's outcome, for the access log.
pub(crate) fn call_outcome(outcome: &Result<ToolResult, CallError>) -> AccessOutcome {
    match outcome {
        Ok(result) if result.is_error() => AccessOutcome::Failed,
        Ok(_) => AccessOutcome::Ok,
        Err(CallError::UnknownTool { .. } | CallError::NoSession { .. }) => AccessOutcome::UnknownTool,
        Err(CallError::InvalidArguments { .. }) => AccessOutcome::InvalidArguments,
        Err(_) => AccessOutcome::Forbidden,
    }
}

// Writes a call's record with its outcome, when one is kept.
pub(crate) fn finish_call(access: Option<&Arc<CallAccess>>, outcome: &Result<ToolResult, CallError>) {
    if let Some(access) = access {
        access.finish(call_outcome(outcome));
    }
}

// `ctx`, recording through `access` whose data the call reads, when a record is kept.
pub(crate) fn with_access<'a>(ctx: ToolContext<'a>, access: &'a Option<Arc<CallAccess>>) -> ToolContext<'a> {
    match access {
        Some(access) => ctx.with_read_recorder(&**access),
        None => ctx,
    }
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
    pub(crate) resource_lister: Option<Arc<dyn ResourceLister>>,
    pub(crate) resource_guards: Vec<ResourceGuard>,
    pub(crate) visibility: Option<Arc<dyn ToolVisibility>>,
    pub(crate) trace: Option<Arc<dyn TracePropagation>>,
    pub(crate) access_log: Option<AccessWriter>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) resources: ResourceRegistry,
    pub(crate) prompts: PromptRegistry,
    pub(crate) backends: Backends,
    pub(crate) info: ServerInfo,
    pub(crate) options: McpOptions,
    pub(crate) pending: Arc<PendingRequests>,
    pub(crate) changes: ChangeNotifier,
    pub(crate) rev_2026_07_28: state::State,
    pub(crate) tasks: Arc<Tasks>,
    // Resolved at build when the application asks for metrics; `None` costs the hot path one
    // branch and no clock.
    pub(crate) metrics: Option<Box<crate::metrics::McpMetrics>>,
}

/// Builds an [`McpEngine`].
pub struct McpEngineBuilder {
    pub(crate) inner: Inner,
    pub(crate) state_key: Option<StateKey>,
    pub(crate) state_ttl: Duration,
    pub(crate) task_store: Option<Arc<dyn TaskStore>>,
    pub(crate) task_options: TaskOptions,
    pub(crate) list_ttl: Duration,
    pub(crate) metrics: bool,
    pub(crate) access_log: Option<Arc<dyn AccessLog>>,
    pub(crate) access_options: AccessLogOptions,
}

impl McpEngineBuilder {
    /// Records [metrics](crate::metrics) through the `metrics` facade: requests by method,
    /// tool calls by tool and outcome with their durations, refusals, the shared sessions'
    /// backplane. Install the recorder first: the handles are resolved when the engine is
    /// built. Off by default, and then nothing is recorded or timed.
    pub fn metrics(mut self) -> Self {
        self.metrics = true;
        self
    }

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

    /// Gives tools these backends. Values given with [`extension`](Self::extension) before
    /// stay, unless `backends` carries one of the same type.
    pub fn backends(mut self, mut backends: Backends) -> Self {
        let mut extensions = std::mem::take(&mut self.inner.backends.extensions);
        extensions.extend(std::mem::take(&mut backends.extensions));
        backends.extensions = extensions;
        self.inner.backends = backends;
        self
    }

    /// Gives tools a value of the application's, which a handler reads with
    /// [`ToolContext::extension::<T>()`](mirobody_core::ToolContext::extension); a second value
    /// of the same type replaces the first. Wrap what is not `Clone` in an `Arc`.
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.inner.backends.extensions.insert(value);
        self
    }

    /// Sets what the server says about itself.
    pub fn info(mut self, info: ServerInfo) -> Self {
        self.inner.info = info;
        self
    }

    /// Hides tools from callers: a hidden tool is left out of `tools/list` and answered as
    /// unknown by `tools/call`. A closure `|user: &UserInfo, tool: &Tool| -> bool` will do.
    pub fn visibility(mut self, visibility: impl ToolVisibility) -> Self {
        self.inner.visibility = Some(Arc::new(visibility));
        self
    }

    /// Ties the engine's spans to the traces the application exports: a `tools/call`'s
    /// `_meta.traceparent`, and messages between instances of shared sessions. Unset, the
    /// engine reads no trace context and sends none.
    pub fn trace_propagation(mut self, propagation: impl TracePropagation) -> Self {
        self.inner.trace = Some(Arc::new(propagation));
        self
    }

    /// Adds the caller's own resources to `resources/list`.
    pub fn resource_lister(mut self, lister: impl ResourceLister) -> Self {
        self.inner.resource_lister = Some(Arc::new(lister));
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

    /// Records every tool call and resource read of an authenticated caller: a call at its
    /// end (a task's when the task ends), with whose data it read when that was another
    /// person's (see [`ToolContext::reads_data_of`]).
    pub fn access_log(mut self, log: Arc<dyn AccessLog>) -> Self {
        self.access_log = Some(log);
        self
    }

    /// How the access log is queued, waited for and kept.
    pub fn access_log_options(mut self, options: AccessLogOptions) -> Self {
        self.access_options = options;
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

    /// Where task records are kept (tasks outlive the process with a database store); by
    /// default, in memory.
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// How tasks are kept and bounded.
    pub fn task_options(mut self, options: TaskOptions) -> Self {
        self.task_options = options;
        self
    }

    /// The engine.
    pub fn build(self) -> McpEngine {
        let McpEngineBuilder {
            mut inner,
            state_key,
            state_ttl,
            list_ttl,
            task_store,
            task_options,
            metrics,
            access_log,
            access_options,
        } = self;
        if metrics {
            let methods = Method::ALL.map(Method::name);
            inner.metrics = Some(Box::new(McpMetrics::new(&methods, inner.registry.names())));
        }
        inner.access_log = access_log.map(|log| AccessWriter::new(log, access_options));
        let task_store = task_store.unwrap_or_else(|| Arc::new(MemoryTaskStore::default()));
        inner.tasks = Arc::new(Tasks::new(task_store, task_options, inner.changes.clone()));
        inner.rev_2026_07_28 = state::State::new(
            &inner.info.name,
            &inner.info.version,
            &inner.registry,
            state_key.unwrap_or_else(StateKey::random),
            state_ttl,
            list_ttl,
        );
        McpEngine { inner: Arc::new(inner) }
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct CursorParams {
    pub(crate) cursor: Option<String>,
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

impl McpEngine {
    /// An engine over a tool registry, with no resources, prompts or backends yet.
    pub fn builder(registry: Arc<Registry>) -> McpEngineBuilder {
        McpEngineBuilder {
            inner: Inner {
                resource_lister: None,
                resource_guards: Vec::new(),
                visibility: None,
                trace: None,
                access_log: None,
                registry,
                resources: ResourceRegistry::default(),
                prompts: PromptRegistry::default(),
                backends: Backends::default(),
                info: ServerInfo::default(),
                options: McpOptions::default(),
                pending: Arc::default(),
                changes: ChangeNotifier::new(),
                rev_2026_07_28: state::State::placeholder(),
                tasks: Arc::new(Tasks::new(
                    Arc::new(MemoryTaskStore::default()),
                    TaskOptions::default(),
                    ChangeNotifier::new(),
                )),
                metrics: None,
            },
            state_key: None,
            task_store: None,
            task_options: TaskOptions::default(),
            state_ttl: Duration::from_secs(600),
            list_ttl: Duration::from_secs(60),
            metrics: false,
            access_log: None,
            access_options: AccessLogOptions::default(),
        }
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// The extensions this engine advertises under `capabilities.extensions`, on both
    /// revisions: MCP Apps when it serves a view. (Tasks, a 2026-07-28 extension, is added by
    /// that revision's discovery.)
    pub(crate) fn extensions(&self) -> Map<String, Value> {
        let mut extensions = Map::new();
        let views =
            self.inner.resources.resources().iter().any(|r| r.info().mime_type.as_deref() == Some(VIEW_MIME_TYPE));
        if views {
            extensions.insert(UI_EXTENSION.into(), json!({}));
        }
        extensions
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
    pub(crate) fn pending(&self) -> &Arc<PendingRequests> {
        &self.inner.pending
    }

    /// The tasks of this process, and the store of every task's record.
    pub(crate) fn tasks(&self) -> &Arc<Tasks> {
        &self.inner.tasks
    }

    /// One page of `tools/list` as the JSON text of its result object (`{"tools":[...]}`, with
    /// `nextCursor` when more follow): the same for both protocol eras.
    pub(crate) fn tools_page(&self, params: Option<&RawValue>, user: &UserInfo) -> Result<String, RpcError> {
        let cursor = parse::<Option<CursorParams>>(params, "tools/list")?.unwrap_or_default().cursor;
        let registry = &self.inner.registry;
        let include_auth = user.authed() || !self.inner.options.hide_auth_tools_from_anonymous;
        let page_size = self.inner.options.page_size.max(1);
        // A request with no session (conversation) does not see the tools that need one.
        let hides_session_tools = user.session_id().is_none() && registry.tools().any(|t| t.is_session_required());
        // The common case, one page of every tool, is served from the pre-rendered listing.
        if cursor.is_none() && registry.len() <= page_size && self.inner.visibility.is_none() && !hides_session_tools {
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
            .filter(|(t, _)| {
                (include_auth || !t.is_auth())
                    && !(hides_session_tools && t.is_session_required())
                    && self.visible(user, t)
            })
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
        self.inner.visibility.as_ref().is_none_or(|policy| policy.is_visible(user, tool))
    }

    // Whether `user` may call the tool named `name` as far as who they are goes: it exists, is
    // visible to them, and its auth and scopes hold (its arguments are not in question).
    pub(crate) fn may_call(&self, user: &UserInfo, name: &str) -> bool {
        self.inner.registry.get(name).is_some_and(|tool| {
            self.visible(user, tool)
                && (!tool.is_auth() || user.authed())
                && (!tool.is_session_required() || user.session_id().is_some())
                && tool.scopes().iter().all(|scope| user.has_scope(scope))
        })
    }

    // Whether `user` may see (`list`) or read the resource at `uri`.
    pub(crate) fn may_reach(&self, user: &UserInfo, uri: &str, list: bool) -> bool {
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

    // The record of a tool call of `user`, when they are signed in and a log is kept: given
    // to the call's context, finished with its outcome when it ends.
    pub(crate) fn call_access(&self, user: &UserInfo, name: &str) -> Option<Arc<CallAccess>> {
        let (log, user_id) = (self.inner.access_log.as_ref()?, user.user_id()?);
        Some(Arc::new(CallAccess::new(log, user_id, AccessKind::Tool, name)))
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
            let own = lister.list(user, &ctx).await.map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))?;
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

    /// Whether any prompt is served: the `prompts` capability is advertised only then.
    pub(crate) fn has_prompts(&self) -> bool {
        !self.inner.prompts.prompts().is_empty()
    }

    pub(crate) fn list_prompts(&self, params: Option<&RawValue>) -> Result<Value, RpcError> {
        single_page(params, "prompts/list")?;
        let prompts: Vec<Value> = self.inner.prompts.prompts().iter().map(|p| p.to_json()).collect();
        Ok(json!({"prompts": prompts}))
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
        prompt.get_with(arguments, ctx).await.map_err(|e| RpcError::invalid_params(e.to_string()))
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

// Resources and prompts are listed in one page, so no cursor is ever valid for them.
pub(crate) fn single_page(params: Option<&RawValue>, method: &str) -> Result<(), RpcError> {
    match parse::<Option<CursorParams>>(params, method)? {
        Some(CursorParams { cursor: Some(_) }) => Err(RpcError::invalid_params("Invalid cursor")),
        _ => Ok(()),
    }
}

pub(crate) fn encode_cursor(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn decode_cursor(cursor: &str) -> Option<String> {
    if !cursor.len().is_multiple_of(2) || cursor.len() > 256 {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..cursor.len()).step_by(2).map(|i| u8::from_str_radix(cursor.get(i..i + 2)?, 16).ok()).collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_given_before_the_backends_stay_unless_the_backends_carry_their_own() {
        let registry = || Arc::new(Registry::builder().build().unwrap());
        let read = |engine: &McpEngine| engine.inner().backends.context(None).extension::<u32>().copied();

        let kept = McpEngine::builder(registry()).extension(7_u32).backends(Backends::default()).build();
        assert_eq!(read(&kept), Some(7), "a later backends() does not drop the application's state");

        let mut backends = Backends::default();
        backends.extensions.insert(9_u32);
        let replaced = McpEngine::builder(registry()).extension(7_u32).backends(backends).build();
        assert_eq!(read(&replaced), Some(9), "the later value of a type wins");

        let after = McpEngine::builder(registry()).backends(Backends::default()).extension(5_u32).build();
        assert_eq!(read(&after), Some(5));
    }
}
