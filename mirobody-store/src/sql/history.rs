//! The versions corrections end, for [`SqlStore`]: a replaced or removed observation (with its
//! values) or chart record moves to a history table no read looks at, naming the import that
//! ended it; undoing that import (a failed one, or one a person deletes) serves it again. Also
//! the imports themselves: listed, and deleted whole.

use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_health::text::{now_ms, rfc3339};
use mirobody_health::{DeletedImport, ImportCounts, ImportKind, ImportRecord};
use sqlx::Row;

use super::{Pool, SqlStore, db_error};

/// Moves observation `$id` of `$subject` (with its values) to the history, as ended by
/// `$import` for `$reason` at `$now`; the history row's id. The observation's row stays, with
/// no values: the caller replaces or deletes it.
macro_rules! supersede_observation {
    ($tx:expr, $subject:expr, $id:expr, $import:expr, $reason:expr, $now:expr) => {{
        const KEEP: &str = "INSERT INTO observation_history (subject, source_id, code, effective_ms, resource, \
             created_at_ms, file_key, import_id, version_id, last_updated_ms, ended_by, reason, ended_at_ms) \
             SELECT subject, source_id, code, effective_ms, resource, created_at_ms, file_key, import_id, version_id, \
             last_updated_ms, $3, $4, $5 FROM observations WHERE id = $1 AND subject = $2 RETURNING id";
        const KEEP_POINTS: &str = "INSERT INTO health_point_history \
             (history_id, code, display, time_ms, value, value_text, unit, file_key, \
             ref_low, ref_high, ref_unit, ref_text, interpretation) \
             SELECT $1, code, display, time_ms, value, value_text, unit, file_key, \
             ref_low, ref_high, ref_unit, ref_text, interpretation FROM health_points \
             WHERE observation_id = $2";
        let history_id: i64 = sqlx::query_scalar(KEEP)
            .bind($id)
            .bind($subject)
            .bind($import)
            .bind($reason)
            .bind($now)
            .fetch_one(&mut *$tx)
            .await
            .map_err(super::db_error)?;
        sqlx::query(KEEP_POINTS).bind(history_id).bind($id).execute(&mut *$tx).await.map_err(super::db_error)?;
        sqlx::query("DELETE FROM health_points WHERE observation_id = $1")
            .bind($id)
            .execute(&mut *$tx)
            .await
            .map_err(super::db_error)?;
        history_id
    }};
}

/// Moves chart record `$id` of `$subject` to the history, as [`supersede_observation!`] does.
macro_rules! supersede_record {
    ($tx:expr, $subject:expr, $id:expr, $import:expr, $reason:expr, $now:expr) => {{
        const KEEP: &str = "INSERT INTO record_history (subject, kind, source_id, display, status, time_ms, \
             resource, created_at_ms, detail, import_id, version_id, last_updated_ms, ended_by, reason, ended_at_ms) \
             SELECT subject, kind, source_id, display, status, time_ms, resource, created_at_ms, detail, import_id, \
             version_id, last_updated_ms, $3, $4, $5 FROM health_records WHERE id = $1 AND subject = $2 RETURNING id";
        let history_id: i64 = sqlx::query_scalar(KEEP)
            .bind($id)
            .bind($subject)
            .bind($import)
            .bind($reason)
            .bind($now)
            .fetch_one(&mut *$tx)
            .await
            .map_err(super::db_error)?;
        history_id
    }};
}

/// Serves the version in history row `$history_id` of `$subject` again (in place of the one
/// served under its source id, if any) and takes it out of the history.
macro_rules! restore_observation {
    ($tx:expr, $subject:expr, $history_id:expr) => {{
        const SERVED: &str = "SELECT o.id FROM observations o JOIN observation_history h \
             ON h.subject = o.subject AND h.source_id = o.source_id WHERE h.id = $1 AND h.subject = $2";
        const UPDATE: &str = "UPDATE observations SET (code, effective_ms, resource, created_at_ms, file_key, \
             import_id, version_id, last_updated_ms) = (SELECT code, effective_ms, resource, created_at_ms, file_key, \
             import_id, version_id, last_updated_ms FROM observation_history WHERE id = $2) WHERE id = $1";
        const INSERT: &str = "INSERT INTO observations (subject, source_id, code, effective_ms, resource, \
             created_at_ms, file_key, import_id, version_id, last_updated_ms) SELECT subject, source_id, code, \
             effective_ms, resource, created_at_ms, file_key, import_id, version_id, last_updated_ms \
             FROM observation_history WHERE id = $1 RETURNING id";
        const POINTS: &str = "INSERT INTO health_points \
             (subject, observation_id, code, display, time_ms, value, value_text, unit, file_key, import_id, \
             ref_low, ref_high, ref_unit, ref_text, interpretation) \
             SELECT h.subject, $2, p.code, p.display, p.time_ms, p.value, p.value_text, p.unit, p.file_key, h.import_id, \
             p.ref_low, p.ref_high, p.ref_unit, p.ref_text, p.interpretation \
             FROM health_point_history p JOIN observation_history h ON h.id = p.history_id WHERE p.history_id = $1";
        let served: Option<i64> = sqlx::query_scalar(SERVED)
            .bind($history_id)
            .bind($subject)
            .fetch_optional(&mut *$tx)
            .await
            .map_err(super::db_error)?;
        let id: i64 = match served {
            Some(id) => {
                sqlx::query("DELETE FROM health_points WHERE observation_id = $1")
                    .bind(id)
                    .execute(&mut *$tx)
                    .await
                    .map_err(super::db_error)?;
                sqlx::query(UPDATE).bind(id).bind($history_id).execute(&mut *$tx).await.map_err(super::db_error)?;
                id
            }
            None => sqlx::query_scalar(INSERT)
                .bind($history_id)
                .fetch_one(&mut *$tx)
                .await
                .map_err(super::db_error)?,
        };
        sqlx::query(POINTS).bind($history_id).bind(id).execute(&mut *$tx).await.map_err(super::db_error)?;
        sqlx::query("DELETE FROM observation_history WHERE id = $1")
            .bind($history_id)
            .execute(&mut *$tx)
            .await
            .map_err(super::db_error)?;
    }};
}

/// Serves the chart record in history row `$history_id` of `$subject` again, as
/// [`restore_observation!`] does.
macro_rules! restore_record {
    ($tx:expr, $subject:expr, $history_id:expr) => {{
        const SERVED: &str = "SELECT r.id FROM health_records r JOIN record_history h \
             ON h.subject = r.subject AND h.kind = r.kind AND h.source_id = r.source_id WHERE h.id = $1 AND h.subject = $2";
        const UPDATE: &str = "UPDATE health_records SET (display, status, time_ms, resource, created_at_ms, detail, \
             import_id, version_id, last_updated_ms) = (SELECT display, status, time_ms, resource, created_at_ms, \
             detail, import_id, version_id, last_updated_ms FROM record_history WHERE id = $2) WHERE id = $1";
        const INSERT: &str = "INSERT INTO health_records (subject, kind, source_id, display, status, time_ms, \
             resource, created_at_ms, detail, import_id, version_id, last_updated_ms) SELECT subject, kind, source_id, \
             display, status, time_ms, resource, created_at_ms, detail, import_id, version_id, last_updated_ms \
             FROM record_history WHERE id = $1";
        let served: Option<i64> = sqlx::query_scalar(SERVED)
            .bind($history_id)
            .bind($subject)
            .fetch_optional(&mut *$tx)
            .await
            .map_err(super::db_error)?;
        match served {
            Some(id) => {
                sqlx::query(UPDATE).bind(id).bind($history_id).execute(&mut *$tx).await.map_err(super::db_error)?;
            }
            None => {
                sqlx::query(INSERT).bind($history_id).execute(&mut *$tx).await.map_err(super::db_error)?;
            }
        }
        sqlx::query("DELETE FROM record_history WHERE id = $1")
            .bind($history_id)
            .execute(&mut *$tx)
            .await
            .map_err(super::db_error)?;
    }};
}

/// Opens a transaction on the import's own row with a write: SQLite then holds the write lock
/// from the first statement (a transaction that reads first fails when another writer
/// committed in between), and PostgreSQL orders two changes of one import.
pub(super) const CLAIM_IMPORT: &str = "UPDATE imports SET created_at_ms = created_at_ms WHERE id = $1 AND subject = $2";

pub(super) use {supersede_observation, supersede_record};

/// Rows deleted in one transaction when an import is deleted: SQLite's single writer is
/// held a short while at a time.
const ROWS_PER_DELETE: i64 = 2_000;
/// The most imports [`SqlStore::list_imports`] lists.
const MAX_LISTED: i64 = 1_000;

/// A history row to serve again: which table, and its id.
#[derive(Clone, Copy, Debug)]
pub(super) enum Kept {
    /// A row of `observation_history`.
    Observation(i64),
    /// A row of `record_history`.
    Record(i64),
}

impl SqlStore {
    /// Serves the versions in `kept` (which import `import_id` ended) again, the last first, in
    /// one transaction.
    pub(super) async fn restore(&self, subject: &str, import_id: i64, kept: &[Kept]) -> BackendResult<()> {
        if kept.is_empty() {
            return Ok(());
        }
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            sqlx::query(CLAIM_IMPORT).bind(import_id).bind(subject).execute(&mut *tx).await.map_err(db_error)?;
            for kept in kept.iter().rev() {
                match *kept {
                    Kept::Observation(id) => restore_observation!(tx, subject, id),
                    Kept::Record(id) => restore_record!(tx, subject, id),
                }
            }
            tx.commit().await.map_err(db_error)
        })
    }

    /// `subject`'s imports, newest first (at most [`MAX_LISTED`]).
    pub(super) async fn list_imports(&self, subject: &str) -> BackendResult<Vec<ImportRecord>> {
        const SQL: &str = "SELECT id, kind, file_key, via, created_at_ms, stored, updated, removed, unchanged, \
             skipped, invalid FROM imports WHERE subject = $1 ORDER BY id DESC LIMIT $2";
        on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(subject).bind(MAX_LISTED).fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let count = |name: &str| row.try_get::<i64, _>(name).map(|n| n.max(0) as u64);
                    let counts = ImportCounts::new(
                        count("stored")?,
                        count("updated")?,
                        count("removed")?,
                        count("unchanged")?,
                        count("skipped")?,
                        count("invalid")?,
                    );
                    let kind: String = row.try_get("kind")?;
                    Ok(ImportRecord::new(
                        row.try_get("id")?,
                        ImportKind::from_name(&kind),
                        row.try_get("file_key")?,
                        row.try_get("via")?,
                        rfc3339(row.try_get("created_at_ms")?),
                        counts,
                    ))
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }

    /// Deletes `subject`'s import `import_id` whole: see
    /// [`RecordStore::delete_import`](mirobody_health::RecordStore::delete_import).
    ///
    /// First, in one transaction, every version it replaced or removed whose source id it
    /// still serves (or serves nothing under) is served again; then what it stored, and its
    /// versions in the history, are deleted a few thousand rows per transaction; its record
    /// last. Stopped part-way (a failure), calling it again finishes the job.
    pub(super) async fn remove_import(&self, subject: &str, import_id: i64) -> BackendResult<Option<DeletedImport>> {
        const OWNED: &str = "SELECT CAST(1 AS BIGINT) FROM imports WHERE id = $1 AND subject = $2";
        // The first version this import ended of each source id it now serves, or serves none.
        const ENDED_OBSERVATIONS: &str = "SELECT h.id FROM observation_history h WHERE h.subject = $1 \
             AND h.ended_by = $2 AND (h.import_id IS NULL OR h.import_id <> $2) \
             AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.subject = h.subject AND o.source_id = h.source_id \
             AND (o.import_id IS NULL OR o.import_id <> $2)) ORDER BY h.id";
        const ENDED_RECORDS: &str = "SELECT h.id FROM record_history h WHERE h.subject = $1 \
             AND h.ended_by = $2 AND (h.import_id IS NULL OR h.import_id <> $2) \
             AND NOT EXISTS (SELECT 1 FROM health_records r WHERE r.subject = h.subject AND r.kind = h.kind \
             AND r.source_id = h.source_id AND (r.import_id IS NULL OR r.import_id <> $2)) ORDER BY h.id";
        let owned: Option<i64> = on_pool!(self, |pool| {
            sqlx::query_scalar(OWNED).bind(import_id).bind(subject).fetch_optional(pool).await.map_err(db_error)
        })?;
        if owned.is_none() {
            return Ok(None);
        }
        let restored = on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            sqlx::query(CLAIM_IMPORT).bind(import_id).bind(subject).execute(&mut *tx).await.map_err(db_error)?;
            let observations: Vec<i64> = sqlx::query_scalar(ENDED_OBSERVATIONS)
                .bind(subject)
                .bind(import_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_error)?;
            let records: Vec<i64> = sqlx::query_scalar(ENDED_RECORDS)
                .bind(subject)
                .bind(import_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_error)?;
            // One version per source id: a second this import ended is its own, deleted below.
            let mut restored = 0u64;
            let mut seen = std::collections::HashSet::new();
            for id in observations {
                let source: String = sqlx::query_scalar("SELECT source_id FROM observation_history WHERE id = $1")
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_error)?;
                if seen.insert(source) {
                    restore_observation!(tx, subject, id);
                    restored += 1;
                }
            }
            seen.clear();
            for id in records {
                let source: String =
                    sqlx::query_scalar("SELECT kind || '/' || source_id FROM record_history WHERE id = $1")
                        .bind(id)
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(db_error)?;
                if seen.insert(source) {
                    restore_record!(tx, subject, id);
                    restored += 1;
                }
            }
            tx.commit().await.map_err(db_error)?;
            Ok::<_, BackendError>(restored)
        })?;
        let mut removed = 0u64;
        for table in ["observations", "health_records"] {
            removed += self.delete_rows_of(table, subject, import_id).await?;
        }
        for table in ["observation_history", "record_history"] {
            self.delete_rows_of(table, subject, import_id).await?;
        }
        on_pool!(self, |pool| {
            sqlx::query("DELETE FROM imports WHERE id = $1 AND subject = $2")
                .bind(import_id)
                .bind(subject)
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(Some(DeletedImport::new(removed, restored)))
    }

    /// Deletes `subject`'s rows of `table` that import `import_id` wrote, a few thousand per
    /// transaction (an observation's values and a history row's go with it); how many.
    async fn delete_rows_of(&self, table: &str, subject: &str, import_id: i64) -> BackendResult<u64> {
        // `table` is one of this file's names, never input.
        let sql = format!(
            "DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE subject = $1 AND import_id = $2 LIMIT $3)"
        );
        let mut total = 0;
        loop {
            let deleted = on_pool!(self, |pool| {
                sqlx::query(&sql)
                    .bind(subject)
                    .bind(import_id)
                    .bind(ROWS_PER_DELETE)
                    .execute(pool)
                    .await
                    .map(|done| done.rows_affected())
                    .map_err(db_error)
            })?;
            total += deleted;
            if deleted < ROWS_PER_DELETE as u64 {
                return Ok(total);
            }
            tokio::task::yield_now().await;
        }
    }

    /// Records a new import; its id.
    pub(super) async fn insert_import(
        &self,
        subject: &str,
        kind: ImportKind,
        file_key: Option<&str>,
        via: Option<&str>,
    ) -> BackendResult<i64> {
        const SQL: &str = "INSERT INTO imports (subject, kind, file_key, via, created_at_ms) VALUES ($1, $2, $3, $4, $5) RETURNING id";
        on_pool!(self, |pool| {
            sqlx::query_scalar(SQL)
                .bind(subject)
                .bind(kind.as_str())
                .bind(file_key)
                .bind(via)
                .bind(now_ms())
                .fetch_one(pool)
                .await
                .map_err(db_error)
        })
    }

    /// Records what `subject`'s import `import_id` did.
    pub(super) async fn record_counts(
        &self,
        subject: &str,
        import_id: i64,
        counts: &ImportCounts,
    ) -> BackendResult<()> {
        const SQL: &str = "UPDATE imports SET stored = $3, updated = $4, removed = $5, unchanged = $6, skipped = $7, \
             invalid = $8 WHERE id = $1 AND subject = $2";
        let n = |count: u64| i64::try_from(count).unwrap_or(i64::MAX);
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(import_id)
                .bind(subject)
                .bind(n(counts.stored))
                .bind(n(counts.updated))
                .bind(n(counts.removed))
                .bind(n(counts.unchanged))
                .bind(n(counts.skipped))
                .bind(n(counts.invalid))
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })
    }

    /// The file of `subject`'s import `import_id`; an error when it is not one of theirs.
    pub(super) async fn import_file(&self, subject: &str, import_id: i64) -> BackendResult<Option<String>> {
        const SQL: &str = "SELECT file_key FROM imports WHERE id = $1 AND subject = $2";
        let found: Option<Option<String>> = on_pool!(self, |pool| {
            sqlx::query_scalar(SQL).bind(import_id).bind(subject).fetch_optional(pool).await.map_err(db_error)
        })?;
        found.ok_or_else(|| BackendError::new(format!("There is no import {import_id} of this person's.")))
    }
}
