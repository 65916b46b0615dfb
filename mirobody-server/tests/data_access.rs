//! Who read a person's data, through the real binary: ann shares with bob over the care-circle
//! routes, bob reads ann's data through a tool, and ann sees bob's read through
//! `GET /access/reads`, the `list_data_access` tool and `circle reads`; bob cannot list ann's
//! reads, a third person sees nothing, and a bad page is refused.

mod common;

use common::{clean_command, fresh_data_dir, request, server_port, session, start_with, token, tool};
use serde_json::{Value, json};

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

fn reads(port: u16, token: &str, query: &str) -> (u16, Value) {
    let bearer = format!("Bearer {token}");
    let (status, _, body) = request(port, "GET", &format!("/access/reads{query}"), &[("Authorization", &bearer)], b"");
    (status, if body.is_empty() { Value::Null } else { json_of(&body) })
}

#[test]
fn a_person_lists_who_read_their_data_and_nobody_else_can() {
    let data_dir = fresh_data_dir("data-access");
    let port = server_port();
    let (ann, bob, cy) = (token(&data_dir, port, "ann"), token(&data_dir, port, "bob"), token(&data_dir, port, "cy"));
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &[]));

    // Ann shares her health data with bob.
    let invite = json!({"invitee": "bob", "nickname": "Ann"}).to_string();
    let headers =
        |token: &str| [("Authorization", format!("Bearer {token}")), ("Content-Type", "application/json".into())];
    let ann_headers = headers(&ann);
    let ann_headers: Vec<(&str, &str)> = ann_headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _, body) = request(port, "POST", "/circle/invites", &ann_headers, invite.as_bytes());
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let id = json_of(&body)["id"].as_i64().unwrap();
    let bob_headers = headers(&bob);
    let bob_headers: Vec<(&str, &str)> = bob_headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _, body) = request(port, "POST", &format!("/circle/invites/{id}/accept"), &bob_headers, b"{}");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));

    assert_eq!(reads(port, &ann, "").1["reads"], json!([]), "nobody read ann's data yet");
    // Bob reads ann's data through a tool; cy tries and reads nothing.
    let bob_session = session(port, &bob);
    let read = tool(port, &bob, &bob_session, "family_health", json!({"member": "Ann"}));
    assert_eq!(read["subject"], "Ann", "{read}");
    let cy_session = session(port, &cy);
    assert!(tool(port, &cy, &cy_session, "family_health", json!({"member": "Ann"}))["error"].is_string());

    // Ann sees bob's read (written when the call ended, off its path: polled).
    let listed = (0..500)
        .find_map(|_| {
            let (status, listed) = reads(port, &ann, "");
            assert_eq!(status, 200, "{listed}");
            if listed["reads"].as_array().is_some_and(|r| !r.is_empty()) {
                return Some(listed);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            None
        })
        .expect("bob's read in ann's list");
    let entries = listed["reads"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "bob's read, nothing of cy's: {listed}");
    assert_eq!((entries[0]["reader"].as_str(), entries[0]["what"].as_str()), (Some("bob"), Some("family_health")));
    assert_eq!(entries[0]["outcome"], "ok");
    let ann_session = session(port, &ann);
    let by_tool = tool(port, &ann, &ann_session, "list_data_access", json!({}));
    assert_eq!(by_tool["reads"][0]["what"], "family_health", "{by_tool}");

    // Bob's list and cy's are of their own data: empty; nobody names another's.
    assert_eq!(reads(port, &bob, "").1["reads"], json!([]));
    assert_eq!(reads(port, &cy, "").1["reads"], json!([]));
    let (status, refused) = reads(port, &bob, "?subject=ann");
    assert_eq!(status, 400, "{refused}");
    // Bounded pages; and no list without signing in.
    let (status, refused) = reads(port, &ann, "?limit=101");
    assert_eq!(status, 400);
    assert!(refused["error"].as_str().unwrap().contains("from 1 to 100"), "{refused}");
    let (status, _, _) = request(port, "GET", "/access/reads", &[], b"");
    assert_eq!(status, 401);

    // The operator's view of the same.
    let output = clean_command()
        .args(["circle", "reads", "--user", "ann"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("RUST_LOG", "error")
        .output()
        .expect("run the binary");
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{out}");
    assert!(out.contains("\tbob\tfamily_health\tok"), "{out}");
    let output = clean_command()
        .args(["circle", "reads", "--user", "ann", "--limit", "101"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .output()
        .expect("run the binary");
    assert_eq!(output.status.code(), Some(2), "clap refuses a limit past the bound");
}
