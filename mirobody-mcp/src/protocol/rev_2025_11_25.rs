//! The 2025-11-25 revision (and the three before it): the `initialize` handshake and a
//! session's methods.

use mirobody_core::{CallError, ResourceError, UserInfo};
use mirobody_ports::{AccessKind, AccessOutcome};

use serde::Deserialize;

use serde_json::value::RawValue;

use serde_json::{Value, json};

use super::methods::{Method, method_not_found};

use super::one_pass::tool_call::{ToolCall, token_in};

use super::engine::*;

use crate::jsonrpc::{self, ClientResponse, Id, Notification, Request, RpcError, code};

use crate::session::{ClientInfo, Session, log_rank};

// What `initialize` reads of its params: the version, which known capabilities are declared,
// and the client's name and version. Everything else is skipped as it is read, never built into
// a value, so a client's capabilities cost nothing however large it makes them.
#[derive(Deserialize)]
pub(crate) struct InitializeParams<'a> {
    #[serde(rename = "protocolVersion")]
    protocol_version: std::borrow::Cow<'a, str>,
    #[serde(default)]
    capabilities: DeclaredCapabilities,
    #[serde(rename = "clientInfo", default)]
    #[serde(borrow)]
    client_info: InitializeClientInfo<'a>,
}

#[derive(Deserialize, Default)]
pub(crate) struct DeclaredCapabilities {
    roots: Option<serde::de::IgnoredAny>,
    sampling: Option<serde::de::IgnoredAny>,
    elicitation: Option<serde::de::IgnoredAny>,
    tasks: Option<serde::de::IgnoredAny>,
}

impl DeclaredCapabilities {
    fn names(&self) -> impl Iterator<Item = &'static str> {
        [
            ("roots", &self.roots),
            ("sampling", &self.sampling),
            ("elicitation", &self.elicitation),
            ("tasks", &self.tasks),
        ]
        .into_iter()
        .filter_map(|(name, declared)| declared.is_some().then_some(name))
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct InitializeClientInfo<'a> {
    #[serde(default, borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    version: std::borrow::Cow<'a, str>,
}

#[derive(Deserialize)]
pub(crate) struct LevelParams {
    level: String,
}

#[derive(Deserialize)]
pub(crate) struct CancelParams {
    #[serde(rename = "requestId")]
    request_id: Id,
}

/// The `_meta.progressToken` of a request, if it asked for progress.
pub(crate) fn progress_token(request: &Request) -> Option<Value> {
    #[derive(Deserialize)]
    struct WithMeta {
        #[serde(rename = "_meta")]
        meta: Option<Value>,
    }
    let raw = request.params.as_deref()?.get();
    // Most calls carry no token: look before parsing the params a second time.
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("progressToken"));
    FINDER.find(raw.as_bytes())?;
    token_in(serde_json::from_str::<WithMeta>(raw).ok()?.meta.as_ref())
}

impl McpEngine {
    /// Answers one request.
    pub(crate) async fn handle_request(&self, request: &Request, exchange: &Exchange<'_>) -> Reply {
        let id = &request.id;
        let params = request.params.as_deref();
        let Some(method) = Method::of(&request.method).filter(|m| m.in_sessions()) else {
            return Reply::error(id, method_not_found(&request.method));
        };
        let outcome = match method {
            Method::ToolsCall => return self.call_tool(id, params, exchange).await,
            Method::ToolsList => return self.list_tools(id, params, exchange.user),
            Method::Initialize => self.initialize(params, exchange.session),
            Method::Ping => Ok(json!({})),
            Method::ResourcesList => self.list_resources(params, exchange.user).await,
            Method::ResourcesTemplatesList => single_page(params, "resources/templates/list").map(|()| self.list_templates()),
            Method::ResourcesRead => return self.read_resource(id, params, exchange).await,
            Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
                parse::<UriParams>(params, &request.method).and_then(|p| {
                    if method == Method::ResourcesSubscribe {
                        exchange.session.subscribe(&p.uri).map_err(|e| RpcError::invalid_params(e.to_string()))?;
                    } else {
                        exchange.session.unsubscribe(&p.uri);
                    }
                    Ok(json!({}))
                })
            }
            Method::PromptsList => self.list_prompts(params),
            Method::PromptsGet => self.get_prompt(params).await,
            Method::LoggingSetLevel => parse::<LevelParams>(params, "logging/setLevel").and_then(|p| {
                let rank = log_rank(&p.level).ok_or_else(|| {
                    RpcError::invalid_params(format!("Unknown log level '{}'; use one of debug, info, notice, warning, error, critical, alert, emergency", p.level))
                })?;
                exchange.session.set_log_level(rank);
                Ok(json!({}))
            }),
            Method::CompletionComplete => self.complete(params),
            Method::ServerDiscover
            | Method::SubscriptionsListen
            | Method::TasksGet
            | Method::TasksUpdate
            | Method::TasksCancel => Err(method_not_found(method.name())),
        };
        match outcome {
            Ok(result) => Reply::ok(jsonrpc::result_bytes(id, &result)),
            Err(error) => Reply::error(id, error),
        }
    }

    /// Takes a notification: `notifications/cancelled` stops the named request; others need
    /// no action. The id of a request it cancels that is not running here, for a transport
    /// whose calls may run in another instance.
    pub(crate) fn handle_notification(&self, notification: &Notification, session: &Session) -> Option<Id> {
        if notification.method != "notifications/cancelled" {
            return None;
        }
        let p = parse::<CancelParams>(notification.params.as_deref(), &notification.method).ok()?;
        let cancelled = session.cancel_request(&p.request_id);
        tracing::debug!(request = %p.request_id, cancelled, "cancel requested");
        (!cancelled).then_some(p.request_id)
    }

    /// Delivers a client's answer to a server-to-client request; gives the outcome back when
    /// nothing here waits for it from this session and user.
    pub(crate) fn handle_response(
        &self,
        response: ClientResponse,
        session: &Session,
        user: &UserInfo,
    ) -> Result<(), Result<Value, Value>> {
        self.inner.pending.complete(&response.id, session.id(), user.user_id(), response.outcome)
    }

    fn initialize(&self, params: Option<&RawValue>, session: &Session) -> Result<Value, RpcError> {
        let p: InitializeParams<'_> = parse(params, "initialize")?;
        let version = SUPPORTED_VERSIONS.iter().copied().find(|v| *v == p.protocol_version).unwrap_or(LATEST_VERSION);
        let client = ClientInfo::new(p.capabilities.names(), &p.client_info.name, &p.client_info.version);
        tracing::debug!(client = %client.name, client_version = %client.version, version, "initialize");
        if !session.initialize(version, client) {
            return Err(RpcError::new(code::INVALID_REQUEST, "Invalid request: the session is already initialized"));
        }
        let info = &self.inner.info;
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": false},
                "resources": {"subscribe": true, "listChanged": false},
                "logging": {},
                "completions": {},
            },
            "serverInfo": {"name": info.name, "version": info.version},
        });
        // Prompts are a capability only where there are prompts: a client shows a menu for it.
        if self.has_prompts() {
            result["capabilities"]["prompts"] = json!({"listChanged": false});
        }
        let extensions = self.extensions();
        if !extensions.is_empty() {
            result["capabilities"]["extensions"] = Value::Object(extensions);
        }
        if let Some(instructions) = &info.instructions {
            result["instructions"] = json!(instructions);
        }
        Ok(result)
    }

    fn list_tools(&self, id: &Id, params: Option<&RawValue>, user: &UserInfo) -> Reply {
        match self.tools_page(params, user) {
            Ok(result) => Reply::ok(jsonrpc::raw_result_bytes(id, &result)),
            Err(e) => Reply::error(id, e),
        }
    }

    async fn call_tool(&self, id: &Id, params: Option<&RawValue>, exchange: &Exchange<'_>) -> Reply {
        match parse(params, "tools/call") {
            Ok(call) => self.run_tool_call(id, call, exchange).await,
            Err(e) => Reply::error(id, e),
        }
    }

    /// Runs a `tools/call` whose params are read.
    pub(crate) async fn run_tool_call(&self, id: &Id, call: ToolCall<'_>, exchange: &Exchange<'_>) -> Reply {
        // Read only when traces are exported: otherwise `_meta` is never looked into for it.
        let traced = match &self.inner.trace {
            Some(trace) => call.traceparent().map(|traceparent| (trace, traceparent.to_owned())),
            None => None,
        };
        let ToolCall { name, arguments, .. } = call;
        // Looked up here only when a hook decides what is visible: the registry looks again.
        if let Some(policy) = &self.inner.visibility
            && let Some(tool) = self.inner.registry.get(&name)
            && !policy.is_visible(exchange.user, tool)
        {
            let started = self.access_started(exchange.user);
            self.record_access(exchange.user, AccessKind::Tool, &name, AccessOutcome::Hidden, started);
            let unknown = CallError::UnknownTool { name: name.into_owned() };
            return Reply::error(id, RpcError::invalid_params(unknown.to_string()));
        }
        let access = self.call_access(exchange.user, &name);
        let ctx = with_access(self.inner.backends.context(exchange.client), &access);
        let calling = self.inner.call_tool(&name, arguments, exchange.user, &ctx);
        let outcome = match traced {
            None => calling.await,
            // Boxed: the common call's future stays the size it was.
            Some((trace, traceparent)) => {
                let span = tracing::debug_span!(target: "mirobody::trace", "tools/call");
                trace.adopt(&span, &traceparent);
                Box::pin(tracing::Instrument::instrument(calling, span)).await
            }
        };
        finish_call(access.as_ref(), &outcome);
        match outcome.map_err(call_failure) {
            Ok(result) | Err(CallFailure::Result(result)) => Reply::ok(jsonrpc::tool_result_bytes(id, &result)),
            Err(CallFailure::Error(error, status)) => Reply { body: jsonrpc::error_bytes(Some(id), &error), status },
        }
    }

    async fn read_resource(&self, id: &Id, params: Option<&RawValue>, exchange: &Exchange<'_>) -> Reply {
        let p: UriParams = match parse(params, "resources/read") {
            Ok(p) => p,
            Err(e) => return Reply::error(id, e),
        };
        let started = self.access_started(exchange.user);
        let ctx = self.inner.backends.context(exchange.client);
        let read = self.read_contents(&p.uri, exchange.user, &ctx).await;
        self.record_access(exchange.user, AccessKind::Resource, &p.uri, resource_outcome(&read), started);
        match read {
            Ok(contents) => Reply::ok(jsonrpc::result_bytes(id, &json!({"contents": contents}))),
            Err(ResourceError::NotFound(uri)) => Reply::error(
                id,
                RpcError::new(code::RESOURCE_NOT_FOUND, format!("Resource not found: {uri}"))
                    .with_data(json!({"uri": uri})),
            ),
            Err(e @ ResourceError::Unauthenticated(_)) => Reply {
                body: jsonrpc::error_bytes(Some(id), &RpcError::new(code::UNAUTHORIZED, e.to_string())),
                status: Status::Unauthenticated,
            },
            Err(e) => Reply::error(id, RpcError::new(code::INTERNAL_ERROR, e.to_string())),
        }
    }

    async fn get_prompt(&self, params: Option<&RawValue>) -> Result<Value, RpcError> {
        let p: PromptParams = parse(params, "prompts/get")?;
        let ctx = self.inner.backends.context(None);
        let messages = self.render_prompt(&p.name, p.arguments, &ctx).await?;
        Ok(self.prompt_result(&p.name, messages))
    }
}
