//! Run with `cargo run -p example-conformance-server -- 3001`, then point the official suite at
//! it: `npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp`.
//! With `--stdio` it speaks MCP over stdin/stdout instead (for the SDK clients' stdio tests).
//!
//! Every tool, resource and prompt the conformance scenarios call, with the names and
//! behaviour they check (MCP 2025-11-25), written with the public API only.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mirobody_core::{
    Args, Content, EmbeddedResource, Param, Prompt, PromptMessage, PromptRegistry, Registry, Resource,
    ResourceContents, ResourceRegistry, ResourceTemplate, Tool, ToolContext, ToolResult, Type, UserInfo,
};
use mirobody_server::http::{HttpOptions, McpHttp};
use mirobody_server::mcp::McpService;
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

fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "address",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contact": {"anyOf": [{"type": "string", "format": "email"}, {"type": "string", "pattern": "^\\+[0-9]+$"}]},
            "kind": {"allOf": [{"type": "string"}, {"enum": ["home", "work"]}]},
            "country": {"type": "string"},
            "postal": {"type": "string"},
        },
        "if": {"properties": {"country": {"const": "US"}}},
        "then": {"properties": {"postal": {"pattern": "^[0-9]{5}$"}}},
        "else": {"properties": {"postal": {"type": "string"}}},
        "additionalProperties": false,
    })
}

fn tools() -> Vec<Tool> {
    vec![
        mirobody_tools::tools::echo::tool(),
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

fn prompts() -> PromptRegistry {
    PromptRegistry::new(vec![
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
    ])
    .expect("unique prompts")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let arg = std::env::args().nth(1).or_else(|| std::env::var("PORT").ok());
    let mut builder = Registry::builder();
    for tool in tools() {
        builder = builder.tool(tool);
    }
    let registry = builder.build().expect("the fixture tools are valid");
    let service = McpService::builder(Arc::new(registry)).resources(resources()).prompts(prompts()).build();
    if arg.as_deref() == Some("--stdio") {
        let user = UserInfo::anonymous();
        return mirobody_server::stdio::serve(service, user, tokio::io::stdin(), tokio::io::stdout(), 4 << 20).await;
    }
    let port: u16 = arg.and_then(|p| p.parse().ok()).unwrap_or(3001);
    let mcp = McpHttp::new(service, HttpOptions::default());
    let app = mcp.router_at("/mcp");
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("conformance fixture on http://127.0.0.1:{port}/mcp");
    mirobody_server::serve(listener, app).await
}
