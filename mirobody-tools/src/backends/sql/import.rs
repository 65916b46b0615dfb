//! The writes of a health-data import for [`SqlStore`]: Observations with their points,
//! conditions, medications and allergies, each stored at most once per person and source id.

use mirobody_core::backend::BackendResult;

use super::{Pool, SqlStore, db_error};
use crate::fhir::{ImportItem, NewRecord};
use crate::text::now_ms;

pub(super) const INSERT_OBSERVATION: &str = "INSERT INTO observations \
     (subject, code, effective_ms, resource, created_at_ms, source_id, file_key) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (subject, source_id) DO NOTHING RETURNING id";
pub(super) const INSERT_POINT: &str = "INSERT INTO health_points \
     (subject, observation_id, code, display, time_ms, value, value_text, unit, file_key) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const INSERT_RECORD: &str = "INSERT INTO health_records \
     (subject, kind, source_id, display, status, time_ms, resource, created_at_ms) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (subject, kind, source_id) DO NOTHING RETURNING id";

/// Inserts one Observation and its points on `$conn` (a transaction of either database): the
/// new row's id, or `None` when `subject` already has one with its source id.
macro_rules! insert_observation {
    ($conn:expr, $subject:expr, $observation:expr, $file_key:expr, $now:expr) => {{
        let o: &$crate::fhir::NewObservation = $observation;
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
            for point in &o.points {
                insert_point!($conn, $subject, id, point, $file_key);
            }
        }
        id
    }};
}

macro_rules! insert_point {
    ($conn:expr, $subject:expr, $id:expr, $point:expr, $file_key:expr) => {{
        let p: &$crate::fhir::HealthPoint = $point;
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
pub(super) use {insert_observation, insert_point};

impl SqlStore {
    /// Stores `items` as `subject`'s in one transaction, read from the uploaded file
    /// `file_key` if any: for each, whether it was new (false: `subject` already had one with
    /// its source id, and it was left as it was). All or nothing: a database error stores none.
    pub(crate) async fn import_items(
        &self,
        subject: &str,
        items: &[&ImportItem],
        file_key: Option<&str>,
    ) -> BackendResult<Vec<bool>> {
        let now = now_ms();
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let mut created = Vec::with_capacity(items.len());
            for item in items {
                let new = match item {
                    ImportItem::Observation(o) => insert_observation!(tx, subject, o, file_key, now).is_some(),
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
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(db_error)?;
                        id.is_some()
                    }
                };
                created.push(new);
            }
            tx.commit().await.map_err(db_error)?;
            Ok(created)
        })
    }
}
