//! Files on disk are private: after `mirobody_store::open` on a fresh data folder, and after an
//! upload, the folder and uploads folder are `0700`, and the database, its `-wal`/`-shm`
//! files, the uploaded file and the generated key `0600`; an older data folder's database and
//! uploads are made owner-only when opened.

#![cfg(unix)]

use mirobody_health::prelude::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use mirobody_store::{BackendConfig, open};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

// Opens the embedded backends in `data`, stores one file, and checks every mode.
async fn open_upload_and_check(data: &Path) {
    let config = BackendConfig { signed_url_base: "http://localhost/files".into(), ..BackendConfig::embedded(data) };
    let backends = open(&config).await.expect("the backends open");
    backends.sql().upsert_user("u1", None, None).await.unwrap();
    let storage = backends.storage().expect("local storage");
    storage.put("u1/lab.pdf", b"%PDF-1.7".to_vec(), "application/pdf").await.unwrap();
    // While the database is open, so its -wal and -shm files exist.
    for file in ["mirobody.db", "mirobody.db-wal", "mirobody.db-shm", "signing.key", "files/u1/lab.pdf"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    assert_eq!(mode(&data.join("files")), 0o700, "the uploads folder");
    backends.close().await;
}

#[tokio::test]
async fn a_new_data_folder_and_everything_in_it_are_owner_only() {
    let root = tempfile::tempdir().unwrap();
    // Two levels that do not exist yet: both are made owner-only.
    let data = root.path().join("srv/mirobody");
    open_upload_and_check(&data).await;
    assert_eq!(mode(&data), 0o700, "the data folder");
    assert_eq!(mode(&root.path().join("srv")), 0o700, "a missing parent of it");
    let names: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
}

#[tokio::test]
async fn an_older_data_folder_is_made_private_where_it_is_mirobody_s_own() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    open_upload_and_check(&data).await;
    // As an earlier version left it, with a umask of 022.
    let widen = |path: &Path, mode: u32| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    widen(&data, 0o755);
    widen(&data.join("files"), 0o755);
    widen(&data.join("mirobody.db"), 0o644);
    open_upload_and_check(&data).await;
    // The data folder may be the operator's choice, shared with others: reported, not changed.
    assert_eq!(mode(&data), 0o755);
}
