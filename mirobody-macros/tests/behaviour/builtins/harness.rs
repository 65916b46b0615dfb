//! The comparison of a built-in with its twin, and what the calls run against: the real SQL
//! store of `mirobody-tools` on an in-memory SQLite database (db and memory), object storage in
//! a map (with URLs that do not depend on the clock), and a client with elicitation that
//! answers questions from a script.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::backend::NewMemory;
use mirobody_core::{BackendError, ClientPeer, Format, PeerError, Storage, Tool, ToolContext, UserInfo};
use mirobody_tools::backends::SqlStore;
use mirobody_tools::health::FileRecord;
use serde_json::{Map, Value, json};

use crate::registry;

/// The caller most calls are made as: Ada, in her chat session.
pub(super) fn ada() -> UserInfo {
    UserInfo::authenticated("ada").with_session("chat-ada")
}

/// A caller without credentials.
pub(super) fn anonymous() -> UserInfo {
    UserInfo::anonymous()
}

/// A runtime for the SQL store, which needs tokio.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// What the calls of a comparison run against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Backends {
    /// Nothing: no backends and no client, as an in-process call without them.
    None,
    /// One seeded [`Env`] for both, each call made on the built-in and then on the twin: for
    /// reads, whose results can carry the times the seeding stamped.
    Shared,
    /// A seeded [`Env`] for each: for writes and questions, whose results (a new memory's id)
    /// and effects (what was stored, what the client was asked) are compared too.
    Apart,
}

/// Checks a built-in against its twin: declaration, auth, scopes, every rendering, and the
/// result of each call, in order, as each user. At least one call must succeed, so that the
/// comparison is not only of two refusals.
pub(super) fn check(builtin: Tool, twin: Tool, backends: Backends, calls: &[(UserInfo, Value)]) {
    assert_eq!(twin.spec(), builtin.spec());
    assert_eq!(twin.is_auth(), builtin.is_auth());
    assert_eq!(twin.scopes(), builtin.scopes());
    let name = builtin.name().to_owned();
    let (builtin, twin) = (registry([builtin]), registry([twin]));
    for format in Format::ALL {
        assert_eq!(twin.functions_json(format), builtin.functions_json(format), "{name} in {format}");
    }
    assert_eq!(twin.mcp_tools_json(true), builtin.mcp_tools_json(true), "{name}");
    runtime().block_on(async {
        let (builtin_env, twin_env) = match backends {
            Backends::None => (None, None),
            Backends::Shared => (Some(Env::seeded().await), None),
            Backends::Apart => (Some(Env::seeded().await), Some(Env::seeded().await)),
        };
        let none = ToolContext::new();
        let builtin_ctx = builtin_env.as_ref().map_or(none, Env::ctx);
        let twin_ctx = twin_env.as_ref().or(builtin_env.as_ref()).map_or(none, Env::ctx);
        let mut succeeded = false;
        for (user, args) in calls {
            let expected = builtin.run(&name, args.clone(), user, &builtin_ctx).await;
            let got = twin.run(&name, args.clone(), user, &twin_ctx).await;
            assert_eq!(got, expected, "{name} with {args} as {:?}", user.user_id());
            succeeded |= !expected.is_error();
        }
        assert!(succeeded, "{name}: every call failed, so the comparison says little");
        if let (Some(builtin_env), Some(twin_env)) = (&builtin_env, &twin_env) {
            assert_eq!(twin_env.state().await, builtin_env.state().await, "{name}: what the calls left behind");
        }
    });
}

/// Backends with data in them: `mirobody-tools`' SQL store on an in-memory SQLite database (the
/// db and the memory), object storage in a map, and a client with elicitation.
struct Env {
    sql: std::sync::Arc<SqlStore>,
    // The health store, as the server hands it to tools: in the context's extensions.
    extensions: http::Extensions,
    storage: MapStorage,
    client: Client,
}

/// The users whose data an [`Env`] holds, and the (user, session) pairs whose conversation
/// summaries are compared.
const USERS: [&str; 7] = ["ada", "eve", "u-mom", "u-dad", "u-gran", "u-sam", "many"];
const SESSIONS: [(&str, &str); 2] = [("ada", "chat-ada"), ("eve", "chat-eve")];

/// An uploaded file: owner, key, name, MIME type, bytes, and the text extracted from it.
type Upload = (&'static str, &'static str, &'static str, &'static str, Vec<u8>, Option<&'static str>);

fn quantity(code: &str, display: &str, value: f64, unit: &str, time: &str) -> Value {
    json!({
        "resourceType": "Observation",
        "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": display}], "text": display},
        "valueQuantity": {"value": value, "unit": unit},
        "effectiveDateTime": time,
    })
}

impl Env {
    /// Ada has a care circle (Mom, Dad and Granny Ann share with her, Sam does not),
    /// observations of every value kind, files of every kind and a few memories; Eve has a
    /// file and a memory of her own; "many" has more files than a listing shows.
    async fn seeded() -> Env {
        let sql = SqlStore::connect("sqlite::memory:", None, 1).await.expect("an in-memory SQLite database");
        for (id, name, email) in [
            ("ada", Some("Ada"), Some("ada@example.com")),
            ("u-mom", Some("Ann"), Some("ann@example.com")),
            ("u-dad", Some("Bob"), Some("bob@example.com")),
            ("u-gran", None, None),
            ("u-sam", Some("Sam"), Some("sam@example.com")),
        ] {
            sql.upsert_user(id, name, email).await.unwrap();
        }
        for (owner, nickname) in [("u-mom", "Mom"), ("u-dad", "Dad"), ("u-gran", "Granny Ann")] {
            sql.share_health(owner, "ada", Some(nickname)).await.unwrap();
        }
        let ada = [
            quantity("8867-4", "Heart rate", 72.0, "beats/minute", "2026-03-05T08:00:00Z"),
            json!({"code": {"text": "Weight"}, "valueQuantity": {"value": 70.5, "code": "kg"}, "issued": "2026-03-04T08:00:00Z"}),
            json!({"code": {"text": "Blood pressure"}, "component": [
                {"code": {"text": "Systolic"}, "valueQuantity": {"value": 120, "unit": "mmHg"}},
                {"code": {"text": "Diastolic"}, "valueQuantity": {"value": 80, "unit": "mmHg"}},
            ], "effectiveDateTime": "2026-03-03T08:00:00Z"}),
            json!({"code": {"coding": [{"code": "72166-2"}]}, "valueCodeableConcept": {"text": "Never smoker"}, "effectivePeriod": {"start": "2026-03-02T08:00:00Z"}}),
            json!({"code": {"text": "Mood"}, "valueString": "calm", "effectiveInstant": "2026-03-01T08:00:00Z"}),
            json!({"code": {"text": "Pushups"}, "valueInteger": 25, "effectiveDateTime": "2026-02-28T08:00:00Z"}),
            json!({"code": {"text": "Fasting"}, "valueBoolean": true, "effectiveDateTime": "2026-02-27T08:00:00Z"}),
            json!({"code": {"text": "Note"}, "effectiveDateTime": "2026-02-26T08:00:00Z"}),
        ];
        sql.add_observations("ada", &ada).await.unwrap();
        let mom = [quantity("2339-0", "Glucose", 96.0, "mg/dL", "2026-03-05T07:00:00Z")];
        sql.add_observations("u-mom", &mom).await.unwrap();
        let dad = [quantity("8867-4", "Heart rate", 70.0, "beats/minute", "2026-03-05T06:00:00Z")];
        sql.add_observations("u-dad", &dad).await.unwrap();
        let sam = [quantity("8867-4", "Heart rate", 58.0, "beats/minute", "2026-03-05T07:00:00Z")];
        sql.add_observations("u-sam", &sam).await.unwrap();

        let storage = MapStorage::default();
        let files: [Upload; 8] = [
            ("ada", "f-notes", "notes.txt", "text/plain", b"Walked 5 km.\n".to_vec(), None),
            ("ada", "f-lab", "lab.pdf", "application/pdf", b"%PDF-1.4".to_vec(), Some("Cholesterol: 182 mg/dL")),
            ("ada", "f-json", "data.json", "application/json; charset=utf-8", br#"{"a": 1}"#.to_vec(), None),
            ("ada", "f-chart", "chart.png", "image/png", b"\x89PNG\r\n\x1a\n".to_vec(), None),
            ("ada", "f-latin1", "latin1.txt", "text/plain; charset=latin1", b"caf\xe9".to_vec(), None),
            ("ada", "f-long", "long.txt", "text/markdown", "é".repeat(50_001).into_bytes(), None),
            ("ada", "f-gone", "gone.txt", "text/plain", Vec::new(), None),
            ("eve", "f-eve", "eve.txt", "text/plain", b"Eve's notes".to_vec(), None),
        ];
        for (day, (owner, key, name, mime, bytes, text)) in files.into_iter().enumerate() {
            // f-gone is in the index, but its bytes are not in storage.
            if key != "f-gone" {
                storage.put(key, bytes.clone(), mime).await.unwrap();
            }
            let text_key = text.map(|_| format!("{key}.trans"));
            if let (Some(text_key), Some(text)) = (&text_key, text) {
                storage.put(text_key, text.as_bytes().to_vec(), "text/plain").await.unwrap();
            }
            let record = FileRecord {
                file_key: key.into(),
                filename: name.into(),
                mime_type: mime.into(),
                size: bytes.len() as u64,
                uploaded_at: format!("2026-01-{:02}T00:00:00Z", day + 1),
                text_key,
                text_state: Default::default(),
            };
            sql.add_file(owner, &record).await.unwrap();
        }
        for i in 0..201 {
            let record = FileRecord {
                file_key: format!("m-{i:03}"),
                filename: format!("{i}.txt"),
                mime_type: "text/plain".into(),
                size: 1,
                uploaded_at: format!("2026-02-01T00:{:02}:{:02}Z", i / 60, i % 60),
                text_key: None,
                text_state: Default::default(),
            };
            sql.add_file("many", &record).await.unwrap();
        }

        let memory = |text: &str, kind: &str| NewMemory { text: text.into(), kind: kind.into(), session_id: None };
        let memories = [
            memory("Allergic to penicillin", "fact"),
            memory("Prefers metric units", "preference"),
            memory("Ran a 10k on 2026-03-01", "episode"),
            memory("Runs every morning before work", "preference"),
            memory("Is allergic to cats and allergic to dust", "fact"),
        ];
        sql.add_memories("ada", &memories).await.unwrap();
        sql.add_memories("eve", &[memory("Allergic to peanuts", "fact")]).await.unwrap();
        let sql = std::sync::Arc::new(sql);
        let mut extensions = http::Extensions::new();
        extensions.insert(std::sync::Arc::clone(&sql) as std::sync::Arc<dyn mirobody_tools::health::HealthStore>);
        Env { sql, extensions, storage, client: Client::default() }
    }

    fn ctx(&self) -> ToolContext<'_> {
        ToolContext::new()
            .with_extensions(&self.extensions)
            .with_memory(self.sql.as_ref())
            .with_storage(&self.storage)
            .with_client(&self.client)
    }

    /// What calls can change: each user's memories, the conversation titles, the stored files,
    /// and what the client was asked.
    async fn state(&self) -> Value {
        let mut memories = Map::new();
        for user in USERS {
            memories.insert(user.into(), json!(self.sql.memory_ids(user).await.unwrap()));
        }
        let mut summaries = Map::new();
        for (user, session) in SESSIONS {
            summaries.insert(
                format!("{user}/{session}"),
                json!(self.sql.conversation_summary(user, session).await.unwrap()),
            );
        }
        let files: Vec<String> = self.storage.objects.lock().unwrap().keys().cloned().collect();
        json!({"memories": memories, "summaries": summaries, "files": files, "asked": *self.client.asked.lock().unwrap()})
    }
}

/// Object storage in a map; its URLs name the key and the lifetime, not a time.
#[derive(Default)]
struct MapStorage {
    objects: Mutex<BTreeMap<String, Vec<u8>>>,
}

#[async_trait]
impl Storage for MapStorage {
    async fn get(&self, key: &str) -> Result<Vec<u8>, BackendError> {
        self.objects.lock().unwrap().get(key).cloned().ok_or_else(|| BackendError::new("The file is not in storage."))
    }

    async fn put(&self, key: &str, bytes: Vec<u8>, _content_type: &str) -> Result<(), BackendError> {
        self.objects.lock().unwrap().insert(key.to_owned(), bytes);
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), BackendError> {
        self.objects.lock().unwrap().remove(key);
        Ok(())
    }

    async fn signed_url(&self, key: &str, expires_in: Duration) -> Result<String, BackendError> {
        Ok(format!("https://files.example/{key}?expires_in={}", expires_in.as_secs()))
    }
}

/// A client with elicitation that answers each question with the next of its scripted replies
/// (then with no answer at all), and remembers what it was asked.
struct Client {
    asked: Mutex<Vec<Value>>,
    replies: Mutex<VecDeque<Result<Value, PeerError>>>,
}

impl Default for Client {
    fn default() -> Self {
        let replies = [
            Ok(json!({"action": "accept", "content": {"choice": "Evening"}})),
            Ok(
                json!({"action": "accept", "content": {"choice": ["Night", "Never", "Night", 3], "other": "  weekends  "}}),
            ),
            Ok(json!({"action": "accept", "content": {"choice": "Never", "other": " "}})),
            Ok(json!({"action": "decline"})),
            Ok(json!({"action": "cancel"})),
            Err(PeerError::Unsupported("elicitation/create".into())),
            Err(PeerError::Client { code: -32600, message: "bad request".into() }),
        ];
        Client { asked: Mutex::default(), replies: Mutex::new(replies.into()) }
    }
}

#[async_trait]
impl ClientPeer for Client {
    async fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}

    async fn log(&self, _: &str, _: Value) {}

    async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        self.asked.lock().unwrap().push(json!({"method": method, "params": params}));
        self.replies.lock().unwrap().pop_front().unwrap_or(Err(PeerError::NoAnswer))
    }

    fn supports(&self, capability: &str) -> bool {
        capability == "elicitation"
    }
}
