//! What an application plugs into the endpoint, in one shape.
//!
//! Per request, the caller: a tower layer in front of the endpoint puts a
//! [`UserInfo`] in the request's extensions (mirobody-auth's `AuthLayer` does, from a bearer
//! token or a personal secret); a request without one is anonymous. Per engine, the
//! application's policies and state, on [`McpEngineBuilder`](super::McpEngineBuilder): each
//! policy is a small trait, and the first two are implemented by a closure of the same shape,
//! as tower's `Service` is implemented by `service_fn`:
//!
//! - [`ToolVisibility`]: which tools a caller may see and call;
//! - [`ResourceLister`]: the caller's own resources in `resources/list`;
//! - [`AccessLog`](mirobody_ports::AccessLog): a record of every call and read (implemented
//!   by a type of the application's: no closure implements it);
//! - [`TracePropagation`]: W3C trace context into the engine's spans and out to the other
//!   instances, for an application that exports traces;
//! - and the application's state for its tools, with
//!   [`extension`](super::McpEngineBuilder::extension).

use futures::future::BoxFuture;
use mirobody_core::{ResourceError, ResourceInfo, Tool, ToolContext, UserInfo};

/// Decides whether a caller may see and call a tool (per-agent allow and deny lists, say). A
/// hidden tool is left out of `tools/list` and answered as unknown by `tools/call`.
///
/// ```
/// use mirobody_core::{Tool, UserInfo};
/// use mirobody_mcp::ToolVisibility;
///
/// // Anonymous callers do not see the tools that need a signed-in caller.
/// let policy = |user: &UserInfo, tool: &Tool| user.user_id().is_some() || !tool.is_auth();
/// let whoami = Tool::new("whoami", "Says who you are.").auth(true).sync_handler(|_, _, _| {
///     mirobody_core::ToolResult::text("you")
/// });
/// assert!(!policy.is_visible(&UserInfo::anonymous(), &whoami));
/// assert!(policy.is_visible(&UserInfo::authenticated("u1"), &whoami));
/// ```
pub trait ToolVisibility: Send + Sync + 'static {
    /// Whether `user` may see and call `tool`.
    fn is_visible(&self, user: &UserInfo, tool: &Tool) -> bool;
}

impl<F> ToolVisibility for F
where
    F: Fn(&UserInfo, &Tool) -> bool + Send + Sync + 'static,
{
    fn is_visible(&self, user: &UserInfo, tool: &Tool) -> bool {
        self(user, tool)
    }
}

/// Lists resources that depend on the caller (such as their uploads as `file://` resources),
/// appended to the registered ones in `resources/list`. A function of the same shape is one
/// (a named `fn`: a closure's lifetimes are not inferred as general as this needs):
///
/// ```
/// use futures::future::BoxFuture;
/// use mirobody_core::{ResourceError, ResourceInfo, ToolContext, UserInfo};
///
/// fn nothing_yet<'a>(
///     _user: &'a UserInfo,
///     _ctx: &'a ToolContext<'a>,
/// ) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ResourceError>> {
///     Box::pin(async { Ok(Vec::new()) })
/// }
///
/// let engine = mirobody_mcp::McpEngine::builder(std::sync::Arc::new(
///     mirobody_core::Registry::builder().build().unwrap(),
/// ))
/// .resource_lister(nothing_yet)
/// .build();
/// # let _ = engine;
/// ```
pub trait ResourceLister: Send + Sync + 'static {
    /// The caller's own resources, with the engine's backends in `ctx`.
    fn list<'a>(
        &'a self,
        user: &'a UserInfo,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ResourceError>>;
}

impl<F> ResourceLister for F
where
    F: for<'a> Fn(&'a UserInfo, &'a ToolContext<'a>) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ResourceError>>
        + Send
        + Sync
        + 'static,
{
    fn list<'a>(
        &'a self,
        user: &'a UserInfo,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ResourceError>> {
        self(user, ctx)
    }
}

/// Carries W3C trace context (`traceparent`) into and out of the engine's spans, for an
/// application that exports traces (mirobody-server does, over OTLP). The engine only makes
/// `tracing` spans and knows no exporter; this hook ties them to the traces the application
/// exports. Without one (the default) the engine reads no `_meta.traceparent` and adds nothing
/// to what it sends other instances.
///
/// With one, a `tools/call` whose `params._meta.traceparent` is set runs in a span that the
/// hook may make a child of the client's span, and a message to the other instances of shared
/// sessions carries the `traceparent` of the span that sends it, so the span that handles it
/// there joins the same trace.
pub trait TracePropagation: Send + Sync + 'static {
    /// Makes `span` (made here, not entered yet) a child of the remote span `traceparent`
    /// names, as a client or another instance sent it: unchecked, at most 512 bytes. An invalid
    /// one is ignored, as is any where the current trace already continues one the client sent
    /// another way (in an HTTP header, say).
    fn adopt(&self, span: &tracing::Span, traceparent: &str);

    /// The `traceparent` naming `span`, to send along with a message; `None` when `span` is
    /// not exported.
    fn traceparent(&self, span: &tracing::Span) -> Option<String>;
}

/// The longest `traceparent` handed to [`TracePropagation::adopt`]: a version-00 one is 55
/// bytes; a later version's may be longer, but not unboundedly.
pub(crate) const MAX_TRACEPARENT_BYTES: usize = 512;
