//! The writes of a health-data import for [`SqlStore`]: each import recorded, Observations with
//! their points, conditions, medications and allergies, each stored once per person and
//! source id and replaced only by a newer version (the earlier kept in `history.rs`).
//!
//! Observations are written many rows per statement (`rows.rs`), so the import of a large
//! export costs about what inserting its rows does.

use mirobody_core::backend::BackendResult;

use async_trait::async_trait;
use mirobody_core::backend::BackendError;
use mirobody_health::fhir::{self, EntryInput, ImportItem};
use mirobody_health::text::now_ms;
use mirobody_health::{
    DeletedImport, ImportCounts, ImportKind, ImportRecord, ImportSource, ItemOutcome, QuotaExceeded, RecordStore,
};
use serde_json::Value;

use super::history::CLAIM_IMPORT;
use super::quotas::sql_bound;
use super::rows::{Chunk, Done, import_chunk_on};
use super::{Pool, SqlStore, db_error};

/// Rows (an observation and each of its points, a record, a removal) written in one
/// transaction at most: a few milliseconds of SQLite's single writer, after which every other
/// writer gets a turn.
const ROWS_PER_TRANSACTION: usize = 2_000;
/// Ids deleted in one statement when an import is undone.
const IDS_PER_DELETE: usize = 500;

/// The head of one point's insert, as the migration that reads old Observations' values uses
/// it (before points named their import).
pub(super) const INSERT_POINT: &str = "INSERT INTO health_points \
     (subject, observation_id, code, display, time_ms, value, value_text, unit, file_key) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// Inserts one point on `$conn`, with no import (for the migration that fills old values).
macro_rules! insert_point {
    ($conn:expr, $subject:expr, $id:expr, $point:expr, $file_key:expr) => {{
        let p: &mirobody_health::fhir::HealthPoint = $point;
        sqlx::query(super::import::INSERT_POINT)
            .bind($subject)
            .bind($id)
            .bind(&p.code)
            .bind(&p.display)
            .bind(p.time_ms)
            .bind(p.value)
            .bind(&p.value_text)
            .bind(&p.unit)
            .bind($file_key)
            .execute(&mut *$conn)
            .await
            .map_err(super::db_error)?;
    }};
}
pub(super) use insert_point;

#[async_trait]
impl RecordStore for SqlStore {
    /// Adds or updates a user.
    async fn upsert_user(&self, id: &str, display_name: Option<&str>, email: Option<&str>) -> BackendResult<()> {
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

    async fn begin_import(&self, subject: &str, source: &ImportSource) -> BackendResult<i64> {
        self.insert_import(subject, source.kind, source.file_key.as_deref(), source.via.as_deref()).await
    }

    /// Written in short transactions of at most [`ROWS_PER_TRANSACTION`] rows, so that a
    /// large import never holds the database's writer for long; all or nothing all the same:
    /// when one fails, what the earlier ones did is undone, and the error returned.
    async fn import_batch(
        &self,
        subject: &str,
        import_id: i64,
        items: &[&ImportItem],
    ) -> BackendResult<Result<Vec<ItemOutcome>, QuotaExceeded>> {
        let file_key = self.import_file(subject, import_id).await?;
        let chunk = Chunk { subject, import_id, file_key: file_key.as_deref(), now: now_ms() };
        self.import_chunks(&chunk, items)
            .await
            .map(|result| result.map(|done| done.into_iter().map(|(outcome, _)| outcome).collect()))
    }

    async fn finish_import(&self, subject: &str, import_id: i64, counts: &ImportCounts) -> BackendResult<()> {
        self.record_counts(subject, import_id, counts).await
    }

    async fn imports(&self, subject: &str) -> BackendResult<Vec<ImportRecord>> {
        self.list_imports(subject).await
    }

    async fn delete_import(&self, subject: &str, import_id: i64) -> BackendResult<Option<DeletedImport>> {
        self.remove_import(subject, import_id).await
    }

    /// One import of kind `tool`, via `add_observations`.
    async fn add_observations(&self, subject: &str, resources: &[Value]) -> BackendResult<Vec<i64>> {
        let mut parsed = Vec::with_capacity(resources.len());
        for (index, resource) in resources.iter().enumerate() {
            // The type is what this method stores: a resource may leave it out.
            let mut resource = resource.clone();
            if let Some(fields) = resource.as_object_mut() {
                fields.entry("resourceType").or_insert_with(|| "Observation".into());
            }
            match fhir::parse_observation(&resource).map(|mut request| request.entries.pop()) {
                Ok(Some(EntryInput::Item(item @ ImportItem::Observation(_)))) => parsed.push(item),
                Ok(Some(EntryInput::Invalid(reason))) | Err(reason) => {
                    return Err(BackendError::new(format!("observation {index}: {reason}")));
                }
                Ok(_) => return Err(BackendError::new(format!("observation {index} is not one to store"))),
            }
        }
        let source = ImportSource::new(ImportKind::Tool).via("add_observations");
        let import_id = self.begin_import(subject, &source).await?;
        let items: Vec<&ImportItem> = parsed.iter().collect();
        let chunk = Chunk { subject, import_id, file_key: None, now: now_ms() };
        let done = match self.import_chunks(&chunk, &items).await {
            Ok(Ok(done)) => done,
            failed => {
                let _ = self.remove_import(subject, import_id).await;
                return match failed {
                    Ok(Err(quota)) => Err(BackendError::new(quota.to_string())),
                    Err(e) => Err(e),
                    Ok(Ok(_)) => unreachable!("matched above"),
                };
            }
        };
        let mut counts = ImportCounts::default();
        done.iter().for_each(|(outcome, _)| counts.add(*outcome));
        self.record_counts(subject, import_id, &counts).await?;
        Ok(done.into_iter().filter(|(outcome, _)| *outcome == ItemOutcome::Created).filter_map(|(_, id)| id).collect())
    }
}

impl SqlStore {
    /// Stores `items` in short transactions, undoing the earlier ones when one fails: what
    /// became of each, with the id of each observation or record created or updated.
    async fn import_chunks(
        &self,
        chunk: &Chunk<'_>,
        items: &[&ImportItem],
    ) -> BackendResult<Result<Vec<(ItemOutcome, Option<i64>)>, QuotaExceeded>> {
        let mut outcomes = Vec::with_capacity(items.len());
        let mut done = Done::default();
        let mut start = 0;
        while start < items.len() {
            let mut end = start;
            let mut rows = 0;
            while end < items.len() && (end == start || rows + weight(items[end]) <= ROWS_PER_TRANSACTION) {
                rows += weight(items[end]);
                end += 1;
            }
            match self.import_chunk(chunk, &items[start..end]).await {
                Ok(Ok(part)) => {
                    outcomes.extend(part.outcomes.iter().copied());
                    done.absorb(part);
                }
                Ok(Err(quota)) => {
                    self.undo(chunk.subject, chunk.import_id, &done).await;
                    return Ok(Err(quota));
                }
                Err(e) => {
                    self.undo(chunk.subject, chunk.import_id, &done).await;
                    return Err(e);
                }
            }
            start = end;
            // Other writers' turn between transactions, on this runtime too.
            tokio::task::yield_now().await;
        }
        Ok(Ok(outcomes))
    }

    /// One transaction's items; an import that would take the subject past their quota of
    /// observations is `Ok(Err)` and rolled back.
    async fn import_chunk(
        &self,
        chunk: &Chunk<'_>,
        items: &[&ImportItem],
    ) -> BackendResult<Result<Done, QuotaExceeded>> {
        const TOTAL: &str = "SELECT total FROM observation_totals WHERE subject = $1";
        let max = self.quotas().max_observations_per_user;
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let claimed = sqlx::query(CLAIM_IMPORT)
                .bind(chunk.import_id)
                .bind(chunk.subject)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
            if claimed.rows_affected() == 0 {
                // Deleted since the import began.
                return Err(BackendError::new(format!("There is no import {} of this person's.", chunk.import_id)));
            }
            let mut done = Done::default();
            import_chunk_on!(tx, chunk, items, done);
            // The count the triggers keep, read after this transaction's own inserts: the
            // triggers' update holds the subject's row until commit, so an import made at the
            // same time reads the total with these rows in it.
            if !done.observations.is_empty() {
                let total: i64 =
                    sqlx::query_scalar(TOTAL).bind(chunk.subject).fetch_one(&mut *tx).await.map_err(db_error)?;
                if total > sql_bound(max) {
                    // Dropped, the transaction rolls back.
                    return Ok(Err(QuotaExceeded::Observations { max }));
                }
            }
            tx.commit().await.map_err(db_error)?;
            Ok(Ok(done))
        })
    }

    // Undoes what an import that failed part-way had done: the versions it replaced or removed
    // served again, then what it created deleted by source id (points go with their
    // observation; a value it created and then replaced is served again first, so deleting by
    // id would miss it). Best effort: a failure here is logged, and the import's error stands.
    async fn undo(&self, subject: &str, import_id: i64, done: &Done) {
        if let Err(e) = self.restore(subject, import_id, &done.kept).await {
            tracing::warn!(error = %e, "a failed import's corrections could not be undone");
        }
        for batch in done.observations.chunks(IDS_PER_DELETE) {
            let undone = on_pool!(self, |pool| {
                let mut delete = sqlx::QueryBuilder::new("DELETE FROM observations WHERE subject = ");
                delete.push_bind(subject).push(" AND source_id IN (");
                let mut ids = delete.separated(", ");
                for id in batch {
                    ids.push_bind(id);
                }
                delete.push(")");
                delete.build().execute(pool).await.map(|_| ())
            });
            if let Err(e) = undone {
                tracing::warn!(error = %e, "a failed import's observations could not be undone");
            }
        }
        for batch in done.records.chunks(IDS_PER_DELETE) {
            let undone = on_pool!(self, |pool| {
                let mut delete = sqlx::QueryBuilder::new("DELETE FROM health_records WHERE subject = ");
                delete.push_bind(subject).push(" AND (");
                let mut each = delete.separated(" OR ");
                for (kind, source_id) in batch {
                    each.push("(kind = ").push_bind_unseparated(*kind);
                    each.push_unseparated(" AND source_id = ").push_bind_unseparated(source_id).push_unseparated(")");
                }
                delete.push(")");
                delete.build().execute(pool).await.map(|_| ())
            });
            if let Err(e) = undone {
                tracing::warn!(error = %e, "a failed import's records could not be undone");
            }
        }
    }
}

impl Done {
    /// Adds what a later transaction of the same import did.
    fn absorb(&mut self, later: Done) {
        self.observations.extend(later.observations);
        self.records.extend(later.records);
        self.kept.extend(later.kept);
    }
}

/// The rows an item writes.
fn weight(item: &ImportItem) -> usize {
    match item {
        ImportItem::Observation(o) => 1 + o.points.len(),
        ImportItem::Record(_) | ImportItem::Remove(_) => 1,
    }
}
