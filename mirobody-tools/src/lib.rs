//! The built-in tools of mirobody, and what brings a person's files in (uploads, their reading).
//!
//! - `tools`: the built-in tools, one private file each, written with
//!   [`#[tool]`](mirobody_core::tool), which registers them. Linking this crate is enough for
//!   [`Registry::from_registered`](mirobody_core::Registry::from_registered) to find them;
//!   [`builtin_registry`] also names the crate so the linker keeps it, and [`builtin_tool`]
//!   gives one of them. To add a tool, copy `src/tools/echo.rs` (it is written to be copied)
//!   and name the new file in `src/tools/mod.rs`.
//! - [`resources`]: `info://server` and the caller's uploads as `file://{file_key}`.
//! - [`prompts`]: what a person picks from a client's menu (a weekly summary, preparing for a
//!   doctor's visit, explaining a lab report), self-registered like the tools.
//! - `uploads`: storing a person's uploads and reading their text (`extract`); `imports`:
//!   uploads that are health data (FHIR, NDJSON, CSV, an Apple Health export), imported;
//!   `upload_links`: the links to the upload page (feature `uploads`).
//! - `demo`: a demo user with a care circle, observations, files and memories (feature
//!   `uploads`).
//!
//! The tools read and write through the traits of `mirobody-health` (the health store
//! reaches them through the context's extensions); `mirobody-store` implements them, and
//! holds the object storage uploads are kept in.
//!
//! # Features
//!
//! Both are on by default, which is what mirobody-server serves. An application that wants
//! some of the tools takes `default-features = false` and the groups it needs:
//!
//! | feature | tools | and | brings |
//! | --- | --- | --- | --- |
//! | (none) | `echo`, `whoami`, `ask_user`, `remember`, `recall_memory`, `summarize_conversation`, `family_health`, `fetch_health_data`, `get_user_health_profile`, `search_health_indicators`, `list_files`, `read_file` | [`resources`], [`prompts`], [`views`], [`cpu`] | mirobody-core, mirobody-health |
//! | `uploads` | `upload_file`, `upload_link` | `uploads`, `upload_links`, `reading`, `extract` (and the `mirobody-extract` binary), `demo` | mirobody-store (sqlx on SQLite, object_store on local files), the PDF and Word readers, the sandbox |
//! | `charts` | `render_chart` | | resvg |
//!
//! Without `uploads`, `list_files`, `read_file` and `file://` still read the files another
//! program stored, through the store traits and the context's [`Storage`](mirobody_core::Storage);
//! a document whose text is still being read is reported so at once (no reader here to wait
//! for), and answers that found nothing do not point at `upload_link`. mirobody-store is a
//! dependency of `uploads` without its own features: enable `postgres`, `redis` or `s3` on it
//! where the backends are opened.

#[cfg(feature = "charts")]
mod chart;
pub mod cpu;
#[cfg(feature = "uploads")]
pub mod demo;
pub mod erasure;
#[cfg(feature = "uploads")]
pub mod extract;
#[cfg(feature = "uploads")]
mod file_names;
#[cfg(feature = "uploads")]
pub mod imports;
mod pages;
pub mod prompts;
#[cfg(feature = "uploads")]
pub mod reading;
pub mod resources;
mod tools;
#[cfg(feature = "uploads")]
pub mod upload_links;
#[cfg(feature = "uploads")]
pub mod uploads;
pub mod views;

use mirobody_core::{Registry, RegistryError, Tool};

/// A registry of every self-registered tool in the program, which includes the built-ins.
///
/// ```
/// let registry = mirobody_tools::builtin_registry().unwrap();
/// assert!(registry.get("echo").is_some());
/// assert!(registry.get("family_health").is_some());
/// ```
pub fn builtin_registry() -> Result<Registry, RegistryError> {
    Registry::from_registered()
}

/// One built-in tool by name, for a registry of one's own (`Registry::builder().tool(..)`);
/// `None` when no registered tool has that name.
///
/// ```
/// let echo = mirobody_tools::builtin_tool("echo").unwrap();
/// assert!(!echo.is_auth());
/// assert!(mirobody_tools::builtin_tool("no_such_tool").is_none());
/// ```
pub fn builtin_tool(name: &str) -> Option<Tool> {
    builtin_registry().ok()?.get(name).cloned()
}
