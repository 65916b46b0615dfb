//! The S3 backend against a real S3 server: `moto` in server mode (from PyPI, into a
//! virtualenv under `target/tmp`), set up here or reported skipped. Uploads through
//! `store_upload`, listing and reading through the tools, pre-signed URLs fetched without
//! credentials, deletion, and encryption at rest (the object in the bucket is not the file).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mirobody_store::StorageConfig;
use mirobody_testkit::{Moto, Peers};
use mirobody_tools::uploads::{UploadLimits, store_upload};
use serde_json::json;

use crate::support::Env;

fn start() -> Option<Moto> {
    let peers = Peers::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("external"));
    match Moto::start(&peers) {
        Ok(moto) => Some(moto),
        Err(why) => {
            mirobody_testkit::skip(&format!("S3 tests: {why}"));
            None
        }
    }
}

// What these tests ask of the server beyond the kit's.
trait Bucket {
    fn bucket(&self, name: &str) -> StorageConfig;
    fn raw(&self, bucket: &str, key: &str) -> Vec<u8>;
    fn keys(&self, bucket: &str) -> String;
}

impl Bucket for Moto {
    fn bucket(&self, name: &str) -> StorageConfig {
        self.create_bucket(name);
        StorageConfig::S3 {
            bucket: name.into(),
            endpoint: Some(self.endpoint.clone()),
            region: Some("us-east-1".into()),
            access_key_id: Some("test".into()),
            secret_access_key: Some("test".into()),
            allow_http: true,
        }
    }

    // The object as the bucket holds it.
    fn raw(&self, bucket: &str, key: &str) -> Vec<u8> {
        self.boto3(&format!("sys.stdout.buffer.write(s3.get_object(Bucket='{bucket}', Key='{key}')['Body'].read())"))
    }

    fn keys(&self, bucket: &str) -> String {
        String::from_utf8(self.boto3(&format!(
            "print(sorted(o['Key'] for o in s3.list_objects_v2(Bucket='{bucket}').get('Contents', [])))"
        )))
        .unwrap()
    }
}

// A GET of `url` with no credentials: (status, body).
fn fetch(python: &Path, url: &str) -> (u16, Vec<u8>) {
    let script = "import sys, urllib.request, urllib.error\ntry:\n    r = urllib.request.urlopen(sys.argv[1])\n    \
                  print(r.status)\n    sys.stdout.flush()\n    sys.stdout.buffer.write(r.read())\nexcept \
                  urllib.error.HTTPError as e:\n    print(e.code)";
    let output = Command::new(python).args(["-c", script, url]).output().expect("python runs");
    let (status, body) = output.stdout.split_at(output.stdout.iter().position(|&b| b == b'\n').unwrap() + 1);
    (String::from_utf8_lossy(status).trim().parse().unwrap(), body.to_vec())
}

const NOTES: &str = "Blood pressure 128/82, resting pulse 64. Keep walking daily.";

#[tokio::test]
async fn uploads_listing_reads_and_presigned_urls_on_s3() {
    let Some(moto) = start() else { return };
    let storage = moto.bucket("plain");
    let env = Env::with(|c| mirobody_store::BackendConfig { storage, ..c }).await;
    let limits = UploadLimits::default();
    let notes = store_upload(&env.backends, &limits, "alice", "notes.txt", None, NOTES.as_bytes().to_vec())
        .await
        .expect("stored on S3");
    store_upload(&env.backends, &limits, "bob", "bobs.txt", None, b"bob's own".to_vec()).await.unwrap();
    let quoted = format!("'{}'", notes.file_key);
    assert!(moto.keys("plain").contains(&quoted), "the object is in the bucket");
    assert_eq!(moto.raw("plain", &notes.file_key), NOTES.as_bytes(), "unencrypted: the object is the file");

    let alice = env.user("alice").await;
    let listed = alice.tool("list_files", json!({})).await;
    let files = listed.ok()["files"].as_array().unwrap().clone();
    assert_eq!(files.len(), 1, "only alice's own file: {files:?}");
    assert_eq!(files[0]["file_key"], notes.file_key.as_str());
    let read = alice.tool("read_file", json!({"file_key": notes.file_key})).await;
    assert_eq!(read.ok()["content"], NOTES);

    // The store pre-signs its own URLs; one works without credentials.
    let storage = env.backends.storage().unwrap();
    let url = storage.signed_url(&notes.file_key, Duration::from_secs(60)).await.unwrap();
    assert!(url.starts_with(&moto.endpoint) && url.contains("X-Amz-Signature="), "{url}");
    assert_eq!(fetch(moto.python(), &url), (200, NOTES.as_bytes().to_vec()));

    storage.delete(&notes.file_key).await.unwrap();
    assert!(storage.get(&notes.file_key).await.is_err(), "deleted");
    assert!(!moto.keys("plain").contains(&quoted), "gone from the bucket");
}

#[tokio::test]
async fn files_on_s3_are_encrypted_at_rest() {
    let Some(moto) = start() else { return };
    let storage = moto.bucket("sealed");
    let key = "ab".repeat(32);
    let env = Env::with(|c| mirobody_store::BackendConfig { storage, file_encryption_key: Some(key), ..c }).await;
    let notes =
        store_upload(&env.backends, &UploadLimits::default(), "alice", "notes.txt", None, NOTES.as_bytes().to_vec())
            .await
            .expect("stored on S3");
    let raw = moto.raw("sealed", &notes.file_key);
    assert!(!raw.is_empty());
    assert!(!raw.windows(16).any(|w| NOTES.as_bytes().windows(16).any(|n| n == w)), "no plaintext in the bucket");

    let alice = env.user("alice").await;
    let read = alice.tool("read_file", json!({"file_key": notes.file_key})).await;
    assert_eq!(read.ok()["content"], NOTES, "decrypted on the way out");
    // A pre-signed S3 URL would hand out ciphertext: the server signs its own instead.
    let url = env.backends.storage().unwrap().signed_url(&notes.file_key, Duration::from_secs(60)).await.unwrap();
    assert!(url.starts_with("http://localhost/files"), "{url}");
    let (path, query) = url.strip_prefix("http://localhost/files").unwrap().split_once('?').unwrap();
    let verified = env.backends.verify_signed_url(path, query).expect("the server's own URL verifies");
    assert_eq!(env.backends.storage().unwrap().get(&verified).await.unwrap(), NOTES.as_bytes());
}
