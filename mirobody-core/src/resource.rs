//! Resources: data a client can list and read by URI, static or from a URI template.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::context::ToolContext;
use crate::result::EmbeddedResource;
use crate::user::UserInfo;

/// The contents of a read resource: text or base64 bytes, with its URI and MIME type.
pub type ResourceContents = EmbeddedResource;

/// Why a resource could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// No resource has that URI (or the caller may not know it exists).
    #[error("Resource not found: {0}")]
    NotFound(String),
    /// The resource needs an authenticated caller.
    #[error("Authentication required to read {0}")]
    Unauthenticated(String),
    /// Reading failed.
    #[error("{0}")]
    Failed(String),
}

/// Reads a resource.
pub type ReadFn = Arc<
    dyn for<'a> Fn(
            &'a str,
            &'a UserInfo,
            &'a ToolContext<'a>,
        ) -> BoxFuture<'a, Result<Vec<ResourceContents>, ResourceError>>
        + Send
        + Sync,
>;

/// Reads a templated resource, given the URI and the template's variables.
pub type TemplateReadFn = Arc<
    dyn for<'a> Fn(
            &'a str,
            HashMap<String, String>,
            &'a UserInfo,
            &'a ToolContext<'a>,
        ) -> BoxFuture<'a, Result<Vec<ResourceContents>, ResourceError>>
        + Send
        + Sync,
>;

/// What a client sees of a resource in `resources/list`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceInfo {
    /// The URI.
    pub uri: Cow<'static, str>,
    /// A short name.
    pub name: Cow<'static, str>,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'static, str>>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'static, str>>,
    /// Its MIME type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<Cow<'static, str>>,
    /// Its `_meta` in the listing (for example an MCP Apps view's `ui` settings).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A resource with a fixed URI.
///
/// ```
/// use mirobody_core::{Resource, ResourceContents};
///
/// let info = Resource::text("info://server", "server", "application/json", || r#"{"name":"mirobody"}"#.into())
///     .description("What this server is.");
/// assert_eq!(info.info().uri, "info://server");
/// ```
#[derive(Clone)]
pub struct Resource {
    info: ResourceInfo,
    auth: bool,
    read: ReadFn,
}

impl Resource {
    /// A resource read by `read`.
    pub fn new(uri: impl Into<Cow<'static, str>>, name: impl Into<Cow<'static, str>>, read: ReadFn) -> Self {
        Resource {
            info: ResourceInfo {
                uri: uri.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                meta: None,
            },
            auth: false,
            read,
        }
    }

    /// A resource whose text comes from a function.
    pub fn text(
        uri: impl Into<Cow<'static, str>>,
        name: impl Into<Cow<'static, str>>,
        mime_type: impl Into<Cow<'static, str>>,
        text: fn() -> String,
    ) -> Self {
        let mime: Cow<'static, str> = mime_type.into();
        let mime_for_read = mime.to_string();
        let read: ReadFn = Arc::new(move |uri, _, _| {
            let contents = ResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime_for_read.clone()),
                text: Some(text()),
                blob: None,
                meta: None,
            };
            Box::pin(std::future::ready(Ok(vec![contents])))
        });
        let mut resource = Resource::new(uri, name, read);
        resource.info.mime_type = Some(mime);
        resource
    }

    /// Sets the listing entry's `_meta`.
    pub fn with_meta(mut self, meta: serde_json::Map<String, serde_json::Value>) -> Self {
        self.info.meta = Some(meta);
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.info.description = Some(description.into());
        self
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<Cow<'static, str>>) -> Self {
        self.info.mime_type = Some(mime_type.into());
        self
    }

    /// Requires an authenticated caller to read it.
    pub fn auth(mut self, required: bool) -> Self {
        self.auth = required;
        self
    }

    /// What `resources/list` shows.
    pub fn info(&self) -> &ResourceInfo {
        &self.info
    }

    /// Whether reading needs an authenticated caller.
    pub fn is_auth(&self) -> bool {
        self.auth
    }

    /// Reads it.
    pub async fn read(&self, user: &UserInfo, ctx: &ToolContext<'_>) -> Result<Vec<ResourceContents>, ResourceError> {
        if self.auth && !user.authed() {
            return Err(ResourceError::Unauthenticated(self.info.uri.to_string()));
        }
        (self.read)(&self.info.uri, user, ctx).await
    }
}

/// A family of resources named by an RFC 6570 level-1 URI template such as
/// `test://template/{id}/data`.
#[derive(Clone)]
pub struct ResourceTemplate {
    uri_template: Cow<'static, str>,
    name: Cow<'static, str>,
    description: Option<Cow<'static, str>>,
    mime_type: Option<Cow<'static, str>>,
    auth: bool,
    read: TemplateReadFn,
}

impl ResourceTemplate {
    /// A template read by `read`.
    pub fn new(
        uri_template: impl Into<Cow<'static, str>>,
        name: impl Into<Cow<'static, str>>,
        read: TemplateReadFn,
    ) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            description: None,
            mime_type: None,
            auth: false,
            read,
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<Cow<'static, str>>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Requires an authenticated caller to read it.
    pub fn auth(mut self, required: bool) -> Self {
        self.auth = required;
        self
    }

    /// The template.
    pub fn uri_template(&self) -> &str {
        &self.uri_template
    }

    /// The `resources/templates/list` entry.
    pub fn to_json(&self) -> serde_json::Value {
        let mut entry = serde_json::Map::new();
        entry.insert("uriTemplate".into(), self.uri_template.as_ref().into());
        entry.insert("name".into(), self.name.as_ref().into());
        if let Some(d) = &self.description {
            entry.insert("description".into(), d.as_ref().into());
        }
        if let Some(m) = &self.mime_type {
            entry.insert("mimeType".into(), m.as_ref().into());
        }
        serde_json::Value::Object(entry)
    }

    /// The template's variables if `uri` matches it.
    pub fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        match_template(&self.uri_template, uri)
    }

    /// Reads the resource at `uri`, which must match the template.
    pub async fn read(
        &self,
        uri: &str,
        user: &UserInfo,
        ctx: &ToolContext<'_>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let vars = self.matches(uri).ok_or_else(|| ResourceError::NotFound(uri.to_owned()))?;
        if self.auth && !user.authed() {
            return Err(ResourceError::Unauthenticated(uri.to_owned()));
        }
        (self.read)(uri, vars, user, ctx).await
    }
}

// Level-1 templates only: literal text and `{name}` variables that match one or more characters
// up to the next literal (never across '/'). Written by hand: the crates that exist expand
// templates, none match URIs against them.
fn match_template(template: &str, uri: &str) -> Option<HashMap<String, String>> {
    let mut vars = HashMap::new();
    let mut rest = uri;
    let mut tpl = template;
    while !tpl.is_empty() {
        if let Some(after_brace) = tpl.strip_prefix('{') {
            let close = after_brace.find('}')?;
            let name = &after_brace[..close];
            tpl = &after_brace[close + 1..];
            let literal_end = tpl.find('{').unwrap_or(tpl.len());
            let next_literal = &tpl[..literal_end];
            let value_end = if next_literal.is_empty() { rest.len() } else { rest.find(next_literal)? };
            let value = &rest[..value_end];
            if value.is_empty() || value.contains('/') {
                return None;
            }
            vars.insert(name.to_owned(), value.to_owned());
            rest = &rest[value_end..];
        } else {
            let literal_end = tpl.find('{').unwrap_or(tpl.len());
            rest = rest.strip_prefix(&tpl[..literal_end])?;
            tpl = &tpl[literal_end..];
        }
    }
    rest.is_empty().then_some(vars)
}

#[cfg(test)]
mod tests {
    use super::match_template;

    #[test]
    fn templates_match_whole_segments_only() {
        let vars = match_template("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(vars["id"], "123");
        assert!(match_template("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(match_template("test://template/{id}/data", "test://template//data").is_none());
        assert!(match_template("test://template/{id}/data", "test://template/1/datax").is_none());
        let two = match_template("a://{x}-{y}", "a://1-2").unwrap();
        assert_eq!((two["x"].as_str(), two["y"].as_str()), ("1", "2"));
    }
}
