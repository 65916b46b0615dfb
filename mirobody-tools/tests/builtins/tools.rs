//! Each built-in tool through the real server: JSON-RPC over the HTTP router, backed by SQLite
//! and local files in a temp dir.

use base64::Engine;
use mirobody_core::UserInfo;
use mirobody_core::backend::NewMemory;
use mirobody_health::FileRecord;
use mirobody_health::prelude::*;
use mirobody_ports::AccessKind;
use serde_json::{Value, json};

use crate::support::{Env, Sse, rpc, within};

/// The largest file `upload_file` takes inline, in bytes (its `MAX_INLINE_BYTES`).
const UPLOAD_FILE_MAX_INLINE_BYTES: usize = 2_900_000;

fn observation(code: &str, value: f64, unit: &str, time: &str) -> Value {
    json!({
        "resourceType": "Observation",
        "code": {"coding": [{"code": code, "display": code}]},
        "valueQuantity": {"value": value, "unit": unit},
        "effectiveDateTime": time,
    })
}

/// `owner` uploads `key` (bytes stored, index row added).
pub(crate) async fn upload(
    env: &Env,
    owner: &str,
    key: &str,
    name: &str,
    mime: &str,
    bytes: &[u8],
    text: Option<&str>,
) {
    let storage = env.backends.storage().expect("storage is configured");
    storage.put(key, bytes.to_vec(), mime).await.unwrap();
    let text_key = match text {
        Some(text) => {
            let text_key = format!("{key}.trans");
            storage.put(&text_key, text.as_bytes().to_vec(), "text/plain").await.unwrap();
            Some(text_key)
        }
        None => None,
    };
    let record = FileRecord {
        file_key: key.into(),
        filename: name.into(),
        mime_type: mime.into(),
        size: bytes.len() as u64,
        uploaded_at: "2026-01-01T00:00:00Z".into(),
        text_key,
        text_state: Default::default(),
    };
    env.backends.sql().add_file(owner, &record).await.unwrap();
}

#[tokio::test]
async fn the_builtin_tools_are_listed_with_annotations_true_to_what_they_do() {
    let env = Env::sqlite().await;
    let client = env.user("u1").await;
    let tools = client.call("tools/list", json!({})).await.result()["tools"].clone();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "ask_user",
            "delete_health_data",
            "echo",
            "family_health",
            "fetch_health_data",
            "fetch_health_trends",
            "get_user_health_profile",
            "list_data_access",
            "list_files",
            "read_file",
            "recall_memory",
            "record_health_data",
            "remember",
            "render_chart",
            "search_health_indicators",
            "summarize_conversation",
            "upload_file",
            "upload_link",
            "whoami"
        ]
    );
    // The views (MCP Apps) each tool links to, and the one tool only a view calls.
    for tool in tools.as_array().unwrap() {
        let view = tool["_meta"]["ui"]["resourceUri"].as_str();
        let expected = match tool["name"].as_str().unwrap() {
            "render_chart" | "fetch_health_data" | "family_health" => Some(mirobody_tools::views::CHART_VIEW),
            "upload_link" => Some(mirobody_tools::views::UPLOAD_VIEW),
            _ => None,
        };
        assert_eq!(view, expected, "{tool}");
        let visibility = &tool["_meta"]["ui"]["visibility"];
        assert_eq!(*visibility == json!(["app"]), tool["name"] == "upload_file", "{tool}");
    }
    let listed = client.call("resources/list", json!({})).await.result()["resources"].clone();
    for uri in [mirobody_tools::views::CHART_VIEW, mirobody_tools::views::UPLOAD_VIEW] {
        let entry = listed.as_array().unwrap().iter().find(|r| r["uri"] == uri).expect("the view is listed");
        assert_eq!(entry["mimeType"], "text/html;profile=mcp-app");
        assert!(entry["_meta"]["ui"].get("csp").is_none(), "a view declares no network: {entry}");
    }
    for tool in tools.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let hints = &tool["annotations"];
        match name {
            "remember" | "upload_file" | "upload_link" | "record_health_data" => {
                assert_eq!(hints["readOnlyHint"], false, "{name}");
                assert_eq!(hints["destructiveHint"], false, "{name}");
            }
            "summarize_conversation" => {
                assert_eq!(hints["readOnlyHint"], false, "{name}");
                assert_eq!(hints["destructiveHint"], true, "{name}: it overwrites the title");
            }
            "delete_health_data" => {
                assert_eq!(hints["readOnlyHint"], false, "{name}");
                assert_eq!(hints["destructiveHint"], true, "{name}: it deletes for good");
            }
            _ => assert_eq!(hints["readOnlyHint"], true, "{name}"),
        }
        assert_eq!(hints["openWorldHint"], false, "{name}");
    }
}

#[tokio::test]
async fn upload_file_stores_what_the_view_sends_and_refuses_bad_input() {
    use base64::Engine;
    use mirobody_tools::uploads::{UploadLimits, Uploader};

    let dir = tempfile::tempdir().unwrap();
    let backends = std::sync::Arc::new(mirobody_store::open(&crate::support::config_in(dir.path())).await.unwrap());
    // Without an uploader in the context the tool says so.
    let plain =
        Env { router: crate::support::router(&backends, |b| b), backends: backends.clone(), dir, _schema: None };
    let reply =
        plain.user("u1").await.tool("upload_file", json!({"filename": "a.txt", "content_base64": "aGk="})).await;
    assert!(reply.tool_error().contains("does not take uploads"), "{}", reply.body);

    let uploader = Uploader::new(backends.clone(), UploadLimits::default());
    let router = crate::support::router(&backends, move |mut b| {
        b.extensions.insert(uploader);
        b
    });
    let env = Env { router, backends, dir: tempfile::tempdir().unwrap(), _schema: None };
    let client = env.user("u1").await;
    let text = "Glucose 5.4 mmol/L";
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let stored = client.tool("upload_file", json!({"filename": "labs.txt", "content_base64": encoded})).await;
    let key = stored.ok()["file_key"].as_str().unwrap().to_owned();
    assert_eq!(client.tool("read_file", json!({"file_key": key})).await.ok()["content"], text);

    let bad = client.tool("upload_file", json!({"filename": "x.txt", "content_base64": "not base64!"})).await;
    assert!(bad.tool_error().contains("not valid base64"));
    let huge = "A".repeat(UPLOAD_FILE_MAX_INLINE_BYTES / 3 * 4 + 8);
    let too_large = client.tool("upload_file", json!({"filename": "big.txt", "content_base64": huge})).await;
    assert!(too_large.tool_error().contains("larger than"), "{}", too_large.body);
    let empty = client.tool("upload_file", json!({"filename": "empty.txt", "content_base64": ""})).await;
    assert!(empty.body["result"]["isError"] == true, "an empty file is refused: {}", empty.body);
    let listed = client.tool("list_files", json!({})).await;
    assert_eq!(listed.ok()["files"].as_array().unwrap().len(), 1, "nothing stored by the refused calls");
}

#[tokio::test]
async fn echo_and_whoami() {
    let env = Env::sqlite().await;
    let client = env.user("u1").await;
    assert_eq!(*client.tool("echo", json!({"text": "héllo"})).await.ok(), json!({"echo": "héllo"}));
    assert_eq!(*client.tool("whoami", json!({})).await.ok(), json!({"authenticated": true, "session_id": "chat-u1"}));

    let mut anonymous = env.client();
    anonymous.initialize(json!({})).await;
    let reply = anonymous.tool("whoami", json!({})).await;
    assert_eq!(reply.status, http::StatusCode::UNAUTHORIZED);
    assert!(reply.rpc_error().1.contains("Authentication required"));
}

#[tokio::test]
async fn ask_user_without_elicitation_returns_the_guidance_at_once() {
    let env = Env::sqlite().await;
    let client = env.user("u1").await;
    let reply =
        client.tool("ask_user", json!({"question": "Metric or imperial?", "options": ["Metric", "Imperial"]})).await;
    let out = reply.ok();
    assert_eq!(out["answered"], false);
    assert!(out["guidance"].as_str().unwrap().contains("most reasonable default"), "{out}");
}

#[tokio::test]
async fn ask_user_asks_through_elicitation_and_only_the_asker_can_answer() {
    let env = Env::sqlite().await;
    let mut client = env.client().as_user(UserInfo::authenticated("u1"));
    client.initialize(json!({"elicitation": {}})).await;
    let call = rpc(
        7,
        "tools/call",
        json!({"name": "ask_user", "arguments": {"question": "Which days?", "options": ["Mon", "Wed", "Fri"], "multi_select": true}}),
    );
    let mut stream = Sse::new(client.post(&call).await);
    let question = stream.next_message().await;
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["message"], "Which days?");
    assert_eq!(
        question["params"]["requestedSchema"]["properties"]["choice"]["items"]["enum"],
        json!(["Mon", "Wed", "Fri"])
    );
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"choice": ["Wed", "Sun"]}}});

    // Another user cannot answer it (their request does not even reach this session).
    let intruder = client.clone().as_user(UserInfo::authenticated("u2"));
    let refused = intruder.post(&answer).await;
    assert_eq!(refused.status(), http::StatusCode::NOT_FOUND);

    let accepted = client.post(&answer).await;
    assert_eq!(accepted.status(), http::StatusCode::ACCEPTED);
    let response = stream.next_message().await;
    assert_eq!(response["id"], 7);
    assert_eq!(response["result"]["structuredContent"], json!({"answered": true, "answer": {"selected": ["Wed"]}}));
}

async fn circle(env: &Env) {
    let sql = env.backends.sql();
    sql.upsert_user("mom", Some("Ann"), Some("ann@example.com")).await.unwrap();
    sql.upsert_user("dad", Some("Bob"), Some("bob@example.com")).await.unwrap();
    sql.upsert_user("sam", Some("Sam"), Some("sam@example.com")).await.unwrap();
    sql.share_health("mom", "me", Some("Mom")).await.unwrap();
    sql.share_health("dad", "me", Some("Dad")).await.unwrap();
    // Sam shares with someone else, not with "me".
    sql.share_health("sam", "other", Some("Sam")).await.unwrap();
    let mine: Vec<Value> = (0..3)
        .map(|i| observation("HR", 60.0 + f64::from(i), "bpm", &format!("2026-01-0{}T08:00:00Z", i + 1)))
        .collect();
    sql.add_observations("me", &mine).await.unwrap();
    let moms: Vec<Value> = (0..150)
        .map(|i| {
            let time = format!("2025-{:02}-{:02}T00:00:00Z", i % 12 + 1, i / 12 + 1);
            observation("BP", 120.0 + f64::from(i % 7), "mmHg", &time)
        })
        .collect();
    sql.add_observations("mom", &moms).await.unwrap();
    sql.add_observations("sam", &[observation("HR", 58.0, "bpm", "2026-01-01T00:00:00Z")]).await.unwrap();
}

#[tokio::test]
async fn family_health_reads_the_caller_and_members_who_share() {
    let env = Env::sqlite().await;
    circle(&env).await;
    let me = env.user("me").await;

    let mine = me.tool("family_health", json!({})).await;
    let out = mine.ok();
    assert_eq!(out["subject"], "you");
    assert_eq!(out["observation_count"], 3);
    assert_eq!(
        out["observations"][0],
        json!({"code": "HR", "value": "62 bpm", "time": "2026-01-03T08:00:00Z"}),
        "newest first"
    );
    assert_eq!(me.tool("family_health", json!({"member": "MYSELF"})).await.ok()["subject"], "you");
    assert_eq!(me.tool("family_health", json!({"member": "me"})).await.ok()["subject"], "you");

    for member in ["Mom", "mom", "ann@example.com", "ANN@example.com"] {
        let reply = me.tool("family_health", json!({"member": member, "count": 5})).await;
        let out = reply.ok();
        assert_eq!(out["subject"], "Mom", "{member}");
        assert_eq!(out["observation_count"], 150, "the total, not the page");
        assert_eq!(out["observations"].as_array().unwrap().len(), 5);
    }
    let by_part = me.tool("family_health", json!({"member": "bob@"})).await;
    assert_eq!(by_part.ok()["subject"], "Dad");

    let clamped = me.tool("family_health", json!({"member": "Mom", "count": 1000})).await;
    assert_eq!(clamped.ok()["observations"].as_array().unwrap().len(), 100);
    let at_least_one = me.tool("family_health", json!({"member": "Mom", "count": -5})).await;
    assert_eq!(at_least_one.ok()["observations"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn family_health_refuses_members_who_do_not_share() {
    let env = Env::sqlite().await;
    circle(&env).await;
    let me = env.user("me").await;
    for member in ["sam", "Sam", "sam@example.com", "a", "nobody"] {
        let reply = me.tool("family_health", json!({"member": member})).await;
        let message = reply.tool_error();
        assert!(message.contains("has shared their health data with you"), "{member}: {message}");
        assert!(message.contains("Available: Dad, Mom"), "{message}");
        assert!(!message.contains("Sam") || member.contains("Sam"), "a non-sharer is not revealed: {message}");
    }

    // A subject hint for someone who does not share is checked on read.
    let mut hinted = env.client().as_user(UserInfo::authenticated("me").with_subject("sam"));
    hinted.initialize(json!({})).await;
    let refused = hinted.tool("family_health", json!({})).await;
    assert!(refused.tool_error().contains("Not authorized"), "{:?}", refused.body);
    let mut for_mom = env.client().as_user(UserInfo::authenticated("me").with_subject("mom"));
    for_mom.initialize(json!({})).await;
    assert_eq!(for_mom.tool("family_health", json!({})).await.ok()["subject"], "Mom");

    // A share revoked is honoured at once.
    env.backends.sql().unshare_health("mom", "me").await.unwrap();
    assert!(me.tool("family_health", json!({"member": "Mom"})).await.tool_error().contains("No circle member"));
    assert!(for_mom.tool("family_health", json!({})).await.tool_error().contains("Not authorized"));
}

#[tokio::test]
async fn list_files_and_read_file_serve_only_the_owners_files() {
    let env = Env::sqlite().await;
    upload(&env, "u1", "f-notes", "notes.md", "text/markdown", "# Notes\nfine".as_bytes(), None).await;
    upload(&env, "u1", "f-scan", "scan.pdf", "application/pdf", b"%PDF-1.4 binary", Some("Extracted: all normal"))
        .await;
    upload(&env, "u1", "f-photo", "photo.png", "image/png", b"\x89PNG\r\n\x1a\nrest", None).await;
    upload(&env, "u2", "f-theirs", "private.txt", "text/plain", b"u2's secret", None).await;
    let u1 = env.user("u1").await;

    let listed = u1.tool("list_files", json!({})).await;
    let files = listed.ok()["files"].as_array().unwrap().clone();
    let keys: Vec<&str> = files.iter().map(|f| f["file_key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 3);
    assert!(!keys.contains(&"f-theirs"));
    let scan = files.iter().find(|f| f["file_key"] == "f-scan").unwrap();
    assert_eq!(scan["mime"], "application/pdf", "the real MIME type");
    assert_eq!(scan["has_text"], true);
    assert_eq!(files.iter().find(|f| f["file_key"] == "f-photo").unwrap()["has_text"], false);

    let notes = u1.tool("read_file", json!({"file_key": "f-notes"})).await;
    assert_eq!(notes.ok()["content"], "# Notes\nfine");
    let extracted = u1.tool("read_file", json!({"file_key": "f-scan"})).await;
    assert_eq!(extracted.ok()["content"], "Extracted: all normal");
    assert_eq!(
        u1.tool("read_file", json!({"file_key": "f-scan.trans"})).await.ok()["content"],
        "Extracted: all normal"
    );

    let photo = u1.tool("read_file", json!({"file_key": "f-photo"})).await;
    let out = photo.ok();
    assert_eq!(out["mime"], "image/png");
    let url = out["url"].as_str().unwrap();
    let (path, query) = url.strip_prefix("http://localhost/files").unwrap().split_once('?').unwrap();
    let key = env.backends.verify_signed_url(path, query).expect("the URL verifies");
    assert_eq!(env.backends.storage().unwrap().get(&key).await.unwrap(), b"\x89PNG\r\n\x1a\nrest");

    let theirs = u1.tool("read_file", json!({"file_key": "f-theirs"})).await;
    assert!(theirs.tool_error().starts_with("File not found"), "another user's key is not found");
    assert!(!theirs.body.to_string().contains("secret"));
}

#[tokio::test]
async fn read_file_caps_long_text_on_a_character_boundary() {
    let env = Env::sqlite().await;
    let text = "é".repeat(60_000);
    upload(&env, "u1", "f-long", "long.txt", "text/plain", text.as_bytes(), None).await;
    let u1 = env.user("u1").await;
    let reply = u1.tool("read_file", json!({"file_key": "f-long"})).await;
    let out = reply.ok();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["content"].as_str().unwrap().chars().count(), 50_000);
    assert!(out["content"].as_str().unwrap().chars().all(|c| c == 'é'));
}

#[tokio::test]
async fn read_file_decrypts_an_encrypted_store() {
    let env = Env::with(|c| mirobody_store::BackendConfig { file_encryption_key: Some("ab".repeat(32)), ..c }).await;
    upload(&env, "u1", "f-lab", "lab.txt", "text/plain", b"LDL 104 mg/dL", None).await;
    let on_disk = std::fs::read(env.dir.path().join("files").join("f-lab")).unwrap();
    assert!(!on_disk.windows(3).any(|w| w == b"LDL"), "ciphertext at rest");
    let u1 = env.user("u1").await;
    assert_eq!(u1.tool("read_file", json!({"file_key": "f-lab"})).await.ok()["content"], "LDL 104 mg/dL");
}

#[tokio::test]
async fn remember_then_recall_ranks_by_relevance() {
    let env = Env::sqlite().await;
    let u1 = env.user("u1").await;
    for (text, kind) in [
        ("Allergic to penicillin", "fact"),
        ("Prefers running in the morning", "preference"),
        ("Ran a morning 10k race on Sunday, knee was sore after running", "episode"),
        ("Likes green tea", "preference"),
    ] {
        let stored = u1.tool("remember", json!({"text": text, "kind": kind})).await;
        let out = stored.ok();
        assert_eq!(out["stored"], true);
        assert!(out["id"].as_i64().unwrap() > 0);
    }
    let recalled = u1.tool("recall_memory", json!({"query": "morning running"})).await;
    let memories = recalled.ok()["memories"].as_array().unwrap().clone();
    assert_eq!(memories.len(), 2, "only memories that match: {memories:?}");
    assert!(memories[0]["text"].as_str().unwrap().contains("Prefers running"), "the closer match first: {memories:?}");
    assert!(memories[0]["score"].as_f64().unwrap() >= memories[1]["score"].as_f64().unwrap());
    assert_eq!(memories[1]["kind"], "episode");

    let none = u1.tool("recall_memory", json!({"query": "cholesterol"})).await;
    assert_eq!(none.ok()["memories"].as_array().unwrap().len(), 0, "no match is an empty list");
    let penicillin = u1.tool("recall_memory", json!({"query": "Penicillin?"})).await;
    assert_eq!(penicillin.ok()["memories"][0]["text"], "Allergic to penicillin");

    // The session of the call is kept with the memory (checked through the store).
    assert_eq!(env.backends.sql().memory_ids("u1").await.unwrap().len(), 4);
}

#[tokio::test]
async fn recall_memory_top_k_has_a_default_and_a_bound() {
    let env = Env::sqlite().await;
    let many: Vec<NewMemory> = (0..80)
        .map(|i| NewMemory { text: format!("sleep note {i}"), kind: "episode".into(), session_id: None })
        .collect();
    env.backends.sql().add_memories("u1", &many).await.unwrap();
    let u1 = env.user("u1").await;
    let count = |reply: &crate::support::Reply| reply.ok()["memories"].as_array().unwrap().len();
    assert_eq!(count(&u1.tool("recall_memory", json!({"query": "sleep"})).await), 5);
    assert_eq!(count(&u1.tool("recall_memory", json!({"query": "sleep", "top_k": 12})).await), 12);
    assert_eq!(count(&u1.tool("recall_memory", json!({"query": "sleep", "top_k": 1000})).await), 50);
    assert!(
        u1.tool("recall_memory", json!({"query": "sleep", "top_k": 0})).await.tool_error().contains("between 1 and 50")
    );
}

#[tokio::test]
async fn render_chart_returns_the_option_and_a_png() {
    let env = Env::sqlite().await;
    let client = env.user("u1").await;
    let option = json!({
        "xAxis": {"type": "category", "data": ["Mon", "Tue", "Wed"]},
        "yAxis": {"type": "value"},
        "series": [{"name": "Steps", "type": "bar", "data": [5200, 8100, 7400]}],
    });
    let reply = client.tool("render_chart", json!({"option": option, "title": "Steps"})).await;
    let result = reply.result();
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["option"], option);
    assert_eq!(result["structuredContent"]["status"], "ok");
    let image = result["content"].as_array().unwrap().iter().find(|c| c["type"] == "image").expect("an image content");
    assert_eq!(image["mimeType"], "image/png");
    let png = base64::engine::general_purpose::STANDARD.decode(image["data"].as_str().unwrap()).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");

    let sankey =
        client.tool("render_chart", json!({"option": {"series": [{"type": "sankey", "data": [], "links": []}]}})).await;
    let out = sankey.ok();
    assert!(out["note"].as_str().unwrap().contains("sankey"), "{out}");
    assert_eq!(out["image"], Value::Null);
}

#[tokio::test]
async fn summarize_conversation_writes_this_sessions_conversation() {
    let env = Env::sqlite().await;
    let u1 = env.user("u1").await;
    assert_eq!(
        *u1.tool("summarize_conversation", json!({"summary": "Knee pain after running"})).await.ok(),
        json!({"updated": true})
    );
    let sql = env.backends.sql();
    assert_eq!(sql.conversation_summary("u1", "chat-u1").await.unwrap().as_deref(), Some("Knee pain after running"));

    let long = "é".repeat(250);
    let reply = u1.tool("summarize_conversation", json!({"summary": long})).await;
    assert_eq!(reply.ok()["truncated"], true);
    let stored = sql.conversation_summary("u1", "chat-u1").await.unwrap().unwrap();
    assert_eq!(stored.chars().count(), 200);
    assert!(stored.chars().all(|c| c == 'é'));

    // Another session of the same user is another conversation.
    let mut other = env.client().as_user(UserInfo::authenticated("u1").with_session("chat-2"));
    other.initialize(json!({})).await;
    other.tool("summarize_conversation", json!({"summary": "Second chat"})).await.ok();
    assert_eq!(sql.conversation_summary("u1", "chat-2").await.unwrap().as_deref(), Some("Second chat"));
    assert_eq!(sql.conversation_summary("u1", "chat-u1").await.unwrap().unwrap().chars().count(), 200);

    // Credentials that name no conversation: the MCP session is the conversation, under an id
    // derived from (never equal to) the session id.
    let mut sessionless = env.client().as_user(UserInfo::authenticated("u1"));
    sessionless.initialize(json!({})).await;
    assert_eq!(
        *sessionless.tool("summarize_conversation", json!({"summary": "Third chat"})).await.ok(),
        json!({"updated": true})
    );
    assert_eq!(sql.conversation_summary("u1", "chat-u1").await.unwrap().unwrap().chars().count(), 200);
    assert_eq!(sql.conversation_summary("u1", "chat-2").await.unwrap().as_deref(), Some("Second chat"));
}

#[tokio::test]
async fn summarize_conversation_needs_a_conversation() {
    // In-process, with no session of any kind, there is nothing to summarize: the tool is
    // declared to need one, so the registry refuses the call before the handler runs.
    let registry = mirobody_tools::builtin_registry().unwrap();
    assert!(registry.get("summarize_conversation").unwrap().is_session_required());
    let env = Env::sqlite().await;
    let mut state = http::Extensions::new();
    state.insert(env.backends.db());
    let ctx = mirobody_core::ToolContext::new().with_extensions(&state);
    let result =
        registry.run("summarize_conversation", json!({"summary": "x"}), &UserInfo::authenticated("u1"), &ctx).await;
    assert!(result.is_error());
    assert!(result.first_text().unwrap().contains("works only inside a session"), "{result:?}");
}

#[tokio::test]
async fn a_missing_backend_is_named_in_a_clean_error() {
    let env = Env::sqlite().await;
    upload(&env, "u1", "f1", "a.txt", "text/plain", b"a", None).await;
    let bare = crate::support::router(&env.backends, |b| {
        let mut o = mirobody_mcp::Backends::default();
        o.cache = b.cache;
        o
    });
    let client = crate::support::Env { router: bare, ..env };
    let u1 = client.user("u1").await;
    for (tool, args, missing) in [
        ("family_health", json!({}), "The database is not configured"),
        ("list_files", json!({}), "The database is not configured"),
        ("read_file", json!({"file_key": "f1"}), "The database is not configured"),
        ("summarize_conversation", json!({"summary": "x"}), "The database is not configured"),
        ("remember", json!({"text": "x"}), "Long-term memory is not enabled"),
        ("recall_memory", json!({"query": "x"}), "Long-term memory is not enabled"),
    ] {
        let reply = u1.tool(tool, args).await;
        assert!(reply.tool_error().contains(missing), "{tool}: {}", reply.tool_error());
    }
    // Storage alone missing.
    let no_storage = crate::support::router(&client.backends, |b| {
        let mut o = b;
        o.storage = None;
        o
    });
    let env2 = crate::support::Env { router: no_storage, ..client };
    let u1 = env2.user("u1").await;
    assert!(
        u1.tool("read_file", json!({"file_key": "f1"})).await.tool_error().contains("Object storage is not configured")
    );
    assert_eq!(
        u1.tool("list_files", json!({})).await.ok()["files"].as_array().unwrap().len(),
        1,
        "the index needs no storage"
    );
}

#[tokio::test]
async fn resources_serve_server_info_and_the_callers_uploads() {
    let env = Env::sqlite().await;
    upload(&env, "u1", "f-doc", "doc.txt", "text/plain", b"my doc", None).await;
    upload(&env, "u1", "f-img", "img.png", "image/png", b"\x89PNGdata", None).await;
    upload(&env, "u2", "f-other", "other.txt", "text/plain", b"not yours", None).await;
    let u1 = env.user("u1").await;

    let listed = u1.call("resources/list", json!({})).await;
    let uris: Vec<&str> =
        listed.result()["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert!(uris.contains(&"info://server"), "{uris:?}");
    let info = u1.call("resources/read", json!({"uri": "info://server"})).await;
    let text: Value = serde_json::from_str(info.result()["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["name"], "mirobody");

    let templates = u1.call("resources/templates/list", json!({})).await;
    assert_eq!(templates.result()["resourceTemplates"][0]["uriTemplate"], "file://{file_key}");

    let doc = u1.call("resources/read", json!({"uri": "file://f-doc"})).await;
    assert_eq!(doc.result()["contents"][0]["text"], "my doc");
    let img = u1.call("resources/read", json!({"uri": "file://f-img"})).await;
    assert_eq!(img.result()["contents"][0]["blob"], base64::engine::general_purpose::STANDARD.encode(b"\x89PNGdata"));
    let other = u1.call("resources/read", json!({"uri": "file://f-other"})).await;
    assert_eq!(other.rpc_error().0, -32002, "another user's file is not found");

    let mut anonymous = env.client();
    anonymous.initialize(json!({})).await;
    let refused = anonymous.call("resources/read", json!({"uri": "file://f-doc"})).await;
    assert_eq!(refused.status, http::StatusCode::UNAUTHORIZED);

    // The per-caller listing the server appends to resources/list.
    let ctx_backends = crate::support::handles(&env.backends);
    let ctx = ctx_backends.context(None);
    let mine = mirobody_tools::resources::list_uploads(&UserInfo::authenticated("u1"), &ctx).await.unwrap();
    let mine: Vec<String> = mine.iter().map(|r| r.uri.to_string()).collect();
    assert_eq!(mine.len(), 2);
    assert!(mine.contains(&"file://f-doc".to_owned()) && !mine.contains(&"file://f-other".to_owned()));
    assert!(mirobody_tools::resources::list_uploads(&UserInfo::anonymous(), &ctx).await.unwrap().is_empty());
}

#[tokio::test]
async fn calls_and_reads_are_in_the_access_log() {
    let env = Env::sqlite().await;
    let u1 = env.user("u1").await;
    u1.tool("echo", json!({"text": "x"})).await.ok();
    u1.tool("read_file", json!({"file_key": "nope"})).await.tool_error();
    u1.call("resources/read", json!({"uri": "info://server"})).await.result();
    // Refused before running, and recorded all the same.
    u1.call("tools/call", json!({"name": "no_such_tool", "arguments": {}})).await;
    u1.call("tools/call", json!({"name": "echo", "arguments": {"text": 7}})).await;
    let rows = within("the access log", async {
        loop {
            let rows = env.backends.sql().access_log_of("u1").await.unwrap();
            if rows.len() >= 5 {
                return rows;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    let summary: Vec<(AccessKind, &str, bool)> = rows.iter().map(|(k, n, s, _)| (*k, n.as_str(), s.is_ok())).collect();
    assert!(summary.contains(&(AccessKind::Tool, "echo", true)), "{summary:?}");
    assert!(summary.contains(&(AccessKind::Tool, "read_file", false)), "{summary:?}");
    assert!(summary.contains(&(AccessKind::Resource, "info://server", true)), "{summary:?}");
    let outcomes: Vec<(&str, mirobody_ports::AccessOutcome)> =
        rows.iter().map(|(_, n, o, _)| (n.as_str(), *o)).collect();
    assert!(outcomes.contains(&("no_such_tool", mirobody_ports::AccessOutcome::UnknownTool)), "{outcomes:?}");
    assert!(outcomes.contains(&("echo", mirobody_ports::AccessOutcome::InvalidArguments)), "{outcomes:?}");
    assert!(outcomes.contains(&("read_file", mirobody_ports::AccessOutcome::Failed)), "{outcomes:?}");
}

#[tokio::test]
async fn the_demo_loads_once_and_every_tool_has_data() {
    let env = Env::sqlite().await;
    let info = mirobody_tools::demo::load_demo(&env.backends).await.unwrap();
    assert!(!info.already_loaded && info.observations > 40 && info.files.len() == 3 && info.memories > 3, "{info:?}");
    let again = mirobody_tools::demo::load_demo(&env.backends).await.unwrap();
    assert!(again.already_loaded);
    assert_eq!(env.backends.sql().memory_ids("demo").await.unwrap().len(), info.memories, "nothing added twice");

    let demo = env.user("demo").await;
    assert_eq!(demo.tool("family_health", json!({"member": "Mom"})).await.ok()["subject"], "Mom");
    assert!(demo.tool("family_health", json!({"member": "Sam"})).await.tool_error().contains("Available: Dad, Mom"));
    let files = demo.tool("list_files", json!({})).await.ok()["files"].clone();
    assert_eq!(files.as_array().unwrap().len(), 3);
    let key =
        |name: &str| files.as_array().unwrap().iter().find(|f| f["filename"] == name).unwrap()["file_key"].clone();
    // The PDF's text is read from the PDF itself, by a sandboxed reader, once one runs.
    let reader = mirobody_tools::reading::TextReader::new(env.backends.clone(), crate::extraction::extractor(1));
    reader.start();
    let pdf_key = key("blood-count.pdf");
    let settled = reader.settled("demo", pdf_key.as_str().unwrap(), std::time::Duration::from_secs(30)).await;
    assert_eq!(settled.unwrap().text_state, mirobody_health::TextState::Settled);
    let pdf = demo.tool("read_file", json!({"file_key": pdf_key})).await;
    assert!(pdf.ok()["content"].as_str().unwrap().contains("Hemoglobin 14.1 g/dL"), "{:?}", pdf.ok());
    assert!(demo.tool("read_file", json!({"file_key": key("steps.png")})).await.ok()["url"].is_string());
    // The clinic export arrived through the FHIR import.
    let profile = demo.tool("get_user_health_profile", json!({})).await;
    assert_eq!(profile.ok()["allergies"][0]["name"], "Penicillin");
    let bp = demo.tool("fetch_health_data", json!({"indicators": ["BP"], "member": "Mom"})).await;
    assert_eq!(bp.ok()["indicators"]["Systolic blood pressure"]["count"], 7, "{:?}", bp.ok());
    let recalled = demo.tool("recall_memory", json!({"query": "penicillin allergy"})).await;
    assert_eq!(recalled.ok()["memories"][0]["text"], "Allergic to penicillin.");
}

#[tokio::test]
async fn values_in_two_units_are_two_series_never_one() {
    let env = Env::sqlite().await;
    let sql = env.backends.sql();
    let values = [
        observation("2339-0", 5.4, "mmol/L", "2026-01-01T08:00:00Z"),
        observation("2339-0", 99.0, "mg/dL", "2026-02-01T08:00:00Z"),
        observation("2339-0", 6.0, "mmol/L", "2026-03-01T08:00:00Z"),
    ];
    sql.add_observations("me", &values).await.unwrap();
    let me = env.user("me").await;
    let reply = me.tool("fetch_health_data", json!({"indicators": ["blood sugar"]})).await;
    let series = &reply.ok()["indicators"];
    let names: Vec<&String> = series.as_object().unwrap().keys().collect();
    assert_eq!(names.len(), 2, "{series}");
    let mmol = &series["2339-0 (mmol/L)"];
    assert_eq!((mmol["unit"].as_str(), mmol["count"].as_u64()), (Some("mmol/L"), Some(2)), "{series}");
    let values: Vec<f64> = mmol["data"].as_array().unwrap().iter().map(|p| p["value"].as_f64().unwrap()).collect();
    assert_eq!(values, [5.4, 6.0], "oldest first, mmol/L only");
    assert_eq!(series["2339-0 (mg/dL)"]["data"][0]["value"], 99.0);
    // Out of the range: said plainly.
    let none = me.tool("fetch_health_data", json!({"indicators": ["glucose"], "start_time": "2027-01-01"})).await;
    assert_eq!(none.ok()["message"], "No values in that time range.");
}
