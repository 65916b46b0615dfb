//! What a [`SqlStore`] does beyond the store traits, for the demo and tests: memories in bulk,
//! an owner's memory ids, and a conversation's summary.

use mirobody_core::backend::{BackendResult, NewMemory};
use mirobody_health::text::now_ms;

use super::memory::index_terms;
use super::{Pool, SqlStore, db_error};

impl SqlStore {
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
