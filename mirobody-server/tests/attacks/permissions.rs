//! One permission model for every door: a personal URL whose agent may use only `whoami` and
//! `list_files`, or a token without the import scope, is refused at the routes beside MCP as
//! it is at `/mcp`; a caller with every permission is served everywhere.

use serde_json::{Value, json};

use crate::common::{clean_command, raw_post, scoped_token};
use crate::harness::Server;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}"#;

fn observation(id: &str) -> Vec<u8> {
    json!({"resourceType": "Observation", "id": id, "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0", "display": "Glucose"}]},
        "effectiveDateTime": "2026-03-01T08:00:00Z", "valueQuantity": {"value": 5.4, "unit": "mmol/L"}})
    .to_string()
    .into_bytes()
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then_some(v.trim())
    })
}

// A personal URL of `user`, made by the server's own CLI, bound to `agent` if any; its secret.
fn personal_secret(server: &Server, user: &str, agent: Option<&str>) -> String {
    let mut command = clean_command();
    command.args(["secret", "create", "--user", user]);
    if let Some(agent) = agent {
        command.args(["--agent", agent]);
    }
    let output = command
        .env("MIROBODY_BACKENDS__DATA_DIR", &server.data_dir)
        .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{}", server.port))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let url = String::from_utf8(output.stdout).unwrap();
    mirobody_auth::PersonalUrl::secret_of(&url).unwrap().to_owned()
}

// A request with `credential` as one header; status, head, body.
fn send(
    server: &Server,
    credential: (&str, &str),
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    crate::common::request(server.port, method, path, &[credential, ("Content-Type", content_type)], body)
}

// Every route beside MCP as `credential`: the statuses of an upload, an import, the circle's
// overview, an invitation, and ending a share.
fn every_route(server: &Server, credential: (&str, &str)) -> Vec<(u16, String, Vec<u8>)> {
    vec![
        send(server, credential, "POST", "/files?filename=notes.txt", "text/plain", b"Ferritin 40 ng/mL\n"),
        send(server, credential, "POST", "/fhir", "application/fhir+json", &observation("g1")),
        send(server, credential, "GET", "/circle", "application/json", b""),
        send(server, credential, "POST", "/circle/invites", "application/json", br#"{"invitee": "victim"}"#),
        send(server, credential, "DELETE", "/circle/members/someone", "application/json", b""),
    ]
}

// Calls `tool` through the personal URL's path, after an `initialize`: the reply.
fn call_through(server: &Server, secret: &str, tool: &str) -> Value {
    let path = format!("/mcp/{secret}");
    let (head, body) = raw_post(server.port, &path, &[("Accept", "application/json")], INIT);
    let session = header(&head, "mcp-session-id").unwrap_or_else(|| panic!("no session: {head}\n{body}")).to_owned();
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":tool,"arguments":{}}});
    let headers =
        [("Accept", "application/json"), ("Mcp-Session-Id", &session), ("MCP-Protocol-Version", "2025-11-25")];
    let (_, reply) = raw_post(server.port, &path, &headers, &call.to_string());
    serde_json::from_str(&reply).unwrap_or_else(|_| panic!("not JSON: {reply}"))
}

#[test]
fn a_narrow_agent_and_a_token_without_the_import_scope_are_refused_beside_mcp() {
    let mut server = Server::start(
        "attack-permissions",
        &[
            ("MIROBODY_ALLOWED_TOOLS_NARROW", "[whoami, list_files]"),
            ("MIROBODY_AUTH__PERMISSION_SCOPES__IMPORT_HEALTH_DATA", "health:import"),
        ],
    );

    // The personal URL of an agent allowed only whoami and list_files: refused at every route,
    // each refusal naming the permission it lacks.
    let narrow = personal_secret(&server, "mallory", Some("narrow"));
    let replies = every_route(&server, ("X-MCP-Secret", &narrow));
    let permissions = ["upload_file", "import_health_data", "care_circle", "", "care_circle"];
    for (i, ((status, head, body), permission)) in replies.iter().zip(permissions).enumerate() {
        let body = text(body);
        assert_eq!(*status, 403, "route {i}: {head}\n{body}");
        if permission.is_empty() {
            // Inviting widens who reads one's data: a bearer token before any permission.
            assert!(body.contains("bearer token"), "{body}");
        } else {
            assert!(body.contains(&format!("'{permission}' permission")), "route {i}: {body}");
        }
    }
    // Nothing of theirs was stored on the way.
    let mallory = crate::common::token(&server.data_dir, server.port, "mallory");
    let session = crate::common::session(server.port, &mallory);
    let files = crate::common::tool(server.port, &mallory, &session, "list_files", json!({}));
    assert_eq!(files["files"], json!([]), "{files}");
    let (status, _, body) =
        crate::common::request(server.port, "GET", "/circle", &[("Authorization", &format!("Bearer {mallory}"))], b"");
    assert_eq!(status, 200, "{}", text(&body));
    assert_eq!(serde_json::from_slice::<Value>(&body).unwrap()["invites_sent"], json!([]));
    // Still the same person at /mcp, where the tools it lacks are not there at all.
    let whoami = call_through(&server, &narrow, "whoami");
    assert_eq!(whoami["result"]["structuredContent"]["authenticated"], true, "{whoami}");
    let upload = call_through(&server, &narrow, "upload_file");
    assert!(upload["error"]["message"].as_str().unwrap_or_default().contains("Unknown tool"), "{upload}");

    // A personal URL with no agent is not narrowed by another agent's list: it uploads and
    // reads its circle; the import needs a scope a personal URL does not hold.
    let wide = personal_secret(&server, "walter", None);
    let replies = every_route(&server, ("X-MCP-Secret", &wide));
    assert_eq!(replies[0].0, 201, "{}", text(&replies[0].2));
    assert_eq!(replies[1].0, 403, "{}", text(&replies[1].2));
    assert_eq!(replies[2].0, 200, "{}", text(&replies[2].2));

    // A token without the import scope: refused at /fhir with the scope named in the
    // challenge, served at the other routes.
    let other = format!("Bearer {}", scoped_token(&server.data_dir, server.port, "tina", &["files:read"]));
    let replies = every_route(&server, ("Authorization", &other));
    let (status, head, body) = &replies[1];
    assert_eq!(*status, 403, "{head}\n{}", text(body));
    let challenge = header(head, "www-authenticate").expect("a challenge");
    assert!(challenge.contains(r#"error="insufficient_scope""#), "{challenge}");
    assert!(challenge.contains(r#"scope="health:import""#), "{challenge}");
    assert!(text(body).contains("'import_health_data' permission"), "{}", text(body));
    let kept: Vec<u16> = [0, 2, 3, 4].iter().map(|&i| replies[i].0).collect();
    assert_eq!(kept, [201, 200, 201, 200], "upload, overview, invite, end a share");

    // A token with every permission: served at all three doors.
    let full = format!("Bearer {}", scoped_token(&server.data_dir, server.port, "fiona", &["health:import"]));
    let replies = every_route(&server, ("Authorization", &full));
    let statuses: Vec<u16> = replies.iter().map(|r| r.0).collect();
    assert_eq!(statuses, [201, 201, 200, 201, 200], "{:?}", replies.iter().map(|r| text(&r.2)).collect::<Vec<_>>());

    server.assert_serves_honest_user();
}

// `tools/call` of `tool` at `/mcp` with `bearer`, after an `initialize`: the status and head.
fn call_with_token(server: &Server, bearer: &str, tool: &str) -> (u16, String) {
    let accept = ("Accept", "application/json, text/event-stream");
    let headers = [("Authorization", bearer), ("Content-Type", "application/json"), accept];
    let (status, head, body) = crate::common::request(server.port, "POST", "/mcp", &headers, INIT.as_bytes());
    assert_eq!(status, 200, "{head}\n{}", text(&body));
    let session = header(&head, "mcp-session-id").expect("a session").to_owned();
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":tool,"arguments":{}}});
    let headers = [
        ("Authorization", bearer),
        ("Content-Type", "application/json"),
        accept,
        ("Mcp-Session-Id", &session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let (status, head, _) = crate::common::request(server.port, "POST", "/mcp", &headers, call.to_string().as_bytes());
    (status, head)
}

#[test]
fn a_scope_configured_for_a_tool_holds_at_mcp_and_at_its_route_alike() {
    let mut server =
        Server::start("attack-permissions-scopes", &[("MIROBODY_AUTH__PERMISSION_SCOPES__UPLOAD_FILE", "files:write")]);
    let upload = |bearer: &str| {
        send(&server, ("Authorization", bearer), "POST", "/files?filename=a.txt", "text/plain", b"Ferritin 40\n")
    };

    // Without the scope: 403 insufficient_scope at both doors, naming it.
    let bare = format!("Bearer {}", scoped_token(&server.data_dir, server.port, "tina", &["files:read"]));
    let (status, head, body) = upload(&bare);
    assert_eq!(status, 403, "{head}\n{}", text(&body));
    assert!(header(&head, "www-authenticate").unwrap_or_default().contains(r#"scope="files:write""#), "{head}");
    let (status, head) = call_with_token(&server, &bare, "upload_file");
    assert_eq!(status, 403, "{head}");
    assert!(header(&head, "www-authenticate").unwrap_or_default().contains(r#"scope="files:write""#), "{head}");

    // With it: the upload is stored, and the tool is called (its arguments judged next).
    let full = format!("Bearer {}", scoped_token(&server.data_dir, server.port, "fiona", &["files:write"]));
    let (status, _, body) = upload(&full);
    assert_eq!(status, 201, "{}", text(&body));
    assert_eq!(call_with_token(&server, &full, "upload_file").0, 200);
    // Other tools need nothing new.
    assert_eq!(call_with_token(&server, &bare, "whoami").0, 200);
    server.assert_alive();
}

#[test]
fn a_link_needs_the_upload_permission_and_ending_links_needs_the_links() {
    let mut server = Server::start(
        "attack-permissions-links",
        &[
            ("MIROBODY_ALLOWED_TOOLS_LINKER", "[whoami, upload_link]"),
            ("MIROBODY_ALLOWED_TOOLS_NARROW", "[whoami]"),
            ("MIROBODY_AUTH__PERMISSION_SCOPES__UPLOAD_FILE", "files:write"),
        ],
    );
    // An agent allowed the link tool but not uploads: it has no link tool, and cannot end links.
    let linker = personal_secret(&server, "mallory", Some("linker"));
    let link = call_through(&server, &linker, "upload_link");
    assert!(link["error"]["message"].as_str().unwrap_or_default().contains("Unknown tool"), "{link}");
    let (status, _, body) = send(&server, ("X-MCP-Secret", &linker), "DELETE", "/upload", "application/json", b"");
    assert_eq!(status, 403, "{}", text(&body));
    assert!(text(&body).contains("'upload_file' permission"), "{}", text(&body));
    // An agent allowed only whoami cannot end the person's links either.
    let narrow = personal_secret(&server, "nadia", Some("narrow"));
    let (status, _, body) = send(&server, ("X-MCP-Secret", &narrow), "DELETE", "/upload", "application/json", b"");
    assert_eq!(status, 403, "{}", text(&body));
    assert!(text(&body).contains("'upload_link' permission"), "{}", text(&body));

    // A token without upload_file's scope: no link, at /mcp or by ending them.
    let bare = format!("Bearer {}", scoped_token(&server.data_dir, server.port, "tina", &["files:read"]));
    let (status, head) = call_with_token(&server, &bare, "upload_link");
    assert_eq!(status, 403, "{head}");
    assert!(header(&head, "www-authenticate").unwrap_or_default().contains(r#"scope="files:write""#), "{head}");
    let (status, head, _) = send(&server, ("Authorization", &bare), "DELETE", "/upload", "application/json", b"");
    assert_eq!(status, 403, "{head}");

    // With the scope: a link is made and links are ended.
    let full = format!("Bearer {}", scoped_token(&server.data_dir, server.port, "fiona", &["files:write"]));
    assert_eq!(call_with_token(&server, &full, "upload_link").0, 200);
    let (status, _, body) = send(&server, ("Authorization", &full), "DELETE", "/upload", "application/json", b"");
    assert_eq!(status, 200, "{}", text(&body));
    server.assert_alive();
}
