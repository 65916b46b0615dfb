//! Configuration: a YAML file, then `MIROBODY_*` environment variables, then command-line flags.
//! Unknown keys and bad values stop the server at start-up with a message naming them.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use mirobody_auth::{AuthConfig, ExposeSecret, SecretString};
use mirobody_tools::backends::BackendConfig;

use mirobody_mcp::http::HttpOptions;
use mirobody_mcp::{McpOptions, ServerInfo};

/// The environment variable prefix for overrides: `MIROBODY_BIND`, `MIROBODY_STATELESS`, ...
pub const ENV_PREFIX: &str = "MIROBODY_";

/// The longest `request_body_timeout_secs` allowed: a day.
pub const MAX_REQUEST_BODY_TIMEOUT_SECS: u64 = 86_400;

mod extraction;
mod quotas;
mod tasks;
mod tools;
mod uploads;

pub use extraction::ExtractionSettings;
pub use quotas::QuotaSettings;
pub use tasks::TaskSettings;
pub use tools::ToolSettings;
pub use uploads::UploadSettings;

/// Every setting, with its default.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
// `Debug` prints no secret: the keys are `SecretString`s, the backends' URLs are redacted.
pub struct Config {
    /// Where to listen.
    pub bind: SocketAddr,
    /// The URL clients reach the server at (for personal MCP URLs and auth metadata), without
    /// a trailing slash. Defaults to `http://<bind>`.
    pub public_base_url: Option<String>,
    /// A path prefix for every route, such as `/api` (empty for none).
    pub uri_prefix: String,
    /// Serve without sessions, for many instances behind a load balancer.
    pub stateless: bool,
    /// Keep 2025-11-25 sessions in Redis when `backends.redis_url` is set, so that every
    /// instance serves every session (on by default). Instances that share sessions must share
    /// their keys too: the server refuses to start when one would be generated.
    pub shared_sessions: bool,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Host names accepted in the Host header (`*` for any). The public base URL's host is
    /// always accepted.
    pub allowed_hosts: Vec<String>,
    /// Extra origins accepted for browser clients (`*` for any).
    pub allowed_origins: Vec<String>,
    /// The most sessions kept at once.
    pub max_sessions: usize,
    /// Seconds an unused session lives.
    pub session_idle_timeout_secs: u64,
    /// Seconds a client may take to send a request's headers.
    pub header_read_timeout_secs: u64,
    /// Seconds a shutdown waits for requests in flight before closing their connections.
    pub shutdown_grace_secs: u64,
    /// Seconds a write to a client may wait for it to read before its connection is closed.
    pub write_timeout_secs: u64,
    /// Seconds a client may take to send a whole request body.
    pub request_body_timeout_secs: u64,
    /// The most connections open at once.
    pub max_connections: usize,
    /// The most connections open at once from one client address (0: no bound).
    pub max_connections_per_address: usize,
    /// Reverse proxies (addresses or CIDR networks) whose `Forwarded` / `X-Forwarded-For`
    /// headers name the client; none by default, and the headers of anyone else are ignored.
    pub trusted_proxies: Vec<String>,
    /// The one header the trusted proxies name the client in: `x-forwarded-for` (the default,
    /// what nginx and cloud load balancers write) or `forwarded` (RFC 7239). The other is
    /// never read: a proxy that does not write it passes a client's own on.
    pub forwarded_header: String,
    /// Request bodies being read or answered at once, in bytes (0: no bound).
    pub max_inflight_body_bytes: usize,
    /// How many of `max_sessions` anonymous callers may hold.
    pub max_anonymous_sessions: usize,
    /// Sessions one caller (a user, or an anonymous client's address) may hold (0: no bound).
    pub max_sessions_per_caller: usize,
    /// Tool calls one caller may have running at once (0: no bound).
    pub max_calls_per_caller: usize,
    /// Streams one caller may hold open at once: GET streams and `subscriptions/listen` (0: no
    /// bound).
    pub max_streams_per_caller: usize,
    /// Requests per second one caller may send on average (0: no bound).
    pub requests_per_second: u32,
    /// Requests one caller may send at once above that rate.
    pub requests_burst: u32,
    /// Threads that answer requests. Unset: one per CPU the process may use (its CPU affinity
    /// and cgroup quota). With one, every request is answered on a single thread (blocking work
    /// such as SQLite still has threads of its own).
    pub worker_threads: Option<usize>,
    /// Give back, once started, the pages of the program's own file that only start-up used
    /// (`memory::release_startup_pages`, Linux only). Off by default: it trades a few page
    /// faults after start-up for a few MiB of resident memory, which matters only where many
    /// small instances share a host.
    pub release_startup_memory: bool,
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Leave auth tools out of anonymous `tools/list` replies.
    pub hide_auth_tools_from_anonymous: bool,
    /// Seconds a tool waits for the client to answer a question.
    pub answer_timeout_secs: u64,
    /// The server's name in `initialize`.
    pub server_name: String,
    /// Instructions for the model, sent in `initialize`.
    pub instructions: Option<String>,
    /// The log filter (`info`, `debug`, `mirobody_mcp=debug,info`, ...). `RUST_LOG` wins.
    pub log: String,
    /// The key (32+ bytes) that signs 2026-07-28 `requestState`s; instances behind one load
    /// balancer need the same one. A random key per process when unset.
    pub request_state_key: Option<SecretString>,
    /// Seconds a 2026-07-28 `requestState` stays valid.
    pub request_state_ttl_secs: u64,
    /// The `ttlMs` caching hint on 2026-07-28 listings, in seconds.
    pub list_ttl_secs: u64,
    /// The most `subscriptions/listen` streams open at once.
    pub max_subscriptions: usize,
    /// A person's uploads and imports: sizes, quotas, upload links.
    pub uploads: UploadSettings,
    /// How the text of uploaded documents is read: a sandboxed child process per document.
    pub extraction: ExtractionSettings,
    /// Calls that run as tasks (the MCP tasks extension): how long results are kept, how many
    /// run at once per caller.
    pub tasks: TaskSettings,
    /// How long a tool call may work: a default for tools that declare no limit, and limits
    /// by tool name.
    pub tools: ToolSettings,
    /// How much one person keeps: memories, invitations waiting.
    pub quotas: QuotaSettings,
    /// Who callers are: JWT keys, issuer and audience, personal-secret scopes, per-agent tool
    /// lists (also as flat `ALLOWED_TOOLS_<AGENT>` / `DISALLOWED_TOOLS_<AGENT>` keys).
    pub auth: AuthConfig,
    /// Where data lives: the database, object storage, the cache, long-term memory.
    pub backends: BackendConfig,
}

impl Default for Config {
    fn default() -> Self {
        let http = HttpOptions::default();
        let mcp = McpOptions::default();
        let serve = mirobody_mcp::ServeOptions::default();
        let callers = &http.caller_limits;
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_base_url: None,
            uri_prefix: String::new(),
            stateless: http.stateless,
            shared_sessions: true,
            max_body_bytes: http.max_body_bytes,
            allowed_hosts: http.allowed_hosts,
            allowed_origins: http.allowed_origins,
            max_sessions: http.max_sessions,
            session_idle_timeout_secs: http.session_idle_timeout.as_secs(),
            header_read_timeout_secs: serve.header_read_timeout.as_secs(),
            shutdown_grace_secs: serve.shutdown_grace.as_secs(),
            write_timeout_secs: serve.write_timeout.as_secs(),
            request_body_timeout_secs: http.request_body_timeout.as_secs(),
            max_connections: serve.max_connections,
            max_connections_per_address: serve.max_connections_per_address,
            trusted_proxies: Vec::new(),
            forwarded_header: "x-forwarded-for".to_owned(),
            max_inflight_body_bytes: http.max_inflight_body_bytes,
            max_anonymous_sessions: http.max_anonymous_sessions,
            max_sessions_per_caller: callers.max_sessions,
            max_calls_per_caller: callers.max_calls,
            max_streams_per_caller: callers.max_streams,
            requests_per_second: callers.requests_per_second,
            requests_burst: callers.burst,
            worker_threads: None,
            release_startup_memory: false,
            page_size: mcp.page_size,
            hide_auth_tools_from_anonymous: mcp.hide_auth_tools_from_anonymous,
            answer_timeout_secs: mcp.answer_timeout.as_secs(),
            server_name: ServerInfo::default().name,
            instructions: None,
            log: "info".into(),
            request_state_key: None,
            request_state_ttl_secs: 600,
            list_ttl_secs: 60,
            max_subscriptions: http.max_subscriptions,
            uploads: UploadSettings::default(),
            extraction: ExtractionSettings::default(),
            tasks: TaskSettings::default(),
            tools: ToolSettings::default(),
            quotas: QuotaSettings::default(),
            auth: AuthConfig::default(),
            backends: BackendConfig::default(),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A key or value is wrong.
    #[error("invalid configuration ({origin}): {message}")]
    Invalid {
        /// The file, or "environment".
        origin: String,
        /// What is wrong.
        message: String,
    },
}

impl Config {
    /// Loads the file (if any), then applies `MIROBODY_*` variables from `env`.
    pub fn load(file: Option<&Path>, env: impl IntoIterator<Item = (String, String)>) -> Result<Config, ConfigError> {
        let mut origin = "defaults".to_owned();
        let mut map = match file {
            Some(path) => {
                origin = path.display().to_string();
                let text = std::fs::read_to_string(path)
                    .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
                match serde_yaml_ng::from_str::<Value>(&text) {
                    Ok(Value::Mapping(map)) => map,
                    Ok(Value::Null) => Mapping::new(),
                    Ok(_) => return Err(invalid(&origin, "the file must be a mapping of keys to values")),
                    Err(e) => return Err(invalid(&origin, e)),
                }
            }
            None => Mapping::new(),
        };
        // Per-agent tool lists are flat keys (upstream's spelling); they are taken out before
        // the rest is read, so they do not count as unknown keys.
        let mut tool_lists: Vec<(String, Value)> = Vec::new();
        let flat: Vec<Value> =
            map.keys().filter(|k| k.as_str().and_then(mirobody_auth::flat_tool_list_key).is_some()).cloned().collect();
        for key in flat {
            if let Some(value) = map.remove(&key) {
                tool_lists.push((key.as_str().unwrap_or_default().to_owned(), value));
            }
        }
        let mut from_env = Vec::new();
        for (key, value) in env {
            let Some(name) = key.strip_prefix(ENV_PREFIX) else { continue };
            // MIROBODY_CONFIG names the file; the test suite's own variables are not settings.
            if name == "CONFIG" || name.starts_with("TEST_") || name == "REQUIRE_EXTERNAL" {
                continue;
            }
            // A value is a YAML scalar or list; one that reads as a mapping (`mirobody:`, a key
            // prefix ending in a colon) is the text it is: sections are set key by key (`__`).
            let parsed = match serde_yaml_ng::from_str::<Value>(&value) {
                Ok(Value::Mapping(_)) | Err(_) => Value::String(value),
                Ok(parsed) => parsed,
            };
            if mirobody_auth::flat_tool_list_key(name).is_some() {
                tool_lists.push((name.to_owned(), parsed));
            } else {
                // `MIROBODY_BACKENDS__REDIS_URL` sets `backends.redis_url`.
                insert_path(&mut map, &name.to_ascii_lowercase(), parsed).map_err(|e| invalid(&key, e))?;
            }
            from_env.push(key);
        }
        if !from_env.is_empty() {
            origin = format!("{origin} with environment {}", from_env.join(", "));
        }
        let mut config: Config = serde_yaml_ng::from_value(Value::Mapping(map)).map_err(|e| invalid(&origin, e))?;
        for (key, value) in tool_lists {
            let Some((kind, agent)) = mirobody_auth::flat_tool_list_key(&key) else { continue };
            let list: mirobody_auth::ToolList =
                serde_yaml_ng::from_value(value).map_err(|e| invalid(&origin, format!("{key}: {e}")))?;
            config.auth.set_tool_list(kind, &agent, list);
        }
        config.validate().map_err(|e| invalid(&origin, e))?;
        if let Some(url) = &mut config.public_base_url {
            while url.ends_with('/') {
                url.pop();
            }
        }
        config.uri_prefix = normalize_prefix(&config.uri_prefix);
        Ok(config)
    }

    /// Whether sessions are shared with other instances through Redis.
    pub fn shares_sessions(&self) -> bool {
        self.shared_sessions && !self.stateless && self.backends.redis_url.is_some()
    }

    // Instances that share sessions serve one client in turn: what one signs (a requestState,
    // a file URL, a token), another must accept, and they must read the same data.
    fn check_shared(&self) -> Result<(), String> {
        if !self.shares_sessions() {
            return Ok(());
        }
        let auth = &self.auth;
        let auth_key =
            auth.hs256_secret.is_some() || auth.rs256.is_some() || auth.es256.is_some() || auth.jwks.is_some();
        let missing: Vec<&str> = [
            (self.request_state_key.is_none(), "request_state_key"),
            (self.backends.signing_key.is_none(), "backends.signing_key"),
            (!auth_key, "a token key (auth.hs256_secret, auth.rs256, auth.es256 or auth.jwks)"),
        ]
        .into_iter()
        .filter_map(|(missing, name)| missing.then_some(name))
        .collect();
        if !missing.is_empty() {
            return Err(format!(
                "sessions are shared through Redis (backends.redis_url is set), so every instance must be given \
                 the same keys, but this one would generate its own {}; set them to the same values on every \
                 instance, or set shared_sessions: false to run one instance",
                missing.join(", ")
            ));
        }
        if self.backends.database_url.as_deref().is_none_or(|url| url.starts_with("sqlite:")) {
            return Err("sessions are shared through Redis (backends.redis_url is set), but the database is SQLite, \
                 which one instance alone can use; set backends.database_url to PostgreSQL, or set \
                 shared_sessions: false to run one instance"
                .into());
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), String> {
        self.check_shared()?;
        self.quotas.validate()?;
        if self.max_body_bytes < 1024 {
            return Err(format!("max_body_bytes must be at least 1024, not {}", self.max_body_bytes));
        }
        if let Some(key) = &self.request_state_key {
            // The signed-token type's one key-length check.
            mirobody_mcp::StateKey::new(key.expose_secret().as_bytes())
                .map_err(|e| format!("request_state_key: {e}"))?;
        }
        if self.page_size == 0 {
            return Err("page_size must be at least 1".into());
        }
        self.extraction.validate()?;
        if self.header_read_timeout_secs == 0 {
            return Err("header_read_timeout_secs must be at least 1".into());
        }
        if self.worker_threads == Some(0) {
            return Err("worker_threads must be at least 1".into());
        }
        if self.max_sessions == 0 {
            return Err("max_sessions must be at least 1".into());
        }
        for (key, value) in [
            ("uploads.max_file_bytes", self.uploads.max_file_bytes),
            ("uploads.max_import_bytes", self.uploads.max_import_bytes),
            ("uploads.max_concurrent", self.uploads.max_concurrent as u64),
            ("uploads.max_inflight_bytes", self.uploads.max_inflight_bytes),
            ("uploads.link_ttl_secs", self.uploads.link_ttl_secs),
            ("uploads.link_uses", u64::from(self.uploads.link_uses)),
            ("uploads.max_links_per_user", u64::from(self.uploads.max_links_per_user)),
            ("tasks.ttl_secs", self.tasks.ttl_secs),
            ("tasks.max_running_per_caller", self.tasks.max_running_per_caller),
            ("tasks.max_kept_per_caller", self.tasks.max_kept_per_caller),
            ("tasks.lease_secs", self.tasks.lease_secs),
            ("write_timeout_secs", self.write_timeout_secs),
            ("request_body_timeout_secs", self.request_body_timeout_secs),
            ("max_connections", self.max_connections as u64),
        ] {
            if value == 0 {
                return Err(format!("{key} must be at least 1"));
            }
        }
        // A day at most: a longer deadline is no bound, and one past what a clock can add panics.
        if self.request_body_timeout_secs > MAX_REQUEST_BODY_TIMEOUT_SECS {
            return Err(format!(
                "request_body_timeout_secs must be at most {MAX_REQUEST_BODY_TIMEOUT_SECS}, not {}",
                self.request_body_timeout_secs
            ));
        }
        if self.max_anonymous_sessions > self.max_sessions {
            return Err(format!(
                "max_anonymous_sessions ({}) must not be more than max_sessions ({})",
                self.max_anonymous_sessions, self.max_sessions
            ));
        }
        if let Some(url) = &self.public_base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!("public_base_url must start with http:// or https://, not '{url}'"));
        }
        if !self.uri_prefix.is_empty() && !self.uri_prefix.starts_with('/') {
            return Err(format!("uri_prefix must start with '/', not '{}'", self.uri_prefix));
        }
        mirobody_mcp::TrustedProxies::parse(&self.trusted_proxies).map_err(|e| format!("trusted_proxies: {e}"))?;
        self.forwarded_header.parse::<mirobody_mcp::ForwardedHeader>().map_err(|e| format!("forwarded_header: {e}"))?;
        Ok(())
    }

    /// The public base URL, defaulting to `http://<bind>`.
    pub fn base_url(&self) -> String {
        self.public_base_url.clone().unwrap_or_else(|| format!("http://{}", self.bind))
    }

    /// The MCP endpoint's path, with the prefix.
    pub fn mcp_path(&self) -> String {
        format!("{}/mcp", self.uri_prefix)
    }

    /// The HTTP transport options.
    pub fn http_options(&self) -> HttpOptions {
        let mut allowed_hosts = self.allowed_hosts.clone();
        if let Some(host) = self.public_base_url.as_deref().and_then(url_host) {
            allowed_hosts.push(host);
        }
        let mut options = HttpOptions::default();
        options.stateless = self.stateless;
        options.max_body_bytes = self.max_body_bytes;
        options.allowed_hosts = allowed_hosts;
        options.allowed_origins = self.allowed_origins.clone();
        options.max_sessions = self.max_sessions;
        options.session_idle_timeout = Duration::from_secs(self.session_idle_timeout_secs);
        options.max_subscriptions = self.max_subscriptions;
        options.max_anonymous_sessions = self.max_anonymous_sessions;
        options.request_body_timeout = Duration::from_secs(self.request_body_timeout_secs);
        options.max_inflight_body_bytes = self.max_inflight_body_bytes;
        options.caller_limits = self.caller_limits();
        options
    }

    /// What one caller may hold and how fast it may ask.
    pub fn caller_limits(&self) -> mirobody_mcp::limits::CallerLimits {
        mirobody_mcp::limits::CallerLimits::default()
            .with_holdings(self.max_sessions_per_caller, self.max_calls_per_caller, self.max_streams_per_caller)
            .with_rate(self.requests_per_second, self.requests_burst)
    }

    /// How connections are served.
    pub fn serve_options(&self) -> mirobody_mcp::ServeOptions {
        let mut options = mirobody_mcp::ServeOptions::default();
        options.header_read_timeout = Duration::from_secs(self.header_read_timeout_secs);
        options.shutdown_grace = Duration::from_secs(self.shutdown_grace_secs);
        options.write_timeout = Duration::from_secs(self.write_timeout_secs);
        options.max_connections = self.max_connections;
        options.max_connections_per_address = self.max_connections_per_address;
        // Checked when the configuration was loaded.
        options.trusted_proxies = mirobody_mcp::TrustedProxies::parse(&self.trusted_proxies).unwrap_or_default();
        options.forwarded_header = self.forwarded_header.parse().unwrap_or_default();
        options
    }

    /// How many threads answer requests: [`Config::worker_threads`], or one per CPU this
    /// process may use.
    pub fn worker_count(&self) -> usize {
        self.worker_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
    }

    /// The runtime the server runs on, with [`Config::worker_count`] threads. One thread gets
    /// tokio's current-thread scheduler: on a single CPU a work-stealing scheduler has nothing
    /// to steal and only adds synchronization.
    pub fn runtime(&self) -> std::io::Result<tokio::runtime::Runtime> {
        let mut builder = match self.worker_count() {
            1 => tokio::runtime::Builder::new_current_thread(),
            threads => {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(threads);
                builder
            }
        };
        builder.enable_all().build()
    }

    /// The protocol options.
    pub fn mcp_options(&self) -> McpOptions {
        let mut options = McpOptions::default();
        options.page_size = self.page_size;
        options.hide_auth_tools_from_anonymous = self.hide_auth_tools_from_anonymous;
        options.answer_timeout = Duration::from_secs(self.answer_timeout_secs);
        self.tools.apply(&mut options);
        options
    }

    /// What the server says about itself.
    pub fn server_info(&self) -> ServerInfo {
        let mut options = ServerInfo::default();
        options.name = self.server_name.clone();
        options.instructions = self.instructions.clone();
        options
    }
}

// Sets `a__b__c` in nested mappings, creating them as needed.
fn insert_path(map: &mut Mapping, path: &str, value: Value) -> Result<(), String> {
    match path.split_once("__") {
        None => {
            map.insert(Value::String(path.to_owned()), value);
            Ok(())
        }
        Some((head, rest)) => {
            let entry = map.entry(Value::String(head.to_owned())).or_insert_with(|| Value::Mapping(Mapping::new()));
            match entry {
                Value::Mapping(inner) => insert_path(inner, rest, value),
                _ => Err(format!("'{head}' is not a section")),
            }
        }
    }
}

fn invalid(origin: &str, message: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid { origin: origin.to_owned(), message: message.to_string() }
}

fn normalize_prefix(prefix: &str) -> String {
    prefix.trim_end_matches('/').to_owned()
}

// The host of an absolute URL as a Host header names it (an IPv6 address in brackets), without
// userinfo or port; `None` without a scheme or a host.
fn url_host(url: &str) -> Option<String> {
    let uri = url.parse::<http::Uri>().ok()?;
    uri.scheme()?;
    uri.host().filter(|host| !host.is_empty()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_serve_loopback_8080() {
        let config =
            Config::load(None, env(&[("MIROBODY_TEST_REDIS_URL", "x"), ("MIROBODY_REQUIRE_EXTERNAL", "1")])).unwrap();
        assert_eq!(config.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(config.mcp_path(), "/mcp");
        assert_eq!(config.base_url(), "http://127.0.0.1:8080");
    }

    #[test]
    fn file_then_environment() {
        let dir = std::env::temp_dir().join(format!("mirobody-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        std::fs::write(
            &path,
            "bind: 0.0.0.0:9000\npage_size: 5\nuri_prefix: /api/\npublic_base_url: https://mcp.example.com/\n",
        )
        .unwrap();
        let config =
            Config::load(Some(&path), env(&[("MIROBODY_PAGE_SIZE", "7"), ("MIROBODY_ALLOWED_ORIGINS", "[a, b]")]))
                .unwrap();
        assert_eq!(config.bind.to_string(), "0.0.0.0:9000");
        assert_eq!(config.page_size, 7);
        assert_eq!(config.allowed_origins, ["a", "b"]);
        assert_eq!(config.mcp_path(), "/api/mcp");
        assert_eq!(config.base_url(), "https://mcp.example.com");
        assert!(config.http_options().allowed_hosts.contains(&"mcp.example.com".to_owned()));
    }

    #[test]
    fn the_public_host_is_the_url_s_host_without_userinfo_or_port() {
        let host = |url| url_host(url);
        assert_eq!(host("https://mcp.example.com:8443/mcp").as_deref(), Some("mcp.example.com"));
        assert_eq!(host("http://[::1]:8080/").as_deref(), Some("[::1]"), "as a Host header names it");
        assert_eq!(host("http://[2001:db8::1]").as_deref(), Some("[2001:db8::1]"));
        assert_eq!(host("https://user:pw@mcp.example.com:443/").as_deref(), Some("mcp.example.com"));
        for no_host in ["mcp.example.com", "mcp.example.com:443", "/mcp", "https://", "not a url"] {
            assert_eq!(host(no_host), None, "{no_host}");
        }
    }

    #[test]
    fn sections_from_nested_environment_keys_and_flat_tool_lists() {
        let config = Config::load(
            None,
            env(&[
                ("MIROBODY_BACKENDS__REDIS_URL", "redis://127.0.0.1:6379"),
                ("MIROBODY_SHARED_SESSIONS", "false"),
                ("MIROBODY_AUTH__ISSUER", "https://auth.example.com"),
                ("MIROBODY_ALLOWED_TOOLS_BASELINE", "echo, whoami"),
                ("MIROBODY_DISALLOWED_TOOLS_BASELINE", "[whoami]"),
            ]),
        )
        .unwrap();
        assert_eq!(config.backends.redis_url.as_deref(), Some("redis://127.0.0.1:6379"));
        assert_eq!(config.auth.issuer.as_deref(), Some("https://auth.example.com"));
        assert_eq!(config.auth.allowed_tools["BASELINE"].0, ["echo", "whoami"]);
        assert_eq!(config.auth.disallowed_tools["BASELINE"].0, ["whoami"]);
        let err = Config::load(None, env(&[("MIROBODY_BACKENDS__REDIS_ULR", "x")])).unwrap_err().to_string();
        assert!(err.contains("redis_ulr"), "{err}");
    }

    #[test]
    fn flat_tool_lists_in_the_file_are_not_unknown_keys() {
        let dir = std::env::temp_dir().join(format!("mirobody-config-lists-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        std::fs::write(&path, "ALLOWED_TOOLS_DEEP: [echo]\nDISALLOWED_TOOLS_DEEP: ~\n").unwrap();
        let config = Config::load(Some(&path), env(&[])).unwrap();
        assert_eq!(config.auth.allowed_tools["DEEP"].0, ["echo"]);
        assert!(config.auth.disallowed_tools["DEEP"].0.is_empty());
    }

    #[test]
    fn the_connection_timeouts_reach_the_serve_options() {
        let vars = [("MIROBODY_HEADER_READ_TIMEOUT_SECS", "7"), ("MIROBODY_SHUTDOWN_GRACE_SECS", "0")];
        let options = Config::load(None, env(&vars)).unwrap().serve_options();
        assert_eq!(options.header_read_timeout, Duration::from_secs(7));
        assert_eq!(options.shutdown_grace, Duration::ZERO);
        let defaults = Config::default().serve_options();
        assert_eq!(defaults.header_read_timeout, Duration::from_secs(30));
        assert_eq!(defaults.shutdown_grace, Duration::from_secs(30));
    }

    #[test]
    fn giving_back_start_up_memory_is_opt_in() {
        assert!(!Config::default().release_startup_memory);
        let on = Config::load(None, env(&[("MIROBODY_RELEASE_STARTUP_MEMORY", "true")])).unwrap();
        assert!(on.release_startup_memory);
        let bad = Config::load(None, env(&[("MIROBODY_RELEASE_STARTUP_MEMORY", "sometimes")]));
        let message = bad.unwrap_err().to_string();
        assert!(message.contains("MIROBODY_RELEASE_STARTUP_MEMORY"), "{message}");
    }

    #[test]
    fn one_worker_thread_runs_the_server_on_one_thread() {
        use tokio::runtime::RuntimeFlavor;
        let with = |threads: &str| Config::load(None, env(&[("MIROBODY_WORKER_THREADS", threads)])).unwrap();
        let single = with("1").runtime().unwrap();
        assert_eq!(single.handle().runtime_flavor(), RuntimeFlavor::CurrentThread);
        assert_eq!(single.block_on(async { 1 + 1 }), 2);
        let three = with("3").runtime().unwrap();
        assert_eq!(three.handle().runtime_flavor(), RuntimeFlavor::MultiThread);
        assert_eq!(three.metrics().num_workers(), 3);
        // Unset: as many as the CPUs this process may run on.
        let cpus = std::thread::available_parallelism().unwrap().get();
        let default = Config::default();
        assert_eq!(default.worker_count(), cpus);
        let expected = if cpus == 1 { RuntimeFlavor::CurrentThread } else { RuntimeFlavor::MultiThread };
        assert_eq!(default.runtime().unwrap().handle().runtime_flavor(), expected);
    }

    #[test]
    fn shared_sessions_need_every_key_given_and_a_shared_database() {
        let shared = [
            ("MIROBODY_BACKENDS__REDIS_URL", "redis://127.0.0.1:6379"),
            ("MIROBODY_BACKENDS__DATABASE_URL", "postgres://127.0.0.1/mirobody"),
            ("MIROBODY_REQUEST_STATE_KEY", "state-key-0123456789-0123456789-abcdef"),
            ("MIROBODY_BACKENDS__SIGNING_KEY", "url-key-0123456789-0123456789-abcdef"),
            ("MIROBODY_AUTH__HS256_SECRET", "token-key-0123456789-0123456789-abcdef"),
        ];
        let config = Config::load(None, env(&shared)).unwrap();
        assert!(config.shares_sessions());
        // Each key left to be generated is named; so is SQLite.
        for (left_out, named) in [
            ("MIROBODY_REQUEST_STATE_KEY", "request_state_key"),
            ("MIROBODY_BACKENDS__SIGNING_KEY", "backends.signing_key"),
            ("MIROBODY_AUTH__HS256_SECRET", "a token key"),
            ("MIROBODY_BACKENDS__DATABASE_URL", "SQLite"),
        ] {
            let vars: Vec<_> = shared.iter().copied().filter(|(name, _)| *name != left_out).collect();
            let err = Config::load(None, env(&vars)).unwrap_err().to_string();
            assert!(err.contains(named) && err.contains("shared_sessions: false"), "{left_out}: {err}");
        }
        // One instance says so, or shares nothing: no keys needed.
        let redis = [("MIROBODY_BACKENDS__REDIS_URL", "redis://127.0.0.1:6379")];
        assert!(Config::load(None, env(&redis)).is_err());
        for off in [("MIROBODY_SHARED_SESSIONS", "false"), ("MIROBODY_STATELESS", "true")] {
            let config = Config::load(None, env(&[redis[0], off])).unwrap();
            assert!(!config.shares_sessions());
        }
        assert!(!Config::load(None, env(&[])).unwrap().shares_sessions(), "no Redis, nothing to share");
    }

    #[test]
    fn debug_prints_no_secret() {
        let config = Config::load(
            None,
            env(&[
                ("MIROBODY_REQUEST_STATE_KEY", "state-key-0123456789-0123456789-abcdef"),
                ("MIROBODY_AUTH__HS256_SECRET", "token-key-0123456789-0123456789-abcdef"),
                ("MIROBODY_BACKENDS__DATABASE_URL", "postgres://user:db-password@127.0.0.1/x"),
                ("MIROBODY_BACKENDS__REDIS_URL", "redis://:redis-password@127.0.0.1:6379"),
                ("MIROBODY_BACKENDS__SIGNING_KEY", "url-key-0123456789-0123456789-abcdef"),
            ]),
        )
        .unwrap();
        assert_eq!(config.request_state_key.as_ref().unwrap().expose_secret(), "state-key-0123456789-0123456789-abcdef");
        let printed = format!("{config:?} {config:#?}");
        for secret in ["state-key", "token-key", "db-password", "redis-password", "url-key"] {
            assert!(!printed.contains(secret), "{secret} in {printed}");
        }
    }

    #[test]
    fn the_limits_reach_the_transport_and_the_connections() {
        let vars = [
            ("MIROBODY_MAX_CALLS_PER_CALLER", "3"),
            ("MIROBODY_REQUESTS_PER_SECOND", "0"),
            ("MIROBODY_MAX_CONNECTIONS_PER_ADDRESS", "9"),
            ("MIROBODY_WRITE_TIMEOUT_SECS", "4"),
            ("MIROBODY_REQUEST_BODY_TIMEOUT_SECS", "5"),
            ("MIROBODY_MAX_ANONYMOUS_SESSIONS", "10"),
        ];
        let config = Config::load(None, env(&vars)).unwrap();
        let http = config.http_options();
        assert_eq!((http.caller_limits.max_calls, http.caller_limits.requests_per_second), (3, 0));
        assert_eq!(http.request_body_timeout, Duration::from_secs(5));
        assert_eq!(http.max_anonymous_sessions, 10);
        let serve = config.serve_options();
        assert_eq!((serve.max_connections_per_address, serve.write_timeout), (9, Duration::from_secs(4)));
        let err = Config::load(None, env(&[("MIROBODY_MAX_ANONYMOUS_SESSIONS", "20000")])).unwrap_err().to_string();
        assert!(err.contains("max_anonymous_sessions"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_WRITE_TIMEOUT_SECS", "0")])).unwrap_err().to_string();
        assert!(err.contains("write_timeout_secs must be at least 1"), "{err}");
    }

    #[test]
    fn a_body_deadline_past_a_day_is_refused() {
        let err = Config::load(None, env(&[("MIROBODY_REQUEST_BODY_TIMEOUT_SECS", "18446744073709551615")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("request_body_timeout_secs must be at most 86400"), "{err}");
        let config = Config::load(None, env(&[("MIROBODY_REQUEST_BODY_TIMEOUT_SECS", "86400")])).unwrap();
        assert_eq!(config.request_body_timeout_secs, 86_400);
    }

    #[test]
    fn a_value_that_reads_as_a_mapping_is_its_text() {
        let config = Config::load(None, env(&[("MIROBODY_BACKENDS__REDIS_KEY_PREFIX", "family:")])).unwrap();
        assert_eq!(config.backends.redis_key_prefix, "family:");
        let config = Config::load(None, env(&[("MIROBODY_SERVER_NAME", "a: b")])).unwrap();
        assert_eq!(config.server_name, "a: b");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let err = Config::load(None, env(&[("MIROBODY_PAGE_SIZ", "7")])).unwrap_err().to_string();
        assert!(err.contains("page_siz") && err.contains("MIROBODY_PAGE_SIZ"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_BIND", "nowhere")])).unwrap_err().to_string();
        assert!(err.contains("bind") || err.contains("socket address"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_PAGE_SIZE", "0")])).unwrap_err().to_string();
        assert!(err.contains("page_size must be at least 1"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_HEADER_READ_TIMEOUT_SECS", "0")])).unwrap_err().to_string();
        assert!(err.contains("header_read_timeout_secs must be at least 1"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_WORKER_THREADS", "0")])).unwrap_err().to_string();
        assert!(err.contains("worker_threads must be at least 1"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_WORKER_THREADS", "many")])).unwrap_err().to_string();
        assert!(err.contains("MIROBODY_WORKER_THREADS") && err.contains("many"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_PUBLIC_BASE_URL", "example.com")])).unwrap_err().to_string();
        assert!(err.contains("public_base_url"), "{err}");
    }

    #[test]
    fn trusted_proxies_and_fair_shares_are_read_and_checked() {
        let defaults = Config::default();
        assert!(defaults.serve_options().trusted_proxies.is_empty(), "no proxy is trusted unless named");
        assert_eq!((defaults.uploads.max_concurrent_per_caller, defaults.uploads.min_body_bytes_per_sec), (2, 16384));
        let vars = [
            ("MIROBODY_TRUSTED_PROXIES", r#"["127.0.0.1/32", "10.0.0.0/8", "::1"]"#),
            ("MIROBODY_UPLOADS__MAX_CONCURRENT_PER_CALLER", "3"),
            ("MIROBODY_UPLOADS__MIN_BODY_BYTES_PER_SEC", "0"),
        ];
        let config = Config::load(None, env(&vars)).unwrap();
        let proxies = config.serve_options().trusted_proxies;
        assert!(proxies.contains("10.1.2.3".parse().unwrap()) && proxies.contains("::1".parse().unwrap()));
        assert!(!proxies.contains("192.0.2.1".parse().unwrap()));
        assert_eq!((config.uploads.max_concurrent_per_caller, config.uploads.min_body_bytes_per_sec), (3, 0));
        let err = Config::load(None, env(&[("MIROBODY_TRUSTED_PROXIES", "[nginx.internal]")])).unwrap_err().to_string();
        assert!(err.contains("trusted_proxies") && err.contains("nginx.internal"), "{err}");
        assert_eq!(defaults.serve_options().forwarded_header, mirobody_mcp::ForwardedHeader::XForwardedFor);
        let config = Config::load(None, env(&[("MIROBODY_FORWARDED_HEADER", "forwarded")])).unwrap();
        assert_eq!(config.serve_options().forwarded_header, mirobody_mcp::ForwardedHeader::Forwarded);
        let err = Config::load(None, env(&[("MIROBODY_FORWARDED_HEADER", "x-real-ip")])).unwrap_err().to_string();
        assert!(err.contains("forwarded_header") && err.contains("x-real-ip"), "{err}");
    }

    #[test]
    fn task_settings_reach_the_service_options_and_zero_is_refused() {
        let vars = [("MIROBODY_TASKS__TTL_SECS", "60"), ("MIROBODY_TASKS__MAX_RUNNING_PER_CALLER", "3")];
        let options = Config::load(None, env(&vars)).unwrap().tasks.options();
        assert_eq!((options.ttl, options.max_live_per_caller), (Duration::from_secs(60), 3));
        let err = Config::load(None, env(&[("MIROBODY_TASKS__LEASE_SECS", "0")])).unwrap_err().to_string();
        assert!(err.contains("tasks.lease_secs must be at least 1"), "{err}");
    }
}
