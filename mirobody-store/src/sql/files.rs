//! The file index's writes for uploads: a file added within its owner's quota in one step, and
//! the queue of files whose text is still to be read (claimed, settled, resumed after a
//! restart).

use mirobody_core::backend::BackendResult;

use async_trait::async_trait;
use mirobody_health::{ClaimedText, FileIndex, FileQuota, FileRecord, TextState};

use super::{Dialect, Pool, SqlStore, db_error};
use mirobody_health::text::{now_ms, parse_time_ms};

// The text_state column's values (see migration 0007).
pub(super) const SETTLED: i32 = 0;
pub(super) const WAITING: i32 = 1;
pub(super) const UNREADABLE: i32 = 2;

/// The [`TextState`] of a row's `text_state` and `text_error` columns.
pub(super) fn text_state(state: i32, error: Option<String>) -> TextState {
    match state {
        WAITING => TextState::Waiting,
        UNREADABLE => TextState::Unreadable(error.unwrap_or_default()),
        _ => TextState::Settled,
    }
}

#[async_trait]
impl FileIndex for SqlStore {
    /// Adds `file` to `owner`'s index unless that would take them past `quota`; `Ok(false)`,
    /// with nothing written, when it would.
    ///
    /// The check and the insert are one step, so uploads made at once cannot together pass the
    /// quota: one statement on SQLite (one writer at a time), and on PostgreSQL the same
    /// statement after a lock on the owner held to the end of its transaction.
    async fn add_file_within(&self, owner: &str, file: &FileRecord, quota: FileQuota) -> BackendResult<bool> {
        const LOCK: &str = "SELECT pg_advisory_xact_lock(hashtextextended($1, 7))";
        const SQL: &str = "INSERT INTO files \
             (file_key, owner, filename, mime_type, size, text_key, uploaded_at_ms, text_state, text_error) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 \
             WHERE (SELECT COUNT(*) FROM files WHERE owner = $2) < $10 \
             AND (SELECT COALESCE(SUM(size), 0) FROM files WHERE owner = $2) + $5 <= $11";
        let uploaded = parse_time_ms(&file.uploaded_at).unwrap_or_else(now_ms);
        let size = i64::try_from(file.size).unwrap_or(i64::MAX);
        let (state, error) = match &file.text_state {
            TextState::Settled => (SETTLED, None),
            TextState::Waiting => (WAITING, None),
            TextState::Unreadable(why) => (UNREADABLE, Some(why.as_str())),
        };
        let max_files = i64::try_from(quota.max_files).unwrap_or(i64::MAX);
        let max_bytes = i64::try_from(quota.max_bytes).unwrap_or(i64::MAX);
        let postgres = self.dialect() == Dialect::Postgres;
        let inserted = on_pool!(self, |pool| {
            let insert = sqlx::query(SQL)
                .bind(&file.file_key)
                .bind(owner)
                .bind(&file.filename)
                .bind(&file.mime_type)
                .bind(size)
                .bind(&file.text_key)
                .bind(uploaded)
                .bind(state)
                .bind(error)
                .bind(max_files)
                .bind(max_bytes);
            let done = if postgres {
                let mut tx = pool.begin().await.map_err(db_error)?;
                sqlx::query(LOCK).bind(owner).execute(&mut *tx).await.map_err(db_error)?;
                let done = insert.execute(&mut *tx).await.map_err(db_error)?;
                tx.commit().await.map_err(db_error)?;
                done
            } else {
                // One statement, on its own: SQLite runs it with the writer held, and a
                // transaction around it would only fail ("database is locked") under racing
                // uploads when its read could not become a write.
                insert.execute(pool).await.map_err(db_error)?
            };
            done.rows_affected() == 1
        });
        Ok(inserted)
    }

    /// The owners who have files waiting for their text to be read, each once.
    async fn owners_waiting_for_text(&self) -> BackendResult<Vec<String>> {
        const SQL: &str = "SELECT DISTINCT owner FROM files WHERE text_state = $1";
        on_pool!(self, |pool| { sqlx::query_scalar(SQL).bind(WAITING).fetch_all(pool).await.map_err(db_error) })
    }

    /// Claims `owner`'s oldest file waiting for its text, for `lease_ms` from now: no other
    /// reader takes it until then. A claim whose lease has passed (its reader's process is
    /// gone) is taken again. `None` when nothing of theirs waits unclaimed.
    async fn claim_text(&self, owner: &str, lease_ms: i64) -> BackendResult<Option<ClaimedText>> {
        // On PostgreSQL, readers racing for the same owner's queue each skip a row another is
        // claiming and take the next, rather than lose the race and see nothing. SQLite has
        // one writer at a time, so no race.
        let skip_claimed = if self.dialect() == Dialect::Postgres { " FOR UPDATE SKIP LOCKED" } else { "" };
        let sql = format!(
            "UPDATE files SET text_attempts = text_attempts + 1, text_claimed_until_ms = $3 \
             WHERE file_key = (SELECT file_key FROM files WHERE owner = $1 AND text_state = $4 \
                 AND (text_claimed_until_ms IS NULL OR text_claimed_until_ms < $2) \
                 ORDER BY uploaded_at_ms, file_key LIMIT 1{skip_claimed}) \
             AND text_state = $4 AND (text_claimed_until_ms IS NULL OR text_claimed_until_ms < $2) \
             RETURNING file_key, mime_type, text_attempts"
        );
        let now = now_ms();
        let row: Option<(String, String, i32)> = on_pool!(self, |pool| {
            sqlx::query_as(&sql)
                .bind(owner)
                .bind(now)
                .bind(now.saturating_add(lease_ms))
                .bind(WAITING)
                .fetch_optional(pool)
                .await
                .map_err(db_error)
        })?;
        Ok(row.map(|(file_key, mime_type, attempts)| ClaimedText {
            file_key,
            mime_type,
            attempts: u32::try_from(attempts).unwrap_or(0),
        }))
    }

    /// Settles the reading of `owner`'s file `file_key`: its text stored under `text_key`
    /// (`Ok(Some)`), no text (`Ok(None)`), or unreadable, with why (`Err`).
    async fn settle_text(&self, owner: &str, file_key: &str, outcome: Result<Option<&str>, &str>) -> BackendResult<()> {
        const SQL: &str = "UPDATE files SET text_state = $3, text_key = $4, text_error = $5, \
             text_claimed_until_ms = NULL WHERE owner = $1 AND file_key = $2";
        let (state, text_key, error) = match outcome {
            Ok(text_key) => (SETTLED, text_key, None),
            Err(why) => (UNREADABLE, None, Some(why)),
        };
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(owner)
                .bind(file_key)
                .bind(state)
                .bind(text_key)
                .bind(error)
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })
    }

    /// How many files `owner` has, and their bytes together (for upload quotas).
    async fn file_usage(&self, owner: &str) -> BackendResult<(u64, u64)> {
        const SQL: &str = "SELECT COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM files WHERE owner = $1";
        let (count, bytes): (i64, i64) =
            on_pool!(self, |pool| { sqlx::query_as(SQL).bind(owner).fetch_one(pool).await.map_err(db_error) })?;
        Ok((count.max(0) as u64, bytes.max(0) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_back_from_their_columns() {
        assert_eq!(text_state(SETTLED, None), TextState::Settled);
        assert_eq!(text_state(WAITING, None), TextState::Waiting);
        assert_eq!(text_state(UNREADABLE, Some("why".into())), TextState::Unreadable("why".into()));
        // A value a newer version wrote reads as settled: text_key still says what there is.
        assert_eq!(text_state(9, None), TextState::Settled);
    }
}
