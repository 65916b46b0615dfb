//! A person erased from `SqlStore`: every table that keeps anything of theirs, on SQLite in a
//! temp dir and on PostgreSQL in a fresh schema when `MIROBODY_TEST_POSTGRES_URL` is set. The
//! person is given a row in every personal table first (checked by the same scan), so the scan
//! afterwards proves each table was emptied of them; another person's data stays.

use mirobody_core::backend::NewMemory;
use mirobody_health::fhir::{EntryInput, ImportItem, parse_import};
use mirobody_health::testing::unique_id;
use mirobody_health::{FileRecord, HealthStore, PersonalData, TextState};
use mirobody_ports::{
    AccessKind, AccessOutcome, Account, AuthorizationCode, Grant, IdentityLink, OAuthClient, Passkey, PasskeyCeremony,
    SignupToken, TaskRecord, WebSession,
};
use mirobody_store::{BackendConfig, OpenedBackends, PERSONAL_TABLES, TABLES_OF_NO_ONE, open};
use serde_json::json;
use sha2::{Digest, Sha256};

/// A value only Ada's glucose reading holds (the versions it replaced too).
const KNOWN_NUMBER: f64 = 5.4321;
/// A value only the erased person's data holds.
const KNOWN_VALUE: &str = "Zanzibarite";

fn hash(what: &str) -> [u8; 32] {
    Sha256::digest(what.as_bytes()).into()
}

/// The database read beside the store, for the scan.
enum Db {
    Sqlite(sqlx::SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

impl Db {
    /// Every table of the schema but SQLite's own and the full-text index's shadow tables.
    async fn tables(&self) -> Vec<String> {
        match self {
            Db::Sqlite(pool) => sqlx::query_scalar(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
                 AND name NOT LIKE 'memories_fts%' ORDER BY name",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            #[cfg(feature = "postgres")]
            Db::Postgres(pool) => sqlx::query_scalar(
                "SELECT table_name::TEXT FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
        }
    }

    /// How many rows of `table` hold `needle` in any column's text.
    async fn rows_holding(&self, table: &str, needle: &str) -> i64 {
        let like = format!("%{needle}%");
        match self {
            Db::Sqlite(pool) => {
                let columns: Vec<String> =
                    sqlx::query_scalar(&format!("SELECT name FROM pragma_table_info('{table}')"))
                        .fetch_all(pool)
                        .await
                        .unwrap();
                let any = columns.iter().map(|c| format!("CAST({c} AS TEXT) LIKE $1")).collect::<Vec<_>>().join(" OR ");
                sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE {any}"))
                    .bind(&like)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(pool) => {
                sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} t WHERE row_to_json(t)::TEXT LIKE $1"))
                    .bind(&like)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }
        }
    }

    /// The tables holding `needle`, each with its count.
    async fn holding(&self, needle: &str) -> Vec<(String, i64)> {
        let mut found = Vec::new();
        for table in self.tables().await {
            let n = self.rows_holding(&table, needle).await;
            if n > 0 {
                found.push((table, n));
            }
        }
        found
    }
}

/// `id` (email `<id>@example.com`) gets a row in every personal table, and shares and
/// invitations both ways with `other`.
async fn fill(backends: &OpenedBackends, id: &str, other: &str) {
    let email = format!("{id}@example.com");
    let now = mirobody_core::clock::now_ms();
    let later = now + 86_400_000;
    let account = Account {
        id: id.into(),
        email: email.clone(),
        display_name: Some("Ada".into()),
        password_hash: None,
        disabled: false,
        created_at_ms: now,
    };
    assert!(backends.accounts().create_account(&account).await.unwrap());
    let health = backends.health();
    health.upsert_user(id, Some("Ada"), Some(&email)).await.unwrap();
    let bundle = json!({"resourceType": "Bundle", "type": "collection", "entry": [
        {"resource": {"resourceType": "Observation", "id": format!("{id}-glucose"), "status": "final",
            "meta": {"versionId": "1"},
            "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0", "display": "Glucose"}]},
            "effectiveDateTime": "2024-01-02T08:00:00Z", "note": [{"text": KNOWN_VALUE}],
            "valueQuantity": {"value": KNOWN_NUMBER, "unit": "mmol/L"}}},
        {"resource": {"resourceType": "Condition", "id": format!("{id}-asthma"), "meta": {"versionId": "1"},
            "code": {"text": format!("Asthma {KNOWN_VALUE}")}, "clinicalStatus": {"text": "active"}}},
    ]});
    let request = parse_import(&bundle).unwrap();
    let items: Vec<&ImportItem> = request
        .entries
        .iter()
        .filter_map(|entry| match entry {
            EntryInput::Item(item) => Some(item),
            _ => None,
        })
        .collect();
    assert_eq!(items.len(), 2);
    let file_key = format!("up-{}.json", hex(id));
    health.import_items(id, &items, Some(&file_key)).await.unwrap().unwrap();
    // Corrected versions of both: the first ones move to the history tables.
    let mut corrected = bundle.clone();
    for entry in corrected["entry"].as_array_mut().unwrap() {
        entry["resource"]["meta"] = json!({"versionId": "2"});
    }
    corrected["entry"][0]["resource"]["valueQuantity"]["value"] = json!(5.6);
    corrected["entry"][1]["resource"]["clinicalStatus"] = json!({"text": "resolved"});
    let request = parse_import(&corrected).unwrap();
    let items: Vec<&ImportItem> = request
        .entries
        .iter()
        .filter_map(|entry| match entry {
            EntryInput::Item(item) => Some(item),
            _ => None,
        })
        .collect();
    let changed = health.import_items(id, &items, Some(&file_key)).await.unwrap().unwrap();
    assert_eq!(changed, vec![true, true], "both corrections replace what was stored");
    let file = FileRecord {
        file_key: file_key.clone(),
        filename: format!("{KNOWN_VALUE}.json"),
        mime_type: "application/json".into(),
        size: 10,
        uploaded_at: "2024-01-02T08:00:00Z".into(),
        text_key: Some(format!("{file_key}.trans")),
        text_state: TextState::Settled,
    };
    health.add_file(id, &file).await.unwrap();
    health.set_conversation_summary(id, &format!("{id}-session"), KNOWN_VALUE).await.unwrap();
    health.share_health(id, other, Some("Ada")).await.unwrap();
    health.share_health(other, id, Some("Bob")).await.unwrap();
    health.invite_to_circle(id, &format!("{other}@example.com"), None).await.unwrap();
    health.invite_to_circle(other, &email, None).await.unwrap();
    let link = health.insert_upload_link(&hash(&format!("{id}-link")), id, now, later, 1, 10, now).await.unwrap();
    assert_eq!(link, mirobody_health::LinkInsert::Stored);
    let memory = backends.memory().unwrap();
    let new = NewMemory { text: format!("likes {KNOWN_VALUE}"), kind: "fact".into(), session_id: None };
    memory.remember(id, new).await.unwrap();
    backends.secrets().put_secret(id, &hash(&format!("{id}-secret")), None, None).await.unwrap();
    backends.access_log().record(id, None, AccessKind::Tool, "whoami", AccessOutcome::Ok, 1).await.unwrap();
    // The other reads this person's data: the entry names them as its subject.
    let log = backends.access_log();
    log.record(other, Some(id), AccessKind::Tool, "family_health", AccessOutcome::Ok, 1).await.unwrap();
    let session = WebSession { account_id: id.into(), created_at_ms: now, expires_at_ms: later };
    backends.web_sessions().create_web_session(&hash(&format!("{id}-web")), &session).await.unwrap();
    // A client is no one's: its id names nobody.
    let client_id = unique_id("client");
    let client = OAuthClient {
        client_id: client_id.clone(),
        client_name: Some("An app".into()),
        client_uri: None,
        redirect_uris: vec!["https://app.example/cb".into()],
        secret_hash: None,
        registered_from: "127.0.0.1".into(),
        created_at_ms: now,
    };
    let oauth = backends.oauth();
    oauth.put_client(&client).await.unwrap();
    // A grant's id is random and names no one (it stays, revoked, after an erase).
    let grant_id = format!("grant-{}", hex(&format!("{id}-grant")).chars().rev().collect::<String>());
    let grant = Grant {
        id: grant_id.clone(),
        account_id: id.into(),
        client_id: client_id.clone(),
        scopes: vec![],
        resource: "https://mcp.example/mcp".into(),
        created_at_ms: now,
        last_used_at_ms: None,
        revoked_at_ms: None,
    };
    oauth.create_grant(&grant).await.unwrap();
    let code = AuthorizationCode {
        grant_id: grant_id.clone(),
        client_id,
        redirect_uri: "https://app.example/cb".into(),
        code_challenge: "challenge".into(),
        expires_at_ms: later,
    };
    oauth.put_code(&hash(&format!("{id}-code")), &code).await.unwrap();
    oauth.put_refresh_token(&hash(&format!("{id}-refresh")), &grant_id, later).await.unwrap();
    let signup = SignupToken {
        email: format!("friend-of-{id}@example.com"),
        invited_by: id.into(),
        created_at_ms: now,
        expires_at_ms: later,
    };
    backends.accounts().create_signup_token(&hash(&format!("{id}-signup")), &signup, 10).await.unwrap();
    let passkeys = backends.passkeys();
    let passkey = Passkey {
        credential_id: format!("{id}-cred").into_bytes(),
        account_id: id.into(),
        credential: "{}".into(),
        name: "phone".into(),
        created_at_ms: now,
        last_used_at_ms: None,
    };
    assert!(passkeys.add_passkey(&passkey, 10).await.unwrap());
    let ceremony = PasskeyCeremony {
        purpose: "register".into(),
        owner: id.into(),
        state: "{}".into(),
        created_at_ms: now,
        expires_at_ms: later,
    };
    assert!(passkeys.put_ceremony(&hash(&format!("{id}-ceremony")), &ceremony, 10).await.unwrap());
    let link = IdentityLink {
        provider: "idp".into(),
        subject: format!("{id}-subject"),
        account_id: id.into(),
        email: Some(email.clone()),
        created_at_ms: now,
    };
    assert!(backends.identities().link_identity(&link).await.unwrap());
    let task = TaskRecord::new(format!("{id}-task"), format!("user:{id}"), "whoami".into(), now, 60_000, 60_000);
    backends.task_store().save(&task).await.unwrap();
}

fn hex(id: &str) -> String {
    id.bytes().map(|b| format!("{b:02x}")).collect()
}

async fn erases_every_trace(backends: &OpenedBackends, db: &Db) {
    let run = unique_id("erase").to_lowercase();
    let (ada, bob) = (format!("{run}-ada"), format!("{run}-bob"));
    fill(backends, &ada, &bob).await;
    let bob_data = json!({"resourceType": "Observation", "id": format!("{bob}-weight"), "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "29463-7", "display": "Body weight"}]},
        "effectiveDateTime": "2024-01-03T08:00:00Z", "valueQuantity": {"value": 80, "unit": "kg"}});
    backends.health().add_observations(&bob, &[bob_data]).await.unwrap();

    // Before: every personal table holds Ada (those keyed by her grant, its id).
    let grant = format!("grant-{}", hex(&format!("{ada}-grant")).chars().rev().collect::<String>());
    let mut before: Vec<String> = db.holding(&ada).await.into_iter().map(|(table, _)| table).collect();
    before.extend(db.holding(&grant).await.into_iter().map(|(table, _)| table));
    // A replaced version's values name no one: they hold the number.
    before.extend(db.holding(&KNOWN_NUMBER.to_string()).await.into_iter().map(|(table, _)| table));
    for (table, _) in PERSONAL_TABLES {
        assert!(before.iter().any(|t| t == table), "the fixture gives Ada a row in {table}: {before:?}");
    }
    assert!(!db.holding(KNOWN_VALUE).await.is_empty());

    let erased = backends.sql().erase_person(&ada).await.unwrap();
    assert_eq!(erased.grants, vec![grant.clone()]);
    // Only the revoked grant itself is left, naming no one; its codes and tokens are gone.
    let left: Vec<String> = db.holding(&grant).await.into_iter().map(|(table, _)| table).collect();
    assert_eq!(left, vec!["oauth_grants".to_owned()]);
    // Every instance learns that the grant is revoked, as of any revoked grant.
    let revoked = backends.oauth().revoked_grants_since(0).await.unwrap();
    assert!(revoked.contains(&grant), "{revoked:?}");
    let file_key = format!("up-{}.json", hex(&ada));
    assert!(erased.objects.contains(&file_key) && erased.objects.contains(&format!("{file_key}.trans")));

    for needle in [ada.as_str(), &format!("{ada}@example.com"), &hex(&ada), KNOWN_VALUE, &KNOWN_NUMBER.to_string()] {
        assert_eq!(db.holding(needle).await, vec![], "nothing of Ada's is left: {needle}");
    }
    // Bob keeps his own data, and sees nothing of Ada's at his next read.
    let health = backends.health();
    assert_eq!(health.observations(&bob, &bob, 10).await.unwrap().unwrap().total, 1);
    assert!(health.observations(&bob, &ada, 10).await.unwrap().is_none());
    let circle = health.circle(&bob).await.unwrap();
    assert!(circle.shared_with_me.is_empty() && circle.my_readers.is_empty(), "{circle:?}");
    assert!(circle.invites_sent.is_empty() && circle.invites_received.is_empty(), "{circle:?}");
    // Erasing again finds nothing and fails nothing.
    assert_eq!(backends.sql().erase_person(&ada).await.unwrap().objects, Vec::<String>::new());
}

async fn deletes_one_value_and_one_file(backends: &OpenedBackends) {
    let run = unique_id("del").to_lowercase();
    let (ada, bob) = (format!("{run}-ada"), format!("{run}-bob"));
    fill(backends, &ada, &bob).await;
    let store = backends.sql();
    // Another person's value and file are not found, as ones that do not exist.
    assert!(!store.delete_value(&bob, &format!("Observation/{ada}-glucose")).await.unwrap());
    let file_key = format!("up-{}.json", hex(&ada));
    assert_eq!(store.delete_file_entry(&bob, &file_key).await.unwrap(), None);
    assert!(store.delete_value(&ada, &format!("Condition/{ada}-asthma")).await.unwrap());
    assert!(store.health_records(&ada, &ada).await.unwrap().unwrap().is_empty());
    assert!(!store.delete_value(&ada, &format!("Condition/{ada}-asthma")).await.unwrap(), "gone already");
    // The file goes with the values imported from it.
    let gone = store.delete_file_entry(&ada, &file_key).await.unwrap().expect("Ada's file");
    assert_eq!(gone.text_key, Some(format!("{file_key}.trans")));
    assert_eq!(store.observations(&ada, &ada, 10).await.unwrap().unwrap().total, 0);
    assert!(store.latest_values(&ada, &ada).await.unwrap().unwrap().is_empty());
    assert!(store.files(&ada).await.unwrap().is_empty());
}

async fn pages_every_resource(backends: &OpenedBackends) {
    let run = unique_id("page").to_lowercase();
    let (ada, bob) = (format!("{run}-ada"), format!("{run}-bob"));
    fill(backends, &ada, &bob).await;
    let store = backends.sql();
    let mut after = None;
    let mut seen = Vec::new();
    loop {
        let page = store.stored_resources(&ada, after, 1).await.unwrap();
        let Some(last) = page.last() else { break };
        assert_eq!(page.len(), 1, "a page holds at most its limit");
        after = Some(last.cursor);
        seen.extend(page.into_iter().map(|r| r.source_id.unwrap()));
    }
    assert_eq!(seen, vec![format!("Observation/{ada}-glucose"), format!("Condition/{ada}-asthma")]);
    assert!(store.stored_resources(&bob, None, 10).await.unwrap().is_empty(), "Bob holds nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_erases_a_person_from_every_table() {
    let dir = tempfile::tempdir().unwrap();
    let config = BackendConfig::embedded(dir.path());
    let backends = open(&config).await.expect("the backends open on SQLite");
    let db = Db::Sqlite(sqlx::SqlitePool::connect(&config.database_url()).await.unwrap());
    erases_every_trace(&backends, &db).await;
    deletes_one_value_and_one_file(&backends).await;
    pages_every_resource(&backends).await;
    backends.close().await;
}

/// Every table is either erased per person or listed as no one's: a new table with a person's
/// column fails here until `erase_person` deletes from it.
#[tokio::test]
async fn every_table_is_erased_or_holds_no_ones_data() {
    let dir = tempfile::tempdir().unwrap();
    let config = BackendConfig::embedded(dir.path());
    let backends = open(&config).await.expect("the backends open on SQLite");
    let db = Db::Sqlite(sqlx::SqlitePool::connect(&config.database_url()).await.unwrap());
    let tables = db.tables().await;
    for table in &tables {
        let personal = PERSONAL_TABLES.iter().any(|(name, _)| name == table);
        let no_ones = TABLES_OF_NO_ONE.iter().any(|(name, _)| name == table);
        assert!(
            personal ^ no_ones,
            "table {table} must be in exactly one of PERSONAL_TABLES (and erased by SqlStore::erase_person) \
             or TABLES_OF_NO_ONE (mirobody-store/src/sql/erase.rs)"
        );
    }
    for (name, columns) in PERSONAL_TABLES {
        assert!(tables.contains(&(*name).to_owned()), "{name} is a table");
        for column in *columns {
            let found: i64 = sqlx::query_scalar(&format!(
                "SELECT COUNT(*) FROM pragma_table_info('{name}') WHERE name = '{column}'"
            ))
            .fetch_one(match &db {
                Db::Sqlite(pool) => pool,
                #[cfg(feature = "postgres")]
                Db::Postgres(_) => unreachable!(),
            })
            .await
            .unwrap();
            assert_eq!(found, 1, "{name}.{column} exists");
        }
    }
    backends.close().await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::{Db, deletes_one_value_and_one_file, erases_every_trace, pages_every_resource};
    use mirobody_health::testing::unique_id;
    use mirobody_store::{BackendConfig, Dialect, open};
    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_erases_a_person_from_every_table() {
        let test = "postgres::postgres_erases_a_person_from_every_table";
        let Some(url) = external("MIROBODY_TEST_POSTGRES_URL", test) else { return };
        let schema = PgSchema { url: url.clone(), name: unique_id("mirobody_erase_test").replace('-', "_") };
        let dir = tempfile::tempdir().unwrap();
        let config = BackendConfig {
            database_url: Some(url.clone()),
            database_schema: Some(schema.name.clone()),
            ..BackendConfig::embedded(dir.path())
        };
        let backends = open(&config).await.expect("the backends open on PostgreSQL");
        assert_eq!(backends.sql().dialect(), Dialect::Postgres);
        let options: PgConnectOptions = url.parse().unwrap();
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(options.options([("search_path", schema.name.as_str())]))
            .await
            .unwrap();
        let db = Db::Postgres(pool.clone());
        let tables = db.tables().await;
        for table in &tables {
            let listed = mirobody_store::PERSONAL_TABLES.iter().any(|(name, _)| name == table)
                || mirobody_store::TABLES_OF_NO_ONE.iter().any(|(name, _)| name == table);
            assert!(listed, "table {table} is erased per person or listed as no one's");
        }
        erases_every_trace(&backends, &db).await;
        deletes_one_value_and_one_file(&backends).await;
        pages_every_resource(&backends).await;
        pool.close().await;
        backends.close().await;
        drop(schema);
    }
}
