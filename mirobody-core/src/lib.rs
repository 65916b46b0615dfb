//! The embeddable core of mirobody: tools, their handlers, the caller's identity, backend
//! handles, and a registry that gathers tools and dispatches calls.
//!
//! An application that runs its own agent loop depends on this crate alone: declare tools,
//! build a [`Registry`], hand its [`functions`](Registry::functions) to a model, and
//! [`call`](Registry::call) what the model picks. `mirobody-server` serves the same registry
//! over MCP.
//!
//! ```
//! use mirobody_core::{register_tool, Args, Format, Param, Registry, Tool, ToolContext, ToolResult, Type, UserInfo};
//! use serde_json::json;
//!
//! async fn greet(args: Args, _user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
//!     ToolResult::ok(json!({"greeting": format!("Hello, {}!", args.str_or("name", "you"))}))
//! }
//!
//! fn greet_tool() -> Tool {
//!     Tool::new("greet", "Greet someone by name.")
//!         .param(Param::optional("name", Type::String, "Who to greet."))
//!         .read_only()
//!         .handler(greet)
//! }
//! register_tool!(greet_tool);
//!
//! let registry = Registry::from_registered().unwrap();
//! assert!(registry.get("greet").is_some());
//! let result = futures::executor::block_on(
//!     registry.run("greet", json!({"name": "Ada"}), &UserInfo::anonymous(), &ToolContext::new()),
//! );
//! assert_eq!(result.structured_content().unwrap()["greeting"], "Hello, Ada!");
//! ```
//!
//! Core does no I/O and starts no runtime: handlers are futures, backends are traits
//! ([`Cache`], [`Storage`], [`Memory`]) implemented elsewhere, an application's own state
//! reaches its tools through [`ToolContext::extension`], and the client a call came from is a
//! [`ClientPeer`] the transport supplies.
//!
//! Declarations and their renderings live in `mirobody-schema`, re-exported here, so that
//! everything a model sees is defined in one place and usable without this crate's runtime
//! pieces.

mod args;
pub mod backend;
mod catalog;
pub mod clock;
mod context;
pub mod human_duration;
pub mod json;
mod prompt;
mod registry;
mod resource;
mod result;
#[cfg(feature = "signing")]
pub mod signed;
mod tool;
mod user;
mod view;

pub use args::Args;
pub use backend::{BackendError, Cache, Memory, MissingBackend, Storage};
pub use catalog::{DuplicateEntry, PromptRegistry, ResourceRegistry};
pub use context::{ClientPeer, PeerError, ReadNotRecorded, ReadRecorder, ToolContext};
pub use mirobody_schema as schema;
pub use mirobody_schema::{Annotations, Format, Param, TaskSupport, ToolSpec, Type};
pub use prompt::{ContextPromptFn, Prompt, PromptArgument, PromptError, PromptFn, PromptMessage};
pub use registry::{CallError, Registry, RegistryBuilder, RegistryError};
pub use resource::{ReadFn, Resource, ResourceContents, ResourceError, ResourceInfo, ResourceTemplate, TemplateReadFn};
pub use result::{Content, EmbeddedResource, IntoToolResult, Json, ToolError, ToolResult};
pub use tool::{AsyncHandlerFn, Handler, Tool};
pub use user::UserInfo;
pub use view::{NotAViewUri, UI_EXTENSION, VIEW_MIME_TYPE, View};

/// `#[tool]` on a function, `#[tool_service]` on an impl block and `#[derive(ToolEnum)]`:
/// a tool's declaration and handler from a plain function (see `mirobody-macros`).
#[cfg(feature = "macros")]
pub use mirobody_macros::{ToolEnum, tool, tool_service};

/// Registers a tool from any crate linked into the program: name a `fn() -> Tool` at file
/// scope, and [`Registry::from_registered`] (or [`RegistryBuilder::registered`]) finds it.
///
/// ```
/// use mirobody_core::{register_tool, Tool, ToolResult};
///
/// fn ping() -> Tool {
///     Tool::new("ping", "Answers pong.").read_only().sync_handler(|_, _, _| ToolResult::text("pong"))
/// }
/// register_tool!(ping);
/// ```
#[macro_export]
macro_rules! register_tool {
    ($build:path) => {
        $crate::__private::inventory::submit! {
            $crate::__private::Registration::new($build, ::core::file!(), ::core::line!())
        }
    };
}

#[doc(hidden)]
pub mod __private {
    pub use crate::catalog::{CatalogItem, CatalogRegistration};
    pub use crate::registry::Registration;
    pub use crate::{
        Annotations, Args, IntoToolResult, Json, Param, TaskSupport, Tool, ToolContext, ToolResult, Type, UserInfo,
    };
    pub use inventory;
    pub use serde;
    pub use serde_json;
}
