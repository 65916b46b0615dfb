//! Configuration: a YAML file, then `MIROBODY_*` environment variables, then command-line flags.
//! Unknown keys and bad values stop the server at start-up with a message naming them.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use mirobody_auth::{AuthConfig, ExposeSecret, SecretString};
use mirobody_store::BackendConfig;

use mirobody_mcp::http::HttpOptions;
use mirobody_mcp::{AccessLogOptions, McpOptions, ServeOptions, ServerInfo, TaskOptions};

/// The environment variable prefix for overrides: `MIROBODY_BIND`, `MIROBODY_HTTP__STATELESS` (`__`
/// for a key in a section), ...
pub const ENV_PREFIX: &str = "MIROBODY_";

/// The longest `http.request_body_timeout` allowed: a day.
pub const MAX_REQUEST_BODY_TIMEOUT: Duration = Duration::from_secs(86_400);

mod extraction;
mod metrics;
mod quotas;
mod telemetry;
mod tools;
mod uploads;

pub use extraction::ExtractionSettings;
pub use metrics::{MIN_METRICS_TOKEN_CHARS, MetricsSettings};
pub use quotas::QuotaSettings;
pub use telemetry::TelemetrySettings;
pub use tools::ToolSettings;
pub use uploads::UploadSettings;

/// Every setting, with its default. The transport's, the protocol's and the tasks' settings
/// are `mirobody-mcp`'s own option structs, embedded as sections: a new setting there is a new
/// key here with nothing else to change. Durations read `30s`, `15m`, `1h`, `200ms` or a
/// number of seconds ([`mirobody_mcp::human_duration`]).
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
    /// Keep 2025-11-25 sessions in Redis when `backends.redis_url` is set, so that every
    /// instance serves every session (on by default). Instances that share sessions must share
    /// their keys too: the server refuses to start when one would be generated.
    pub shared_sessions: bool,
    /// Threads that answer requests. Unset: one per CPU the process may use (its CPU affinity
    /// and cgroup quota). With one, every request is answered on a single thread (blocking work
    /// such as SQLite still has threads of its own).
    pub worker_threads: Option<usize>,
    /// Give back, once started, the pages of the program's own file that only start-up used
    /// (`startup_pages::release_startup_pages`, Linux only). Off by default: it trades a few
    /// page faults after start-up for a few MiB of resident memory, which matters only where
    /// many small instances share a host.
    pub release_startup_memory: bool,
    /// The server's name in `initialize`.
    pub server_name: String,
    /// Instructions for the model, sent in `initialize`.
    pub instructions: Option<String>,
    /// The log filter (`info`, `debug`, `mirobody_mcp=debug,info`, ...). `RUST_LOG` wins.
    pub log: String,
    /// How log lines are written (to stderr): `text` for people, `json` (one object a line,
    /// with the request's `request_id` and `trace_id`) for a log collector.
    pub log_format: LogFormat,
    /// The key (32+ bytes) that signs 2026-07-28 `requestState`s; instances behind one load
    /// balancer need the same one. A random key per process when unset.
    pub request_state_key: Option<SecretString>,
    /// How long a 2026-07-28 `requestState` stays valid.
    #[serde(deserialize_with = "mirobody_mcp::human_duration::deserialize")]
    pub request_state_ttl: Duration,
    /// The `ttlMs` caching hint on 2026-07-28 listings.
    #[serde(deserialize_with = "mirobody_mcp::human_duration::deserialize")]
    pub list_ttl: Duration,
    /// The Streamable HTTP endpoint: sessions, bodies, hosts and origins, and what one caller
    /// may hold (`http.caller_limits`). The public base URL's host is always an allowed host.
    pub http: HttpOptions,
    /// How connections are served: their deadlines, how many, the trusted proxies.
    pub serve: ServeOptions,
    /// The protocol: `tools/list` pages, how long a tool waits for the client's answers.
    pub mcp: McpOptions,
    /// Calls that run as tasks (the MCP tasks extension): how long results are kept, how many
    /// run at once per caller.
    pub tasks: TaskOptions,
    /// The access log: its queue, how long a read of another person's data waits for room in
    /// it, how long entries are kept (`retention`, zero: for ever).
    pub access_log: AccessLogOptions,
    /// A person's uploads and imports: sizes, quotas, upload links.
    pub uploads: UploadSettings,
    /// How the text of uploaded documents is read: a sandboxed child process per document.
    pub extraction: ExtractionSettings,
    /// How long a tool call may work: a default for tools that declare no limit, and limits
    /// by tool name.
    pub tools: ToolSettings,
    /// How much one person keeps: memories, invitations waiting.
    pub quotas: QuotaSettings,
    /// Who callers are: JWT keys, issuer and audience, personal-secret scopes, per-agent tool
    /// lists (also as flat `ALLOWED_TOOLS_<AGENT>` / `DISALLOWED_TOOLS_<AGENT>` keys).
    pub auth: AuthConfig,
    /// Signing people in: accounts, the pages, the OAuth 2.1 authorization server (on by
    /// default).
    pub oauth: mirobody_oauth::OAuthSettings,
    /// Where data lives: the database, object storage, the cache, long-term memory.
    pub backends: BackendConfig,
    /// Prometheus metrics: a listener of their own, and a token for `/metrics` (off by
    /// default).
    pub metrics: MetricsSettings,
    /// Traces exported over OTLP: where to, under which name, how many (off by default).
    pub telemetry: TelemetrySettings,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_base_url: None,
            uri_prefix: String::new(),
            shared_sessions: true,
            worker_threads: None,
            release_startup_memory: false,
            server_name: ServerInfo::default().name,
            instructions: None,
            log: "info".into(),
            log_format: LogFormat::Text,
            request_state_key: None,
            request_state_ttl: Duration::from_secs(600),
            list_ttl: Duration::from_secs(60),
            http: HttpOptions::default(),
            serve: ServeOptions::default(),
            mcp: McpOptions::default(),
            tasks: TaskOptions::default(),
            access_log: AccessLogOptions::default(),
            uploads: UploadSettings::default(),
            extraction: ExtractionSettings::default(),
            tools: ToolSettings::default(),
            quotas: QuotaSettings::default(),
            auth: AuthConfig::default(),
            oauth: mirobody_oauth::OAuthSettings::default(),
            backends: BackendConfig::default(),
            metrics: MetricsSettings::default(),
            telemetry: TelemetrySettings::default(),
        }
    }
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Lines for people to read.
    #[default]
    Text,
    /// One JSON object a line.
    Json,
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
    // The layering is this function and `insert_path`, not a crate made for it (figment,
    // config): those would need the same filters for the flat per-agent tool lists and the
    // test suite's variables, would bring a second YAML parser, and name a bad key by its
    // provider rather than by the variable that set it.
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
        // The error names the key it is about (`serve.write_timeout: ...`), however deep.
        let mut config: Config =
            serde_path_to_error::deserialize(Value::Mapping(map)).map_err(|e| invalid(&origin, e))?;
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
        self.shared_sessions && !self.http.stateless && self.backends.redis_url.is_some()
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
        self.extraction.validate()?;
        self.oauth.validate()?;
        self.metrics.check()?;
        self.telemetry.validate()?;
        let (http, serve, tasks, uploads) = (&self.http, &self.serve, &self.tasks, &self.uploads);
        if http.max_body_bytes < 1024 {
            return Err(format!("http.max_body_bytes must be at least 1024, not {}", http.max_body_bytes));
        }
        if let Some(key) = &self.request_state_key {
            // The signed-token type's one key-length check.
            mirobody_mcp::StateKey::new(key.expose_secret().as_bytes())
                .map_err(|e| format!("request_state_key: {e}"))?;
        }
        // What a zero would break: no page, no session, nothing stored.
        for (key, zero) in [
            ("mcp.page_size", self.mcp.page_size == 0),
            ("worker_threads", self.worker_threads == Some(0)),
            ("http.max_sessions", http.max_sessions == 0),
            ("serve.max_connections", serve.max_connections == 0),
            ("uploads.max_file_bytes", uploads.max_file_bytes == 0),
            ("uploads.max_import_bytes", uploads.max_import_bytes == 0),
            ("uploads.max_concurrent", uploads.max_concurrent == 0),
            ("uploads.max_inflight_bytes", uploads.max_inflight_bytes == 0),
            ("uploads.link_uses", uploads.link_uses == 0),
            ("uploads.max_links_per_user", uploads.max_links_per_user == 0),
            ("tasks.max_live_per_caller", tasks.max_live_per_caller == 0),
            ("tasks.max_kept_per_caller", tasks.max_kept_per_caller == 0),
            ("access_log.queue", self.access_log.queue == 0),
        ] {
            if zero {
                return Err(format!("{key} must be at least 1"));
            }
        }
        // And a deadline or lifetime of zero is over before it starts.
        for (key, duration) in [
            ("http.request_body_timeout", http.request_body_timeout),
            ("serve.header_read_timeout", serve.header_read_timeout),
            ("serve.write_timeout", serve.write_timeout),
            ("uploads.link_ttl", uploads.link_ttl),
            ("tasks.ttl", tasks.ttl),
            ("tasks.lease", tasks.lease),
        ] {
            if duration.is_zero() {
                return Err(format!("{key} must be longer than 0s"));
            }
        }
        // A day at most: a longer deadline is no bound, and one past what a clock can add panics.
        if http.request_body_timeout > MAX_REQUEST_BODY_TIMEOUT {
            return Err(format!(
                "http.request_body_timeout must be at most {MAX_REQUEST_BODY_TIMEOUT:?}, not {:?}",
                http.request_body_timeout
            ));
        }
        if http.max_anonymous_sessions > http.max_sessions {
            return Err(format!(
                "http.max_anonymous_sessions ({}) must not be more than http.max_sessions ({})",
                http.max_anonymous_sessions, http.max_sessions
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

    /// The HTTP transport options: the `http` section, with the public base URL's host among
    /// the allowed hosts.
    pub fn http_options(&self) -> HttpOptions {
        let mut options = self.http.clone();
        if let Some(host) = self.public_base_url.as_deref().and_then(url_host) {
            options.allowed_hosts.push(host);
        }
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

    /// The protocol options: the `mcp` section, with the `tools` section's time limits.
    pub fn mcp_options(&self) -> McpOptions {
        let mut options = self.mcp.clone();
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
            "bind: 0.0.0.0:9000\nmcp:\n  page_size: 5\nuri_prefix: /api/\npublic_base_url: https://mcp.example.com/\n",
        )
        .unwrap();
        let vars = [("MIROBODY_MCP__PAGE_SIZE", "7"), ("MIROBODY_HTTP__ALLOWED_ORIGINS", "[a, b]")];
        let config = Config::load(Some(&path), env(&vars)).unwrap();
        assert_eq!(config.bind.to_string(), "0.0.0.0:9000");
        assert_eq!(config.mcp.page_size, 7);
        assert_eq!(config.http.allowed_origins, ["a", "b"]);
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
                ("MIROBODY_AUTH__LEEWAY", "1m"),
                ("MIROBODY_ALLOWED_TOOLS_BASELINE", "echo, whoami"),
                ("MIROBODY_DISALLOWED_TOOLS_BASELINE", "[whoami]"),
            ]),
        )
        .unwrap();
        assert_eq!(config.backends.redis_url.as_deref(), Some("redis://127.0.0.1:6379"));
        assert_eq!(config.auth.issuer.as_deref(), Some("https://auth.example.com"));
        assert_eq!(config.auth.leeway, Duration::from_secs(60));
        assert_eq!(config.auth.allowed_tools["BASELINE"].0, ["echo", "whoami"]);
        assert_eq!(config.auth.disallowed_tools["BASELINE"].0, ["whoami"]);
        let err = Config::load(None, env(&[("MIROBODY_BACKENDS__REDIS_ULR", "x")])).unwrap_err().to_string();
        assert!(err.contains("redis_ulr"), "{err}");
    }

    #[test]
    fn identity_providers_are_read_and_checked_at_start() {
        let dir = std::env::temp_dir().join(format!("mirobody-config-providers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        let google = "{id: google, name: Google, issuer: 'https://accounts.google.com', client_id: c, \
                      client_secret: hush-hush-value}";
        std::fs::write(&path, format!("oauth:\n  providers:\n    - {google}\n")).unwrap();
        let config = Config::load(Some(&path), env(&[])).unwrap();
        assert_eq!(config.oauth.providers[0].scopes, ["openid", "email", "profile"]);
        assert!(!format!("{config:?}").contains("hush-hush-value"), "Debug hides the client secret");
        std::fs::write(&path, format!("oauth:\n  providers: [{google}, {google}]\n")).unwrap();
        let err = Config::load(Some(&path), env(&[])).unwrap_err().to_string();
        assert!(err.contains("oauth.providers: the id google is used twice"), "{err}");
        let plain =
            [("MIROBODY_OAUTH__PROVIDERS", "[{id: x, name: X, issuer: 'http://id.example.com', client_id: c}]")];
        let err = Config::load(None, env(&plain)).unwrap_err().to_string();
        assert!(err.contains("must be https"), "{err}");
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
        let vars = [("MIROBODY_SERVE__HEADER_READ_TIMEOUT", "7"), ("MIROBODY_SERVE__SHUTDOWN_GRACE", "0")];
        let options = Config::load(None, env(&vars)).unwrap().serve;
        assert_eq!(options.header_read_timeout, Duration::from_secs(7), "a bare number is seconds");
        assert_eq!(options.shutdown_grace, Duration::ZERO);
        let defaults = Config::default().serve;
        assert_eq!(defaults.header_read_timeout, Duration::from_secs(30));
        assert_eq!(defaults.shutdown_grace, Duration::from_secs(30));
    }

    #[test]
    fn sections_read_human_durations_from_the_file_and_the_environment_wins() {
        let dir = std::env::temp_dir().join(format!("mirobody-config-durations-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        let yaml = "serve:\n  write_timeout: 30s\n  shutdown_grace: 1m\nhttp:\n  session_idle_timeout: 15m\n  \
                    caller_limits:\n    max_calls: 4\n    burst: 9\ntasks:\n  ttl: 1h\n  sync_budget: 250ms\n\
                    uploads:\n  link_ttl: 2h 30m\nlist_ttl: 90\n";
        std::fs::write(&path, yaml).unwrap();
        let vars = [("MIROBODY_HTTP__CALLER_LIMITS__MAX_CALLS", "6"), ("MIROBODY_SERVE__SHUTDOWN_GRACE", "5s")];
        let config = Config::load(Some(&path), env(&vars)).unwrap();
        assert_eq!(config.serve.write_timeout, Duration::from_secs(30));
        assert_eq!(config.serve.shutdown_grace, Duration::from_secs(5), "the environment wins");
        assert_eq!(config.serve.max_connections, ServeOptions::default().max_connections, "unset: the default");
        assert_eq!(config.http.session_idle_timeout, Duration::from_secs(15 * 60));
        let callers = &config.http_options().caller_limits;
        assert_eq!((callers.max_calls, callers.burst, callers.max_streams), (6, 9, 8));
        assert_eq!(
            (config.tasks.ttl, config.tasks.sync_budget),
            (Duration::from_secs(3600), Duration::from_millis(250))
        );
        assert_eq!(config.uploads.link_settings().lifetime, Duration::from_secs(9000));
        assert_eq!(config.list_ttl, Duration::from_secs(90));
    }

    #[test]
    fn a_bad_duration_or_an_old_flat_key_is_named() {
        let err = Config::load(None, env(&[("MIROBODY_SERVE__WRITE_TIMEOUT", "30 parsecs")])).unwrap_err().to_string();
        assert!(err.contains("serve.write_timeout") && err.contains("'30 parsecs' is not a duration"), "{err}");
        assert!(err.contains("MIROBODY_SERVE__WRITE_TIMEOUT"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_HTTP__CALLER_LIMITS__BURST", "-1")])).unwrap_err().to_string();
        assert!(err.contains("http.caller_limits.burst"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_WRITE_TIMEOUT_SECS", "4")])).unwrap_err().to_string();
        assert!(err.contains("write_timeout_secs"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_SERVE__TIMEOUT", "4s")])).unwrap_err().to_string();
        assert!(err.contains("serve") && err.contains("unknown field `timeout`"), "{err}");
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
        for off in [("MIROBODY_SHARED_SESSIONS", "false"), ("MIROBODY_HTTP__STATELESS", "true")] {
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
        assert_eq!(
            config.request_state_key.as_ref().unwrap().expose_secret(),
            "state-key-0123456789-0123456789-abcdef"
        );
        let printed = format!("{config:?} {config:#?}");
        for secret in ["state-key", "token-key", "db-password", "redis-password", "url-key"] {
            assert!(!printed.contains(secret), "{secret} in {printed}");
        }
    }

    #[test]
    fn the_limits_reach_the_transport_and_the_connections() {
        let vars = [
            ("MIROBODY_HTTP__CALLER_LIMITS__MAX_CALLS", "3"),
            ("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "0"),
            ("MIROBODY_SERVE__MAX_CONNECTIONS_PER_ADDRESS", "9"),
            ("MIROBODY_SERVE__WRITE_TIMEOUT", "4s"),
            ("MIROBODY_HTTP__REQUEST_BODY_TIMEOUT", "5"),
            ("MIROBODY_HTTP__MAX_ANONYMOUS_SESSIONS", "10"),
        ];
        let config = Config::load(None, env(&vars)).unwrap();
        let http = config.http_options();
        assert_eq!((http.caller_limits.max_calls, http.caller_limits.requests_per_second), (3, 0));
        assert_eq!(http.request_body_timeout, Duration::from_secs(5));
        assert_eq!(http.max_anonymous_sessions, 10);
        let serve = &config.serve;
        assert_eq!((serve.max_connections_per_address, serve.write_timeout), (9, Duration::from_secs(4)));
        let err =
            Config::load(None, env(&[("MIROBODY_HTTP__MAX_ANONYMOUS_SESSIONS", "20000")])).unwrap_err().to_string();
        assert!(err.contains("http.max_anonymous_sessions"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_SERVE__WRITE_TIMEOUT", "0s")])).unwrap_err().to_string();
        assert!(err.contains("serve.write_timeout must be longer than 0s"), "{err}");
    }

    #[test]
    fn a_body_deadline_past_a_day_is_refused() {
        let err = Config::load(None, env(&[("MIROBODY_HTTP__REQUEST_BODY_TIMEOUT", "18446744073709551615")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("http.request_body_timeout must be at most 86400s"), "{err}");
        let config = Config::load(None, env(&[("MIROBODY_HTTP__REQUEST_BODY_TIMEOUT", "1day")])).unwrap();
        assert_eq!(config.http.request_body_timeout, Duration::from_secs(86_400));
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
        let err = Config::load(None, env(&[("MIROBODY_MCP__PAGE_SIZE", "0")])).unwrap_err().to_string();
        assert!(err.contains("mcp.page_size must be at least 1"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_SERVE__HEADER_READ_TIMEOUT", "0")])).unwrap_err().to_string();
        assert!(err.contains("serve.header_read_timeout must be longer than 0s"), "{err}");
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
        assert!(defaults.serve.trusted_proxies.is_empty(), "no proxy is trusted unless named");
        assert_eq!((defaults.uploads.max_concurrent_per_caller, defaults.uploads.min_body_bytes_per_sec), (2, 16384));
        let vars = [
            ("MIROBODY_SERVE__TRUSTED_PROXIES", r#"["127.0.0.1/32", "10.0.0.0/8", "::1"]"#),
            ("MIROBODY_UPLOADS__MAX_CONCURRENT_PER_CALLER", "3"),
            ("MIROBODY_UPLOADS__MIN_BODY_BYTES_PER_SEC", "0"),
        ];
        let config = Config::load(None, env(&vars)).unwrap();
        let proxies = config.serve.trusted_proxies;
        assert!(proxies.contains("10.1.2.3".parse().unwrap()) && proxies.contains("::1".parse().unwrap()));
        assert!(!proxies.contains("192.0.2.1".parse().unwrap()));
        assert_eq!((config.uploads.max_concurrent_per_caller, config.uploads.min_body_bytes_per_sec), (3, 0));
        let err = Config::load(None, env(&[("MIROBODY_SERVE__TRUSTED_PROXIES", "[nginx.internal]")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("serve.trusted_proxies") && err.contains("nginx.internal"), "{err}");
        assert_eq!(defaults.serve.forwarded_header, mirobody_mcp::ForwardedHeader::XForwardedFor);
        let config = Config::load(None, env(&[("MIROBODY_SERVE__FORWARDED_HEADER", "forwarded")])).unwrap();
        assert_eq!(config.serve.forwarded_header, mirobody_mcp::ForwardedHeader::Forwarded);
        let err =
            Config::load(None, env(&[("MIROBODY_SERVE__FORWARDED_HEADER", "x-real-ip")])).unwrap_err().to_string();
        assert!(err.contains("serve.forwarded_header") && err.contains("x-real-ip"), "{err}");
    }

    #[test]
    fn the_tasks_section_is_the_task_options_and_zero_is_refused() {
        let vars = [("MIROBODY_TASKS__TTL", "1m"), ("MIROBODY_TASKS__MAX_LIVE_PER_CALLER", "3")];
        let options = Config::load(None, env(&vars)).unwrap().tasks;
        assert_eq!((options.ttl, options.max_live_per_caller), (Duration::from_secs(60), 3));
        let err = Config::load(None, env(&[("MIROBODY_TASKS__LEASE", "0s")])).unwrap_err().to_string();
        assert!(err.contains("tasks.lease must be longer than 0s"), "{err}");
    }
}
