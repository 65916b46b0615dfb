//! The store contract suite of `mirobody-health` (`testing::check_all`) on `SqlStore`: on
//! SQLite in a temp dir, and on PostgreSQL in a fresh schema when `MIROBODY_TEST_POSTGRES_URL`
//! is set. And the suite itself, on a store broken on purpose: it must fail there.

// Beside this file, not a test target of its own.
#[path = "store/broken.rs"]
mod broken;

use std::panic::AssertUnwindSafe;

use broken::{Break, BrokenStore};
use futures::FutureExt;
use mirobody_health::testing::check_all;
use mirobody_store::{BackendConfig, Dialect, open};

#[tokio::test]
async fn sqlite_keeps_every_store_contract() {
    let dir = tempfile::tempdir().unwrap();
    let backends = open(&BackendConfig::embedded(dir.path())).await.expect("the backends open on SQLite");
    assert_eq!(backends.sql().dialect(), Dialect::Sqlite);
    let store = backends.health();
    check_all(store.as_ref()).await;
    // The suite makes up its own ids: two runs at once on one database do not meet.
    tokio::join!(check_all(store.as_ref()), check_all(store.as_ref()));
    backends.close().await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use mirobody_health::testing::{check_all, unique_id};
    use mirobody_store::{BackendConfig, Dialect, open};

    /// The URL of an external service from `var`, or `None` after printing `SKIPPED: <why>`;
    /// with `MIROBODY_REQUIRE_EXTERNAL=1` a missing URL fails the test instead.
    fn external(var: &str, test: &str) -> Option<String> {
        match std::env::var(var) {
            Ok(url) if !url.is_empty() => Some(url),
            _ => {
                if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
                    panic!("{test}: {var} is not set, and MIROBODY_REQUIRE_EXTERNAL=1 requires it");
                }
                println!("SKIPPED: {test}: {var} is not set");
                None
            }
        }
    }

    /// A PostgreSQL schema that is dropped when this goes out of scope (even when a test fails).
    struct PgSchema {
        url: String,
        name: String,
    }

    impl Drop for PgSchema {
        fn drop(&mut self) {
            let (url, name) = (self.url.clone(), self.name.clone());
            // A runtime of its own: Drop cannot await, and the test's runtime may be gone.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    use sqlx::{Connection, Executor};
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&url).await {
                        let _ = conn.execute(format!("DROP SCHEMA IF EXISTS {name} CASCADE").as_str()).await;
                        let _ = conn.close().await;
                    }
                });
            })
            .join();
        }
    }

    #[tokio::test]
    async fn postgres_keeps_every_store_contract() {
        let test = "postgres::postgres_keeps_every_store_contract";
        let Some(url) = external("MIROBODY_TEST_POSTGRES_URL", test) else { return };
        // A schema name is an identifier: letters, digits and underscores only.
        let name = unique_id("mirobody_store_test").replace('-', "_");
        let schema = PgSchema { url: url.clone(), name };
        let dir = tempfile::tempdir().unwrap();
        let config = BackendConfig {
            database_url: Some(url),
            database_schema: Some(schema.name.clone()),
            ..BackendConfig::embedded(dir.path())
        };
        let backends = open(&config).await.expect("the backends open on PostgreSQL");
        assert_eq!(backends.sql().dialect(), Dialect::Postgres);
        let store = backends.health();
        check_all(store.as_ref()).await;
        tokio::join!(check_all(store.as_ref()), check_all(store.as_ref()));
        backends.close().await;
        drop(schema);
    }
}

/// The suite fails each store broken on purpose, naming the contract family it breaks.
#[tokio::test]
async fn the_suite_fails_a_store_that_breaks_a_contract() {
    let dir = tempfile::tempdir().unwrap();
    let backends = open(&BackendConfig::embedded(dir.path())).await.expect("the backends open on SQLite");
    for (broken, family) in Break::ALL {
        let store = BrokenStore::new(backends.sql().as_ref().clone(), broken);
        let outcome = AssertUnwindSafe(check_all(&store)).catch_unwind().await;
        let Err(payload) = outcome else { panic!("check_all passed a store broken with {broken:?}") };
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        assert!(
            message.contains(&format!("store contract `{family}`")),
            "the failure of {broken:?} names the contract `{family}`: {message}"
        );
    }
    // The one promise the first break breaks, named in the message.
    let store = BrokenStore::new(backends.sql().as_ref().clone(), Break::ObservationsForAnyone);
    let payload = AssertUnwindSafe(mirobody_health::testing::scoping(&store)).catch_unwind().await.unwrap_err();
    let message = payload.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("read another person's observations"), "{message}");
    backends.close().await;
}
