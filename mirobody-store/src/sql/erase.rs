//! A person's data out of [`SqlStore`] and gone from it: their stored resources page by page
//! (an export), one value or one file's entry ([`PersonalData`]), and the whole person
//! ([`SqlStore::erase_person`]), every table that keeps anything of theirs.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_health::{FileRecord, HealthStore, PersonalData, ResourceCursor, StoredResource};

use super::{Pool, SqlStore, db_error};

/// Rows deleted in one statement when a person's values go: a few milliseconds of SQLite's
/// single writer each, so an erase never holds it for long.
const ROWS_PER_DELETE: i64 = 2_000;
/// Tries of the checkpoint that empties SQLite's journal after an erase, while a reader holds
/// it (100 ms apart).
const CHECKPOINT_TRIES: u32 = 50;
/// The most resources one page of [`PersonalData::stored_resources`] returns.
pub const MAX_RESOURCES_PER_PAGE: u32 = 1_000;

/// What [`SqlStore::erase_person`] removed that lives outside the database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErasedPerson {
    /// The object-storage keys of the person's files and the texts read from them: delete
    /// them from storage (with their `.trans` and `.meta` sidecars).
    pub objects: Vec<String>,
    /// The OAuth grants that were theirs, now revoked and naming no one: revoke them where
    /// access tokens are checked, so the tokens issued under them stop at once there (other
    /// instances learn of them as of any revoked grant).
    pub grants: Vec<String>,
}

/// Every table of the schema and the columns that name a person in it (user id, or email
/// for the columns in [`EMAIL_COLUMNS`]), as [`SqlStore::erase_person`] deletes them. A
/// table that holds no one's data is in [`TABLES_OF_NO_ONE`] instead; a test fails for a
/// table in neither.
pub const PERSONAL_TABLES: &[(&str, &[&str])] = &[
    ("users", &["id", "email"]),
    ("accounts", &["id", "email"]),
    ("health_shares", &["owner", "reader"]),
    ("circle_invites", &["owner", "invitee"]),
    ("observations", &["subject"]),
    ("observation_totals", &["subject"]),
    ("health_points", &["subject"]),
    ("health_indicators", &["subject"]),
    ("health_records", &["subject"]),
    ("files", &["owner"]),
    ("conversations", &["owner"]),
    ("memories", &["owner"]),
    ("personal_secrets", &["user_id"]),
    // `subject`: another's read of the person's data names them.
    ("access_log", &["user_id", "subject"]),
    ("imports", &["subject"]),
    ("observation_history", &["subject"]),
    // Through their version in observation_history (deleted with it).
    ("health_point_history", &["history_id"]),
    ("record_history", &["subject"]),
    ("tasks", &["owner"]),
    ("upload_links", &["user_id"]),
    ("web_sessions", &["account_id"]),
    ("oauth_grants", &["account_id"]),
    // Through their grant.
    ("oauth_codes", &["grant_id"]),
    ("oauth_refresh_tokens", &["grant_id"]),
    ("signup_tokens", &["invited_by", "email"]),
    ("passkeys", &["account_id"]),
    ("passkey_ceremonies", &["owner"]),
    ("identity_links", &["account_id", "email"]),
];

/// The columns of [`PERSONAL_TABLES`] that hold an email address rather than an id.
pub const EMAIL_COLUMNS: &[&str] = &["email", "invitee"];

/// Tables that hold no one's data, and why.
pub const TABLES_OF_NO_ONE: &[(&str, &str)] = &[
    ("mirobody_migrations", "the schema's version"),
    ("oauth_clients", "apps registered by address, shared by everyone who lets them in; their grants go"),
    ("upstream_logins", "sign-ins in flight to a provider, for minutes, before anyone is known"),
];

impl SqlStore {
    /// Deletes everything `user` holds: their health data, files' entries, memories, care
    /// circle both ways (shares, invitations by id and by their email), secrets, tasks,
    /// access log, upload links, and their account with its sessions, grants, codes, refresh
    /// tokens, passkeys, sign-up links and identity links. What lives elsewhere (objects in
    /// storage, grants to revoke in memory) is returned for the caller to finish.
    ///
    /// Access goes first, in one transaction (the account disabled, credentials and shares
    /// gone), so nobody reads or writes while the values are deleted in short batches; the
    /// account's row goes last. Running it again finishes an erase that failed part-way.
    pub async fn erase_person(&self, user: &str) -> BackendResult<ErasedPerson> {
        let email = self.person_email(user).await?;
        let email = email.as_deref().map(str::to_lowercase);
        let grants: Vec<String> = on_pool!(self, |pool| {
            sqlx::query_scalar("SELECT id FROM oauth_grants WHERE account_id = $1")
                .bind(user)
                .fetch_all(pool)
                .await
                .map_err(db_error)
        })?;
        let mut objects: Vec<String> = Vec::new();
        for file in self.files(user).await? {
            objects.extend(file.text_key);
            objects.push(file.file_key);
        }
        // Access: after this transaction nobody reaches the person's data.
        const ACCESS: &[&str] = &[
            "UPDATE accounts SET disabled = TRUE WHERE id = $1",
            "DELETE FROM oauth_codes WHERE grant_id IN (SELECT id FROM oauth_grants WHERE account_id = $1)",
            "DELETE FROM oauth_refresh_tokens WHERE grant_id IN (SELECT id FROM oauth_grants WHERE account_id = $1)",
            "DELETE FROM web_sessions WHERE account_id = $1",
            "DELETE FROM personal_secrets WHERE user_id = $1",
            "DELETE FROM passkeys WHERE account_id = $1",
            "DELETE FROM passkey_ceremonies WHERE owner = $1",
            "DELETE FROM identity_links WHERE account_id = $1",
            "DELETE FROM upload_links WHERE user_id = $1",
            "DELETE FROM health_shares WHERE owner = $1 OR reader = $1",
            "DELETE FROM circle_invites WHERE owner = $1 OR invitee = $1 OR (by_email = TRUE AND invitee = $2)",
            "DELETE FROM signup_tokens WHERE invited_by = $1 OR email = $2",
            // A signed-in caller's tasks are owned by `user:<id>` (mirobody-mcp's tasks).
            "DELETE FROM tasks WHERE owner = $1 OR owner = 'user:' || $1",
        ];
        // No row holds an empty email: it stands for none.
        let email_or_none = email.clone().unwrap_or_default();
        let now = mirobody_health::text::now_ms();
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            for sql in ACCESS {
                let query = sqlx::query(sql).bind(user);
                let query = if sql.contains("$2") { query.bind(&email_or_none) } else { query };
                query.execute(&mut *tx).await.map_err(db_error)?;
            }
            // A grant stays, revoked and naming no one, so that every instance learns of it
            // (`revoked_grants_since`) and refuses its access tokens.
            sqlx::query("UPDATE oauth_grants SET account_id = '', revoked_at_ms = $2 WHERE account_id = $1")
                .bind(user)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
            tx.commit().await.map_err(db_error)
        })?;
        // The values, in batches: points before their observations (the cascade would do it,
        // row by row inside one statement).
        for (table, column) in [
            ("health_points", "subject"),
            ("observations", "subject"),
            ("health_records", "subject"),
            ("memories", "owner"),
            ("access_log", "user_id"),
            ("access_log", "subject"),
            // A version's points go with it (ON DELETE CASCADE).
            ("observation_history", "subject"),
            ("record_history", "subject"),
            ("imports", "subject"),
        ] {
            self.delete_in_batches(table, column, user).await?;
        }
        const REST: &[&str] = &[
            "DELETE FROM observation_totals WHERE subject = $1",
            "DELETE FROM health_indicators WHERE subject = $1",
            "DELETE FROM files WHERE owner = $1",
            "DELETE FROM conversations WHERE owner = $1",
            "DELETE FROM accounts WHERE id = $1",
            "DELETE FROM users WHERE id = $1",
        ];
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            for sql in REST {
                sqlx::query(sql).bind(user).execute(&mut *tx).await.map_err(db_error)?;
            }
            tx.commit().await.map_err(db_error)
        })?;
        self.empty_the_journal().await?;
        Ok(ErasedPerson { objects, grants })
    }

    // SQLite keeps the pages a deletion changed, as they were before, in its write-ahead log
    // until a checkpoint: the erased person would stay readable in the `-wal` file. A TRUNCATE
    // checkpoint writes the log into the database (where `secure_delete` has zeroed what was
    // deleted) and cuts the log file to nothing; it is retried while a reader holds the log.
    #[cfg_attr(not(feature = "postgres"), allow(clippy::infallible_destructuring_match))]
    async fn empty_the_journal(&self) -> BackendResult<()> {
        let pool = match &self.pool {
            Pool::Sqlite(pool) => pool,
            #[cfg(feature = "postgres")]
            Pool::Postgres(_) => return Ok(()),
        };
        for _ in 0..CHECKPOINT_TRIES {
            let (busy, _, _): (i64, i64, i64) =
                sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)").fetch_one(pool).await.map_err(db_error)?;
            if busy == 0 {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Err(mirobody_core::backend::BackendError::new(
            "The person's data is deleted, but the database's journal still holds it while others read: \
             run the deletion again in a moment.",
        ))
    }

    // The person's email, from their account or their user row.
    async fn person_email(&self, user: &str) -> BackendResult<Option<String>> {
        const SQL: &str = "SELECT email FROM accounts WHERE id = $1 \
             UNION ALL SELECT email FROM users WHERE id = $1 AND email IS NOT NULL";
        let found: Vec<String> =
            on_pool!(self, |pool| { sqlx::query_scalar(SQL).bind(user).fetch_all(pool).await.map_err(db_error) })?;
        Ok(found.into_iter().next())
    }

    // Deletes `table`'s rows whose `column` is `user`, [`ROWS_PER_DELETE`] at a time. The
    // names are this file's constants, never input.
    async fn delete_in_batches(&self, table: &str, column: &str, user: &str) -> BackendResult<()> {
        let sql = format!(
            "DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {column} = $1 LIMIT {ROWS_PER_DELETE})"
        );
        loop {
            let deleted = on_pool!(self, |pool| {
                sqlx::query(&sql).bind(user).execute(pool).await.map(|done| done.rows_affected()).map_err(db_error)
            })?;
            if deleted == 0 {
                return Ok(());
            }
            tokio::task::yield_now().await;
        }
    }
}

#[async_trait]
impl PersonalData for SqlStore {
    async fn stored_resources(
        &self,
        owner: &str,
        after: Option<ResourceCursor>,
        limit: u32,
    ) -> BackendResult<Vec<StoredResource>> {
        const OBSERVATIONS: &str = "SELECT id, source_id, file_key, resource, CAST(NULL AS TEXT) AS display, \
             CAST(NULL AS TEXT) AS detail FROM observations \
             WHERE subject = $1 AND id > $2 ORDER BY id LIMIT $3";
        // Records keep no file key: an import reads them from a body or a file alike.
        const RECORDS: &str = "SELECT id, source_id, CAST(NULL AS TEXT) AS file_key, resource, display, detail \
             FROM health_records \
             WHERE subject = $1 AND id > $2 ORDER BY id LIMIT $3";
        let limit = limit.clamp(1, MAX_RESOURCES_PER_PAGE);
        let after = after.unwrap_or(ResourceCursor { records: false, after_id: 0 });
        let mut page = Vec::new();
        let mut cursor = after;
        loop {
            let sql = if cursor.records { RECORDS } else { OBSERVATIONS };
            let wanted = i64::from(limit) - page.len() as i64;
            type Row = (i64, Option<String>, Option<String>, String, Option<String>, Option<String>);
            let rows: Vec<Row> = on_pool!(self, |pool| {
                sqlx::query_as(sql)
                    .bind(owner)
                    .bind(cursor.after_id)
                    .bind(wanted)
                    .fetch_all(pool)
                    .await
                    .map_err(db_error)
            })?;
            let short = (rows.len() as i64) < wanted;
            for (id, source_id, file_key, text, display, detail) in rows {
                let resource = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
                let detail = detail.and_then(|detail| serde_json::from_str(&detail).ok());
                let at = ResourceCursor { records: cursor.records, after_id: id };
                page.push(StoredResource { cursor: at, source_id, file_key, resource, display, detail });
            }
            if !short || cursor.records {
                return Ok(page);
            }
            // The observations are done: the records follow in the same page.
            cursor = ResourceCursor { records: true, after_id: 0 };
        }
    }

    async fn delete_value(&self, owner: &str, source_id: &str) -> BackendResult<bool> {
        const POINTS: &str = "DELETE FROM health_points WHERE subject = $1 AND observation_id IN \
             (SELECT id FROM observations WHERE subject = $1 AND source_id = $2)";
        const OBSERVATION: &str = "DELETE FROM observations WHERE subject = $1 AND source_id = $2";
        const RECORD: &str = "DELETE FROM health_records WHERE subject = $1 AND source_id = $2";
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let mut deleted = 0;
            for sql in [POINTS, OBSERVATION, RECORD] {
                let done = sqlx::query(sql).bind(owner).bind(source_id).execute(&mut *tx).await.map_err(db_error)?;
                if sql != POINTS {
                    deleted += done.rows_affected();
                }
            }
            tx.commit().await.map_err(db_error)?;
            Ok(deleted > 0)
        })
    }

    async fn delete_file_entry(&self, owner: &str, file_key: &str) -> BackendResult<Option<FileRecord>> {
        let Some(file) = self.file(owner, file_key).await? else { return Ok(None) };
        const POINTS: &str = "DELETE FROM health_points WHERE subject = $1 AND observation_id IN \
             (SELECT id FROM observations WHERE subject = $1 AND file_key = $2)";
        const OBSERVATIONS: &str = "DELETE FROM observations WHERE subject = $1 AND file_key = $2";
        const ENTRY: &str = "DELETE FROM files WHERE owner = $1 AND file_key = $2";
        let deleted = on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let mut last = 0;
            for sql in [POINTS, OBSERVATIONS, ENTRY] {
                last = sqlx::query(sql)
                    .bind(owner)
                    .bind(file_key)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?
                    .rows_affected();
            }
            tx.commit().await.map_err(db_error)?;
            Ok::<_, mirobody_core::backend::BackendError>(last)
        })?;
        Ok((deleted > 0).then_some(file))
    }
}
