//! A deleted account leaves nothing behind anywhere the server keeps things: a person with an
//! account, an MCP session shared through Redis, tool calls, a memory, values sent to `/fhir`
//! and a file in S3 (PyPI's `moto`), once deleted, is found nowhere (neither their id nor a
//! value only they held) in the database (every row of the PostgreSQL schema, `pg_dump`; every
//! byte of the SQLite files), in Redis (every key and value, `SCAN`) or in the bucket (every
//! key and object). And their MCP session is over: its record and the index of their sessions
//! are gone from Redis, and the session id is 404 on the MCP endpoint.
//!
//! Needs `MIROBODY_TEST_REDIS_URL` (and `MIROBODY_TEST_POSTGRES_URL` for PostgreSQL), Python
//! for moto; without them the test says `SKIPPED: <why>`, and fails under
//! `MIROBODY_REQUIRE_EXTERNAL=1`.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{
    KillOnDrop, clean_command, free_port, fresh_data_dir, mcp_status, request, server_port, session, start_with, tool,
};
use mirobody_testkit::{Moto, Peers, PostgresSchema, skip};
use serde_json::{Value, json};

// The peer's URL, or a visible skip (a failure under MIROBODY_REQUIRE_EXTERNAL).
fn external(var: &str) -> Option<String> {
    let found = std::env::var(var).ok().filter(|url| !url.is_empty());
    if found.is_none() {
        skip(&format!("erase scan: {var} is not set"));
    }
    found
}

fn moto() -> Option<Moto> {
    let started = mirobody_testkit::peers_off()
        .and_then(|()| Moto::start(&Peers::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("external"))));
    started.map_err(|e| skip(&format!("erase scan: {e}"))).ok()
}

struct Setup {
    env: Vec<(String, String)>,
    data_dir: PathBuf,
    port: u16,
}

impl Setup {
    fn env(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    fn cli(&self, args: &[&str], stdin: &str) -> String {
        let mut child = clean_command()
            .args(args)
            .env("MIROBODY_BACKENDS__DATA_DIR", &self.data_dir)
            .env("MIROBODY_PUBLIC_BASE_URL", format!("http://127.0.0.1:{}", self.port))
            .envs(self.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the CLI");
        writeln!(child.stdin.take().unwrap(), "{stdin}").unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

/// Every key and value of the Redis instance holding one of `needles`.
fn redis_holding(url: &str, needles: &[&str]) -> Vec<String> {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut found = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) =
            redis::cmd("SCAN").arg(cursor).arg("COUNT").arg(1000).query(&mut conn).unwrap();
        for key in keys {
            let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).unwrap();
            let read = match kind.as_str() {
                "string" => redis::cmd("GET").arg(&key).query(&mut conn),
                "hash" => redis::cmd("HGETALL").arg(&key).query(&mut conn),
                "list" => redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query(&mut conn),
                "set" => redis::cmd("SMEMBERS").arg(&key).query(&mut conn),
                "zset" => redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).query(&mut conn),
                "stream" => redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query(&mut conn),
                _ => Ok(redis::Value::Nil),
            };
            let mut bytes = key.clone();
            flatten(&read.unwrap_or(redis::Value::Nil), &mut bytes);
            for needle in needles {
                if holds(&bytes, needle) {
                    found.push(format!("{} ({kind}) holds {needle}", String::from_utf8_lossy(&key)));
                }
            }
        }
        if next == 0 {
            return found;
        }
        cursor = next;
    }
}

fn flatten(value: &redis::Value, out: &mut Vec<u8>) {
    match value {
        redis::Value::BulkString(bytes) => out.extend_from_slice(bytes),
        redis::Value::SimpleString(text) => out.extend_from_slice(text.as_bytes()),
        redis::Value::Array(items) | redis::Value::Set(items) => items.iter().for_each(|item| flatten(item, out)),
        redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            flatten(k, out);
            flatten(v, out);
        }),
        _ => {}
    }
    out.push(0);
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle.as_bytes())
}

/// Every key of the bucket, and every object, holding one of `needles`.
fn bucket_holding(moto: &Moto, bucket: &str, needles: &[&str]) -> (usize, Vec<String>) {
    let code = format!(
        "import json\nneedles = {needles}\nfound, count = [], 0\n\
         for page in s3.get_paginator('list_objects_v2').paginate(Bucket='{bucket}'):\n\
         \x20   for item in page.get('Contents', []):\n\
         \x20       count += 1\n\
         \x20       body = s3.get_object(Bucket='{bucket}', Key=item['Key'])['Body'].read()\n\
         \x20       found += [item['Key'] + ' holds ' + n for n in needles if n in item['Key'] or n.encode() in body]\n\
         print(json.dumps([count, found]))",
        needles = serde_json::to_string(needles).unwrap(),
    );
    let out: Value = serde_json::from_slice(&moto.boto3(&code)).expect("boto3 answers JSON");
    let found = out[1].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_owned()).collect();
    (out[0].as_u64().unwrap() as usize, found)
}

/// Every file under `dir` holding one of `needles` (the server's log aside).
fn files_holding(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|name| name == "server.log") {
            continue;
        }
        if path.is_dir() {
            found.extend(files_holding(&path, needles));
            continue;
        }
        let bytes = std::fs::read(&path).unwrap_or_default();
        for needle in needles.iter().filter(|needle| holds(&bytes, needle)) {
            found.push(format!("{} holds {needle}", path.display()));
        }
    }
    found
}

/// What the person does before deleting their account, over HTTP with a bearer token; their
/// token and MCP session id.
fn use_everything(setup: &Setup, user: &str, known: &str) -> (String, String) {
    let email = format!("{user}@example.com");
    setup.cli(&["user", "add", "--email", &email, "--id", user, "--password-stdin"], "a long enough password 1");
    let token = setup.cli(&["token", "--user", user, "--ttl", "3600"], "");
    let port = setup.port;
    let sid = session(port, &token);
    let remembered =
        tool(port, &token, &sid, "remember", json!({"text": format!("Allergic to {known}"), "kind": "fact"}));
    assert!(remembered.get("error").is_none(), "{remembered}");
    let content = base64_of(format!("{known} lab note: glucose 5.4 mmol/L").as_bytes());
    let upload = tool(port, &token, &sid, "upload_file", json!({"filename": "note.txt", "content_base64": content}));
    assert!(upload["file_key"].is_string(), "{upload}");
    let observation = json!({"resourceType": "Observation", "id": format!("{known}-1"), "status": "final",
        "code": {"text": known}, "effectiveDateTime": "2026-01-02T08:00:00Z",
        "valueQuantity": {"value": 61, "unit": "bpm"}});
    let auth = format!("Bearer {token}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/fhir+json")];
    let (status, head, _) = request(port, "POST", "/fhir", &headers, observation.to_string().as_bytes());
    assert!(status < 300, "{head}");
    let fetched = tool(port, &token, &sid, "fetch_health_data", json!({"indicators": [known]}));
    assert!(fetched.to_string().contains("61"), "{fetched}");
    let profile = tool(port, &token, &sid, "get_user_health_profile", json!({}));
    assert!(profile.get("error").is_none(), "{profile}");
    (token, sid)
}

/// Every key under `prefix` that holds a session's record or a person's index of sessions,
/// with its type.
fn session_keys(url: &str, prefix: &str) -> std::collections::BTreeSet<(String, String)> {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}session:*")).query(&mut conn).unwrap();
    let typed = keys.into_iter().map(|key| {
        let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).unwrap();
        (key, kind)
    });
    typed.collect()
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn delete_account(setup: &Setup, token: &str, user: &str) {
    let auth = format!("Bearer {token}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let body = json!({"kind": "account", "confirm": user}).to_string();
    let (status, head, body) = request(setup.port, "POST", "/delete", &headers, body.as_bytes());
    assert_eq!(status, 200, "{head}{}", String::from_utf8_lossy(&body));
}

/// The person's data everywhere, then nowhere once their account is deleted.
fn scan_after_erasure(postgres: bool) {
    let name = if postgres { "postgres" } else { "sqlite" };
    let Some(redis) = external("MIROBODY_TEST_REDIS_URL") else { return };
    let postgres_url = match postgres {
        true => match external("MIROBODY_TEST_POSTGRES_URL") {
            Some(url) => Some(url),
            None => return,
        },
        false => None,
    };
    let Some(moto) = moto() else { return };
    let unique = format!("erase_scan_{name}_{}_{}", std::process::id(), free_port());
    let bucket = unique.replace('_', "-");
    moto.create_bucket(&bucket);
    let mut env: Vec<(String, String)> = [
        ("MIROBODY_BACKENDS__REDIS_URL", redis.clone()),
        ("MIROBODY_BACKENDS__REDIS_KEY_PREFIX", format!("{unique}.")),
        ("MIROBODY_BACKENDS__STORAGE__KIND", "s3".into()),
        ("MIROBODY_BACKENDS__STORAGE__BUCKET", bucket.clone()),
        ("MIROBODY_BACKENDS__STORAGE__ENDPOINT", moto.endpoint.clone()),
        ("MIROBODY_BACKENDS__STORAGE__REGION", "us-east-1".into()),
        ("MIROBODY_BACKENDS__STORAGE__ACCESS_KEY_ID", "test".into()),
        ("MIROBODY_BACKENDS__STORAGE__SECRET_ACCESS_KEY", "test".into()),
        ("MIROBODY_BACKENDS__STORAGE__ALLOW_HTTP", "true".into()),
        ("MIROBODY_REQUEST_STATE_KEY", "erase-scan-state-key-0123456789-0123456789".into()),
        ("MIROBODY_BACKENDS__SIGNING_KEY", "erase-scan-url-key-0123456789-0123456789".into()),
        ("MIROBODY_AUTH__HS256_SECRET", "erase-scan-token-key-0123456789-0123456789".into()),
        ("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "0".into()),
        ("RUST_LOG", "warn".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let _schema = postgres_url.as_ref().map(|url| {
        env.push(("MIROBODY_BACKENDS__DATABASE_URL".into(), url.clone()));
        env.push(("MIROBODY_BACKENDS__DATABASE_SCHEMA".into(), unique.clone()));
        PostgresSchema { url: url.clone(), name: unique.clone() }
    });
    if !postgres {
        // One instance on SQLite: Redis caches, no sessions to share.
        env.push(("MIROBODY_SHARED_SESSIONS".into(), "false".into()));
    }
    let setup = Setup { env, data_dir: fresh_data_dir(&format!("erase-scan-{name}")), port: server_port() };
    let log = std::fs::File::create(setup.data_dir.join("server.log")).unwrap();
    let server = KillOnDrop(start_with(&setup.data_dir, setup.port, log, &setup.env()));

    let user = format!("scanned-{name}-{}", std::process::id());
    let known = format!("Numbatplum{}", free_port());
    let other = format!("kept-{name}-{}", std::process::id());
    let other_known = format!("Bilbyberry{}", free_port());
    let (token, sid) = use_everything(&setup, &user, &known);
    let (other_token, other_sid) = use_everything(&setup, &other, &other_known);
    // Shared sessions only: a third person, deleted with the CLI, which reaches the server's
    // sessions through Redis alone.
    let by_cli = format!("cli-deleted-{name}-{}", std::process::id());
    let by_cli_known = format!("Quokkaquince{}", free_port());
    let by_cli_session = postgres.then(|| use_everything(&setup, &by_cli, &by_cli_known));
    let mut needles = vec![user.as_str(), known.as_str()];
    if postgres {
        needles.extend([by_cli.as_str(), by_cli_known.as_str()]);
    }
    // Before: the scans find the person (so a scan that finds nothing proves something).
    let (objects, found) = bucket_holding(&moto, &bucket, &needles);
    assert!(objects > 0 && !found.is_empty(), "the bucket holds the file: {found:?}");
    if let Some(url) = &postgres_url {
        assert!(holds(&pg_dump(url, &unique), &known), "the schema holds the value");
    }

    let prefix = format!("{unique}.");
    let sessions_before = session_keys(&redis, &prefix);
    assert_eq!(mcp_status(setup.port, &token, &sid), 200, "the session works before");

    delete_account(&setup, &token, &user);
    // Their session is over at once; the other person's goes on.
    assert_eq!(mcp_status(setup.port, &token, &sid), 404, "the deleted account's session");
    assert_eq!(mcp_status(setup.port, &other_token, &other_sid), 200, "the other's session");
    // Shared (PostgreSQL): the session's record and the person's index of sessions are gone
    // from Redis, and nothing else; each person had one of each. Not shared: Redis holds none.
    let sessions_after = session_keys(&redis, &prefix);
    if let Some((by_cli_token, by_cli_sid)) = &by_cli_session {
        one_session_ended(&sessions_before, &sessions_after, 4);
        setup.cli(&["delete", "account", "--user", &by_cli, "--confirm", &by_cli], "");
        assert_eq!(mcp_status(setup.port, by_cli_token, by_cli_sid), 404, "the session of the CLI's deletion");
        assert_eq!(mcp_status(setup.port, &other_token, &other_sid), 200, "the other's session");
        one_session_ended(&sessions_after, &session_keys(&redis, &prefix), 2);
    } else {
        assert!(sessions_before.is_empty() && sessions_after.is_empty(), "{sessions_before:?}");
    }
    // What runs after a response (the access log's queue) has had its time.
    std::thread::sleep(std::time::Duration::from_secs(2));
    drop(server);

    let mut left = redis_holding(&redis, &needles);
    left.extend(bucket_holding(&moto, &bucket, &needles).1);
    match &postgres_url {
        Some(url) => {
            let dump = pg_dump(url, &unique);
            left.extend(needles.iter().filter(|n| holds(&dump, n)).map(|n| format!("the schema holds {n}")));
        }
        None => left.extend(files_holding(&setup.data_dir, &needles)),
    }
    assert_eq!(left, Vec::<String>::new(), "nothing of the deleted person is left");
    // The other person's data is where it was.
    let other_needles = [other.as_str(), other_known.as_str()];
    assert!(!bucket_holding(&moto, &bucket, &other_needles).1.is_empty(), "the other's file is kept");
}

/// That the session keys went from `before` to `after` by one record and one index (one
/// person's session ended), `kept` left.
fn one_session_ended(
    before: &std::collections::BTreeSet<(String, String)>,
    after: &std::collections::BTreeSet<(String, String)>,
    kept: usize,
) {
    let gone: Vec<_> = before.difference(after).collect();
    let mut kinds: Vec<&str> = gone.iter().map(|(_, kind)| kind.as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["string", "zset"], "the record and the index went: {gone:?}");
    assert!(after.is_subset(before), "nothing new: {after:?}");
    assert_eq!(after.len(), kept, "the others' records and indexes stay: {after:?}");
}

/// The schema's rows, as `pg_dump --data-only` writes them.
fn pg_dump(url: &str, schema: &str) -> Vec<u8> {
    let output = Command::new("pg_dump")
        .args(["--data-only", "--schema", schema, url])
        .output()
        .expect("pg_dump runs (Debian's postgresql-client)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output.stdout
}

#[test]
fn a_deleted_account_leaves_nothing_in_postgres_redis_or_s3() {
    scan_after_erasure(true);
}

#[test]
fn a_deleted_account_leaves_nothing_in_sqlite_redis_or_s3() {
    scan_after_erasure(false);
}
