//! The `file_index` family of the store contract suite.

use std::time::Duration;

use crate::records::{FileRecord, TextState};
use crate::store::{FileQuota, HealthData};
use crate::text::parse_time_ms;

use super::support::{ok, unique_id};

const FAMILY: &str = "file_index";

/// The file index: `add_file_within` keeps an owner within a quota of files and bytes, writing
/// nothing when it refuses; `file`/`files` read an owner's own files only, newest first; and the
/// queue of texts to read: `claim_text` leases the oldest waiting file (a second claim within the
/// lease gets nothing, one after it takes the file again), `settle_text` settles it to text, no
/// text or unreadable, for its owner only, and the state reads back.
///
/// Panics, naming the family and the promise, at the first one the store breaks.
pub async fn file_index(store: &dyn HealthData) {
    the_quota_counts_files(store).await;
    the_quota_counts_bytes(store).await;
    the_text_queue_leases_and_settles(store).await;
}

/// A file of `size` bytes uploaded on day `day` of January 2026, its text in `state`.
fn file(size: u64, day: u32, state: TextState) -> FileRecord {
    let file_key = unique_id("file");
    FileRecord {
        filename: format!("{file_key}.pdf"),
        file_key,
        mime_type: "application/pdf".into(),
        size,
        uploaded_at: format!("2026-01-{day:02}T00:00:00Z"),
        text_key: None,
        text_state: state,
    }
}

/// Whether `read` is `stored` as it was added (the time compared as a time, not as text).
fn same_file(read: &FileRecord, stored: &FileRecord) -> bool {
    let time = |f: &FileRecord| parse_time_ms(&f.uploaded_at);
    FileRecord { uploaded_at: String::new(), ..read.clone() }
        == FileRecord { uploaded_at: String::new(), ..stored.clone() }
        && time(read).is_some()
        && time(read) == time(stored)
}

async fn add_within(store: &dyn HealthData, owner: &str, file: &FileRecord, quota: FileQuota) -> bool {
    ok(FAMILY, "add_file_within", store.add_file_within(owner, file, quota).await)
}

async fn the_quota_counts_files(store: &dyn HealthData) {
    let (owner, other) = (unique_id("files-owner"), unique_id("files-other"));
    let quota = FileQuota { max_files: 2, max_bytes: u64::MAX };
    let (older, newer, refused) =
        (file(10, 1, TextState::Settled), file(20, 2, TextState::Settled), file(30, 3, TextState::Settled));
    assert!(
        add_within(store, &owner, &older, quota).await,
        "store contract `{FAMILY}`: a first file refused within the quota"
    );
    assert!(
        add_within(store, &owner, &newer, quota).await,
        "store contract `{FAMILY}`: a second file refused within a quota of two"
    );
    assert!(
        !add_within(store, &owner, &refused, quota).await,
        "store contract `{FAMILY}`: a third file stored past a quota of two files"
    );
    let found = ok(FAMILY, "file", store.file(&owner, &refused.file_key).await);
    assert_eq!(found, None, "store contract `{FAMILY}`: a refused file was written");
    assert_eq!(
        ok(FAMILY, "file_usage", store.file_usage(&owner).await),
        (2, 30),
        "store contract `{FAMILY}`: file_usage after a refusal"
    );

    let listed = ok(FAMILY, "files", store.files(&owner).await);
    assert!(
        listed.len() == 2 && same_file(&listed[0], &newer) && same_file(&listed[1], &older),
        "store contract `{FAMILY}`: files lists the owner's files newest first, as stored: {listed:?}"
    );
    let read = ok(FAMILY, "file", store.file(&owner, &older.file_key).await);
    assert!(
        read.as_ref().is_some_and(|f| same_file(f, &older)),
        "store contract `{FAMILY}`: file reads back what was stored: {read:?}"
    );
    // The quota is the owner's: another has their own.
    assert!(
        add_within(store, &other, &refused, quota).await,
        "store contract `{FAMILY}`: another owner was refused for the first owner's files"
    );
    let theirs = ok(FAMILY, "file", store.file(&owner, &refused.file_key).await);
    assert_eq!(theirs, None, "store contract `{FAMILY}`: file found another owner's file");
    assert!(
        ok(FAMILY, "files", store.files(&other).await).iter().all(|f| f.file_key == refused.file_key),
        "store contract `{FAMILY}`: files lists someone else's file"
    );
}

async fn the_quota_counts_bytes(store: &dyn HealthData) {
    let owner = unique_id("files-bytes");
    let quota = FileQuota { max_files: 10, max_bytes: 100 };
    assert!(
        add_within(store, &owner, &file(60, 1, TextState::Settled), quota).await,
        "store contract `{FAMILY}`: 60 bytes refused within 100"
    );
    let past = file(50, 2, TextState::Settled);
    assert!(
        !add_within(store, &owner, &past, quota).await,
        "store contract `{FAMILY}`: 110 bytes stored within a quota of 100"
    );
    assert_eq!(
        ok(FAMILY, "file", store.file(&owner, &past.file_key).await),
        None,
        "store contract `{FAMILY}`: a file refused for its bytes was written"
    );
    assert!(
        add_within(store, &owner, &file(40, 3, TextState::Settled), quota).await,
        "store contract `{FAMILY}`: a file taking the owner to exactly the quota was refused"
    );
    assert!(
        !add_within(store, &owner, &file(1, 4, TextState::Settled), quota).await,
        "store contract `{FAMILY}`: a byte stored past the quota"
    );
    assert_eq!(
        ok(FAMILY, "file_usage", store.file_usage(&owner).await),
        (2, 100),
        "store contract `{FAMILY}`: file_usage counts what was stored only"
    );
}

async fn claim(store: &dyn HealthData, owner: &str, lease_ms: i64) -> Option<crate::store::ClaimedText> {
    ok(FAMILY, "claim_text", store.claim_text(owner, lease_ms).await)
}

async fn state_of(store: &dyn HealthData, owner: &str, file: &FileRecord) -> (TextState, Option<String>) {
    let read = ok(FAMILY, "file", store.file(owner, &file.file_key).await);
    let read = read.unwrap_or_else(|| panic!("store contract `{FAMILY}`: a file in the text queue is gone"));
    (read.text_state, read.text_key)
}

async fn the_text_queue_leases_and_settles(store: &dyn HealthData) {
    let (owner, other) = (unique_id("files-queue"), unique_id("files-other"));
    let (first, second, third) =
        (file(1, 1, TextState::Waiting), file(1, 2, TextState::Waiting), file(1, 3, TextState::Waiting));
    let settled = file(1, 4, TextState::Settled);
    for f in [&second, &first, &settled, &third] {
        ok(FAMILY, "add_file", store.add_file(&owner, f).await);
    }
    let waiting = ok(FAMILY, "owners_waiting_for_text", store.owners_waiting_for_text().await);
    assert_eq!(
        waiting.iter().filter(|o| **o == owner).count(),
        1,
        "store contract `{FAMILY}`: owners_waiting_for_text names an owner with files waiting once: {waiting:?}"
    );
    assert_eq!(
        claim(store, &other, 60_000).await,
        None,
        "store contract `{FAMILY}`: claim_text gave someone else's file"
    );

    let claimed = claim(store, &owner, 60_000).await;
    let claimed = claimed.unwrap_or_else(|| panic!("store contract `{FAMILY}`: claim_text found no waiting file"));
    assert_eq!(
        (claimed.file_key.as_str(), claimed.mime_type.as_str(), claimed.attempts),
        (first.file_key.as_str(), "application/pdf", 1),
        "store contract `{FAMILY}`: the first claim takes the oldest waiting file"
    );
    let next = claim(store, &owner, 60_000).await.map(|c| c.file_key);
    assert_eq!(
        next.as_deref(),
        Some(second.file_key.as_str()),
        "store contract `{FAMILY}`: a second claim takes the next file, not the leased one"
    );
    let short = claim(store, &owner, 1).await.map(|c| (c.file_key, c.attempts));
    assert_eq!(
        short,
        Some((third.file_key.clone(), 1)),
        "store contract `{FAMILY}`: a third claim takes the third file"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let again = claim(store, &owner, 60_000).await.map(|c| (c.file_key, c.attempts));
    assert_eq!(
        again,
        Some((third.file_key.clone(), 2)),
        "store contract `{FAMILY}`: a claim whose lease passed is taken again, its attempts counted"
    );
    assert_eq!(
        claim(store, &owner, 60_000).await,
        None,
        "store contract `{FAMILY}`: a claim within every file's lease got one"
    );
    assert_eq!(
        state_of(store, &owner, &first).await,
        (TextState::Waiting, None),
        "store contract `{FAMILY}`: a claimed file is still waiting"
    );

    // Settling is its owner's: another's settle changes nothing.
    ok(FAMILY, "settle_text", store.settle_text(&other, &first.file_key, Ok(Some("stolen.txt"))).await);
    assert_eq!(
        state_of(store, &owner, &first).await,
        (TextState::Waiting, None),
        "store contract `{FAMILY}`: settle_text by someone else settled the owner's file"
    );
    let text_key = format!("{}.txt", first.file_key);
    ok(FAMILY, "settle_text", store.settle_text(&owner, &first.file_key, Ok(Some(&text_key))).await);
    assert_eq!(
        state_of(store, &owner, &first).await,
        (TextState::Settled, Some(text_key)),
        "store contract `{FAMILY}`: a file settled with its text"
    );
    ok(FAMILY, "settle_text", store.settle_text(&owner, &second.file_key, Err("password protected")).await);
    let unreadable = TextState::Unreadable("password protected".into());
    assert_eq!(
        state_of(store, &owner, &second).await,
        (unreadable, None),
        "store contract `{FAMILY}`: a file settled as unreadable"
    );
    ok(FAMILY, "settle_text", store.settle_text(&owner, &third.file_key, Ok(None)).await);
    assert_eq!(
        state_of(store, &owner, &third).await,
        (TextState::Settled, None),
        "store contract `{FAMILY}`: a file settled with no text"
    );
    assert_eq!(
        state_of(store, &owner, &settled).await,
        (TextState::Settled, None),
        "store contract `{FAMILY}`: a file stored settled changed"
    );

    let waiting = ok(FAMILY, "owners_waiting_for_text", store.owners_waiting_for_text().await);
    assert!(
        !waiting.contains(&owner),
        "store contract `{FAMILY}`: owners_waiting_for_text names an owner with nothing waiting"
    );
    assert_eq!(claim(store, &owner, 60_000).await, None, "store contract `{FAMILY}`: claim_text took a settled file");
}
