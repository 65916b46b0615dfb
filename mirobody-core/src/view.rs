//! Views (MCP Apps, the `io.modelcontextprotocol/ui` extension): an HTML page that a host
//! renders beside the conversation, linked from a tool, fed the tool's input and result by the
//! host. A view is a `ui://` resource of type [`VIEW_MIME_TYPE`]; its `_meta.ui` says which
//! origins it may reach (none by default: the host's default policy allows no network) and
//! whether it wants a border.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::resource::{ReadFn, Resource, ResourceContents};

/// The MIME type of a view.
pub const VIEW_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The extension's identifier, under `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// A view's URI does not start with `ui://`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a view's URI starts with ui://, not '{0}'")]
pub struct NotAViewUri(pub String);

/// A view: a self-contained HTML page, the same bytes for every caller (its data comes from
/// the tool result the host hands it).
///
/// ```
/// use mirobody_core::{View, VIEW_MIME_TYPE};
///
/// let view = View::new("ui://charts/trend.html", "trend", "<!doctype html><p>…</p>")
///     .unwrap()
///     .prefers_border(false);
/// let resource = view.into_resource();
/// assert_eq!(resource.info().mime_type.as_deref(), Some(VIEW_MIME_TYPE));
/// assert_eq!(resource.info().meta.as_ref().unwrap()["ui"]["prefersBorder"], false);
/// assert!(View::new("https://example.com/x.html", "x", "").is_err());
/// ```
#[derive(Clone, Debug)]
pub struct View {
    uri: Cow<'static, str>,
    name: Cow<'static, str>,
    html: Cow<'static, str>,
    description: Option<Cow<'static, str>>,
    connect_domains: Vec<String>,
    resource_domains: Vec<String>,
    prefers_border: Option<bool>,
}

impl View {
    /// A view at `uri` (`ui://...`) whose page is `html`.
    pub fn new(
        uri: impl Into<Cow<'static, str>>,
        name: impl Into<Cow<'static, str>>,
        html: impl Into<Cow<'static, str>>,
    ) -> Result<View, NotAViewUri> {
        let uri = uri.into();
        if !uri.starts_with("ui://") || uri.len() <= "ui://".len() {
            return Err(NotAViewUri(uri.into_owned()));
        }
        Ok(View {
            uri,
            name: name.into(),
            html: html.into(),
            description: None,
            connect_domains: Vec::new(),
            resource_domains: Vec::new(),
            prefers_border: None,
        })
    }

    /// What the view shows.
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Origins the view may connect to (`fetch`, WebSocket): CSP `connect-src`.
    pub fn connect_domains<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        self.connect_domains.extend(origins.into_iter().map(Into::into));
        self
    }

    /// Origins the view may load scripts, styles, images and fonts from.
    pub fn resource_domains<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        self.resource_domains.extend(origins.into_iter().map(Into::into));
        self
    }

    /// Whether the host should draw a border around the view.
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.prefers_border = Some(border);
        self
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The view's `_meta` (`{"ui": {"csp": …, "prefersBorder": …}}`), on its listing entry
    /// and on the contents a read returns.
    pub fn meta(&self) -> Map<String, Value> {
        let mut ui = Map::new();
        let mut csp = Map::new();
        if !self.connect_domains.is_empty() {
            csp.insert("connectDomains".into(), json!(self.connect_domains));
        }
        if !self.resource_domains.is_empty() {
            csp.insert("resourceDomains".into(), json!(self.resource_domains));
        }
        if !csp.is_empty() {
            ui.insert("csp".into(), Value::Object(csp));
        }
        if let Some(border) = self.prefers_border {
            ui.insert("prefersBorder".into(), json!(border));
        }
        let mut meta = Map::new();
        meta.insert("ui".into(), Value::Object(ui));
        meta
    }

    /// The resource that serves the view.
    pub fn into_resource(self) -> Resource {
        let meta = self.meta();
        let html: Arc<str> = Arc::from(self.html.as_ref());
        let read_meta = meta.clone();
        let read: ReadFn = Arc::new(move |uri, _, _| {
            let contents = ResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(VIEW_MIME_TYPE.to_owned()),
                text: Some(html.to_string()),
                blob: None,
                meta: Some(read_meta.clone()),
            };
            Box::pin(std::future::ready(Ok(vec![contents])))
        });
        let mut resource = Resource::new(self.uri, self.name, read).mime_type(VIEW_MIME_TYPE).with_meta(meta);
        if let Some(description) = self.description {
            resource = resource.description(description);
        }
        resource
    }
}
