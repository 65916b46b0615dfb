//! The writes of a health-data import for [`SqlStore`]: Observations with their points,
//! conditions, medications and allergies, each stored at most once per person and source id.

use mirobody_core::backend::BackendResult;

use async_trait::async_trait;
use mirobody_core::backend::BackendError;
use mirobody_health::fhir::{self, EntryInput, ImportItem, NewRecord};
use mirobody_health::text::now_ms;
use mirobody_health::{QuotaExceeded, RecordStore};
use serde_json::Value;

use super::quotas::sql_bound;
use super::{Pool, SqlStore, db_error};

pub(super) const INSERT_OBSERVATION: &str = "INSERT INTO observations \
     (subject, code, effective_ms, resource, created_at_ms, source_id, file_key) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (subject, source_id) DO NOTHING RETURNING id";
/// The head of a multi-row insert of points (`QueryBuilder::push_values` adds the rows).
pub(super) const INSERT_POINTS: &str = "INSERT INTO health_points \
     (subject, observation_id, code, display, time_ms, value, value_text, unit, file_key) ";
/// Points in one statement: nine binds each, well within both databases' bounds.
pub(super) const POINTS_PER_STATEMENT: usize = 200;
/// Rows (an observation and each of its points, a record) written in one transaction at most:
/// a few milliseconds of SQLite's single writer, after which every other writer gets a turn.
const ROWS_PER_TRANSACTION: usize = 500;
/// Ids deleted in one statement when an import is undone.
const IDS_PER_DELETE: usize = 500;

pub(super) const INSERT_POINT: &str = "INSERT INTO health_points \
     (subject, observation_id, code, display, time_ms, value, value_text, unit, file_key) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const INSERT_RECORD: &str = "INSERT INTO health_records \
     (subject, kind, source_id, display, status, time_ms, resource, created_at_ms, detail) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (subject, kind, source_id) DO NOTHING RETURNING id";

/// Inserts one Observation and its points on `$conn` (a transaction of either database): the
/// new row's id, or `None` when `subject` already has one with its source id.
macro_rules! insert_observation {
    ($conn:expr, $subject:expr, $observation:expr, $file_key:expr, $now:expr) => {{
        let o: &mirobody_health::fhir::NewObservation = $observation;
        let id: Option<i64> = sqlx::query_scalar(super::import::INSERT_OBSERVATION)
            .bind($subject)
            .bind(&o.code)
            .bind(o.time_ms)
            .bind(o.resource.to_string())
            .bind($now)
            .bind(&o.source_id)
            .bind($file_key)
            .fetch_optional(&mut *$conn)
            .await
            .map_err(super::db_error)?;
        if let Some(id) = id {
            super::import::insert_points!($conn, $subject, id, &o.points, $file_key);
        }
        id
    }};
}

/// Inserts an observation's points on `$conn`, in multi-row statements.
macro_rules! insert_points {
    ($conn:expr, $subject:expr, $id:expr, $points:expr, $file_key:expr) => {{
        let points: &[mirobody_health::fhir::HealthPoint] = $points;
        for batch in points.chunks(super::import::POINTS_PER_STATEMENT) {
            let mut insert = sqlx::QueryBuilder::new(super::import::INSERT_POINTS);
            insert.push_values(batch, |mut row, p| {
                row.push_bind($subject)
                    .push_bind($id)
                    .push_bind(&p.code)
                    .push_bind(&p.display)
                    .push_bind(p.time_ms)
                    .push_bind(p.value)
                    .push_bind(&p.value_text)
                    .push_bind(&p.unit)
                    .push_bind($file_key);
            });
            insert.build().execute(&mut *$conn).await.map_err(super::db_error)?;
        }
    }};
}

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
pub(super) use {insert_point, insert_points};

#[async_trait]
impl RecordStore for SqlStore {
    /// Stores `items` as `subject`'s, read from the uploaded file `file_key` if any: for each,
    /// whether it was new (false: `subject` already had one with its source id, and it was
    /// left as it was).
    ///
    /// Written in short transactions of at most [`ROWS_PER_TRANSACTION`] rows, so that a large
    /// import never holds the database's writer for long; all or nothing all the same: when
    /// one fails, what the earlier ones wrote is deleted again, and the error returned. An
    /// import that would take `subject` past their quota of observations stores nothing and
    /// is `Ok(Err)`.
    async fn import_items(
        &self,
        subject: &str,
        items: &[&ImportItem],
        file_key: Option<&str>,
    ) -> BackendResult<Result<Vec<bool>, QuotaExceeded>> {
        let now = now_ms();
        let mut created = Vec::with_capacity(items.len());
        let mut written = Written::default();
        let mut start = 0;
        while start < items.len() {
            let mut end = start;
            let mut rows = 0;
            while end < items.len() && (end == start || rows + weight(items[end]) <= ROWS_PER_TRANSACTION) {
                rows += weight(items[end]);
                end += 1;
            }
            match self.import_chunk(subject, &items[start..end], file_key, now, &mut written).await {
                Ok(Ok(flags)) => created.extend(flags),
                Ok(Err(quota)) => {
                    self.undo_import(subject, &written).await;
                    return Ok(Err(quota));
                }
                Err(e) => {
                    self.undo_import(subject, &written).await;
                    return Err(e);
                }
            }
            start = end;
            // Other writers' turn between transactions, on this runtime too.
            tokio::task::yield_now().await;
        }
        Ok(Ok(created))
    }

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

    /// Stores FHIR Observations of `subject` (`resourceType` may be left out) in one
    /// transaction, as an import does (each
    /// read into its indicator values; one already stored with the same source id is left as
    /// it was); the ids of those that were new. A resource the importer refuses (no code, no
    /// time, a value of the wrong type) is an error and stores nothing.
    async fn add_observations(&self, subject: &str, resources: &[Value]) -> BackendResult<Vec<i64>> {
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
}

impl SqlStore {
    async fn import_chunk(
        &self,
        subject: &str,
        items: &[&ImportItem],
        file_key: Option<&str>,
        now: i64,
        written: &mut Written,
    ) -> BackendResult<Result<Vec<bool>, QuotaExceeded>> {
        const TOTAL: &str = "SELECT total FROM observation_totals WHERE subject = $1";
        let max = self.quotas().max_observations_per_user;
        let mut observations = Vec::new();
        let mut records = Vec::new();
        let created = on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let mut created = Vec::with_capacity(items.len());
            for item in items {
                let new = match item {
                    ImportItem::Observation(o) => {
                        let id = insert_observation!(tx, subject, o, file_key, now);
                        observations.extend(id);
                        id.is_some()
                    }
                    ImportItem::Record(r) => {
                        let r: &NewRecord = r;
                        let id: Option<i64> = sqlx::query_scalar(INSERT_RECORD)
                            .bind(subject)
                            .bind(r.kind.as_str())
                            .bind(&r.source_id)
                            .bind(&r.display)
                            .bind(&r.status)
                            .bind(r.time_ms)
                            .bind(r.resource.to_string())
                            .bind(now)
                            .bind(r.detail.as_ref().map(Value::to_string))
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(db_error)?;
                        records.extend(id);
                        id.is_some()
                    }
                };
                created.push(new);
            }
            // The count the triggers keep, read after this transaction's own inserts: the
            // triggers' update holds the subject's row until commit, so an import made at the
            // same time reads the total with these rows in it.
            if !observations.is_empty() {
                let total: i64 = sqlx::query_scalar(TOTAL).bind(subject).fetch_one(&mut *tx).await.map_err(db_error)?;
                if total > sql_bound(max) {
                    // Dropped, the transaction rolls back.
                    return Ok(Err(QuotaExceeded::Observations { max }));
                }
            }
            tx.commit().await.map_err(db_error)?;
            created
        });
        written.observations.extend(observations);
        written.records.extend(records);
        Ok(Ok(created))
    }

    // Deletes what an import that failed part-way had written (points go with their
    // observation). Best effort: a failure here is logged, and the import's error stands.
    async fn undo_import(&self, subject: &str, written: &Written) {
        for (table, ids) in [("observations", &written.observations), ("health_records", &written.records)] {
            for batch in ids.chunks(IDS_PER_DELETE) {
                let undone = on_pool!(self, |pool| {
                    let mut delete = sqlx::QueryBuilder::new(format!("DELETE FROM {table} WHERE subject = "));
                    delete.push_bind(subject).push(" AND id IN (");
                    let mut ids = delete.separated(", ");
                    for id in batch {
                        ids.push_bind(*id);
                    }
                    delete.push(")");
                    delete.build().execute(pool).await.map(|_| ())
                });
                if let Err(e) = undone {
                    tracing::warn!(error = %e, table, "a failed import could not be undone");
                }
            }
        }
    }
}

/// What an import has written so far, to undo it.
#[derive(Default)]
struct Written {
    observations: Vec<i64>,
    records: Vec<i64>,
}

/// The rows an item writes.
fn weight(item: &ImportItem) -> usize {
    match item {
        ImportItem::Observation(o) => 1 + o.points.len(),
        ImportItem::Record(_) => 1,
    }
}
