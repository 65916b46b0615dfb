//! Uploads that are health data, through `Uploader::store_and_import` on SQLite and
//! PostgreSQL: the same file uploaded twice at once is stored once and its values once, and an
//! import past its time stops, says so and stores nothing.

use std::time::Duration;

use mirobody_tools::uploads::{UploadLimits, Uploader};

use crate::support::{Env, within};

const CSV: &str = "time,indicator,value,unit\n2026-03-01T08:00:00Z,heart rate,61,bpm\n\
                   2026-03-02T08:00:00Z,heart rate,64,bpm\n2026-03-03T08:00:00Z,heart rate,66,bpm\n";

async fn the_same_file_at_once_is_stored_once(env: Env) {
    let uploader = Uploader::new(env.backends.clone(), UploadLimits::default());
    let (a, b) = within("two uploads at once", async {
        tokio::join!(
            uploader.store_and_import("ana", "a.csv", None, CSV.as_bytes().to_vec()),
            uploader.store_and_import("ana", "b.csv", None, CSV.as_bytes().to_vec()),
        )
    })
    .await;
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.file_key, b.file_key, "one file");
    assert_eq!(env.backends.health().files("ana").await.unwrap().len(), 1);
    let (a, b) = (a.import.unwrap(), b.import.unwrap());
    assert_eq!(a.imported + b.imported, 3, "{a:?} {b:?}");
    assert_eq!(a.already_there + b.already_there, 3, "{a:?} {b:?}");
    // Another person's copy of the same bytes is theirs, under another key.
    let bob = uploader.store_and_import("bob", "a.csv", None, CSV.as_bytes().to_vec()).await.unwrap();
    assert_ne!(bob.file_key, a_key(&env).await);
    assert_eq!(bob.import.unwrap().imported, 3);
}

async fn a_key(env: &Env) -> String {
    env.backends.health().files("ana").await.unwrap()[0].file_key.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_file_uploaded_at_once_is_stored_once_on_sqlite() {
    the_same_file_at_once_is_stored_once(Env::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_file_uploaded_at_once_is_stored_once_on_postgres() {
    if let Some(env) = Env::postgres("the_same_file_uploaded_at_once_is_stored_once_on_postgres").await {
        the_same_file_at_once_is_stored_once(env).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_past_its_time_stops_and_says_so() {
    let env = Env::sqlite().await;
    let mut zip = std::io::Cursor::new(Vec::new());
    mirobody_health::apple::generate::write_zip(3, &mut zip).unwrap();
    let zip = zip.into_inner();
    let hurried = Uploader::new(env.backends.clone(), UploadLimits::default()).with_import_time(Duration::ZERO);
    let stopped = hurried.store_and_import("ana", "export.zip", None, zip.clone()).await.unwrap();
    let report = stopped.import.unwrap();
    assert!(!report.complete && report.imported == 0, "{report:?}");
    assert!(report.error.as_deref().unwrap_or_default().contains("took longer"), "{report:?}");
    assert!(report.message.contains("could not be imported whole"), "{report:?}");
    // The file is kept; imported again in time, all of it is new.
    let uploader = Uploader::new(env.backends.clone(), UploadLimits::default());
    let again = uploader.store_and_import("ana", "export.zip", None, zip).await.unwrap();
    assert!(again.already_stored);
    let report = again.import.unwrap();
    assert!(report.complete && report.imported > 0 && report.already_there == 0, "{report:?}");
}
