//! The authorization server's signing key rotated with `rotate-signing-key`: the JWKS
//! publishes the new key and the previous one, tokens the previous key signed keep working
//! until the next rotation drops it, and a key nobody made is refused throughout.

mod common;

use std::path::Path;

use common::{clean_command, fresh_data_dir, post, server_port, start};
use mirobody_oauth::SigningKey;
use serde_json::{Value, json};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// An access token as the server's own would be, for `port`, signed with `key`.
fn token(key: &SigningKey, port: u16, user: &str) -> String {
    let now = jsonwebtoken::get_current_timestamp();
    key.sign(&json!({
        "iss": format!("http://127.0.0.1:{port}"),
        "aud": format!("http://127.0.0.1:{port}/mcp"),
        "sub": user,
        "iat": now,
        "exp": now + 600,
        "scope": "mcp",
    }))
    .unwrap()
}

fn accepted(port: u16, token: &str) -> bool {
    post(port, token, None, &serde_json::from_str::<Value>(INIT).unwrap()).is_some()
}

fn published_kids(port: u16) -> Vec<String> {
    let output = std::process::Command::new("curl")
        .args(["-sf", &format!("http://127.0.0.1:{port}/oauth/jwks.json")])
        .output()
        .expect("curl");
    let jwks: Value = serde_json::from_slice(&output.stdout).expect("a JWKS document");
    jwks["keys"].as_array().unwrap().iter().map(|key| key["kid"].as_str().unwrap().to_owned()).collect()
}

fn rotate(data_dir: &Path) -> String {
    let output = clean_command()
        .arg("rotate-signing-key")
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("RUST_LOG", "error")
        .output()
        .expect("run the binary");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

#[test]
fn a_rotated_key_keeps_its_tokens_working_until_the_next_rotation() {
    let data_dir = fresh_data_dir("signing-key");
    let port = server_port();
    let (current, previous) = (data_dir.join("oauth-es256.pem"), data_dir.join("oauth-es256.previous.pem"));
    let mut server = start(&data_dir, port);
    let first = SigningKey::load(&current).expect("made at first start");
    assert_eq!(published_kids(port), [first.kid()]);
    let by_first = token(&first, port, "ana");
    assert!(accepted(port, &by_first));
    let stranger = SigningKey::load_or_create(&data_dir.join("stranger.pem")).unwrap();
    assert!(!accepted(port, &token(&stranger, port, "ana")), "a key this server never made");
    server.kill().unwrap();
    server.wait().unwrap();

    let said = rotate(&data_dir);
    let second = SigningKey::load(&current).unwrap();
    assert_ne!(second.kid(), first.kid());
    assert!(said.contains(second.kid()) && said.contains("restart"), "{said}");
    assert_eq!(SigningKey::load(&previous).unwrap().kid(), first.kid());
    let mut server = start(&data_dir, port);
    assert_eq!(published_kids(port), [second.kid(), first.kid()], "the new key first, the previous kept");
    assert!(accepted(port, &token(&second, port, "ana")));
    assert!(accepted(port, &by_first), "a token signed before the rotation still works");
    assert!(!accepted(port, &token(&stranger, port, "ana")));
    server.kill().unwrap();
    server.wait().unwrap();

    // A second rotation drops the first key, and the tokens it signed.
    rotate(&data_dir);
    let third = SigningKey::load(&current).unwrap();
    let mut server = start(&data_dir, port);
    assert_eq!(published_kids(port), [third.kid(), second.kid()]);
    assert!(!accepted(port, &by_first));
    server.kill().unwrap();
    server.wait().unwrap();
    let _ = std::fs::remove_dir_all(&data_dir);
}
