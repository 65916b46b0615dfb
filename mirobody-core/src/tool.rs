//! A tool: its declaration, its auth requirement, and its handler.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mirobody_schema::{Annotations, Param, TaskSupport, ToolSpec};
use serde_json::{Map, Value};

use crate::args::Args;
use crate::context::ToolContext;
use crate::result::{IntoToolResult, ToolResult};
use crate::user::UserInfo;

/// Runs a tool. Implemented for you by [`Tool::handler`] and [`Tool::sync_handler`]; implement it
/// directly for a handler that carries state.
pub trait Handler: Send + Sync + 'static {
    /// Runs one call.
    fn call<'a>(&'a self, args: Args, user: &'a UserInfo, ctx: &'a ToolContext<'a>) -> BoxFuture<'a, ToolResult>;
}

/// An `async fn(Args, &UserInfo, &ToolContext) -> R` usable as a handler.
///
/// The lifetime parameter lets the returned future borrow the user and the context; it is
/// implemented for every such `async fn` and needs no naming.
pub trait AsyncHandlerFn<'a>: Send + Sync {
    /// What the function returns.
    type Output: IntoToolResult;
    /// The future it returns.
    type Future: Future<Output = Self::Output> + Send + 'a;
    /// Calls it.
    fn call(&self, args: Args, user: &'a UserInfo, ctx: &'a ToolContext<'a>) -> Self::Future;
}

impl<'a, F, Fut> AsyncHandlerFn<'a> for F
where
    F: Fn(Args, &'a UserInfo, &'a ToolContext<'a>) -> Fut + Send + Sync,
    Fut: Future + Send + 'a,
    Fut::Output: IntoToolResult,
{
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, args: Args, user: &'a UserInfo, ctx: &'a ToolContext<'a>) -> Fut {
        self(args, user, ctx)
    }
}

struct AsyncFnHandler<F>(F);

impl<F> Handler for AsyncFnHandler<F>
where
    F: for<'a> AsyncHandlerFn<'a> + 'static,
{
    fn call<'a>(&'a self, args: Args, user: &'a UserInfo, ctx: &'a ToolContext<'a>) -> BoxFuture<'a, ToolResult> {
        let future = self.0.call(args, user, ctx);
        Box::pin(async move { future.await.into_tool_result() })
    }
}

struct SyncFnHandler<F>(F);

impl<F, R> Handler for SyncFnHandler<F>
where
    F: Fn(Args, &UserInfo, &ToolContext<'_>) -> R + Send + Sync + 'static,
    R: IntoToolResult,
{
    fn call<'a>(&'a self, args: Args, user: &'a UserInfo, ctx: &'a ToolContext<'a>) -> BoxFuture<'a, ToolResult> {
        let result = (self.0)(args, user, ctx).into_tool_result();
        Box::pin(std::future::ready(result))
    }
}

/// A tool: what the model sees ([`ToolSpec`]), whether it needs an authenticated caller, and
/// the handler that runs it.
///
/// ```
/// use mirobody_core::{Args, Param, Tool, ToolContext, ToolResult, Type, UserInfo};
/// use serde_json::json;
///
/// async fn weather(args: Args, _user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
///     let city = args.str("city").unwrap_or_default();
///     ToolResult::ok(json!({"city": city, "temperature_c": 22}))
/// }
///
/// let tool = Tool::new("weather", "Current weather for a city. Call it when asked about the weather.")
///     .param(Param::required("city", Type::String, "City name, e.g. \"Boston\""))
///     .read_only()
///     .handler(weather);
/// assert_eq!(tool.name(), "weather");
/// assert!(!tool.is_auth());
/// ```
#[derive(Clone)]
pub struct Tool {
    spec: ToolSpec,
    auth: bool,
    scopes: Vec<Cow<'static, str>>,
    client_capabilities: Vec<Cow<'static, str>>,
    handler: Option<Arc<dyn Handler>>,
    enabled: Option<fn() -> bool>,
    time_limit: Option<Duration>,
    session_required: bool,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("spec", &self.spec)
            .field("auth", &self.auth)
            .field("scopes", &self.scopes)
            .field("client_capabilities", &self.client_capabilities)
            .field("handler", &self.handler.is_some())
            .field("time_limit", &self.time_limit)
            .field("session_required", &self.session_required)
            .finish()
    }
}

impl Tool {
    /// A tool with a name and a description. Add a handler before registering it.
    pub fn new(name: impl Into<Cow<'static, str>>, description: impl Into<Cow<'static, str>>) -> Self {
        Tool::from_spec(ToolSpec::new(name, description))
    }

    /// A tool from a complete declaration.
    pub fn from_spec(spec: ToolSpec) -> Self {
        Tool {
            spec,
            auth: false,
            scopes: Vec::new(),
            client_capabilities: Vec::new(),
            handler: None,
            enabled: None,
            time_limit: None,
            session_required: false,
        }
    }

    fn map_spec(mut self, f: impl FnOnce(ToolSpec) -> ToolSpec) -> Self {
        self.spec = f(self.spec);
        self
    }

    /// Adds a parameter.
    pub fn param(self, param: Param) -> Self {
        self.map_spec(|s| s.param(param))
    }

    /// Adds parameters.
    pub fn params(self, params: impl IntoIterator<Item = Param>) -> Self {
        self.map_spec(|s| s.params(params))
    }

    /// A display title.
    pub fn title(self, title: impl Into<Cow<'static, str>>) -> Self {
        self.map_spec(|s| s.title(title))
    }

    /// A verbatim input schema, for nested arguments; it replaces the parameter table.
    pub fn raw_input_schema(self, schema: Value) -> Self {
        self.map_spec(|s| s.raw_input_schema(schema))
    }

    /// The schema of the structured results.
    pub fn output_schema(self, schema: Value) -> Self {
        self.map_spec(|s| s.output_schema(schema))
    }

    /// What the tool does to data.
    pub fn annotations(self, annotations: Annotations) -> Self {
        self.map_spec(|s| s.annotations(annotations))
    }

    /// Marks the tool as only reading the server's own data.
    pub fn read_only(self) -> Self {
        self.annotations(Annotations::read_only())
    }

    /// Marks the tool as adding data without destroying any.
    pub fn additive(self) -> Self {
        self.annotations(Annotations::additive())
    }

    /// Marks the tool as one that may overwrite or delete data.
    pub fn destructive(self) -> Self {
        self.annotations(Annotations::destructive())
    }

    /// MCP `_meta` for the tool.
    pub fn meta(self, meta: Map<String, Value>) -> Self {
        self.map_spec(|s| s.meta(meta))
    }

    /// Requires an authenticated caller: the registry refuses anonymous calls before the
    /// handler runs.
    pub fn auth(mut self, required: bool) -> Self {
        self.auth = required;
        self
    }

    /// Declares that the tool works only inside a session the server keeps (it writes to
    /// "this conversation", say): where a request carries no session (MCP 2026-07-28, which
    /// has none; stateless HTTP; stdio) the tool is not listed, and a call is refused before
    /// the handler runs.
    ///
    /// ```
    /// use mirobody_core::{Args, Tool, ToolContext, ToolResult, UserInfo};
    ///
    /// let tool = Tool::new("title_chat", "Titles this conversation.")
    ///     .session_required(true)
    ///     .sync_handler(|_: Args, _: &UserInfo, _: &ToolContext<'_>| ToolResult::text("titled"));
    /// assert!(tool.is_session_required());
    /// ```
    pub fn session_required(mut self, required: bool) -> Self {
        self.session_required = required;
        self
    }

    /// Requires these OAuth scopes (and so an authenticated caller).
    pub fn require_scopes<S: Into<Cow<'static, str>>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self.auth |= !self.scopes.is_empty();
        self
    }

    /// Declares that the tool cannot work without a capability of the client (`sampling`,
    /// `elicitation`, `roots`): on MCP 2026-07-28 a call from a client that did not declare it
    /// is refused before the handler runs, with a `MissingRequiredClientCapability` error
    /// (-32021) naming it. On 2025-11-25 the handler runs and its question fails with
    /// [`PeerError::Unsupported`](crate::PeerError::Unsupported).
    ///
    /// ```
    /// use mirobody_core::{Tool, ToolResult};
    ///
    /// let tool = Tool::new("summarize", "Summarizes with the client's model.")
    ///     .requires_client_capability("sampling")
    ///     .sync_handler(|_, _, _| ToolResult::text("..."));
    /// assert_eq!(tool.required_client_capabilities(), ["sampling"]);
    /// ```
    pub fn requires_client_capability(mut self, capability: impl Into<Cow<'static, str>>) -> Self {
        let capability = capability.into();
        if !self.client_capabilities.contains(&capability) {
            self.client_capabilities.push(capability);
        }
        self
    }

    /// Whether a call may run as a task: answered at once with a handle that the client polls
    /// and cancels, the work going on in the background (the MCP tasks extension). A call
    /// becomes a task when its handler is still working after a short while, or at
    /// [`ToolContext::become_task`]; questions it asked before that travel as a 2026-07-28
    /// `input_required` result, questions after it through the task.
    ///
    /// ```
    /// use mirobody_core::{TaskSupport, Tool, ToolResult};
    ///
    /// let tool = Tool::new("import_archive", "Imports a large archive.")
    ///     .task_support(TaskSupport::Optional)
    ///     .sync_handler(|_, _, _| ToolResult::text("imported"));
    /// assert_eq!(tool.spec().task_support_level(), TaskSupport::Optional);
    /// ```
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.spec = self.spec.task_support(support);
        self
    }

    /// Links the tool to a view (MCP Apps): hosts that render views show the one at `uri` (a
    /// [`View`](crate::View) served as a resource) beside the call, fed its input and result;
    /// other clients ignore the link. Sets `_meta.ui.resourceUri` (and the older flat
    /// `ui/resourceUri`), keeping the rest of the tool's `_meta`.
    ///
    /// ```
    /// use mirobody_core::{Format, Tool, ToolResult};
    ///
    /// let tool = Tool::new("trend", "Shows a trend.").view("ui://charts/trend.html")
    ///     .sync_handler(|_, _, _| ToolResult::text("..."));
    /// assert_eq!(tool.spec().render(Format::Mcp)["_meta"]["ui"]["resourceUri"], "ui://charts/trend.html");
    /// ```
    pub fn view(mut self, uri: impl Into<String>) -> Self {
        let uri = uri.into();
        let mut meta = self.spec.meta_value().cloned().unwrap_or_default();
        let ui = meta.entry("ui").or_insert_with(|| Value::Object(Map::new()));
        if !ui.is_object() {
            *ui = Value::Object(Map::new());
        }
        if let Some(ui) = ui.as_object_mut() {
            ui.insert("resourceUri".into(), Value::String(uri.clone()));
        }
        meta.insert("ui/resourceUri".into(), Value::String(uri));
        self.spec = self.spec.meta(meta);
        self
    }

    /// How long one call may work: past it, a server that enforces time limits (as the MCP
    /// service does) stops waiting for the handler, drops it, and answers an error result
    /// saying so. The time the handler waits for its client to answer a question does not
    /// count. A server may set a limit for the tools that declare none, and override any.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mirobody_core::{Tool, ToolResult};
    ///
    /// let tool = Tool::new("render", "Draws a large chart.")
    ///     .time_limit(Duration::from_secs(30))
    ///     .sync_handler(|_, _, _| ToolResult::text("drawn"));
    /// assert_eq!(tool.declared_time_limit(), Some(Duration::from_secs(30)));
    /// ```
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// The time limit the tool declared ([`Tool::time_limit`]), if any.
    pub fn declared_time_limit(&self) -> Option<Duration> {
        self.time_limit
    }

    /// A predicate checked when the registry is built: false (or a panic) skips the tool.
    pub fn enabled_if(mut self, enabled: fn() -> bool) -> Self {
        self.enabled = Some(enabled);
        self
    }

    /// Sets an `async fn(Args, &UserInfo, &ToolContext) -> R` as the handler, where `R` is a
    /// [`ToolResult`], a [`Json`](crate::Json), a `String` or a `Result` of those.
    pub fn handler<F>(mut self, handler: F) -> Self
    where
        F: for<'a> AsyncHandlerFn<'a> + 'static,
    {
        self.handler = Some(Arc::new(AsyncFnHandler(handler)));
        self
    }

    /// Sets a plain synchronous function as the handler.
    pub fn sync_handler<F, R>(mut self, handler: F) -> Self
    where
        F: Fn(Args, &UserInfo, &ToolContext<'_>) -> R + Send + Sync + 'static,
        R: IntoToolResult,
    {
        self.handler = Some(Arc::new(SyncFnHandler(handler)));
        self
    }

    /// Sets a handler object.
    pub fn handler_object(mut self, handler: impl Handler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// The declaration.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.spec.name()
    }

    /// Whether an authenticated caller is required.
    pub fn is_auth(&self) -> bool {
        self.auth
    }

    /// Whether the tool works only inside a session ([`Tool::session_required`]).
    pub fn is_session_required(&self) -> bool {
        self.session_required
    }

    /// The scopes required.
    pub fn scopes(&self) -> &[Cow<'static, str>] {
        &self.scopes
    }

    /// The client capabilities the tool requires
    /// ([`Tool::requires_client_capability`]), in declaration order.
    pub fn required_client_capabilities(&self) -> &[Cow<'static, str>] {
        &self.client_capabilities
    }

    pub(crate) fn handler_ref(&self) -> Option<&Arc<dyn Handler>> {
        self.handler.as_ref()
    }

    pub(crate) fn enabled_fn(&self) -> Option<fn() -> bool> {
        self.enabled
    }
}
