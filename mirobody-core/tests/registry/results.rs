//! `ToolResult` and its MCP serialization (a `CallToolResult`: every content kind, `_meta`,
//! structured content), `IntoToolResult` for `Result`s and plain values, `ToolError`'s
//! conversions, and a handler returning a `Result` as the model sees it.

use std::collections::HashMap;

use super::*;

fn as_json(result: &ToolResult) -> Value {
    serde_json::to_value(result).unwrap()
}

#[test]
fn ok_keeps_an_object_and_wraps_arrays_and_scalars() {
    let cases = [
        (json!({"a": 1}), json!({"a": 1})),
        (json!([1, 2]), json!({"result": [1, 2]})),
        (json!(5), json!({"result": 5})),
        (json!("s"), json!({"result": "s"})),
        (json!(true), json!({"result": true})),
        (json!(null), json!({"result": null})),
    ];
    for (value, expected) in cases {
        let result = ToolResult::ok(&value);
        assert!(!result.is_error());
        assert_eq!(structured(&result), expected, "{value}");
        let text: Value = serde_json::from_str(result.first_text().unwrap()).unwrap();
        assert_eq!(text, expected, "the text must be the JSON of the structured content");
    }
    assert_eq!(ToolResult::ok(vec!["a", "b"]).first_text(), Some(r#"{"result":["a","b"]}"#));
}

#[test]
fn ok_of_an_unserializable_value_is_an_error_result() {
    let mut map = HashMap::new();
    map.insert((1, 2), 3);
    let result = ToolResult::ok(map);
    assert!(result.is_error());
    assert!(result.first_text().unwrap().contains("could not be encoded as JSON"), "{:?}", result.first_text());
}

#[test]
fn success_serializes_as_call_tool_result() {
    assert_eq!(
        as_json(&ToolResult::ok(json!([1]))),
        json!({
            "content": [{"type": "text", "text": "{\"result\":[1]}"}],
            "structuredContent": {"result": [1]},
            "isError": false
        })
    );
}

#[test]
fn error_serializes_without_structured_content() {
    assert_eq!(
        as_json(&ToolResult::error("File not found.")),
        json!({"content": [{"type": "text", "text": "File not found."}], "isError": true})
    );
}

#[test]
fn every_content_kind_serializes_as_mcp_defines_it() {
    let result = ToolResult::text("Here:")
        .with(Content::image("iVBORw0KGgo=", "image/png"))
        .with(Content::audio("UklGRg==", "audio/wav"))
        .with(Content::resource_link("file:///notes.md", "notes.md"))
        .with(Content::ResourceLink {
            uri: "file:///lab.pdf".into(),
            name: "lab.pdf".into(),
            description: Some("Lab results".into()),
            mime_type: Some("application/pdf".into()),
        })
        .with(Content::embedded_text("file:///a.txt", "text/plain", "hello"))
        .with(Content::embedded_blob("file:///b.bin", "application/octet-stream", "AAEC"));
    assert_eq!(result.content().len(), 7);
    assert_eq!(
        as_json(&result),
        json!({
            "content": [
                {"type": "text", "text": "Here:"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///notes.md", "name": "notes.md"},
                {
                    "type": "resource_link",
                    "uri": "file:///lab.pdf",
                    "name": "lab.pdf",
                    "description": "Lab results",
                    "mimeType": "application/pdf"
                },
                {
                    "type": "resource",
                    "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}
                },
                {
                    "type": "resource",
                    "resource": {"uri": "file:///b.bin", "mimeType": "application/octet-stream", "blob": "AAEC"}
                }
            ],
            "isError": false
        })
    );
    // The writer the server uses gives the same bytes as serde for every kind.
    let result = result.with_meta(Map::from_iter([("trace".to_owned(), json!("t-1"))]));
    let mut written = Vec::new();
    result.write_json(&mut written);
    assert_eq!(String::from_utf8(written).unwrap(), serde_json::to_string(&result).unwrap());
}

#[test]
fn meta_and_structured_results() {
    let mut meta = Map::new();
    meta.insert("trace".into(), json!("t-1"));
    let mut object = Map::new();
    object.insert("k".into(), json!(1));
    let result = ToolResult::structured(object).with_meta(meta);
    assert_eq!(
        as_json(&result),
        json!({
            "content": [{"type": "text", "text": "{\"k\":1}"}],
            "structuredContent": {"k": 1},
            "isError": false,
            "_meta": {"trace": "t-1"}
        })
    );
}

#[test]
fn first_text_skips_other_content() {
    let result = ToolResult::from_content(vec![Content::image("AA==", "image/png"), Content::text("caption")]);
    assert_eq!(result.first_text(), Some("caption"));
    assert_eq!(ToolResult::from_content(vec![]).first_text(), None);
}

#[test]
fn into_tool_result_for_result_uses_the_error_message() {
    let failed: Result<ToolResult, ToolError> = Err(ToolError::new("n must not be negative"));
    let result = failed.into_tool_result();
    assert!(result.is_error());
    assert_eq!(result.first_text(), Some("n must not be negative"));

    let io_failed: Result<String, io::Error> = Err(io::Error::other("disk on fire"));
    let result = io_failed.into_tool_result();
    assert!(result.is_error());
    assert_eq!(result.first_text(), Some("disk on fire"));

    let fine: Result<Json<Vec<i32>>, String> = Ok(Json(vec![1]));
    assert_eq!(structured(&fine.into_tool_result()), json!({"result": [1]}));
}

#[test]
fn into_tool_result_for_plain_values() {
    let text = String::from("plain").into_tool_result();
    assert_eq!((text.is_error(), text.first_text()), (false, Some("plain")));
    assert!(text.structured_content().is_none());
    assert_eq!("static".into_tool_result().first_text(), Some("static"));
    assert_eq!(structured(&json!({"a": 1}).into_tool_result()), json!({"a": 1}));
    assert_eq!(structured(&Json(("x", 2)).into_tool_result()), json!({"result": ["x", 2]}));
    let same = ToolResult::error("kept");
    assert_eq!(same.clone().into_tool_result(), same);
}

#[test]
fn tool_error_conversions() {
    assert_eq!(ToolError::from("a").message(), "a");
    assert_eq!(ToolError::from(String::from("b")).to_string(), "b");
}

async fn fallible(args: Args, _: &UserInfo, _: &ToolContext<'_>) -> Result<Json<Value>, ToolError> {
    let n = args.integer("n", 0);
    if n < 0 {
        return Err(ToolError::new("n must not be negative"));
    }
    Ok(Json(json!({"double": n * 2})))
}

#[tokio::test]
async fn a_handler_returning_result_reaches_the_model() {
    let reg =
        registry([Tool::new("double", "Doubles.").param(Param::required("n", Type::Integer, "")).handler(fallible)]);
    let ctx = ToolContext::new();
    let ok = reg.call("double", json!({"n": 4}), &anonymous(), &ctx).await.unwrap();
    assert_eq!(structured(&ok), json!({"double": 8}));
    let err = reg.call("double", json!({"n": -1}), &anonymous(), &ctx).await.unwrap();
    assert!(err.is_error());
    assert_eq!(err.first_text(), Some("n must not be negative"));
}
