//! A million-record Apple Health export (20,000 days of the generator's recipe) imported into
//! SQLite, streamed from a file, with every type's counts checked. Ignored by default: it
//! takes minutes in a debug build. Run it with
//! `cargo test -p mirobody-store --test apple_health -- --ignored`.

use mirobody_health::testing::apple_health_at_scale;
use mirobody_store::{BackendConfig, open};

#[tokio::test]
#[ignore = "a million records: minutes in a debug build"]
async fn a_million_records_import_with_the_right_counts() {
    let dir = tempfile::tempdir().unwrap();
    let backends = open(&BackendConfig::embedded(dir.path())).await.expect("the backends open on SQLite");
    apple_health_at_scale(backends.health().as_ref(), 20_000).await;
    backends.close().await;
}
