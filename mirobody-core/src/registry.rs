//! The registry: tools gathered once, listings rendered once, calls dispatched.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use futures::FutureExt;
use mirobody_schema::{ArgProblem, Format, InvalidArguments, SpecError, Validator};
use serde_json::Value;

use crate::args::Args;
use crate::context::ToolContext;
use crate::result::ToolResult;
use crate::tool::{Handler, Tool};
use crate::user::UserInfo;

/// A tool registered from a file with [`register_tool!`](crate::register_tool).
#[doc(hidden)]
pub struct Registration {
    build: fn() -> Tool,
    file: &'static str,
    line: u32,
}

impl Registration {
    #[doc(hidden)]
    pub const fn new(build: fn() -> Tool, file: &'static str, line: u32) -> Self {
        Registration { build, file, line }
    }
}

inventory::collect!(Registration);

/// Why a registry could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool's declaration is invalid.
    #[error("{error} (registered at {origin})")]
    InvalidTool {
        /// What is wrong.
        error: SpecError,
        /// Where the tool was registered.
        origin: String,
    },
    /// Two tools share a name and the second does not say it overrides the first.
    #[error(
        "duplicate tool name '{name}': registered at {first} and again at {second}; rename one, \
         or register the second with RegistryBuilder::override_tool to replace the first"
    )]
    Duplicate {
        /// The name.
        name: String,
        /// Where the first was registered.
        first: String,
        /// Where the second was registered.
        second: String,
    },
    /// A tool has no handler.
    #[error("tool '{name}' has no handler (registered at {origin}); set one with Tool::handler")]
    NoHandler {
        /// The name.
        name: String,
        /// Where it was registered.
        origin: String,
    },
}

/// Why a call did not reach the tool's handler. A server maps these to protocol errors; an
/// in-process agent loop can turn them into an error result with [`CallError::into_tool_result`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool has that name.
    #[error("Unknown tool: '{name}'. Call tools/list to see the tools available.")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The tool needs an authenticated caller and there is none.
    #[error("Authentication required: tool '{tool}' reads or writes the user's own data; sign in and call it again.")]
    Unauthenticated {
        /// The tool.
        tool: String,
    },
    /// The tool works only inside a session ([`Tool::session_required`]) and the request
    /// has none.
    #[error(
        "Tool '{tool}' works only inside a session (a conversation this server keeps), and this request has \
         none: MCP 2026-07-28, stateless HTTP and stdio have no sessions."
    )]
    NoSession {
        /// The tool.
        tool: String,
    },
    /// The caller's token lacks scopes the tool requires.
    #[error("Insufficient scope for tool '{tool}': the token lacks {}.", missing.join(", "))]
    InsufficientScope {
        /// The tool.
        tool: String,
        /// The scopes missing.
        missing: Vec<String>,
    },
    /// The arguments do not fit the tool's declaration.
    #[error("{error}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Every problem found.
        error: InvalidArguments,
    },
}

impl CallError {
    /// An error result with this error's message, for a model to read and correct.
    pub fn into_tool_result(self) -> ToolResult {
        ToolResult::error(self.to_string())
    }
}

struct Entry {
    tool: Tool,
    handler: Arc<dyn Handler>,
    validator: Validator,
    mcp_entry: Box<str>,
}

struct Rendered {
    value: Value,
    json: Box<str>,
}

/// The set of tools a server or an application serves.
///
/// Built once from the self-registered tools and/or explicit additions; immutable afterwards,
/// so it can be shared across threads behind an `Arc` with no locking. Tools are kept in name
/// order, and every listing is rendered when the registry is built, not per request.
///
/// ```
/// use mirobody_core::{Args, Format, Param, Registry, Tool, ToolContext, ToolResult, Type, UserInfo};
/// use serde_json::json;
///
/// fn shout(args: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
///     ToolResult::ok(json!({"shout": args.str("text").unwrap_or_default().to_uppercase()}))
/// }
///
/// let registry = Registry::builder()
///     .tool(Tool::new("shout", "Repeat text in capitals.")
///         .param(Param::required("text", Type::String, "What to shout."))
///         .read_only()
///         .sync_handler(shout))
///     .build()
///     .unwrap();
///
/// assert_eq!(registry.functions(Format::OpenAi)[0]["function"]["name"], "shout");
///
/// let user = UserInfo::anonymous();
/// let ctx = ToolContext::new();
/// let result = futures::executor::block_on(registry.call("shout", json!({"text": "hi"}), &user, &ctx)).unwrap();
/// assert_eq!(result.structured_content().unwrap()["shout"], "HI");
///
/// let missing = futures::executor::block_on(registry.call("shout", json!({}), &user, &ctx));
/// assert!(missing.unwrap_err().to_string().contains("missing required argument 'text'"));
/// ```
pub struct Registry {
    entries: Vec<Entry>,
    index: foldhash::HashMap<Box<str>, usize>,
    mcp_all: Box<str>,
    mcp_public: Box<str>,
    // By position in `Format::ALL`, each rendered on first use: a server only ever serves the
    // MCP list, kept above, and an agent loop uses one or two formats.
    functions: [OnceLock<Rendered>; Format::ALL.len()],
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").field("tools", &self.names().collect::<Vec<_>>()).finish()
    }
}

/// Gathers tools for a [`Registry`].
#[derive(Default)]
pub struct RegistryBuilder {
    pending: Vec<(Tool, String, bool)>,
}

impl RegistryBuilder {
    /// Adds every tool registered with [`register_tool!`](crate::register_tool) in any crate
    /// linked into the program.
    pub fn registered(mut self) -> Self {
        for registration in inventory::iter::<Registration> {
            let origin = format!("{}:{}", registration.file, registration.line);
            self.pending.push(((registration.build)(), origin, false));
        }
        self
    }

    /// Adds a tool. A second tool with the same name is an error.
    #[track_caller]
    pub fn tool(mut self, tool: Tool) -> Self {
        let origin = std::panic::Location::caller().to_string();
        self.pending.push((tool, origin, false));
        self
    }

    /// Adds a tool that replaces any tool of the same name (for example a deployment's own
    /// version of a built-in). The replacement is logged.
    #[track_caller]
    pub fn override_tool(mut self, tool: Tool) -> Self {
        let origin = std::panic::Location::caller().to_string();
        self.pending.push((tool, origin, true));
        self
    }

    /// Checks every tool, drops disabled ones, and renders the listings.
    pub fn build(self) -> Result<Registry, RegistryError> {
        // Plain additions first, in a fixed order, so the duplicate error names the same pair
        // on every build; overrides apply after them.
        let mut pending = self.pending;
        pending.sort_by_key(|(_, _, overrides)| *overrides);
        let mut chosen: Vec<(Tool, String)> = Vec::with_capacity(pending.len());
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for (tool, origin, overrides) in pending {
            if !is_enabled(&tool) {
                continue;
            }
            match by_name.get(tool.name()) {
                Some(&i) if overrides => {
                    tracing::warn!(tool = tool.name(), by = %origin, replaced = %chosen[i].1, "Overriding tool: {}", tool.name());
                    chosen[i] = (tool, origin);
                }
                Some(&i) => {
                    let (mut first, mut second) = (chosen[i].1.clone(), origin);
                    if second < first {
                        std::mem::swap(&mut first, &mut second);
                    }
                    return Err(RegistryError::Duplicate { name: tool.name().to_owned(), first, second });
                }
                None => {
                    by_name.insert(tool.name().to_owned(), chosen.len());
                    chosen.push((tool, origin));
                }
            }
        }
        chosen.sort_by(|a, b| a.0.name().cmp(b.0.name()));

        let mut entries = Vec::with_capacity(chosen.len());
        for (tool, origin) in chosen {
            let validator = tool
                .spec()
                .validator()
                .map_err(|error| RegistryError::InvalidTool { error, origin: origin.clone() })?;
            let handler = tool
                .handler_ref()
                .cloned()
                .ok_or_else(|| RegistryError::NoHandler { name: tool.name().to_owned(), origin })?;
            let mcp_entry = tool.spec().render(Format::Mcp).to_string().into_boxed_str();
            tracing::info!(tool = tool.name(), "Loaded tool: {}", tool.name());
            entries.push(Entry { tool, handler, validator, mcp_entry });
        }
        Ok(Registry::assemble(entries))
    }
}

fn is_enabled(tool: &Tool) -> bool {
    let Some(enabled) = tool.enabled_fn() else { return true };
    match std::panic::catch_unwind(enabled) {
        Ok(true) => true,
        Ok(false) => {
            tracing::info!(tool = tool.name(), "Skipping disabled tool: {}", tool.name());
            false
        }
        Err(_) => {
            tracing::warn!(tool = tool.name(), "Skipping disabled tool: {} (its enabled check panicked)", tool.name());
            false
        }
    }
}

fn json_array<'a>(items: impl Iterator<Item = &'a str>) -> Box<str> {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
    out.into_boxed_str()
}

impl Registry {
    /// An empty builder.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// A registry of every self-registered tool linked into the program.
    pub fn from_registered() -> Result<Registry, RegistryError> {
        Registry::builder().registered().build()
    }

    fn assemble(entries: Vec<Entry>) -> Registry {
        let index = entries.iter().enumerate().map(|(i, e)| (e.tool.name().into(), i)).collect();
        let mcp_all = json_array(entries.iter().map(|e| &*e.mcp_entry));
        let mcp_public = json_array(entries.iter().filter(|e| !e.tool.is_auth()).map(|e| &*e.mcp_entry));
        Registry { entries, index, mcp_all, mcp_public, functions: Default::default() }
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tools, in name order.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &Tool> {
        self.entries.iter().map(|e| &e.tool)
    }

    /// The tool names, in order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.entries.iter().map(|e| e.tool.name())
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.index.get(name).map(|&i| &self.entries[i].tool)
    }

    /// Each tool with its MCP `tools/list` entry, pre-rendered as JSON text, in order: for
    /// listings that filter or paginate.
    pub fn mcp_entries(&self) -> impl ExactSizeIterator<Item = (&Tool, &str)> {
        self.entries.iter().map(|e| (&e.tool, &*e.mcp_entry))
    }

    /// The MCP `tools` array as JSON text: every tool, or only those that need no
    /// authentication.
    pub fn mcp_tools_json(&self, include_auth: bool) -> &str {
        if include_auth { &self.mcp_all } else { &self.mcp_public }
    }

    /// Every tool rendered in `format`, as a JSON array. Each format is rendered on its first
    /// use and kept.
    pub fn functions(&self, format: Format) -> &Value {
        &self.rendered(format).value
    }

    /// Every tool rendered in `format`, as JSON text.
    pub fn functions_json(&self, format: Format) -> &str {
        &self.rendered(format).json
    }

    fn rendered(&self, format: Format) -> &Rendered {
        let position = Format::ALL.iter().position(|&f| f == format).expect("Format::ALL lists every format");
        self.functions[position].get_or_init(|| {
            let value = Value::Array(self.entries.iter().map(|e| e.tool.spec().render(format)).collect());
            let json = value.to_string().into_boxed_str();
            Rendered { value, json }
        })
    }

    /// Calls a tool: looks it up, checks the caller, validates the arguments (applying
    /// defaults), runs the handler. A panicking handler gives an error result; this never
    /// panics.
    ///
    /// `arguments` is the call's JSON arguments; null means none. The tool, the caller and the
    /// arguments are checked when `call` is called; the future it returns runs the handler.
    pub fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        user: &'a UserInfo,
        ctx: &'a ToolContext<'_>,
    ) -> impl Future<Output = Result<ToolResult, CallError>> + Send + 'a {
        // The checks run here, not in the future, which then holds only the handler's
        // arguments and its run: as an async fn it kept every step's state (424 bytes), and
        // each future around it, up to the server's one per request, carried and copied that.
        let checked = self.check_call(name, arguments, user);
        async move {
            let (handler, args) = checked?;
            match tool_span(name) {
                None => Ok(run_handler(name, handler, args, user, ctx).await),
                // Boxed, so the common call's future is no larger for it.
                Some(span) => {
                    let instrumented =
                        tracing::Instrument::instrument(run_handler(name, handler, args, user, ctx), span.clone());
                    let result = Box::pin(instrumented).await;
                    if result.is_error() {
                        span.record("otel.status_code", "ERROR");
                    }
                    Ok(result)
                }
            }
        }
    }

    // What `call` does before the handler runs: the tool, its gates, its arguments.
    fn check_call(&self, name: &str, arguments: Value, user: &UserInfo) -> Result<(&dyn Handler, Args), CallError> {
        let entry = self
            .index
            .get(name)
            .map(|&i| &self.entries[i])
            .ok_or_else(|| CallError::UnknownTool { name: name.to_owned() })?;
        let tool = &entry.tool;
        if tool.is_auth() && !user.authed() {
            return Err(CallError::Unauthenticated { tool: name.to_owned() });
        }
        if tool.is_session_required() && user.session_id().is_none() {
            return Err(CallError::NoSession { tool: name.to_owned() });
        }
        if !tool.scopes().is_empty() {
            let missing: Vec<String> =
                tool.scopes().iter().filter(|s| !user.has_scope(s)).map(|s| s.to_string()).collect();
            if !missing.is_empty() {
                return Err(CallError::InsufficientScope { tool: name.to_owned(), missing });
            }
        }
        let mut args = match arguments {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                let problems = vec![ArgProblem::NotAnObject { got: mirobody_schema::Type::name_of(&other) }];
                return Err(CallError::InvalidArguments {
                    tool: name.to_owned(),
                    error: InvalidArguments { problems },
                });
            }
        };
        entry
            .validator
            .validate(&mut args)
            .map_err(|error| CallError::InvalidArguments { tool: name.to_owned(), error })?;
        Ok((&*entry.handler, Args::new(args)))
    }

    /// Calls a tool and folds a [`CallError`] into an error result: what an in-process agent
    /// loop feeds back to its model.
    pub async fn run(&self, name: &str, arguments: Value, user: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
        self.call(name, arguments, user, ctx).await.unwrap_or_else(CallError::into_tool_result)
    }
}

/// The span a tool's handler runs in, named after the tool (`otel.name`), with nothing of the
/// caller or the arguments; `None` when nobody listens (no exporter, no debug logging), so a
/// call then makes and enters no span. Target `mirobody::trace`: the spans an application
/// exports as traces.
fn tool_span(name: &str) -> Option<tracing::Span> {
    let span = tracing::debug_span!(
        target: "mirobody::trace",
        "tool",
        otel.name = name,
        otel.status_code = tracing::field::Empty
    );
    (!span.is_disabled()).then_some(span)
}

async fn run_handler(
    name: &str,
    handler: &dyn Handler,
    args: Args,
    user: &UserInfo,
    ctx: &ToolContext<'_>,
) -> ToolResult {
    // A synchronous handler runs inside `call`, so a panic can come from either step.
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(args, user, ctx))) {
        Ok(future) => future,
        Err(panic) => return panicked(name, &*panic),
    };
    match AssertUnwindSafe(future).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => panicked(name, &*panic),
    }
}

fn panicked(name: &str, panic: &(dyn std::any::Any + Send)) -> ToolResult {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    tracing::error!(tool = name, panic = message, "tool handler panicked");
    // The panic text may hold internals, so the model gets a fixed message.
    ToolResult::internal_error(format!(
        "Tool '{name}' failed with an internal error. The error was logged; do not retry with the same arguments."
    ))
}
