//! Run with `cargo run -p example-conformance-server -- 3001`, then point the official suite at
//! it: `npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp`.
//! With `--stdio` it speaks MCP over stdin/stdout instead (for the SDK clients' stdio tests).
//!
//! Every tool, resource and prompt the conformance scenarios call, with the names and
//! behaviour they check (MCP 2025-11-25 and 2026-07-28), written with the public API only.
//! Tools that ask the client something use one API (`ToolContext::request`) on both
//! revisions: on 2025-11-25 the question is a request on the call's SSE stream, on 2026-07-28
//! an `input_required` result, after which the handler runs again with the answer. The
//! fixtures of the tasks extension (`tasks-*` scenarios) are in `tasks.rs`.

mod tasks;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mirobody_core::{
    Args, Content, ContextPromptFn, EmbeddedResource, Param, Prompt, PromptMessage, PromptRegistry, Registry, Resource,
    ResourceContents, ResourceRegistry, ResourceTemplate, Tool, ToolContext, ToolResult, Type, UserInfo,
};
use mirobody_mcp::McpEngine;
use mirobody_mcp::changes::ChangeNotifier;
use mirobody_mcp::http::{HttpOptions, McpHttp};
use serde_json::{Value, json};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

fn content_tool(name: &'static str, description: &'static str, content: fn() -> Vec<Content>) -> Tool {
    Tool::new(name, description).read_only().sync_handler(move |_, _, _| ToolResult::from_content(content()))
}

async fn with_logging(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    for (i, message) in
        ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log("info", json!(message)).await;
    }
    ToolResult::text("Tool with logging executed successfully")
}

async fn with_progress(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    for step in [0.0, 50.0, 100.0] {
        ctx.progress(step, Some(100.0), None).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ToolResult::text("Tool with progress executed successfully")
}

async fn sampling(args: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let prompt = args.str_or("prompt", "");
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100,
    });
    match ctx.request("sampling/createMessage", params).await {
        Ok(answer) => {
            let text = answer.pointer("/content/text").and_then(Value::as_str).unwrap_or_default();
            ToolResult::text(format!("LLM response: {text}"))
        }
        Err(e) => ToolResult::error(format!("Sampling failed: {e}")),
    }
}

async fn elicit(ctx: &ToolContext<'_>, message: &str, schema: Value) -> Result<Value, String> {
    ctx.request("elicitation/create", json!({"message": message, "requestedSchema": schema}))
        .await
        .map_err(|e| e.to_string())
}

async fn elicitation(args: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    });
    match elicit(ctx, args.str_or("message", ""), schema).await {
        Ok(answer) => ToolResult::text(format!("User response: {answer}")),
        Err(e) => ToolResult::error(format!("Elicitation failed: {e}")),
    }
}

fn completed(answer: &Value) -> ToolResult {
    let action = answer.get("action").and_then(Value::as_str).unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or(json!({}));
    ToolResult::text(format!("Elicitation completed: action={action}, content={content}"))
}

async fn sep1034_defaults(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
    });
    match elicit(ctx, "Please review and update the form fields with defaults", schema).await {
        Ok(answer) => completed(&answer),
        Err(e) => ToolResult::error(format!("Elicitation failed: {e}")),
    }
}

async fn sep1330_enums(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ]}},
        },
    });
    match elicit(ctx, "Please select options from the enum fields", schema).await {
        Ok(answer) => completed(&answer),
        Err(e) => ToolResult::error(format!("Elicitation failed: {e}")),
    }
}

// The document the json-schema-2020-12 scenario expects back verbatim: `$defs` with an
// `$anchor`, a `$ref`, `allOf`/`anyOf`, `if`/`then`/`else`, no additional properties.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

fn form(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]},
    })
}

fn sampling_params(text: &str, max_tokens: u32) -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens})
}

fn sampled_text(answer: &Value) -> &str {
    answer.pointer("/content/text").and_then(Value::as_str).unwrap_or_default()
}

fn content_field<'a>(answer: &'a Value, field: &str) -> &'a Value {
    answer.pointer(&format!("/content/{field}")).unwrap_or(&Value::Null)
}

async fn mrtr_elicitation(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    match ctx.request_keyed("user_name", "elicitation/create", form("What is your name?", "name", "string")).await {
        Ok(answer) => ToolResult::text(format!("Hello, {}!", content_field(&answer, "name").as_str().unwrap_or("?"))),
        Err(e) => ToolResult::error(format!("Elicitation failed: {e}")),
    }
}

async fn mrtr_sampling(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let params = sampling_params("What is the capital of France?", 100);
    match ctx.request_keyed("capital_question", "sampling/createMessage", params).await {
        Ok(answer) => ToolResult::text(format!("LLM response: {}", sampled_text(&answer))),
        Err(e) => ToolResult::error(format!("Sampling failed: {e}")),
    }
}

async fn mrtr_list_roots(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    match ctx.request_keyed("client_roots", "roots/list", json!({})).await {
        Ok(answer) => {
            let uris: Vec<&str> = answer["roots"]
                .as_array()
                .map(|roots| roots.iter().filter_map(|r| r["uri"].as_str()).collect())
                .unwrap_or_default();
            ToolResult::text(format!("Client roots: {}", uris.join(", ")))
        }
        Err(e) => ToolResult::error(format!("Listing roots failed: {e}")),
    }
}

// The answer arrives only through a requestState the server verified, hence "state-ok".
async fn mrtr_confirm(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    match ctx.request_keyed("confirm", "elicitation/create", form("Please confirm", "ok", "boolean")).await {
        Ok(answer) => ToolResult::text(format!("state-ok: confirmed={}", content_field(&answer, "ok"))),
        Err(e) => ToolResult::error(format!("Confirmation failed: {e}")),
    }
}

async fn mrtr_multiple_inputs(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    // Asked together, so all three reach the client in one round.
    let (name, greeting, roots) = tokio::join!(
        ctx.request_keyed("user_name", "elicitation/create", form("What is your name?", "name", "string")),
        ctx.request_keyed("greeting", "sampling/createMessage", sampling_params("Generate a greeting", 50)),
        ctx.request_keyed("client_roots", "roots/list", json!({})),
    );
    match (name, greeting, roots) {
        (Ok(name), Ok(greeting), Ok(roots)) => ToolResult::text(format!(
            "{} {}! You have {} root(s).",
            sampled_text(&greeting),
            content_field(&name, "name").as_str().unwrap_or("?"),
            roots["roots"].as_array().map_or(0, Vec::len)
        )),
        (name, greeting, roots) => {
            let failed = [name.err(), greeting.err(), roots.err()].into_iter().flatten().next();
            ToolResult::error(format!("An input failed: {}", failed.map(|e| e.to_string()).unwrap_or_default()))
        }
    }
}

async fn mrtr_multi_round(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let step1 = ctx.request_keyed("step1", "elicitation/create", form("Step 1: What is your name?", "name", "string"));
    let name = match step1.await {
        Ok(answer) => content_field(&answer, "name").as_str().unwrap_or("?").to_owned(),
        Err(e) => return ToolResult::error(format!("Step 1 failed: {e}")),
    };
    let step2 = ctx.request_keyed(
        "step2",
        "elicitation/create",
        form("Step 2: What is your favorite color?", "color", "string"),
    );
    match step2.await {
        Ok(answer) => {
            ToolResult::text(format!("{name} likes {}", content_field(&answer, "color").as_str().unwrap_or("?")))
        }
        Err(e) => ToolResult::error(format!("Step 2 failed: {e}")),
    }
}

// Asks only what the client declared it can answer.
async fn mrtr_capabilities(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let sampling = async {
        if ctx.client_supports("sampling") {
            Some(ctx.request("sampling/createMessage", sampling_params("Say hello", 20)).await)
        } else {
            None
        }
    };
    let elicitation = async {
        if ctx.client_supports("elicitation") {
            Some(ctx.request("elicitation/create", form("What is your name?", "name", "string")).await)
        } else {
            None
        }
    };
    let (sampled, elicited) = tokio::join!(sampling, elicitation);
    ToolResult::text(format!("sampling answered: {}, elicitation answered: {}", sampled.is_some(), elicited.is_some()))
}

async fn logging_tool(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    for message in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
        ctx.log("info", json!(message)).await;
    }
    ToolResult::text("Logged three messages")
}

fn header_param_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "description": "The region to run in", "x-mcp-header": "Region"},
            "query": {"type": "string", "description": "What to run"},
        },
        "required": ["region"],
    })
}

fn tools_2026(changes: &ChangeNotifier) -> Vec<Tool> {
    let tool_changes = changes.clone();
    let prompt_changes = changes.clone();
    vec![
        Tool::new("test_input_required_result_elicitation", "Asks the user's name (key user_name).")
            .handler(mrtr_elicitation),
        Tool::new("test_input_required_result_sampling", "Asks the client's model a question.").handler(mrtr_sampling),
        Tool::new("test_input_required_result_list_roots", "Asks for the client's roots.").handler(mrtr_list_roots),
        Tool::new("test_input_required_result_request_state", "Asks for a confirmation; answers state-ok.")
            .handler(mrtr_confirm),
        Tool::new("test_input_required_result_multiple_inputs", "Asks three things at once.")
            .handler(mrtr_multiple_inputs),
        Tool::new("test_input_required_result_multi_round", "Asks two things, one after the other.")
            .handler(mrtr_multi_round),
        Tool::new("test_input_required_result_tampered_state", "Asks for a confirmation under a signed state.")
            .handler(mrtr_confirm),
        Tool::new("test_input_required_result_capabilities", "Asks only what the client can answer.")
            .handler(mrtr_capabilities),
        Tool::new("test_missing_capability", "Needs the client's model (sampling).")
            .requires_client_capability("sampling")
            .handler(sampling_no_args),
        Tool::new("test_streaming_elicitation", "Asks the user a question while it runs.")
            .handler(streaming_elicitation),
        Tool::new("test_logging_tool", "Logs three messages (sent only when the request asks for logs).")
            .read_only()
            .handler(logging_tool),
        Tool::new("test_trigger_tool_change", "Announces a tool list change to listening clients.").sync_handler(
            move |_, _, _| {
                tool_changes.tools_changed();
                ToolResult::text("Announced a tool list change")
            },
        ),
        Tool::new("test_trigger_prompt_change", "Announces a prompt list change to listening clients.").sync_handler(
            move |_, _, _| {
                prompt_changes.prompts_changed();
                ToolResult::text("Announced a prompt list change")
            },
        ),
        Tool::new("test_header_param", "Runs a query in a region; the region travels in the Mcp-Param-Region header.")
            .raw_input_schema(header_param_schema())
            .read_only()
            .sync_handler(|args, _, _| {
                ToolResult::ok(json!({"region": args.str("region"), "query": args.str("query")}))
            }),
    ]
}

async fn sampling_no_args(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    match ctx.request("sampling/createMessage", sampling_params("Say hello", 20)).await {
        Ok(answer) => ToolResult::text(format!("LLM response: {}", sampled_text(&answer))),
        Err(e) => ToolResult::error(format!("Sampling failed: {e}")),
    }
}

async fn streaming_elicitation(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    ctx.progress(0.0, Some(1.0), Some("asking")).await;
    match ctx.request("elicitation/create", form("What is your name?", "name", "string")).await {
        Ok(answer) => ToolResult::text(format!("User response: {answer}")),
        Err(e) => ToolResult::error(format!("Elicitation failed: {e}")),
    }
}

fn tools(changes: &ChangeNotifier) -> Vec<Tool> {
    let mut tools = tools_2025();
    tools.extend(tools_2026(changes));
    tools.extend(tasks::tools());
    tools
}

fn tools_2025() -> Vec<Tool> {
    vec![
        mirobody_tools::builtin_tool("echo").expect("echo is built in"),
        content_tool("test_simple_text", "Returns a simple text response.", || {
            vec![Content::text("This is a simple text response for testing.")]
        }),
        content_tool("test_image_content", "Returns an image.", || vec![Content::image(PNG, "image/png")]),
        content_tool("test_audio_content", "Returns audio.", || vec![Content::audio(WAV, "audio/wav")]),
        content_tool("test_embedded_resource", "Returns an embedded resource.", || {
            vec![Content::embedded_text(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )]
        }),
        content_tool("test_multiple_content_types", "Returns text, an image and a resource.", || {
            vec![
                Content::text("Multiple content types test:"),
                Content::image(PNG, "image/png"),
                Content::embedded_text(
                    "test://mixed-content-resource",
                    "application/json",
                    r#"{"test":"data","value":123}"#,
                ),
            ]
        }),
        Tool::new("test_tool_with_logging", "Sends three log messages while it runs.")
            .read_only()
            .handler(with_logging),
        Tool::new("test_tool_with_progress", "Reports progress while it runs.").read_only().handler(with_progress),
        Tool::new("test_error_handling", "Always fails.")
            .read_only()
            .sync_handler(|_, _, _| ToolResult::error("This tool intentionally returns an error for testing")),
        Tool::new("test_sampling", "Asks the client's model to answer a prompt.")
            .param(Param::required("prompt", Type::String, "The prompt to send to the LLM"))
            .handler(sampling),
        Tool::new("test_elicitation", "Asks the user for their name and email.")
            .param(Param::required("message", Type::String, "The message to show the user"))
            .handler(elicitation),
        Tool::new("test_elicitation_sep1034_defaults", "Asks with defaults for every primitive type.")
            .handler(sep1034_defaults),
        Tool::new("test_elicitation_sep1330_enums", "Asks with every enum form.").handler(sep1330_enums),
        Tool::new("json_schema_2020_12_tool", "Takes arguments described by a JSON Schema 2020-12 document.")
            .raw_input_schema(json_schema_2020_12())
            .read_only()
            .sync_handler(|args, _, _| ToolResult::ok(json!({"received": Value::Object(args.into_inner())}))),
    ]
}

fn template_read() -> mirobody_core::TemplateReadFn {
    Arc::new(|uri, vars: HashMap<String, String>, _, _| {
        let id = vars.get("id").cloned().unwrap_or_default();
        let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
        let contents = ResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("application/json".into()),
            text: Some(text),
            blob: None,
            meta: None,
        };
        Box::pin(std::future::ready(Ok(vec![contents])))
    })
}

fn resources() -> ResourceRegistry {
    let binary: mirobody_core::ReadFn = Arc::new(|uri, _, _| {
        let contents = EmbeddedResource {
            uri: uri.to_owned(),
            mime_type: Some("image/png".into()),
            text: None,
            blob: Some(PNG.into()),
            meta: None,
        };
        Box::pin(std::future::ready(Ok(vec![contents])))
    });
    ResourceRegistry::new(
        vec![
            Resource::text("test://static-text", "static-text", "text/plain", || {
                "This is the content of the static text resource.".into()
            })
            .description("A static text resource for testing"),
            Resource::new("test://static-binary", "static-binary", binary)
                .mime_type("image/png")
                .description("A static binary resource (image) for testing"),
            Resource::text("test://watched-resource", "watched-resource", "text/plain", || {
                "Watched resource content".into()
            })
            .description("A resource that can be subscribed to"),
        ],
        vec![
            ResourceTemplate::new("test://template/{id}/data", "template", template_read())
                .mime_type("application/json")
                .description("A resource template with an id parameter"),
        ],
    )
    .expect("unique resources")
}

fn context_prompt() -> Prompt {
    let render: ContextPromptFn = Arc::new(|_, ctx| {
        Box::pin(async move {
            let question = form("What context should the prompt use?", "context", "string");
            let context = match ctx.request_keyed("user_context", "elicitation/create", question).await {
                Ok(answer) => content_field(&answer, "context").as_str().unwrap_or("none").to_owned(),
                // Without a client to ask (2025-11-25 prompts/get), the prompt does without.
                Err(_) => "none".to_owned(),
            };
            Ok(vec![PromptMessage::user(Content::text(format!("Answer with this context in mind: {context}")))])
        })
    });
    Prompt::with_context("test_input_required_result_prompt", "A prompt that asks the user for context first", render)
}

fn prompts() -> PromptRegistry {
    PromptRegistry::new(
        [
            context_prompt(),
            Prompt::new("test_simple_prompt", "A simple prompt without arguments", |_| {
                Ok(vec![PromptMessage::user(Content::text("This is a simple prompt for testing."))])
            }),
            Prompt::new("test_prompt_with_arguments", "A prompt with required arguments", |args| {
                let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
                Ok(vec![PromptMessage::user(Content::text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                )))])
            })
            .argument("arg1", "First test argument", true)
            .argument("arg2", "Second test argument", true),
            Prompt::new("test_prompt_with_embedded_resource", "A prompt that embeds a resource", |args| {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(vec![
                    PromptMessage::user(Content::embedded_text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    )),
                    PromptMessage::user(Content::text("Please process the embedded resource above.")),
                ])
            })
            .argument("resourceUri", "URI of the resource to embed", true),
            Prompt::new("test_prompt_with_image", "A prompt with an image", |_| {
                Ok(vec![
                    PromptMessage::user(Content::image(PNG, "image/png")),
                    PromptMessage::user(Content::text("Please analyze the image above.")),
                ])
            }),
        ]
        .into_iter()
        // The built-in prompts too, for the SDK clients' round trips (no scenario names them).
        .chain(mirobody_tools::prompts::builtin_prompts())
        .collect(),
    )
    .expect("unique prompts")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let arg = std::env::args().nth(1).or_else(|| std::env::var("PORT").ok());
    let changes = ChangeNotifier::new();
    let mut builder = Registry::builder();
    for tool in tools(&changes) {
        builder = builder.tool(tool);
    }
    let registry = builder.build().expect("the fixture tools are valid");
    let mut engine = McpEngine::builder(Arc::new(registry)).resources(resources()).prompts(prompts());
    // Several fixtures behind one load balancer sign each other's requestStates.
    // They share their sessions under the same key: one generated per process would make each
    // refuse the others' messages.
    let state_key = match std::env::var("MIROBODY_FIXTURE_STATE_KEY") {
        Ok(key) => Some(mirobody_mcp::StateKey::new(key.into_bytes()).map_err(std::io::Error::other)?),
        Err(_) => None,
    };
    if let Some(key) = &state_key {
        engine = engine.request_state_key(key.clone());
    }
    // With a database, fixtures share their task records: a task one runs, any reads.
    if let Ok(url) = std::env::var("MIROBODY_FIXTURE_DATABASE_URL") {
        let schema = std::env::var("MIROBODY_FIXTURE_DATABASE_SCHEMA").ok();
        let store =
            mirobody_store::SqlStore::connect(&url, schema.as_deref(), 8).await.map_err(std::io::Error::other)?;
        engine = engine.task_store(Arc::new(store));
    }
    let engine = engine.change_notifier(changes).build();
    if arg.as_deref() == Some("--stdio") {
        let user = UserInfo::anonymous();
        return mirobody_mcp::stdio::serve(engine, user, tokio::io::stdin(), tokio::io::stdout(), 4 << 20).await;
    }
    let port: u16 = arg.and_then(|p| p.parse().ok()).unwrap_or(3001);
    // The conformance suite is one client running hundreds of scenarios back to back: no
    // per-caller rate limit for it.
    let options = {
        let mut o = HttpOptions::default();
        o.caller_limits = mirobody_mcp::limits::CallerLimits::default().with_rate(0, 0);
        o
    };
    // With a Redis, fixtures share their sessions: any of several serves any request.
    let mcp = match std::env::var("MIROBODY_FIXTURE_REDIS_URL") {
        Ok(url) => {
            let prefix = std::env::var("MIROBODY_FIXTURE_REDIS_PREFIX").unwrap_or_else(|_| "mirobody-fixture:".into());
            let redis = mirobody_store::RedisCache::connect(&url, &prefix).await.map_err(std::io::Error::other)?;
            let key = state_key.ok_or_else(|| {
                std::io::Error::other(
                    "MIROBODY_FIXTURE_REDIS_URL needs MIROBODY_FIXTURE_STATE_KEY, shared by every fixture",
                )
            })?;
            McpHttp::with_shared_sessions(engine.clone(), options, Arc::new(redis), &key)
                .await
                .map_err(std::io::Error::other)?
        }
        Err(_) => McpHttp::new(engine.clone(), options),
    };
    let app = mcp.router_at("/mcp");
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // With port 0 the system picks one; this line says which (the tests read it).
    let port = listener.local_addr()?.port();
    eprintln!("conformance fixture on http://127.0.0.1:{port}/mcp");
    mirobody_mcp::serve(listener, app, engine).await
}
