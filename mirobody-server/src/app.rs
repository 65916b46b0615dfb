//! Wiring: backends, auth, the registry, the MCP engine and every HTTP route, from a
//! [`Config`].

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::future::BoxFuture;
use http::{HeaderValue, StatusCode, header};
use mirobody_auth::{Authenticator, ExposeSecret, McpEndpoint, SecretString};
use mirobody_core::{
    PromptRegistry, Registry, ResourceError, ResourceInfo, ResourceRegistry, Tool, ToolContext, UserInfo,
};
use mirobody_store::OpenedBackends;

use crate::config::{Config, ToolSettings};
use mirobody_mcp::http::McpHttp;
use mirobody_mcp::{Backends, McpEngine};

/// Why the server could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A tool could not be registered.
    #[error(transparent)]
    Registry(#[from] mirobody_core::RegistryError),
    /// A resource or prompt was registered twice.
    #[error(transparent)]
    Catalog(#[from] mirobody_core::DuplicateEntry),
    /// A backend could not be opened.
    #[error("backends.{0}")]
    Backends(#[from] mirobody_store::OpenError),
    /// The auth configuration is not usable.
    #[error("auth: {0}")]
    Auth(#[from] mirobody_auth::AuthConfigError),
    /// The request-state key is not usable.
    #[error("request_state_key: {0}")]
    StateKey(String),
    /// The generated signing key for tokens could not be kept.
    #[error("auth.hs256_secret: {0}")]
    TokenKey(String),
    /// The document reader (this program, run as a child) cannot be found.
    #[error("extraction: {0}")]
    Extraction(String),
    /// The authorization server's signing key cannot be loaded or made.
    #[error("oauth.signing_key_file: {0}")]
    OAuthKey(#[from] mirobody_oauth::KeyError),
    /// Sessions are to be shared, but the shared store cannot be listened to.
    #[error("shared_sessions: {0}")]
    SharedSessions(String),
}

/// The server's routes behind the auth layer, which goes around them rather than inside because
/// it rewrites `/mcp/<secret>` to `/mcp` before routing: MCP at its path, the rest in a router.
pub type AppService = mirobody_auth::AuthService<mirobody_mcp::http::Mounted>;

/// Everything the server runs: the routes, and the parts the CLI commands use.
pub struct Server {
    /// Every route, behind the auth layer: serve it with [`mirobody_mcp::serve`].
    pub app: AppService,
    /// The MCP engine.
    pub engine: McpEngine,
    /// The MCP endpoint (its sessions, its callers), as mounted in `app`.
    pub mcp: McpHttp,
    /// The opened backends.
    pub backends: Arc<OpenedBackends>,
    /// The authenticator.
    pub auth: Authenticator,
    /// Where the MCP endpoint is.
    pub endpoint: McpEndpoint,
    /// The handles tools get.
    pub tool_backends: Backends,
    /// The links to the upload page.
    pub upload_links: mirobody_tools::upload_links::UploadLinks,
    /// The sign-in pages and the authorization server, unless `oauth.enabled` is off.
    pub oauth: Option<mirobody_oauth::OAuthServer>,
    /// The readers of uploaded documents' text: [`start`](mirobody_tools::reading::TextReader::start)
    /// them in a process that serves.
    pub text_reader: mirobody_tools::reading::TextReader,
}

/// The built-in and self-registered tools.
pub fn registry() -> Result<Registry, AppError> {
    Ok(mirobody_tools::builtin_registry()?)
}

/// The built-in and self-registered tools, with `tools` replacing any of the same name (the
/// registry logs each replacement) and without those `settings` switch off. A disabled name
/// no tool has is logged as a warning, not refused, as the other per-tool settings are.
pub fn registry_with(tools: &[Tool], settings: &ToolSettings) -> Result<Registry, AppError> {
    let builder = tools.iter().cloned().fold(Registry::builder().registered(), |b, tool| b.override_tool(tool));
    let registry = builder.build()?;
    let unknown = settings.unknown_disabled(registry.names());
    if !unknown.is_empty() {
        tracing::warn!(tools = ?unknown, "tools.disabled names tools that do not exist");
    }
    if settings.disabled.is_empty() {
        return Ok(registry);
    }
    let kept = registry.tools().filter(|tool| !settings.disabled.iter().any(|name| name == tool.name()));
    let registry = kept.cloned().fold(Registry::builder(), |b, tool| b.tool(tool)).build()?;
    tracing::info!(tools = ?settings.disabled, "built-in tools switched off by tools.disabled");
    Ok(registry)
}

/// The configuration with what the embedded defaults derive filled in: the signed-URL base
/// from the public URL, the store's per-person bounds from `quotas`, and a token key
/// generated once under the data folder when no key of any kind is configured.
pub fn resolved(config: &Config) -> Result<Config, AppError> {
    let mut config = config.clone();
    // The store keeps the per-person bounds where it writes.
    config.backends.quotas = config.quotas.store_quotas();
    if config.backends.signed_url_base == mirobody_store::BackendConfig::default().signed_url_base {
        config.backends.signed_url_base = format!("{}{}/files", config.base_url(), config.uri_prefix);
    }
    let auth = &config.auth;
    let has_key = auth.hs256_secret.is_some() || auth.rs256.is_some() || auth.es256.is_some() || auth.jwks.is_some();
    if !has_key {
        let key = embedded_token_key(&config.backends.data_dir).map_err(AppError::TokenKey)?;
        config.auth.hs256_secret = Some(SecretString::from(key));
    }
    // The protected resource metadata names this server's own authorization server when
    // nothing else is configured.
    if config.oauth.enabled && config.auth.authorization_servers.is_empty() {
        config.auth.authorization_servers.push(format!("{}{}", config.base_url(), config.uri_prefix));
    }
    // Clients ask for the scopes the 401 names: with none configured, one scope stands for
    // using the tools as the person.
    if config.oauth.enabled && config.auth.scopes_supported.is_empty() {
        config.auth.scopes_supported.push(mirobody_oauth::DEFAULT_SCOPE.to_owned());
    }
    Ok(config)
}

/// Where the authorization server's signing key is kept.
pub fn oauth_key_path(config: &Config) -> std::path::PathBuf {
    config.oauth.signing_key_file.clone().unwrap_or_else(|| config.backends.data_dir.join("oauth-es256.pem"))
}

/// Where the key before the last rotation is kept, beside the signing key:
/// `oauth-es256.pem` → `oauth-es256.previous.pem`.
pub fn previous_oauth_key_path(current: &Path) -> std::path::PathBuf {
    current.with_extension("previous.pem")
}

// A random HS256 key kept in `<data_dir>/token.key` (owner-only, written atomically), so
// tokens minted by `mirobody-server demo` or `token` stay valid across restarts with no set-up.
fn embedded_token_key(data_dir: &Path) -> Result<String, String> {
    let path = data_dir.join("token.key");
    // Twice at most: when another process writes the key between our read and our write, its
    // key is the one to use.
    for _ in 0..2 {
        match std::fs::read_to_string(&path) {
            Ok(existing) if existing.trim().len() >= 32 => return Ok(existing.trim().to_owned()),
            // Never replaced silently: every token signed with it would stop working.
            Ok(_) => {
                return Err(format!(
                    "{} is empty or holds a key shorter than 32 characters; delete it to make a new one \
                     (tokens signed with the old key stop working)",
                    path.display()
                ));
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot read {}: {e}", path.display()));
            }
            Err(_) => {}
        }
        let key = mirobody_auth::generate_secret().map_err(|e| e.to_string())?.expose().to_owned();
        match mirobody_store::write_private_atomically(&path, key.as_bytes()) {
            Ok(()) => return Ok(key),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot write {}: {e}", path.display())),
        }
    }
    Err(format!("{} keeps changing; is another server writing it?", path.display()))
}

/// The MCP endpoint of a configuration.
pub fn endpoint(config: &Config) -> McpEndpoint {
    McpEndpoint::new(config.base_url(), config.uri_prefix.clone())
}

/// Opens the backends and assembles the server with the built-in tools. `config` should come
/// from [`resolved`].
pub async fn build(config: &Config) -> Result<Server, AppError> {
    build_with(config, &[]).await
}

/// [`build`] with a deployment's own `tools`, which replace built-ins of the same name
/// ([`registry_with`]).
pub async fn build_with(config: &Config, tools: &[Tool]) -> Result<Server, AppError> {
    let opened = Arc::new(mirobody_store::open(&config.backends).await?);
    let endpoint = endpoint(config);
    // One permission model for the tools and the routes: the registry needs the configured
    // scopes of its tools, and the routes the scopes the tools declare.
    let permissions = mirobody_auth::Permissions::from_config(&config.auth);
    let registry = Arc::new(permissions.apply_to_registry(registry_with(tools, &config.tools)?)?);
    let permissions = permissions.with_tools(registry.tools());
    // The access tokens the authorization server issues name their grant; a revoked grant's
    // tokens are refused at once (kept one token lifetime, after which they expired anyway).
    let revoked = mirobody_auth::RevokedGrants::new(config.oauth.access_token_ttl + std::time::Duration::from_secs(60));
    let oauth_key = match config.oauth.enabled {
        true => Some(mirobody_oauth::SigningKey::load_or_create(&oauth_key_path(config))?),
        false => None,
    };
    config.auth.validate()?;
    let mut verifier =
        mirobody_auth::JwtVerifier::load(&config.auth, &endpoint.mcp_url()).await?.with_revoked_grants(revoked.clone());
    // The key before the last rotation (`rotate-signing-key`): its tokens verify until they
    // expire, and it stays published.
    let previous_key = match &oauth_key {
        Some(_) => {
            let path = previous_oauth_key_path(&oauth_key_path(config));
            path.exists().then(|| mirobody_oauth::SigningKey::load(&path)).transpose()?
        }
        None => None,
    };
    for key in oauth_key.iter().chain(&previous_key) {
        // Its own tokens name this server as issuer, whatever `auth.issuer` names.
        verifier = verifier.with_issuer_jwk(key.public_jwk(), &mirobody_oauth::OAuthServer::issuer_for(&endpoint))?;
    }
    let mut auth = Authenticator::with_verifier(&config.auth, verifier, endpoint.clone(), Some(opened.secrets()))
        .with_permissions(permissions.clone());
    // Made below, after the authorization server whose account page ends its sessions.
    let page_mcp = Arc::new(std::sync::OnceLock::new());
    let oauth = oauth_key.map(|key| {
        let stores = mirobody_oauth::OAuthStores {
            accounts: opened.accounts(),
            sessions: opened.web_sessions(),
            oauth: opened.oauth(),
            secrets: Some(opened.secrets()),
            passkeys: Some(opened.passkeys()),
            identities: Some(opened.identities()),
            access_log: Some(opened.access_log()),
        };
        let scopes = config.auth.scopes_supported.clone();
        mirobody_oauth::OAuthServer::new(stores, endpoint.clone(), config.oauth.clone(), key, scopes, revoked.clone())
            .with_previous_keys(previous_key.into_iter().collect())
            .with_account_data(Arc::new(crate::account_data::PageData {
                backends: Arc::clone(&opened),
                revoked: revoked.clone(),
                mcp: Arc::clone(&page_mcp),
            }))
    });
    if let Some(oauth) = &oauth {
        auth = auth.with_open_paths(oauth.open_paths());
        oauth.spawn_maintenance();
    }
    let unknown = permissions.filter().unknown_tools(registry.names().chain(mirobody_auth::ROUTE_PERMISSIONS));
    if !unknown.is_empty() {
        tracing::warn!(tools = ?unknown, "per-agent tool lists name tools that do not exist");
    }
    let unknown = config.tools.unknown_tools(registry.names());
    if !unknown.is_empty() {
        tracing::warn!(tools = ?unknown, "tools.time_limits names tools that do not exist");
    }
    // An upload through a link ends within its body deadline and the waits for its turns; a
    // used-up link is kept that long, so an upload in progress finds it to give its use back.
    let mut link_settings = config.uploads.link_settings();
    link_settings.upload_time = config.http.request_body_timeout.saturating_add(std::time::Duration::from_secs(300));
    let upload_links = mirobody_tools::upload_links::UploadLinks::new(
        opened.health(),
        format!("{}{}/upload", config.base_url(), config.uri_prefix),
        link_settings,
    );
    let mut tool_backends = Backends::default();
    tool_backends.cache = Some(opened.cache());
    tool_backends.storage = opened.storage();
    tool_backends.extensions.insert(opened.db());
    tool_backends.extensions.insert(upload_links.clone());
    // `list_data_access` lists the reads of the caller's data from it.
    tool_backends.extensions.insert(opened.access_log());
    let personal: Arc<dyn mirobody_health::PersonalData> = opened.sql().clone();
    tool_backends.extensions.insert(personal);
    // Documents' text is read by this binary's own `extract` subcommand, in a child process.
    let extractor = mirobody_tools::extract::Extractor::current_exe(config.extraction.limits())
        .map_err(|e| AppError::Extraction(e.to_string()))?;
    let text_reader = mirobody_tools::reading::TextReader::new(Arc::clone(&opened), extractor);
    let uploader = mirobody_tools::uploads::Uploader::new(Arc::clone(&opened), config.uploads.limits())
        .with_reader(text_reader.clone())
        .with_import_time(config.uploads.import_time);
    tool_backends.extensions.insert(uploader.clone());
    tool_backends.memory = opened.memory();
    let mut builder = McpEngine::builder(Arc::clone(&registry))
        .resources(ResourceRegistry::from_registered(mirobody_tools::views::resources(), Vec::new())?)
        .prompts(PromptRegistry::from_registered(Vec::new())?)
        .backends(tool_backends.clone())
        .info(config.server_info())
        .options(config.mcp_options())
        .access_log(opened.access_log())
        .access_log_options(config.access_log.clone())
        .task_store(opened.task_store())
        .task_options(config.tasks.clone());
    if !permissions.filters_no_agent() {
        let visibility = permissions.into_visibility();
        builder = builder.visibility(move |user: &UserInfo, tool: &mirobody_core::Tool| visibility(user, tool));
    }
    // The caller's uploads, as `file://` resources.
    builder = builder.resource_lister(list_uploads);
    // The uploads are the files tools' data: an agent denied those tools does not reach them
    // as resources either.
    builder = builder.guard_resources("file://", "list_files", "read_file");
    // The key instances share: it seals request states, and the shared sessions derive theirs
    // from it (config.rs refuses shared sessions without it).
    let state_key = match &config.request_state_key {
        Some(key) => Some(
            mirobody_mcp::StateKey::new(key.expose_secret().as_bytes())
                .map_err(|e| AppError::StateKey(e.to_string()))?,
        ),
        None => None,
    };
    if let Some(key) = &state_key {
        builder = builder.request_state_key(key.clone());
    }
    builder = builder.request_state_ttl(config.request_state_ttl).list_ttl(config.list_ttl);
    // Counted into the recorder `metrics::Metrics::install` put in place, when there is one.
    if config.metrics.enabled() {
        builder = builder.metrics();
    }
    if crate::telemetry::exporting() {
        builder = builder.trace_propagation(crate::telemetry::Propagation);
    }
    let engine = builder.build();

    let mut http_options = config.http_options();
    http_options.resource_metadata_url = Some(auth.resource_metadata_url().to_owned());
    http_options.challenge_scopes = config.auth.scopes_supported.clone();
    let shared = opened.session_backplane().filter(|_| config.shares_sessions()).zip(state_key.as_ref());
    let mcp = match shared {
        Some((backplane, key)) => McpHttp::with_shared_sessions(engine.clone(), http_options, backplane, key)
            .await
            .map_err(|e| AppError::SharedSessions(e.to_string()))?,
        None => McpHttp::new(engine.clone(), http_options),
    };
    mcp.spawn_session_sweeper();
    let _ = page_mcp.set(mcp.clone());
    let files_path = format!("{}/files/{{*key}}", config.uri_prefix);
    let rest = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz).with_state(Arc::clone(&opened)))
        .route(&files_path, get(serve_signed_file).with_state(Arc::clone(&opened)))
        .merge(mirobody_auth::protected_resource_metadata(&auth))
        .merge(mirobody_auth::personal_router(&auth))
        .merge(oauth.as_ref().map(mirobody_oauth::OAuthServer::router).unwrap_or_default())
        .merge(crate::routes::router(
            Arc::clone(&opened),
            auth.clone(),
            crate::routes::RouteSettings {
                prefix: config.uri_prefix.clone(),
                uploader,
                links: upload_links.clone(),
                max_import_bytes: config.uploads.max_import_bytes,
                max_concurrent: config.uploads.max_concurrent,
                body_deadline: config.http.request_body_timeout,
                max_concurrent_per_caller: config.uploads.max_concurrent_per_caller,
                min_body_bytes_per_sec: config.uploads.min_body_bytes_per_sec,
                // One rate per caller across `/mcp` and these routes.
                callers: std::sync::Arc::clone(mcp.callers()),
                max_inflight_bytes: usize::try_from(config.uploads.max_inflight_bytes).unwrap_or(usize::MAX),
                oauth: oauth.clone(),
                revoked: Some(revoked.clone()),
                mcp: Some(mcp.clone()),
            },
        ));
    // The layer goes around every route: it rewrites `/mcp/<secret>` to `/mcp` before routing,
    // and nothing inside it ever sees the secret. The MCP endpoint takes a request with no
    // caller as anonymous, so anonymous requests reach it unmarked.
    let mcp_path = config.mcp_path();
    let app = auth.wrap(mcp.mount(&mcp_path, rest)).unmarked_anonymous_at(&mcp_path);
    Ok(Server { app, engine, mcp, backends: opened, auth, endpoint, tool_backends, upload_links, oauth, text_reader })
}

// Readiness for a load balancer: 200 when the database and the cache answer within two
// seconds, 503 naming what does not (liveness is `/healthz`, which checks nothing).
async fn readyz(State(backends): State<Arc<OpenedBackends>>) -> Response {
    let readiness = backends.readiness(std::time::Duration::from_secs(2)).await;
    let status = if readiness.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let check = |result: &Result<(), mirobody_store::NotReady>| match result {
        Ok(()) => serde_json::json!("ok"),
        Err(why) => serde_json::json!({"error": why.to_string()}),
    };
    let body = serde_json::json!({
        "ready": readiness.is_ready(),
        "database": check(&readiness.database),
        "cache": check(&readiness.cache),
    });
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

// Serves a stored file through a signed, expiring URL (the local store's stand-in for a
// bucket's pre-signed URLs). Uploads are never trusted to render in the server's origin.
async fn serve_signed_file(
    State(backends): State<Arc<OpenedBackends>>,
    UrlPath(key): UrlPath<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let key = match backends.verify_signed_url(&key, query.as_deref().unwrap_or_default()) {
        Ok(key) => key,
        Err(e) => return (StatusCode::FORBIDDEN, e.to_string()).into_response(),
    };
    let Some(storage) = backends.storage() else {
        return (StatusCode::NOT_FOUND, "Object storage is not configured.").into_response();
    };
    match storage.get(&key).await {
        Ok(bytes) => {
            let mut response = Response::new(Body::from(bytes));
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
            headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment"));
            headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
            response
        }
        Err(_) => (StatusCode::NOT_FOUND, "File not found.").into_response(),
    }
}

// The caller's uploads as `file://` resources, in the shape `McpEngineBuilder::resource_lister`
// takes.
fn list_uploads<'a>(
    user: &'a UserInfo,
    ctx: &'a ToolContext<'a>,
) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ResourceError>> {
    Box::pin(mirobody_tools::resources::list_uploads(user, ctx))
}
