//! Wiring: the registry, the MCP service and the HTTP routes, from a [`Config`].

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use mirobody_core::{PromptRegistry, Registry, ResourceRegistry};

use crate::config::Config;
use crate::http::McpHttp;
use crate::mcp::{Backends, McpService};

/// Why the server could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A tool could not be registered.
    #[error(transparent)]
    Registry(#[from] mirobody_core::RegistryError),
    /// A resource or prompt was registered twice.
    #[error(transparent)]
    Catalog(#[from] mirobody_core::DuplicateEntry),
}

/// The built-in and self-registered tools.
pub fn registry() -> Result<Registry, AppError> {
    Ok(mirobody_tools::builtin_registry()?)
}

/// The MCP service for a configuration, with every self-registered tool, resource and prompt.
pub fn service(config: &Config, backends: Backends) -> Result<McpService, AppError> {
    let registry = Arc::new(registry()?);
    Ok(McpService::builder(registry)
        .resources(ResourceRegistry::from_registered(Vec::new(), Vec::new())?)
        .prompts(PromptRegistry::from_registered(Vec::new())?)
        .backends(backends)
        .info(config.server_info())
        .options(config.mcp_options())
        .build())
}

/// Every route: the MCP endpoint at `<uri_prefix>/mcp` and `/healthz`.
pub fn router(config: &Config, service: McpService) -> Router {
    let mcp = McpHttp::new(service, config.http_options());
    mcp.spawn_session_sweeper();
    mcp.router_at(&config.mcp_path()).route("/healthz", get(|| async { "ok" }))
}
