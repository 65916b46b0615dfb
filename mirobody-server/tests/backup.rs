//! `backup` and `restore` through the real binary: a backup taken while the server serves and
//! another process writes, restored into a new folder, answers every read tool as the
//! original did; a restore refuses a folder in use and a backup that is incomplete, altered
//! or newer than the program.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{KillOnDrop, clean_command, fresh_data_dir, server_port};
use serde_json::{Value, json};

// Runs the binary on `data_dir`: exit code, stdout, stderr.
fn run(data_dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_with(data_dir, &[], args)
}

// `run`, with more settings.
fn run_with(data_dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let output = clean_command()
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("RUST_LOG", "error")
        .envs(env.iter().copied())
        .output()
        .expect("run the binary");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

// A tool's whole MCP result, called with `tools call` as `user`.
fn call(data_dir: &Path, user: &str, tool: &str, arguments: &Value) -> Value {
    call_with(data_dir, &[], user, tool, arguments)
}

fn call_with(data_dir: &Path, env: &[(&str, &str)], user: &str, tool: &str, arguments: &Value) -> Value {
    let (_, out, err) = run_with(data_dir, env, &["tools", "call", tool, &arguments.to_string(), "--user", user]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{tool}: {e}: {out} {err}"))
}

// The demo user's answer from every read tool.
fn read_tools(data_dir: &Path) -> Vec<(String, Value)> {
    let files = call(data_dir, "demo", "list_files", &json!({}));
    let keys: Vec<String> = files["structuredContent"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|file| file["file_key"].as_str().unwrap().to_owned())
        .collect();
    assert!(keys.len() >= 3, "the demo's uploads: {files}");
    let mut calls = vec![
        ("whoami", json!({})),
        ("get_user_health_profile", json!({})),
        ("family_health", json!({"count": 50})),
        ("family_health", json!({"member": "Mom", "count": 50})),
        ("fetch_health_data", json!({"indicators": ["BP", "heart rate", "glucose", "weight"]})),
        ("fetch_health_data", json!({"indicators": ["BP"], "member": "Mom"})),
        ("search_health_indicators", json!({"keywords": ["pressure", "heart", "sleep", "steps"]})),
        ("recall_memory", json!({"query": "sleep"})),
        ("recall_memory", json!({"query": "allergy medication"})),
        ("list_files", json!({})),
    ];
    calls.extend(keys.iter().map(|key| ("read_file", json!({"file_key": key}))));
    let answer = |tool, args: &Value| unsigned(&call(data_dir, "demo", tool, args));
    calls.into_iter().map(|(tool, args)| (format!("{tool} {args}"), answer(tool, &args))).collect()
}

// The answer with the expiry and signature of its file URLs blanked: they are made at the time
// of the call (the signature with the same key, restored).
fn unsigned(answer: &Value) -> Value {
    let text = answer.to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("expires=") {
        out.push_str(&rest[..at + "expires=".len()]);
        rest = rest[at + "expires=".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('_');
        if let Some(after) = rest.strip_prefix("&signature=") {
            out.push_str("&signature=_");
            rest = after.trim_start_matches(|c: char| c.is_ascii_hexdigit());
        }
    }
    out.push_str(rest);
    serde_json::from_str(&out).expect("still JSON")
}

fn steps(data_dir: &Path) -> usize {
    let answer = call(data_dir, "writer", "fetch_health_data", &json!({"indicators": ["steps"], "limit": 1000}));
    let series = &answer["structuredContent"]["indicators"];
    series.as_object().map_or(0, |all| all.values().map(|s| s["data"].as_array().map_or(0, Vec::len)).sum())
}

#[test]
fn a_backup_taken_while_writing_restores_to_the_same_answers() {
    let original = fresh_data_dir("backup-original");
    let port = server_port();
    let _server = KillOnDrop(common::start(&original, port));
    let (code, out, err) = run(&original, &["demo"]);
    assert_eq!(code, 0, "{out} {err}");

    // Another process imports, batch after batch, while the backup is taken.
    let stop = Arc::new(AtomicBool::new(false));
    let batches = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (stop, batches, dir) = (Arc::clone(&stop), Arc::clone(&batches), original.clone());
        std::thread::spawn(move || {
            let mut batch = 0;
            while !stop.load(Ordering::SeqCst) && batch < 90 {
                let csv = dir.join(format!("batch-{batch}.csv"));
                let rows: String = (0..10)
                    .map(|i| {
                        format!(
                            "steps,2026-01-{:02}T{:02}:{:02}:00Z,{},steps\n",
                            1 + batch / 24,
                            batch % 24,
                            i,
                            1000 + i
                        )
                    })
                    .collect();
                std::fs::write(&csv, format!("Indicator,Time,Value,Unit\n{rows}")).unwrap();
                let (code, out, err) = run(&dir, &["import", "csv", csv.to_str().unwrap(), "--user", "writer"]);
                assert_eq!(code, 0, "{out} {err}");
                batch += 1;
                batches.store(batch, Ordering::SeqCst);
            }
        })
    };
    let wait_for = |n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while batches.load(Ordering::SeqCst) < n {
            assert!(std::time::Instant::now() < deadline, "the writer stalled");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    wait_for(2);
    let before = batches.load(Ordering::SeqCst);
    let backup = original.join("backup");
    let (code, out, err) = run(&original, &["backup", backup.to_str().unwrap(), "--with-keys"]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("plaintext") && out.contains("copied as keys/token"), "{out}");
    wait_for(before + 2);
    stop.store(true, Ordering::SeqCst);
    writer.join().expect("the writer");

    // Into a new folder, where the server starts.
    let restored = fresh_data_dir("backup-restored");
    let _ = std::fs::remove_dir(&restored);
    let (code, out, err) = run(&restored, &["restore", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("uploaded files restored"), "{out}");
    for ((what, mine), (_, theirs)) in read_tools(&original).iter().zip(read_tools(&restored).iter()) {
        assert_eq!(mine, theirs, "{what} answers differently after the restore");
        // The demo's PDF is read by the server in the background; either answer is the same.
        let pending = mine.to_string().contains("still being read");
        assert!(mine["isError"] != true || pending, "{what}: {mine}");
    }
    // The writer's rows: every batch done before the backup began, none written after it ended.
    let (kept, all) = (steps(&restored), steps(&original));
    assert!(
        kept >= before * 10 && kept % 10 == 0 && kept < all,
        "{kept} rows restored of {all}, {before} batches before"
    );

    let port = server_port();
    let _again = KillOnDrop(common::start(&restored, port));
    // The keys came back too: a token the original's key signs works here.
    let token = common::token(&original, port, "demo");
    let session = common::session(port, &token);
    let profile = common::tool(port, &token, &session, "get_user_health_profile", json!({}));
    assert_eq!(profile, call(&original, "demo", "get_user_health_profile", &json!({}))["structuredContent"]);

    // A second restore into the folder in use is refused, as is a backup into a full folder.
    let (code, _, err) = run(&restored, &["restore", backup.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("is not empty"), "{err}");
    let (code, _, err) = run(&original, &["backup", backup.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("is not empty"), "{err}");
}

// A copy of `backup` with `change` applied, restored into a new folder: what restore said.
fn restore_altered(backup: &Path, name: &str, change: impl FnOnce(&Path)) -> String {
    let copy = fresh_data_dir(&format!("backup-{name}"));
    for entry in std::fs::read_dir(backup).unwrap() {
        let entry = entry.unwrap();
        let target = copy.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            for inner in std::fs::read_dir(entry.path()).unwrap() {
                let inner = inner.unwrap();
                std::fs::copy(inner.path(), target.join(inner.file_name())).unwrap();
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
    change(&copy);
    let into = fresh_data_dir(&format!("backup-{name}-into"));
    let (code, out, err) = run(&into, &["restore", copy.to_str().unwrap()]);
    assert_ne!(code, 0, "{name} was restored: {out}");
    assert_eq!(std::fs::read_dir(&into).unwrap().count(), 0, "{name}: nothing is copied from a bad backup");
    err
}

fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut manifest);
    std::fs::write(path, manifest.to_string()).unwrap();
}

#[test]
fn a_restore_refuses_an_incomplete_altered_or_newer_backup() {
    let data_dir = fresh_data_dir("backup-bad");
    let (code, out, err) = run(&data_dir, &["demo"]);
    assert_eq!(code, 0, "{out} {err}");
    let backup = data_dir.join("backup");
    let (code, out, err) = run(&data_dir, &["backup", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("not in the backup: keep it yourself"), "without --with-keys the keys are named: {out}");
    assert!(!backup.join("keys").exists());

    let err = restore_altered(&backup, "no-manifest", |dir| std::fs::remove_file(dir.join("manifest.json")).unwrap());
    assert!(err.contains("manifest.json") && err.contains("did not finish"), "{err}");
    let err = restore_altered(&backup, "changed-file", |dir| {
        let file = std::fs::read_dir(dir.join("files")).unwrap().next().unwrap().unwrap().path();
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[0] ^= 1;
        std::fs::write(file, bytes).unwrap();
    });
    assert!(err.contains("not the file the manifest names"), "{err}");
    let err = restore_altered(&backup, "missing-db", |dir| std::fs::remove_file(dir.join("mirobody.db")).unwrap());
    assert!(err.contains("mirobody.db is missing"), "{err}");
    let err = restore_altered(&backup, "newer", |dir| edit_manifest(dir, |m| m["schema_version"] = json!(9999)));
    assert!(err.contains("newer than this program's"), "{err}");
    let err = restore_altered(&backup, "escape", |dir| {
        edit_manifest(dir, |m| m["entries"][0]["path"] = json!("../../etc/passwd"));
    });
    assert!(err.contains("outside the backup"), "{err}");
    let err = restore_altered(&backup, "huge", |dir| {
        let big = vec![b' '; usize::try_from(mirobody_server::cli::backup::MAX_MANIFEST_BYTES).unwrap() + 1];
        std::fs::write(dir.join("manifest.json"), big).unwrap();
    });
    assert!(err.contains("larger than"), "{err}");

    let (code, _, err) = run(&data_dir, &["backup", data_dir.join("files/backup").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("inside the uploaded files"), "{err}");

    // PostgreSQL: the way to back it up, not a copy.
    let output = clean_command()
        .args(["backup", data_dir.join("pg").to_str().unwrap()])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .env("MIROBODY_BACKENDS__DATABASE_URL", "postgres://app:pw@db.invalid/mirobody")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && err.contains("pg_dump") && err.contains("pg_restore"), "{err}");
    assert!(!err.contains("pw@"), "no password in the message: {err}");
}

#[test]
fn encrypted_files_stay_encrypted_in_the_backup_and_need_their_key() {
    let key = [(
        "MIROBODY_BACKENDS__FILE_ENCRYPTION_KEY",
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    )];
    let data_dir = fresh_data_dir("backup-encrypted");
    let (code, out, err) = run_with(&data_dir, &key, &["demo"]);
    assert_eq!(code, 0, "{out} {err}");
    let backup = data_dir.join("backup");
    let (code, out, err) = run_with(&data_dir, &key, &["backup", backup.to_str().unwrap(), "--with-keys"]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("encrypted") && out.contains("key backends.file_encryption_key"), "named: {out}");
    let manifest: Value = serde_json::from_slice(&std::fs::read(backup.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["files_encrypted"], true, "{manifest}");
    let mut stored = 0;
    for file in std::fs::read_dir(backup.join("files")).unwrap() {
        let bytes = std::fs::read(file.unwrap().path()).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("Triglycerides"), "a file in the backup is plaintext");
        stored += 1;
    }
    assert!(stored >= 3, "the demo's files are in the backup");
    let key_text = key[0].1;
    assert!(
        !std::fs::read_dir(backup.join("keys"))
            .unwrap()
            .any(|file| { std::fs::read_to_string(file.unwrap().path()).unwrap_or_default().contains(key_text) })
    );

    // Restored with the key, the files read as before; without it, they do not.
    let lab = |dir: &Path, env: &[(&str, &str)]| {
        let files = call_with(dir, env, "demo", "list_files", &json!({}));
        let file =
            files["structuredContent"]["files"].as_array().unwrap().iter().find(|f| f["filename"] == "lab-results.txt");
        let file_key = file.expect("the lab results")["file_key"].clone();
        call_with(dir, env, "demo", "read_file", &json!({"file_key": file_key})).to_string()
    };
    let restored = fresh_data_dir("backup-encrypted-restored");
    let (code, out, err) = run_with(&restored, &key, &["restore", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(lab(&restored, &key).contains("Triglycerides"));
    let keyless = fresh_data_dir("backup-encrypted-keyless");
    let (code, out, err) = run(&keyless, &["restore", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out} {err}");
    assert!(!lab(&keyless, &[]).contains("Triglycerides"));
}
