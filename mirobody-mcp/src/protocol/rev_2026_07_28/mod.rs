//! MCP 2026-07-28, the stateless revision, independent of transport: per-request `_meta`
//! validated, `server/discover`, results with `resultType` (and caching hints on the listings
//! and reads), multi-round-trip requests ([`crate::protocol::rev_2026_07_28::mrtr`]) in place of server-to-client
//! requests, -32021 for a client capability a tool needs. The transports choose the revision
//! per request; the endpoint's `rev_2026_07_28` module is the Streamable HTTP side.

mod exchange;
mod headers;
mod meta;
pub(crate) mod mrtr;
pub(crate) mod state;
mod tasks;

pub(crate) use exchange::{Exchange, Reply};
pub(crate) use headers::HeaderParam;
use state::State;

use crate::protocol::methods::{Method, method_not_found};

use crate::protocol::versions::supported_versions;
pub(crate) use meta::*;

use std::borrow::Cow;

use mirobody_core::{CallError, ResourceError, TaskSupport, ToolContext, ToolResult, UserInfo};
use mirobody_ports::{AccessKind, AccessOutcome};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::jsonrpc::{self, Id, Request, RpcError, code};
use crate::protocol::one_pass::scan::read_value;
use crate::protocol::peer::{Notifications, Outbox};
use crate::protocol::rev_2026_07_28::mrtr::{Arguments, Binding, MrtrPeer, RetryParams, Round, run_round};
use crate::protocol::{
    CallFailure, McpEngine, PromptParams, ServerInfo, Status, UriParams, call_failure, parse, single_page,
};
use crate::session::LOGS_OFF;

/// Caching hints of a result: time to live and scope.
#[derive(Clone, Copy)]
struct Cache {
    ttl_ms: u64,
    private: bool,
}

impl McpEngine {
    /// Answers a 2026-07-28 request on a transport with no headers to check (stdio): reads and
    /// [checks](RequestMeta::check) its `_meta`, then answers it, with `subscriptions/listen`
    /// writing its acknowledgement and changes to `notifications` until the streams
    /// [end](crate::protocol::changes::ChangeNotifier::end_streams) (or the caller drops the future).
    pub(crate) async fn serve_rev_2026_07_28(
        &self,
        request: &Request,
        user: &UserInfo,
        notifications: Option<mpsc::Sender<Vec<u8>>>,
    ) -> Reply {
        let meta = match RequestMeta::read(request.params.as_deref()).and_then(|meta| meta.check().map(|()| meta)) {
            Ok(meta) => meta,
            Err(error) => return Reply::error(&request.id, &error),
        };
        if request.method == "subscriptions/listen" {
            let tasks_of = crate::protocol::tasks::listens_for_tasks(&meta.client_capabilities, user);
            return match &notifications {
                Some(out) => self.listen(request, out, tasks_of).await,
                None => Reply::error(
                    &request.id,
                    &RpcError::new(code::METHOD_NOT_FOUND, "subscriptions/listen needs a streaming transport"),
                ),
            };
        }
        let exchange = Exchange { user, meta: &meta, notifications: notifications.map(Outbox::from) };
        self.handle_rev_2026_07_28(request, &exchange).await
    }

    // A listen stream on a message transport: the acknowledgement, then the changes asked for,
    // then the final result once the streams end.
    async fn listen(&self, request: &Request, out: &mpsc::Sender<Vec<u8>>, tasks_of: Option<String>) -> Reply {
        let id = &request.id;
        let filter = match listen_filter(request.params.as_deref()) {
            Ok(filter) => tasks_of.into_iter().fold(filter, |filter, owner| filter.with_tasks_of(owner)),
            Err(error) => return Reply::error(id, &error),
        };
        let changes = self.changes();
        let mut rx = changes.subscribe();
        if out.send(crate::protocol::changes::acknowledgement(&filter, id)).await.is_ok() {
            loop {
                let change = tokio::select! {
                    biased;
                    () = changes.ended() => break,
                    change = rx.recv() => change,
                };
                match change {
                    Ok(change) if filter.wants(&change) => {
                        if out.send(crate::protocol::changes::change_notification(&change, id)).await.is_err() {
                            break;
                        }
                    }
                    Ok(_) => {}
                    // Behind or closed: the stream ends, and the client listens again.
                    Err(_) => break,
                }
            }
        }
        let result = json!({"resultType": "complete", "_meta": {crate::protocol::changes::SUBSCRIPTION_ID_KEY: id}});
        Reply::ok(jsonrpc::result_bytes(id, &result))
    }

    /// Answers one 2026-07-28 request whose `_meta` is [checked](RequestMeta::check). Methods
    /// the revision removed (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`,
    /// `resources/unsubscribe`) and unknown ones get -32601; `subscriptions/listen` is the
    /// transport's (it answers with a stream), and gets -32601 here.
    pub(crate) async fn handle_rev_2026_07_28(&self, request: &Request, exchange: &Exchange<'_>) -> Reply {
        self.handle_parsed_rev_2026_07_28(request, exchange, None).await
    }

    // Like `handle_rev_2026_07_28`, reusing the params the transport read already.
    pub(crate) async fn handle_parsed_rev_2026_07_28(
        &self,
        request: &Request,
        exchange: &Exchange<'_>,
        read: Option<&Params<'_>>,
    ) -> Reply {
        let id = &request.id;
        let params = request.params.as_deref();
        let list_ttl = self.state_rev_2026_07_28().list_ttl_ms;
        let public = Cache { ttl_ms: list_ttl, private: false };
        let Some(method) = Method::of(&request.method).filter(|m| m.stateless()) else {
            return Reply::error(id, &method_not_found(&request.method));
        };
        let outcome = match method {
            Method::ToolsCall => {
                let call = match read {
                    Some(read) => read.call(),
                    None => parse::<CallParams<'_>>(params, "tools/call"),
                };
                return match call {
                    Ok(call) => self.call_tool_rev_2026_07_28(id, call, exchange).await,
                    Err(e) => Reply::error(id, &e),
                };
            }
            Method::ToolsList => self.tools_page(params, exchange.user).map(|raw| {
                let cache = Cache { ttl_ms: list_ttl, private: self.tools_listing_is_per_caller() };
                self.finish(id, &raw, Some(cache))
            }),
            Method::ServerDiscover => Ok(self.finish(id, &self.discover_json(), Some(public))),
            Method::ResourcesList => {
                let cache = Cache { ttl_ms: list_ttl, private: self.resources_listing_is_per_caller() };
                self.list_resources(params, exchange.user).await.map(|v| self.finish_value(id, &v, Some(cache)))
            }
            Method::ResourcesTemplatesList => single_page(params, "resources/templates/list")
                .map(|()| self.finish_value(id, &self.list_templates(), Some(public))),
            Method::ResourcesRead => return self.read_resource_rev_2026_07_28(id, params, exchange).await,
            Method::PromptsList => self.list_prompts(params).map(|v| self.finish_value(id, &v, Some(public))),
            Method::PromptsGet => return self.get_prompt_rev_2026_07_28(id, params, exchange).await,
            Method::CompletionComplete => self.complete(params).map(|v| self.finish_value(id, &v, None)),
            Method::TasksGet => return self.task_method(id, tasks::TaskMethod::Get, params, exchange).await,
            Method::TasksUpdate => return self.task_method(id, tasks::TaskMethod::Update, params, exchange).await,
            Method::TasksCancel => return self.task_method(id, tasks::TaskMethod::Cancel, params, exchange).await,
            // Removed by this revision; and `subscriptions/listen`, which the transport answers
            // with a stream.
            Method::Initialize
            | Method::Ping
            | Method::LoggingSetLevel
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::SubscriptionsListen => Err(method_not_found(method.name())),
        };
        match outcome {
            Ok(body) => Reply::ok(body),
            Err(error) => Reply::error(id, &error),
        }
    }

    fn state_rev_2026_07_28(&self) -> &State {
        &self.inner().rev_2026_07_28
    }

    /// The `Mcp-Param-*` headers a call of `tool` must carry (`x-mcp-header` arguments).
    pub(crate) fn header_params(&self, tool: &str) -> Option<&[HeaderParam]> {
        self.state_rev_2026_07_28().header_params(tool)
    }

    fn discover_json(&self) -> String {
        let mut result = json!({
            "supportedVersions": supported_versions(),
            "capabilities": {
                "tools": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "logging": {},
                "completions": {},
            },
        });
        if self.has_prompts() {
            result["capabilities"]["prompts"] = json!({"listChanged": true});
        }
        let mut extensions = self.extensions();
        extensions.insert(crate::protocol::tasks::EXTENSION.into(), json!({}));
        result["capabilities"]["extensions"] = Value::Object(extensions);
        if let Some(instructions) = &self.inner().info.instructions {
            result["instructions"] = json!(instructions);
        }
        result.to_string()
    }

    // A complete result: `raw` (the JSON text of a result object) with `resultType`, the
    // caching hints and the server's identity added.
    fn finish(&self, id: &Id, raw: &str, cache: Option<Cache>) -> Vec<u8> {
        let mut out = Vec::with_capacity(raw.len() + 192);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        // Writing an id to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, id);
        out.extend_from_slice(br#","result":"#);
        out.extend_from_slice(raw.as_bytes());
        self.close_result(out, cache)
    }

    // Ends `out`, whose last byte closes the result object, with the fields every complete
    // result carries, and the response.
    fn close_result(&self, mut out: Vec<u8>, cache: Option<Cache>) -> Vec<u8> {
        while out.last().is_some_and(u8::is_ascii_whitespace) {
            out.pop();
        }
        if out.last() == Some(&b'}') {
            out.pop();
        }
        while out.last().is_some_and(u8::is_ascii_whitespace) {
            out.pop();
        }
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        out.extend_from_slice(br#""resultType":"complete","#);
        if let Some(cache) = cache {
            out.extend_from_slice(br#""ttlMs":"#);
            out.extend_from_slice(cache.ttl_ms.to_string().as_bytes());
            out.extend_from_slice(if cache.private {
                br#","cacheScope":"private","#
            } else {
                br#","cacheScope":"public","#
            });
        }
        out.extend_from_slice(self.state_rev_2026_07_28().server_info.as_bytes());
        out.extend_from_slice(b"}}");
        out
    }

    fn finish_value(&self, id: &Id, value: &Value, cache: Option<Cache>) -> Vec<u8> {
        self.finish(id, &value.to_string(), cache)
    }

    fn tool_result(&self, id: &Id, result: &ToolResult) -> Vec<u8> {
        if result.meta().is_none() {
            // Room for the closing fields too: growing the buffer copies it.
            let mut out = Vec::with_capacity(256 + self.state_rev_2026_07_28().server_info.len());
            out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            // Serializing to a Vec cannot fail.
            let _ = serde_json::to_writer(&mut out, id);
            out.extend_from_slice(br#","result":"#);
            result.write_json(&mut out);
            return self.close_result(out, None);
        }
        // The tool set its own `_meta`: the server's identity joins it.
        let mut value = serde_json::to_value(result).unwrap_or_default();
        if let Some(meta) = value.get_mut("_meta").and_then(Value::as_object_mut) {
            let ServerInfo { name, version, .. } = &self.inner().info;
            meta.insert(META_SERVER_INFO.into(), json!({"name": name, "version": version}));
        }
        value["resultType"] = json!("complete");
        jsonrpc::result_bytes(id, &value)
    }

    fn input_required(&self, id: &Id, requests: Vec<(String, Value)>, state: String) -> Vec<u8> {
        let requests: Map<String, Value> = requests.into_iter().collect();
        let raw = json!({"resultType": "input_required", "inputRequests": requests, "requestState": state}).to_string();
        let meta = &self.state_rev_2026_07_28().server_info;
        jsonrpc::raw_result_bytes(id, &splice(&raw, meta))
    }

    fn mrtr_peer<'a>(&self, exchange: &'a Exchange<'_>, answers: Map<String, Value>) -> MrtrPeer<'a> {
        MrtrPeer::new(answers, &exchange.meta.client_capabilities, self.notifications(exchange))
    }

    // Where a call's progress and logs go, if the transport carries them.
    fn notifications(&self, exchange: &Exchange<'_>) -> Option<Notifications> {
        exchange.notifications.clone().map(|out| Notifications {
            out,
            progress_token: exchange.meta.progress_token.clone(),
            log_level: exchange.meta.log_rank().unwrap_or(LOGS_OFF),
        })
    }

    /// Runs a `tools/call` whose params are read, checked and owned.
    pub(crate) async fn call_owned_rev_2026_07_28(&self, id: &Id, call: OwnedCall, exchange: &Exchange<'_>) -> Reply {
        let OwnedCall { name, arguments, input_responses, request_state } = call;
        let params =
            CallParams { name: Cow::Borrowed(&name), arguments: arguments.as_deref(), input_responses, request_state };
        self.call_tool_rev_2026_07_28(id, params, exchange).await
    }

    async fn call_tool_rev_2026_07_28(&self, id: &Id, p: CallParams<'_>, exchange: &Exchange<'_>) -> Reply {
        // The arguments are read here, once; the state's binding digests their text only
        // when a state is opened or sealed.
        let arguments: Value = match p.arguments {
            Some(raw) => read_value(raw).unwrap_or_default(),
            None => Value::Null,
        };
        let registry = &self.inner().registry;
        let mut support = TaskSupport::Forbidden;
        if let Some(tool) = registry.get(&p.name) {
            if !self.visible(exchange.user, tool) {
                let started = self.access_started(exchange.user);
                self.record_access(exchange.user, AccessKind::Tool, &p.name, AccessOutcome::Hidden, started);
                let unknown = CallError::UnknownTool { name: p.name.into_owned() };
                return Reply::error(id, &RpcError::invalid_params(unknown.to_string()));
            }
            let missing: Vec<&str> = tool
                .required_client_capabilities()
                .iter()
                .map(|c| c.as_ref())
                .filter(|c| !exchange.meta.client_supports(c))
                .collect();
            if !missing.is_empty() {
                let required: Map<String, Value> = missing.iter().map(|c| ((*c).to_owned(), json!({}))).collect();
                let error = RpcError::new(
                    codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("Tool '{}' needs the client capability {}", p.name, missing.join(", ")),
                )
                .with_data(json!({"requiredCapabilities": required}));
                return Reply::error(id, &error);
            }
            support = tool.spec().task_support_level();
        }
        let binding = Binding {
            method: "tools/call",
            target: &p.name,
            arguments: Arguments::Raw(p.arguments),
            user: exchange.user.user_id(),
        };
        let retry = RetryParams { input_responses: p.input_responses, request_state: p.request_state };
        if support != TaskSupport::Forbidden {
            if tasks::negotiated(exchange) {
                let call = tasks::TaskCall { name: &p.name, arguments, binding: &binding, retry, support };
                return self.task_call_rev_2026_07_28(id, call, exchange).await;
            }
            if support == TaskSupport::Required {
                return Reply::error(id, &tasks::missing_extension(&format!("Tool '{}'", p.name)));
            }
        }
        let access = self.call_access(exchange.user, &p.name);
        let call = async |ctx: &ToolContext<'_>| {
            let ctx = crate::protocol::with_access(*ctx, &access);
            self.inner().call_tool(&p.name, arguments, exchange.user, &ctx).await
        };
        let round = self.round(id, exchange, &binding, retry, call);
        // `_meta.traceparent` is looked into only when traces are exported.
        let traced = self.inner().trace.as_ref().and_then(|trace| Some((trace, exchange.meta.traceparent()?)));
        let outcome = match traced {
            None => round.await,
            // Boxed: the common call's future stays the size it was.
            Some((trace, traceparent)) => {
                let span = tracing::debug_span!(target: "mirobody::trace", "tools/call");
                trace.adopt(&span, traceparent);
                Box::pin(tracing::Instrument::instrument(round, span)).await
            }
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(reply) => return reply,
        };
        crate::protocol::finish_call(access.as_ref(), &outcome);
        match outcome.map_err(call_failure) {
            Ok(result) | Err(CallFailure::Result(result)) => Reply::ok(self.tool_result(id, &result)),
            Err(CallFailure::Error(error, status)) => Reply::error_with(id, &error, status),
        }
    }

    // One round of `work`, a handler whose context's client carries the answers the retry
    // brought: its output, or the reply that ends the round here (questions for the client, or
    // an answer that does not fit its question).
    async fn round<T>(
        &self,
        id: &Id,
        exchange: &Exchange<'_>,
        binding: &Binding<'_>,
        retry: RetryParams,
        work: impl AsyncFnOnce(&ToolContext<'_>) -> T,
    ) -> Result<T, Reply> {
        let answers = retry.answers(&self.state_rev_2026_07_28().sealer, binding).map_err(|e| Reply::error(id, &e))?;
        let peer = self.mrtr_peer(exchange, answers);
        let ctx = self.inner().backends.context(Some(&peer));
        match run_round(&peer, work(&ctx)).await {
            Round::Done(output) => Ok(output),
            Round::InputRequired { requests, answers } => {
                let state = self.state_rev_2026_07_28().sealer.seal(binding, answers);
                Err(Reply::ok(self.input_required(id, requests, state)))
            }
            Round::Invalid(error) => Err(Reply::error(id, &error)),
        }
    }

    async fn get_prompt_rev_2026_07_28(&self, id: &Id, params: Option<&RawValue>, exchange: &Exchange<'_>) -> Reply {
        let parsed = parse::<PromptParams>(params, "prompts/get")
            .and_then(|p| parse::<RetryParams>(params, "prompts/get").map(|r| (p, r)));
        let (p, retry) = match parsed {
            Ok(parsed) => parsed,
            Err(e) => return Reply::error(id, &e),
        };
        let arguments = json!(p.arguments);
        let binding = Binding {
            method: "prompts/get",
            target: &p.name,
            arguments: Arguments::Value(&arguments),
            user: exchange.user.user_id(),
        };
        let render = async |ctx: &ToolContext<'_>| self.render_prompt(&p.name, p.arguments, ctx).await;
        match self.round(id, exchange, &binding, retry, render).await {
            Ok(Ok(messages)) => Reply::ok(self.finish_value(id, &self.prompt_result(&p.name, messages), None)),
            Ok(Err(error)) => Reply::error(id, &error),
            Err(reply) => reply,
        }
    }

    async fn read_resource_rev_2026_07_28(&self, id: &Id, params: Option<&RawValue>, exchange: &Exchange<'_>) -> Reply {
        let parsed = parse::<UriParams>(params, "resources/read")
            .and_then(|p| parse::<RetryParams>(params, "resources/read").map(|r| (p, r)));
        let (p, retry) = match parsed {
            Ok(parsed) => parsed,
            Err(e) => return Reply::error(id, &e),
        };
        let binding = Binding {
            method: "resources/read",
            target: &p.uri,
            arguments: Arguments::Value(&Value::Null),
            user: exchange.user.user_id(),
        };
        let started = self.access_started(exchange.user);
        let read = async |ctx: &ToolContext<'_>| self.read_contents(&p.uri, exchange.user, ctx).await;
        let read = match self.round(id, exchange, &binding, retry, read).await {
            Ok(read) => read,
            Err(reply) => return reply,
        };
        self.record_access(
            exchange.user,
            AccessKind::Resource,
            &p.uri,
            crate::protocol::resource_outcome(&read),
            started,
        );
        match read {
            Ok(contents) => {
                // A read may depend on who reads: only an anonymous read of a public resource
                // may be shared.
                let auth = self.inner().resources.get(&p.uri).is_some_and(|r| r.is_auth());
                let cache = Cache { ttl_ms: 0, private: exchange.user.authed() || auth };
                Reply::ok(self.finish_value(id, &json!({"contents": contents}), Some(cache)))
            }
            // 2026-07-28 reports an unknown resource as invalid params, naming the URI.
            Err(ResourceError::NotFound(uri)) => Reply::error(
                id,
                &RpcError::invalid_params(format!("Resource not found: {uri}")).with_data(json!({"uri": uri})),
            ),
            Err(e @ ResourceError::Unauthenticated(_)) => {
                Reply::error_with(id, &RpcError::new(code::UNAUTHORIZED, e.to_string()), Status::Unauthenticated)
            }
            Err(e) => Reply::error(id, &RpcError::new(code::INTERNAL_ERROR, e.to_string())),
        }
    }
}

// Adds `fields` (JSON object members, without braces) to the JSON text of an object.
fn splice(raw: &str, fields: &str) -> String {
    let body = raw.trim_end();
    let body = body.strip_suffix('}').unwrap_or(body).trim_end();
    let mut out = String::with_capacity(body.len() + fields.len() + 2);
    out.push_str(body);
    if !body.ends_with('{') {
        out.push(',');
    }
    out.push_str(fields);
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_splice_into_any_object() {
        assert_eq!(splice(r#"{"a":1}"#, r#""b":2"#), r#"{"a":1,"b":2}"#);
        assert_eq!(splice("{}", r#""b":2"#), r#"{"b":2}"#);
        assert_eq!(splice("{ }", r#""b":2"#), r#"{"b":2}"#);
    }
}
