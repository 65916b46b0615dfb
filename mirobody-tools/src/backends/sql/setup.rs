//! What a [`SqlStore`] does beyond the tool traits, for set-up, uploads, the demo and tests:
//! writes of users, care-circle sharing, observations, the file index and memories in bulk, and
//! reads of a conversation's summary and an owner's memory ids.

use crate::fhir::{self, EntryInput, ImportItem};
use crate::health::FileRecord;
use mirobody_core::backend::{BackendError, BackendResult, NewMemory};
use serde_json::Value;

use super::import::insert_observation;
use super::memory::index_terms;
use super::{Pool, SqlStore, db_error};
use crate::text::now_ms;

impl SqlStore {
    /// Adds or updates a user.
    pub async fn upsert_user(&self, id: &str, display_name: Option<&str>, email: Option<&str>) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO users (id, display_name, email, created_at_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, email = excluded.email";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(id)
                .bind(display_name)
                .bind(email)
                .bind(now_ms())
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }

    /// `owner` shares their health data with `reader`, who knows them as `nickname`.
    pub async fn share_health(&self, owner: &str, reader: &str, nickname: Option<&str>) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO health_shares (reader, owner, nickname, created_at_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (reader, owner) DO UPDATE SET nickname = excluded.nickname";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(reader)
                .bind(owner)
                .bind(nickname)
                .bind(now_ms())
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }

    /// `owner` stops sharing with `reader`; whether they were sharing.
    pub async fn unshare_health(&self, owner: &str, reader: &str) -> BackendResult<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query("DELETE FROM health_shares WHERE reader = $1 AND owner = $2")
                .bind(reader)
                .bind(owner)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
                .map_err(db_error)
        })?;
        Ok(done > 0)
    }

    /// Stores FHIR Observations of `subject` (`resourceType` may be left out) in one
    /// transaction, as an import does (each
    /// read into its indicator values; one already stored with the same source id is left as
    /// it was); the ids of those that were new. A resource the importer refuses (no code, no
    /// time, a value of the wrong type) is an error and stores nothing.
    pub async fn add_observations(&self, subject: &str, resources: &[Value]) -> BackendResult<Vec<i64>> {
        let mut parsed = Vec::with_capacity(resources.len());
        for (index, resource) in resources.iter().enumerate() {
            // The type is what this method stores: a resource may leave it out.
            let mut resource = resource.clone();
            if let Some(fields) = resource.as_object_mut() {
                fields.entry("resourceType").or_insert_with(|| "Observation".into());
            }
            match fhir::parse_observation(&resource).map(|mut request| request.entries.pop()) {
                Ok(Some(EntryInput::Item(ImportItem::Observation(o)))) => parsed.push(o),
                Ok(Some(EntryInput::Invalid(reason))) | Err(reason) => {
                    return Err(BackendError::new(format!("observation {index}: {reason}")));
                }
                Ok(_) => return Err(BackendError::new(format!("observation {index} is not one to store"))),
            }
        }
        let now = now_ms();
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let mut ids = Vec::with_capacity(parsed.len());
            for o in &parsed {
                if let Some(id) = insert_observation!(tx, subject, o, None::<&str>, now) {
                    ids.push(id);
                }
            }
            tx.commit().await.map_err(db_error)?;
            Ok(ids)
        })
    }

    /// Adds a file to `owner`'s index (after its bytes are stored), with no quota.
    pub async fn add_file(&self, owner: &str, file: &FileRecord) -> BackendResult<()> {
        let unbounded = super::FileQuota { max_files: u64::MAX, max_bytes: u64::MAX };
        self.add_file_within(owner, file, unbounded).await.map(|_| ())
    }

    /// How many files `owner` has, and their bytes together (for upload quotas).
    pub async fn file_usage(&self, owner: &str) -> BackendResult<(u64, u64)> {
        const SQL: &str = "SELECT COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM files WHERE owner = $1";
        let (count, bytes): (i64, i64) =
            on_pool!(self, |pool| { sqlx::query_as(SQL).bind(owner).fetch_one(pool).await.map_err(db_error) })?;
        Ok((count.max(0) as u64, bytes.max(0) as u64))
    }

    /// The summary of `owner`'s conversation `session_id`, if it exists and has one.
    pub async fn conversation_summary(&self, owner: &str, session_id: &str) -> BackendResult<Option<String>> {
        on_pool!(self, |pool| {
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT summary FROM conversations WHERE owner = $1 AND session_id = $2",
            )
            .bind(owner)
            .bind(session_id)
            .fetch_optional(pool)
            .await
            .map(Option::flatten)
            .map_err(db_error)
        })
    }

    /// Stores many memories of `owner` in one transaction (bulk loads, not bounded by the
    /// memory quota); their ids.
    pub async fn add_memories(&self, owner: &str, memories: &[NewMemory]) -> BackendResult<Vec<i64>> {
        let now = now_ms();
        let (sql, with_terms) = self.insert_memory_sql(false);
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let mut ids = Vec::with_capacity(memories.len());
            for memory in memories {
                let query = sqlx::query_scalar(sql)
                    .bind(owner)
                    .bind(&memory.text)
                    .bind(&memory.kind)
                    .bind(&memory.session_id)
                    .bind(now);
                let query = if with_terms { query.bind(index_terms(owner, &memory.text)) } else { query };
                ids.push(query.fetch_one(&mut *tx).await.map_err(db_error)?);
            }
            tx.commit().await.map_err(db_error)?;
            Ok(ids)
        })
    }

    /// The ids of all of `owner`'s memories, oldest first.
    pub async fn memory_ids(&self, owner: &str) -> BackendResult<Vec<i64>> {
        on_pool!(self, |pool| {
            sqlx::query_scalar("SELECT id FROM memories WHERE owner = $1 ORDER BY id")
                .bind(owner)
                .fetch_all(pool)
                .await
                .map_err(db_error)
        })
    }
}
