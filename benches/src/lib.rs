//! The baselines the benches measure mirobody against. The benches themselves live in
//! `benches/`, the load baselines' server in `src/bin/bare-hyper.rs`.

use serde_json::{Value, json};

/// What a server with no engine does with a `tools/call` of `echo`: parse the request into a
/// `Value`, take the text, and write the response mirobody writes (the same bytes). No
/// validation, registry, sessions or protocol rules. A request that is not JSON is read as null.
///
/// ```
/// let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
/// let response = mirobody_benches::json_rpc_echo(request);
/// assert!(String::from_utf8(response).unwrap().contains(r#""structuredContent":{"echo":"hi"}"#));
/// ```
pub fn json_rpc_echo(request: &[u8]) -> Vec<u8> {
    let parsed: Value = serde_json::from_slice(request).unwrap_or_default();
    let structured = json!({ "echo": parsed["params"]["arguments"]["text"] });
    let response = json!({
        "jsonrpc": "2.0",
        "id": parsed["id"],
        "result": {
            "content": [{"type": "text", "text": structured.to_string()}],
            "structuredContent": structured,
            "isError": false,
        },
    });
    // A Value with string keys always serializes.
    serde_json::to_vec(&response).unwrap_or_default()
}
