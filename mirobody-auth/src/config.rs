//! What the auth layer is configured with, and where the server is reached.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// A configured secret ([`secrecy`]'s): `Debug` prints `[REDACTED]`, nothing but
/// [`ExposeSecret::expose_secret`] shows it, and its memory is zeroed when it is dropped.
pub use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer};

/// Everything the auth layer reads from configuration. Every key is optional; the defaults
/// accept no bearer token at all (no key is configured), check the audience against the
/// server's canonical MCP URL once keys are configured, and filter no tools.
///
/// ```
/// use mirobody_auth::AuthConfig;
///
/// let config: AuthConfig = serde_json::from_value(serde_json::json!({
///     "hs256_secret": "0123456789abcdef0123456789abcdef",
///     "issuer": "https://auth.example.com",
///     "disallowed_tools": {"baseline": ["remember"]},
/// })).unwrap();
/// assert_eq!(config.leeway, std::time::Duration::from_secs(30));
/// assert!(!format!("{config:?}").contains("0123456789abcdef"));
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// The HS256 key (its UTF-8 bytes, at least 32 of them) that tokens are signed with.
    /// Default: none.
    pub hs256_secret: Option<SecretString>,
    /// The RS256 key pair. Default: none.
    pub rs256: Option<PemKeyConfig>,
    /// The ES256 (P-256) key pair. Default: none.
    pub es256: Option<PemKeyConfig>,
    /// Keys that no longer sign but still verify, for rotation. Default: none.
    pub previous_keys: Vec<PreviousKey>,
    /// A JWKS document with the keys of tokens issued elsewhere: a file path, or an `https://`
    /// URL fetched at start and again (at most once per [`jwks_refresh`]) when a token
    /// names an unknown `kid` or the cached keys are older than [`jwks_max_age`].
    /// Only its RS256 and ES256 keys are used. Default: none.
    ///
    /// A plain `http://` URL is refused unless its host is a loopback one (`localhost`,
    /// `127.0.0.0/8`, `[::1]`): anyone on the path could swap in their own keys. A fetch follows
    /// at most three redirects, never to plain http (but from a loopback http URL to another),
    /// reads at most 1 MiB, and gives up after [`jwks_timeout`].
    ///
    /// [`jwks_refresh`]: AuthConfig::jwks_refresh
    /// [`jwks_max_age`]: AuthConfig::jwks_max_age
    /// [`jwks_timeout`]: AuthConfig::jwks_timeout
    pub jwks: Option<String>,
    /// The least time between two JWKS refreshes (`60s`, `5m`; a bare number is seconds, as
    /// for every duration here). Default: 60 s.
    #[serde(deserialize_with = "mirobody_core::human_duration::deserialize")]
    pub jwks_refresh: Duration,
    /// How old the cached JWKS may get before the next token verification refreshes it.
    /// Default: 1 h.
    #[serde(deserialize_with = "mirobody_core::human_duration::deserialize")]
    pub jwks_max_age: Duration,
    /// How long one JWKS fetch may take, connecting, waiting and reading included (at least
    /// 1 s). Default: 10 s.
    #[serde(deserialize_with = "mirobody_core::human_duration::deserialize")]
    pub jwks_timeout: Duration,
    /// The `iss` tokens must carry; when set, a token without `iss` is refused. Default: none
    /// (not checked).
    pub issuer: Option<String>,
    /// The `aud` values accepted; a token must carry one of them. Default (absent): the
    /// server's canonical MCP URL, as the MCP authorization spec requires. An empty list turns
    /// the check off, for issuers that set no audience; do that only when the keys sign tokens
    /// for this server alone.
    pub audience: Option<Vec<String>>,
    /// Clock-skew allowance for `exp` and `nbf`, in whole seconds. Default: 30 s.
    #[serde(deserialize_with = "mirobody_core::human_duration::deserialize")]
    pub leeway: Duration,
    /// Per-agent allow lists: agent name to the only tools it may see and call. An agent with
    /// no list (or an empty one) may use every tool. Names are matched case-insensitively.
    pub allowed_tools: BTreeMap<String, ToolList>,
    /// Per-agent deny lists: agent name to tools it may neither see nor call. Deny wins over
    /// allow.
    pub disallowed_tools: BTreeMap<String, ToolList>,
    /// Scopes a caller must hold for a permission, by permission name: a tool's name (added
    /// to the scopes the tool declares) or a route's (`import_health_data`, `care_circle`;
    /// `POST /files` is `upload_file`). Default: none, so no permission needs a scope beyond
    /// what its tool declares. See [`Permissions`](crate::Permissions).
    pub permission_scopes: BTreeMap<String, ToolList>,
    /// The OAuth authorization servers, for the protected resource metadata. Default: none
    /// (the MCP spec wants at least one when clients are to find where to sign in).
    pub authorization_servers: Vec<String>,
    /// The scopes this server understands, for the protected resource metadata and the
    /// `scope` of 401 challenges. Default: none.
    pub scopes_supported: Vec<String>,
    /// The scopes a caller identified by a personal MCP secret holds (a secret carries no
    /// token, so no scopes of its own). Default: none.
    pub secret_scopes: Vec<String>,
    /// The scope a bearer token must carry to mint, rotate or revoke a personal MCP URL
    /// through `POST`/`DELETE /personal/mcp` (a personal URL is a credential that lasts, so
    /// a plain access token is not enough; a personal secret never is). Default:
    /// [`PERSONAL_URL_SCOPE`](crate::PERSONAL_URL_SCOPE), `mcp:personal_url`.
    pub personal_url_scope: String,
    /// Credentials that fail to verify (a token, a personal secret) allowed per client
    /// address (an IPv6 /64) before each further one waits
    /// [`failed_credentials_interval`](Self::failed_credentials_interval): checking a forged
    /// token costs a signature check, a forged secret a database lookup. Meanwhile a token
    /// verified before still works. Zero turns the bound off. Default: 20.
    pub failed_credentials_burst: u32,
    /// How often one more failing credential is checked after the burst. Default: 1 s.
    #[serde(deserialize_with = "mirobody_core::human_duration::deserialize")]
    pub failed_credentials_interval: Duration,
    /// The claim naming the agent a token was issued for. Default: `agent`.
    pub agent_claim: String,
    /// The claim holding the session (conversation) id. Default: `sid`.
    pub session_claim: String,
    /// The claim holding the care-circle member the caller acts for. Default: `subject_user_id`.
    pub subject_claim: String,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            hs256_secret: None,
            rs256: None,
            es256: None,
            previous_keys: Vec::new(),
            jwks: None,
            jwks_refresh: Duration::from_secs(60),
            jwks_max_age: Duration::from_secs(3600),
            jwks_timeout: Duration::from_secs(10),
            issuer: None,
            audience: None,
            leeway: Duration::from_secs(30),
            allowed_tools: BTreeMap::new(),
            disallowed_tools: BTreeMap::new(),
            permission_scopes: BTreeMap::new(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            secret_scopes: Vec::new(),
            personal_url_scope: crate::PERSONAL_URL_SCOPE.into(),
            failed_credentials_burst: 20,
            failed_credentials_interval: Duration::from_secs(1),
            agent_claim: "agent".into(),
            session_claim: "sid".into(),
            subject_claim: "subject_user_id".into(),
        }
    }
}

/// An RS256 or ES256 key pair from PEM files. Either file may be absent, not both: the
/// public key is derived from the private one when only that is given. The private key is
/// read only to derive the public key; this crate signs nothing.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PemKeyConfig {
    /// The public key (SPKI `PUBLIC KEY`, or `RSA PUBLIC KEY` for RS256).
    pub public_key_file: Option<PathBuf>,
    /// The private key (PKCS#8 `PRIVATE KEY`, or `RSA PRIVATE KEY` for RS256).
    pub private_key_file: Option<PathBuf>,
    /// The key id tokens name in their `kid` header, if they do.
    pub kid: Option<String>,
}

/// The algorithms this crate verifies. The algorithm of a token is the algorithm of the key
/// that verifies it, never what the token's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[non_exhaustive]
pub enum KeyAlgorithm {
    /// HMAC with SHA-256 (a shared secret).
    HS256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// ECDSA on P-256 with SHA-256.
    ES256,
}

impl KeyAlgorithm {
    /// The JOSE name.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyAlgorithm::HS256 => "HS256",
            KeyAlgorithm::RS256 => "RS256",
            KeyAlgorithm::ES256 => "ES256",
        }
    }
}

/// A key that verifies tokens but no longer signs them.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreviousKey {
    /// Its algorithm.
    pub alg: KeyAlgorithm,
    /// The shared secret, for HS256.
    #[serde(default)]
    pub secret: Option<SecretString>,
    /// The public key PEM file, for RS256 and ES256.
    #[serde(default)]
    pub public_key_file: Option<PathBuf>,
    /// The key id, if tokens name it.
    #[serde(default)]
    pub kid: Option<String>,
}

/// A list of tool names (or of scopes, in [`AuthConfig::permission_scopes`]). Deserializes
/// from a sequence, from one string of names separated by commas or spaces (`"a, b c"`, as an
/// environment variable gives it), or from null (empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolList(pub Vec<String>);

impl ToolList {
    /// Parses `"a, b c"`, `"[a, b]"` or `""`.
    pub fn parse(text: &str) -> Self {
        let trimmed = text.trim();
        let inner = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(trimmed);
        ToolList(
            inner
                .split(|c: char| c == ',' || c.is_whitespace())
                .map(|name| name.trim().trim_matches(|c| c == '"' || c == '\''))
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }
}

impl<'de> Deserialize<'de> for ToolList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            List(Vec<String>),
            Text(String),
        }
        Ok(match Option::<Raw>::deserialize(deserializer)? {
            None => ToolList::default(),
            Some(Raw::List(names)) => ToolList(names.into_iter().filter(|n| !n.trim().is_empty()).collect()),
            Some(Raw::Text(text)) => ToolList::parse(&text),
        })
    }
}

/// Which per-agent list a flat key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolListKind {
    /// `ALLOWED_TOOLS_<AGENT>`.
    Allowed,
    /// `DISALLOWED_TOOLS_<AGENT>`.
    Disallowed,
}

/// Reads a flat per-agent key: `ALLOWED_TOOLS_<AGENT>` or `DISALLOWED_TOOLS_<AGENT>`, in any
/// case, with or without a `MIROBODY_` prefix. Returns the list kind and the agent name
/// (upper case), or `None` for any other key.
///
/// ```
/// use mirobody_auth::{flat_tool_list_key, ToolListKind};
///
/// assert_eq!(flat_tool_list_key("ALLOWED_TOOLS_BASELINE"), Some((ToolListKind::Allowed, "BASELINE".into())));
/// assert_eq!(flat_tool_list_key("disallowed_tools_deep"), Some((ToolListKind::Disallowed, "DEEP".into())));
/// assert_eq!(flat_tool_list_key("MIROBODY_PAGE_SIZE"), None);
/// ```
pub fn flat_tool_list_key(key: &str) -> Option<(ToolListKind, String)> {
    let upper = key.trim().to_ascii_uppercase();
    let name = upper.strip_prefix("MIROBODY_").unwrap_or(&upper);
    let (kind, agent) = if let Some(agent) = name.strip_prefix("ALLOWED_TOOLS_") {
        (ToolListKind::Allowed, agent)
    } else if let Some(agent) = name.strip_prefix("DISALLOWED_TOOLS_") {
        (ToolListKind::Disallowed, agent)
    } else {
        return None;
    };
    (!agent.is_empty()).then(|| (kind, agent.to_owned()))
}

impl AuthConfig {
    /// Checks what [`Authenticator::new`](crate::Authenticator::new) checks beyond the keys:
    /// call it before [`Authenticator::with_verifier`](crate::Authenticator::with_verifier).
    pub fn validate(&self) -> Result<(), crate::AuthConfigError> {
        let scope = &self.personal_url_scope;
        if scope.is_empty() || scope.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\' || c.is_control()) {
            return Err(crate::AuthConfigError::Invalid(
                "personal_url_scope: must be one scope token (no spaces, quotes or backslashes)".into(),
            ));
        }
        Ok(())
    }

    /// Sets one agent's allow or deny list (replacing an earlier one for the same agent).
    pub fn set_tool_list(&mut self, kind: ToolListKind, agent: &str, tools: ToolList) {
        let map = match kind {
            ToolListKind::Allowed => &mut self.allowed_tools,
            ToolListKind::Disallowed => &mut self.disallowed_tools,
        };
        let agent = normalize_agent(agent);
        map.retain(|existing, _| normalize_agent(existing) != agent);
        map.insert(agent, tools);
    }

    /// Applies every flat `ALLOWED_TOOLS_<AGENT>` / `DISALLOWED_TOOLS_<AGENT>` pair (values as
    /// [`ToolList::parse`] reads them) and returns the keys it used; other keys are left alone.
    ///
    /// ```
    /// use mirobody_auth::AuthConfig;
    ///
    /// let mut config = AuthConfig::default();
    /// let used = config.apply_flat_tool_lists([
    ///     ("MIROBODY_ALLOWED_TOOLS_BASELINE", "echo, whoami"),
    ///     ("MIROBODY_PAGE_SIZE", "7"),
    /// ]);
    /// assert_eq!(used, ["MIROBODY_ALLOWED_TOOLS_BASELINE"]);
    /// assert_eq!(config.allowed_tools["BASELINE"].0, ["echo", "whoami"]);
    /// ```
    pub fn apply_flat_tool_lists<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Vec<String> {
        let mut used = Vec::new();
        for (key, value) in pairs {
            if let Some((kind, agent)) = flat_tool_list_key(key.as_ref()) {
                self.set_tool_list(kind, &agent, ToolList::parse(value.as_ref()));
                used.push(key.as_ref().to_owned());
            }
        }
        used
    }
}

/// Agent names are compared trimmed and upper-cased, as `ALLOWED_TOOLS_<AGENT>` spells them.
pub(crate) fn normalize_agent(agent: &str) -> String {
    agent.trim().to_ascii_uppercase()
}

/// Where the MCP endpoint is reached: the public base URL and the path prefix. Every URL the
/// auth layer hands out (the audience, the protected resource metadata, personal MCP URLs)
/// comes from here.
///
/// ```
/// use mirobody_auth::McpEndpoint;
///
/// let endpoint = McpEndpoint::new("https://mcp.example.com/", "/api/");
/// assert_eq!(endpoint.mcp_path(), "/api/mcp");
/// assert_eq!(endpoint.mcp_url(), "https://mcp.example.com/api/mcp");
/// assert_eq!(
///     endpoint.resource_metadata_url(),
///     "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpEndpoint {
    base_url: String,
    uri_prefix: String,
}

impl McpEndpoint {
    /// The endpoint at `<base_url><uri_prefix>/mcp`. Trailing slashes are dropped; the prefix
    /// gains a leading one if it lacks it.
    pub fn new(base_url: impl Into<String>, uri_prefix: impl Into<String>) -> Self {
        let mut base_url = base_url.into();
        while base_url.ends_with('/') {
            base_url.pop();
        }
        let mut uri_prefix = uri_prefix.into().trim_end_matches('/').to_owned();
        if !uri_prefix.is_empty() && !uri_prefix.starts_with('/') {
            uri_prefix.insert(0, '/');
        }
        McpEndpoint { base_url, uri_prefix }
    }

    /// The public base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The path prefix (empty, or starting with `/`).
    pub fn uri_prefix(&self) -> &str {
        &self.uri_prefix
    }

    /// The MCP endpoint's path: `<uri_prefix>/mcp`.
    pub fn mcp_path(&self) -> String {
        format!("{}/mcp", self.uri_prefix)
    }

    /// The canonical MCP URL (RFC 8707): the default token audience and the `resource` of the
    /// protected resource metadata.
    pub fn mcp_url(&self) -> String {
        format!("{}{}", self.base_url, self.mcp_path())
    }

    /// The path of the personal MCP URL routes: `<uri_prefix>/personal/mcp`.
    pub fn personal_path(&self) -> String {
        format!("{}/personal/mcp", self.uri_prefix)
    }

    /// The protected resource metadata URL advertised in 401 challenges: the RFC 9728
    /// path-inserted form for the MCP endpoint.
    pub fn resource_metadata_url(&self) -> String {
        format!("{}{}{}", self.base_url, WELL_KNOWN_PRM, self.mcp_path())
    }

    /// Every path the protected resource metadata is served at: the root and path-inserted
    /// forms, and, under a prefix, the same again below the prefix (for proxies that forward
    /// only the prefix).
    pub fn resource_metadata_paths(&self) -> Vec<String> {
        let mut paths = vec![WELL_KNOWN_PRM.to_owned(), format!("{WELL_KNOWN_PRM}{}", self.mcp_path())];
        if !self.uri_prefix.is_empty() {
            paths.push(format!("{}{WELL_KNOWN_PRM}", self.uri_prefix));
            paths.push(format!("{}{WELL_KNOWN_PRM}/mcp", self.uri_prefix));
        }
        paths
    }
}

/// The RFC 9728 well-known path.
pub(crate) const WELL_KNOWN_PRM: &str = "/.well-known/oauth-protected-resource";
