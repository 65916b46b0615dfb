//! One permission model for every door of the server: what a caller may do through a tool at
//! the MCP endpoint and through the routes beside it is decided by the same rules.
//!
//! A permission is a name: each tool's own name, and a name for what a route does that no
//! tool does ([`IMPORT_HEALTH_DATA`], [`CARE_CIRCLE`]). `POST /files` needs
//! [`UPLOAD_FILE`], the `upload_file` tool's permission. A caller holds a permission when
//!
//! - its agent's tool list ([`ToolFilter`]) allows the name: the per-agent lists name route
//!   permissions as they name tools, so a personal URL bound to an agent allowed only
//!   `[whoami, list_files]` can neither upload, import nor manage the care circle;
//! - and it holds every scope the permission needs: those a tool declares
//!   ([`Tool::scopes`]) and those `auth.permission_scopes` adds (a bearer token's `scope`
//!   claim, or `auth.secret_scopes` for a personal URL).
//!
//! Some permissions lead to others: `upload_link` mints links that upload files, so it needs
//! whatever `upload_file` needs ([`implied_by`]); an agent list must allow both, and a token
//! must hold the scopes of both.
//!
//! At the MCP endpoint the agent half is the tool visibility predicate
//! ([`Permissions::into_visibility`]) and the scope half is `Registry::call`'s check of the
//! tool's scopes, which [`Permissions::apply_to_registry`] extends with the configured ones;
//! the routes ask [`Permissions::check`], which asks both halves through the same functions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use mirobody_core::{Registry, RegistryError, Tool, UserInfo};

use crate::config::AuthConfig;
use crate::visibility::{ToolFilter, ToolVisibilityFn};

/// The permission of `POST <prefix>/files`: the `upload_file` tool's, so an agent or token
/// that may not call the tool may not upload through the route either.
pub const UPLOAD_FILE: &str = "upload_file";

/// The permission of the `upload_link` tool and of `DELETE <prefix>/upload`: minting and
/// ending links that upload files, so it needs [`UPLOAD_FILE`] too.
pub const UPLOAD_LINK: &str = "upload_link";

/// The permission of `POST <prefix>/fhir` and `POST <prefix>/fhir/Observation`: importing
/// health data into the caller's record. No tool imports, so it is a name of its own.
pub const IMPORT_HEALTH_DATA: &str = "import_health_data";

/// The permission of every `<prefix>/circle` route: reading and managing the caller's care
/// circle (who reads their health data, the invitations waiting).
pub const CARE_CIRCLE: &str = "care_circle";

/// The permission of `GET <prefix>/export`: everything the caller holds, as one FHIR Bundle.
pub const EXPORT_HEALTH_DATA: &str = "export_health_data";

/// The permission of `POST <prefix>/delete` for a file or a value: the `delete_health_data`
/// tool's, so an agent that may not call the tool may not delete through the route either.
pub const DELETE_HEALTH_DATA: &str = "delete_health_data";

/// The permission names of routes that are no tool's: per-agent lists may name them beside
/// the tools.
pub const ROUTE_PERMISSIONS: [&str; 3] = [IMPORT_HEALTH_DATA, CARE_CIRCLE, EXPORT_HEALTH_DATA];

/// The permissions `permission` needs besides itself: what a link's holder does, the one
/// who minted it must be allowed to do (else an agent list `[whoami, upload_link]` or a
/// token without `upload_file`'s scopes would upload through a link).
pub fn implied_by(permission: &str) -> &'static [&'static str] {
    IMPLICATIONS.iter().find(|(name, _)| *name == permission).map_or(&[], |(_, implied)| implied)
}

// Each permission that needs others, and those.
const IMPLICATIONS: [(&str, &[&str]); 1] = [(UPLOAD_LINK, &[UPLOAD_FILE])];

/// Why a caller does not hold a permission. The message names the permission and what would
/// grant it, never a credential.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PermissionDenied {
    /// The caller's agent's tool list leaves the permission out.
    #[error(
        "Forbidden: this needs the '{permission}' permission, which the tool list of agent '{agent}' does not \
         grant."
    )]
    Agent {
        /// The permission.
        permission: String,
        /// The caller's agent.
        agent: String,
    },
    /// The caller's token (or personal URL) lacks scopes the permission needs.
    #[error("Forbidden: this needs the '{permission}' permission: the token lacks the scope {}.", missing.join(", "))]
    Scopes {
        /// The permission.
        permission: String,
        /// The scopes missing, in the order they are required.
        missing: Vec<String>,
    },
}

/// Per-agent tool lists and the scopes each permission needs, checked alike for tools and
/// routes. Cheap to clone.
///
/// ```
/// use mirobody_auth::{AuthConfig, Permissions, ToolList, IMPORT_HEALTH_DATA};
/// use mirobody_core::UserInfo;
///
/// let mut config = AuthConfig::default();
/// config.allowed_tools.insert("narrow".into(), ToolList(vec!["whoami".into()]));
/// config.permission_scopes.insert(IMPORT_HEALTH_DATA.into(), ToolList(vec!["health:import".into()]));
/// let permissions = Permissions::from_config(&config);
///
/// let narrow = UserInfo::authenticated("1").with_agent("NARROW");
/// assert!(permissions.check(&narrow, "whoami").is_ok());
/// assert!(permissions.check(&narrow, "upload_file").is_err());
/// let token = UserInfo::authenticated("1").with_scopes(["health:import"]);
/// assert!(permissions.check(&token, IMPORT_HEALTH_DATA).is_ok());
/// assert!(permissions.check(&UserInfo::authenticated("1"), IMPORT_HEALTH_DATA).is_err());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Permissions {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    filter: ToolFilter,
    // Permission name to the scopes it needs, without duplicates, in the order first named.
    scopes: BTreeMap<String, Vec<String>>,
}

impl Permissions {
    /// The per-agent lists (`allowed_tools`, `disallowed_tools`) and the configured scopes
    /// (`permission_scopes`) of a configuration.
    pub fn from_config(config: &AuthConfig) -> Self {
        let mut scopes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (permission, list) in &config.permission_scopes {
            add_scopes(scopes.entry(permission.trim().to_owned()).or_default(), list.0.iter().map(String::as_str));
        }
        Permissions { inner: Arc::new(Inner { filter: ToolFilter::from_config(config), scopes: with_implied(scopes) }) }
    }

    /// These permissions, with each tool's declared scopes needed for its name too: a route
    /// that acts as a tool needs what the tool needs.
    pub fn with_tools<'a>(self, tools: impl IntoIterator<Item = &'a Tool>) -> Self {
        let mut scopes = self.inner.scopes.clone();
        for tool in tools {
            if !tool.scopes().is_empty() {
                add_scopes(scopes.entry(tool.name().to_owned()).or_default(), tool.scopes().iter().map(|s| &**s));
            }
        }
        Permissions { inner: Arc::new(Inner { filter: self.inner.filter.clone(), scopes: with_implied(scopes) }) }
    }

    /// `registry` with the configured scopes required by the tools they name, so that
    /// `Registry::call` refuses a caller without them (403 `insufficient_scope` at the MCP
    /// endpoint) as the routes do. The registry itself when no tool is named.
    pub fn apply_to_registry(&self, registry: Registry) -> Result<Registry, RegistryError> {
        // With the tools' declared scopes, so a tool needs those of the tools it implies.
        let all = self.clone().with_tools(registry.tools());
        let adds = |tool: &Tool| all.scopes_for(tool.name()).iter().any(|s| !tool.scopes().iter().any(|d| **d == **s));
        if !registry.tools().any(adds) {
            return Ok(registry);
        }
        let mut builder = Registry::builder();
        for tool in registry.tools() {
            let declared: BTreeSet<&str> = tool.scopes().iter().map(|s| &**s).collect();
            let extra: Vec<String> =
                all.scopes_for(tool.name()).iter().filter(|s| !declared.contains(s.as_str())).cloned().collect();
            builder = builder.tool(tool.clone().require_scopes(extra));
        }
        builder.build()
    }

    /// The per-agent lists.
    pub fn filter(&self) -> &ToolFilter {
        &self.inner.filter
    }

    /// The scopes `permission` needs (none for most), those of the permissions it implies
    /// included.
    pub fn scopes_for(&self, permission: &str) -> &[String] {
        self.inner.scopes.get(permission).map_or(&[], Vec::as_slice)
    }

    /// Whether the caller's agent (if any) may use `permission` and every permission it
    /// implies: the agent half of [`check`](Self::check), and all of the MCP visibility
    /// predicate.
    pub fn agent_allows(&self, user: &UserInfo, permission: &str) -> bool {
        self.agent_lacks(user, permission).is_none()
    }

    // The first of `permission` and those it implies the caller's agent may not use.
    fn agent_lacks<'a>(&self, user: &UserInfo, permission: &'a str) -> Option<&'a str> {
        std::iter::once(permission)
            .chain(implied_by(permission).iter().copied())
            .find(|needed| !self.inner.filter.allows(user.agent(), needed))
    }

    /// The scopes of `permission` the caller lacks: the scope half of [`check`](Self::check).
    pub fn missing_scopes(&self, user: &UserInfo, permission: &str) -> Vec<String> {
        self.scopes_for(permission).iter().filter(|scope| !user.has_scope(scope)).cloned().collect()
    }

    /// Whether `user` holds `permission`: its agent's list allows it and it holds every scope
    /// it needs. A caller with no agent and a permission with no scopes always pass.
    pub fn check(&self, user: &UserInfo, permission: &str) -> Result<(), PermissionDenied> {
        if let Some(lacked) = self.agent_lacks(user, permission) {
            return Err(PermissionDenied::Agent {
                permission: lacked.to_owned(),
                agent: user.agent().unwrap_or_default().trim().to_owned(),
            });
        }
        let missing = self.missing_scopes(user, permission);
        if !missing.is_empty() {
            return Err(PermissionDenied::Scopes { permission: permission.to_owned(), missing });
        }
        Ok(())
    }

    /// Whether no agent has a list: then the MCP endpoint needs no visibility predicate.
    pub fn filters_no_agent(&self) -> bool {
        self.inner.filter.is_empty()
    }

    /// The agent half as a tool visibility predicate for the MCP endpoint: a tool whose name
    /// the caller's agent may not use is hidden and answered as unknown.
    pub fn into_visibility(self) -> ToolVisibilityFn {
        Arc::new(move |user: &UserInfo, tool: &Tool| self.agent_allows(user, tool.name()))
    }
}

// `scopes` with each permission's implied permissions' scopes added to its own, and without
// permissions that need none.
fn with_implied(mut scopes: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    for (permission, implied) in IMPLICATIONS {
        let implied: Vec<String> = implied.iter().flat_map(|p| scopes.get(*p).cloned().unwrap_or_default()).collect();
        add_scopes(scopes.entry(permission.to_owned()).or_default(), implied.iter().map(String::as_str));
    }
    scopes.retain(|_, needed| !needed.is_empty());
    scopes
}

fn add_scopes<'a>(into: &mut Vec<String>, scopes: impl IntoIterator<Item = &'a str>) {
    for scope in scopes.into_iter().map(str::trim).filter(|s| !s.is_empty()) {
        if !into.iter().any(|s| s == scope) {
            into.push(scope.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ToolList;
    use mirobody_core::ToolResult;

    fn list(names: &[&str]) -> ToolList {
        ToolList(names.iter().map(|n| n.to_string()).collect())
    }

    fn permissions(allowed: &[&str], scopes: &[(&str, &[&str])]) -> Permissions {
        let mut config = AuthConfig::default();
        config.allowed_tools.insert("narrow".into(), list(allowed));
        for (permission, needed) in scopes {
            config.permission_scopes.insert(permission.to_string(), list(needed));
        }
        Permissions::from_config(&config)
    }

    fn tool(name: &'static str) -> Tool {
        Tool::new(name, "A tool.").sync_handler(|_, _, _| ToolResult::text("ok"))
    }

    #[test]
    fn an_agents_list_grants_route_permissions_as_it_grants_tools() {
        let permissions = permissions(&["whoami", "list_files"], &[]);
        let narrow = UserInfo::authenticated("1").with_agent(" Narrow ");
        assert_eq!(permissions.check(&narrow, "whoami"), Ok(()));
        for denied in [UPLOAD_FILE, IMPORT_HEALTH_DATA, CARE_CIRCLE] {
            let err = permissions.check(&narrow, denied).unwrap_err();
            assert_eq!(err, PermissionDenied::Agent { permission: denied.into(), agent: "Narrow".into() });
            assert!(err.to_string().contains(&format!("'{denied}' permission")), "{err}");
        }
        // Another agent, or none: no list, every permission.
        for user in [UserInfo::authenticated("1"), UserInfo::authenticated("1").with_agent("wide")] {
            for permission in [UPLOAD_FILE, IMPORT_HEALTH_DATA, CARE_CIRCLE] {
                assert_eq!(permissions.check(&user, permission), Ok(()), "{user:?} {permission}");
            }
        }
        // Listing a route permission grants it.
        let listed = self::permissions(&["whoami", IMPORT_HEALTH_DATA], &[]);
        assert_eq!(listed.check(&narrow, IMPORT_HEALTH_DATA), Ok(()));
        assert!(listed.check(&narrow, CARE_CIRCLE).is_err());
    }

    #[test]
    fn configured_scopes_are_needed_and_named_when_missing() {
        let permissions = permissions(&[], &[(IMPORT_HEALTH_DATA, &["health:import", " health:write "])]);
        let bare = UserInfo::authenticated("1");
        let partial = UserInfo::authenticated("1").with_scopes(["health:write", "other"]);
        let full = UserInfo::authenticated("1").with_scopes(["health:import", "health:write"]);
        let err = permissions.check(&bare, IMPORT_HEALTH_DATA).unwrap_err();
        assert_eq!(
            err,
            PermissionDenied::Scopes {
                permission: IMPORT_HEALTH_DATA.into(),
                missing: vec!["health:import".into(), "health:write".into()]
            }
        );
        let err = permissions.check(&partial, IMPORT_HEALTH_DATA).unwrap_err();
        assert!(err.to_string().contains("lacks the scope health:import."), "{err}");
        assert_eq!(permissions.check(&full, IMPORT_HEALTH_DATA), Ok(()));
        // Permissions without configured scopes need none.
        assert_eq!(permissions.check(&bare, UPLOAD_FILE), Ok(()));
        assert_eq!(permissions.check(&bare, CARE_CIRCLE), Ok(()));
    }

    #[test]
    fn the_agent_list_is_checked_before_the_scopes() {
        let permissions = permissions(&["whoami"], &[(CARE_CIRCLE, &["circle"])]);
        let narrow = UserInfo::authenticated("1").with_agent("narrow").with_scopes(["circle"]);
        assert!(matches!(permissions.check(&narrow, CARE_CIRCLE), Err(PermissionDenied::Agent { .. })));
    }

    #[test]
    fn a_tools_declared_scopes_are_its_permissions_scopes() {
        let upload = tool(UPLOAD_FILE).require_scopes(["files:write"]);
        let permissions =
            permissions(&[], &[(UPLOAD_FILE, &["files:write", "extra"])]).with_tools([&upload, &tool("whoami")]);
        assert_eq!(permissions.scopes_for(UPLOAD_FILE), ["files:write", "extra"]);
        assert!(permissions.scopes_for("whoami").is_empty());
        let token = UserInfo::authenticated("1").with_scopes(["files:write"]);
        assert_eq!(permissions.missing_scopes(&token, UPLOAD_FILE), ["extra"]);
    }

    #[tokio::test]
    async fn the_registry_needs_the_configured_scopes_of_its_tools() {
        let registry = Registry::builder()
            .tool(tool(UPLOAD_FILE).require_scopes(["files:write"]))
            .tool(tool("whoami"))
            .build()
            .unwrap();
        let untouched = permissions(&[], &[(IMPORT_HEALTH_DATA, &["health:import"])]);
        let same = untouched.apply_to_registry(registry).unwrap();
        assert_eq!(same.get(UPLOAD_FILE).unwrap().scopes(), ["files:write"]);
        let permissions = permissions(&[], &[(UPLOAD_FILE, &["files:write", "files:more"]), ("whoami", &["me"])]);
        let registry = permissions.apply_to_registry(same).unwrap();
        assert_eq!(registry.get(UPLOAD_FILE).unwrap().scopes(), ["files:write", "files:more"]);
        assert_eq!(registry.get("whoami").unwrap().scopes(), ["me"]);
        // Registry::call now refuses as the routes do.
        let ctx = mirobody_core::ToolContext::default();
        let token = UserInfo::authenticated("1").with_scopes(["files:write"]);
        let err = registry.call(UPLOAD_FILE, serde_json::Value::Null, &token, &ctx).await.unwrap_err();
        assert!(
            matches!(err, mirobody_core::CallError::InsufficientScope { ref missing, .. } if missing == &["files:more"])
        );
        assert!(permissions.check(&token, UPLOAD_FILE).is_err());
    }

    #[test]
    fn a_refusal_for_want_of_scopes_challenges_with_them_and_an_agents_does_not() {
        use crate::AuthError;
        let scopes = PermissionDenied::Scopes { permission: CARE_CIRCLE.into(), missing: vec!["a".into(), "b".into()] };
        let refusal = AuthError::Forbidden(scopes);
        assert_eq!(refusal.status(), http::StatusCode::FORBIDDEN);
        let challenge = refusal.challenge("https://mcp.example.com/meta", &[]).unwrap();
        assert!(challenge.contains(r#"scope="a b""#) && challenge.contains("insufficient_scope"), "{challenge}");
        let agent = AuthError::Forbidden(PermissionDenied::Agent { permission: CARE_CIRCLE.into(), agent: "x".into() });
        assert_eq!(agent.status(), http::StatusCode::FORBIDDEN);
        assert_eq!(agent.challenge("https://mcp.example.com/meta", &[]), None);
        assert!(agent.to_string().contains("'care_circle' permission"), "{agent}");
    }

    #[test]
    fn a_link_needs_what_an_upload_needs() {
        // An agent allowed the link but not the upload: refused, naming the upload.
        let permissions = permissions(&["whoami", UPLOAD_LINK], &[]);
        let narrow = UserInfo::authenticated("1").with_agent("narrow");
        let err = permissions.check(&narrow, UPLOAD_LINK).unwrap_err();
        assert_eq!(err, PermissionDenied::Agent { permission: UPLOAD_FILE.into(), agent: "narrow".into() });
        assert!(!permissions.clone().into_visibility()(&narrow, &tool(UPLOAD_LINK)), "hidden at /mcp");
        let both = self::permissions(&[UPLOAD_LINK, UPLOAD_FILE], &[]);
        assert_eq!(both.check(&narrow, UPLOAD_LINK), Ok(()));
        // A disallowed upload disallows the link.
        let mut config = AuthConfig::default();
        config.disallowed_tools.insert("narrow".into(), list(&[UPLOAD_FILE]));
        assert!(!Permissions::from_config(&config).agent_allows(&narrow, UPLOAD_LINK));

        // The upload's scopes, configured or declared, are the link's too.
        let permissions = self::permissions(&[], &[(UPLOAD_FILE, &["files:write"]), (UPLOAD_LINK, &["links"])]);
        assert_eq!(permissions.scopes_for(UPLOAD_LINK), ["links", "files:write"]);
        let token = UserInfo::authenticated("1").with_scopes(["links"]);
        assert_eq!(
            permissions.check(&token, UPLOAD_LINK),
            Err(PermissionDenied::Scopes { permission: UPLOAD_LINK.into(), missing: vec!["files:write".into()] })
        );
        let declared = self::permissions(&[], &[]).with_tools([&tool(UPLOAD_FILE).require_scopes(["declared"])]);
        assert_eq!(declared.scopes_for(UPLOAD_LINK), ["declared"]);
        assert!(permissions.scopes_for(UPLOAD_FILE) == ["files:write"], "the implication goes one way");
    }

    #[tokio::test]
    async fn the_link_tool_needs_the_upload_tools_scopes_at_the_registry() {
        let registry = Registry::builder()
            .tool(tool(UPLOAD_FILE).require_scopes(["declared"]))
            .tool(tool(UPLOAD_LINK))
            .build()
            .unwrap();
        let registry = permissions(&[], &[(UPLOAD_FILE, &["files:write"])]).apply_to_registry(registry).unwrap();
        assert_eq!(registry.get(UPLOAD_LINK).unwrap().scopes(), ["files:write", "declared"]);
        let ctx = mirobody_core::ToolContext::default();
        let token = UserInfo::authenticated("1").with_scopes(["files:write"]);
        let err = registry.call(UPLOAD_LINK, serde_json::Value::Null, &token, &ctx).await.unwrap_err();
        assert!(
            matches!(err, mirobody_core::CallError::InsufficientScope { ref missing, .. } if missing == &["declared"]),
            "{err:?}"
        );
        // Without any scope for either, the registry is the same.
        let bare = Registry::builder().tool(tool(UPLOAD_FILE)).tool(tool(UPLOAD_LINK)).build().unwrap();
        let bare = Permissions::default().apply_to_registry(bare).unwrap();
        assert!(bare.get(UPLOAD_LINK).unwrap().scopes().is_empty());
    }

    #[test]
    fn the_visibility_predicate_is_the_agent_half() {
        let permissions = permissions(&["whoami"], &[("whoami", &["me"])]);
        let visible = permissions.clone().into_visibility();
        let narrow = UserInfo::authenticated("1").with_agent("narrow");
        assert!(visible(&narrow, &tool("whoami")), "scopes are the registry's to refuse, with a 403");
        assert!(!visible(&narrow, &tool(UPLOAD_FILE)));
        assert!(visible(&UserInfo::authenticated("1"), &tool(UPLOAD_FILE)));
        assert!(!permissions.filters_no_agent());
        assert!(Permissions::default().filters_no_agent());
    }
}
