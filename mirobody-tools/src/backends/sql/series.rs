//! The health queries' reads for [`SqlStore`]: which indicators a person has, a series of one,
//! the newest value of each, and the conditions, medications and allergies on record.
//!
//! Every statement repeats the access condition (the reader is the subject, or the subject
//! shares with the reader), so a share revoked between two statements is honoured at once.
//! A read that finds nothing then asks whether the reader may read at all, to tell "nothing
//! there" from "not yours": the common case costs one statement.

use mirobody_core::backend::BackendResult;
use sqlx::Row;

use super::{Pool, SqlStore, db_error};
use crate::health::{HealthRecord, HealthStore, IndicatorSummary, Series, SeriesPoint};
use crate::text::rfc3339;

/// The access condition, where `$1` is the subject and `$2` the reader: a macro so that every
/// statement stays one `&'static str`.
macro_rules! may_read {
    () => {
        "($2 = $1 OR EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1))"
    };
}

impl SqlStore {
    // Nothing found: the answer is "none" if the reader may read the subject's data at all.
    async fn empty_or_refused<T>(&self, reader: &str, subject: &str, empty: T) -> BackendResult<Option<T>> {
        Ok(self.can_read_health(reader, subject).await?.then_some(empty))
    }

    pub(super) async fn read_indicators(
        &self,
        reader: &str,
        subject: &str,
    ) -> BackendResult<Option<Vec<IndicatorSummary>>> {
        const SQL: &str = concat!(
            "SELECT code, MAX(display) AS display, unit, COUNT(*) AS n, MIN(time_ms) AS first_ms, \
             MAX(time_ms) AS last_ms FROM health_points WHERE subject = $1 AND ",
            may_read!(),
            " \
             GROUP BY code, unit ORDER BY code, unit"
        );
        let found = on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(subject).bind(reader).fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let count: i64 = row.try_get("n")?;
                    Ok(IndicatorSummary {
                        code: row.try_get("code")?,
                        display: row.try_get("display")?,
                        unit: row.try_get("unit")?,
                        count: count.max(0) as u64,
                        first: rfc3339(row.try_get("first_ms")?),
                        last: rfc3339(row.try_get("last_ms")?),
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })?;
        if found.is_empty() { self.empty_or_refused(reader, subject, found).await } else { Ok(Some(found)) }
    }

    pub(super) async fn read_series(
        &self,
        reader: &str,
        subject: &str,
        code: &str,
        (start_ms, end_ms): (i64, i64),
        limit: u32,
    ) -> BackendResult<Option<Series>> {
        // The newest `limit + 1` in the range: the extra one says whether any were left out.
        const SQL: &str = concat!(
            "SELECT code, display, time_ms, value, value_text, unit, file_key FROM health_points \
             WHERE subject = $1 AND code = $3 AND time_ms >= $4 AND time_ms < $5 AND ",
            may_read!(),
            " \
             ORDER BY time_ms DESC, id DESC LIMIT $6"
        );
        let mut points = on_pool!(self, |pool| {
            let rows = sqlx::query(SQL)
                .bind(subject)
                .bind(reader)
                .bind(code)
                .bind(start_ms)
                .bind(end_ms)
                .bind(i64::from(limit) + 1)
                .fetch_all(pool)
                .await
                .map_err(db_error)?;
            rows.iter().map(series_point).collect::<Result<Vec<_>, sqlx::Error>>().map_err(db_error)
        })?;
        if points.is_empty() {
            return self.empty_or_refused(reader, subject, Series::default()).await;
        }
        let truncated = points.len() > limit as usize;
        points.truncate(limit as usize);
        points.reverse();
        Ok(Some(Series { points, truncated }))
    }

    pub(super) async fn read_latest_values(
        &self,
        reader: &str,
        subject: &str,
    ) -> BackendResult<Option<Vec<SeriesPoint>>> {
        // Per code, the newest point: one index seek each on (subject, code, time_ms).
        const SQL: &str = concat!(
            "SELECT p.code, p.display, p.time_ms, p.value, p.value_text, p.unit, p.file_key \
             FROM health_points p WHERE p.subject = $1 AND ",
            may_read!(),
            " AND p.id = (\
             SELECT q.id FROM health_points q WHERE q.subject = p.subject AND q.code = p.code \
             ORDER BY q.time_ms DESC, q.id DESC LIMIT 1) ORDER BY p.code"
        );
        let found = on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(subject).bind(reader).fetch_all(pool).await.map_err(db_error)?;
            rows.iter().map(series_point).collect::<Result<Vec<_>, sqlx::Error>>().map_err(db_error)
        })?;
        if found.is_empty() { self.empty_or_refused(reader, subject, found).await } else { Ok(Some(found)) }
    }

    pub(super) async fn read_health_records(
        &self,
        reader: &str,
        subject: &str,
    ) -> BackendResult<Option<Vec<HealthRecord>>> {
        const SQL: &str = concat!(
            "SELECT kind, display, status, time_ms FROM health_records WHERE subject = $1 AND ",
            may_read!(),
            " \
             ORDER BY kind, time_ms DESC, id DESC"
        );
        let found = on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(subject).bind(reader).fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let time: Option<i64> = row.try_get("time_ms")?;
                    Ok(HealthRecord {
                        kind: row.try_get("kind")?,
                        display: row.try_get("display")?,
                        status: row.try_get("status")?,
                        time: time.map(rfc3339),
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })?;
        if found.is_empty() { self.empty_or_refused(reader, subject, found).await } else { Ok(Some(found)) }
    }
}

fn series_point<R: Row>(row: &R) -> Result<SeriesPoint, sqlx::Error>
where
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<f64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    Ok(SeriesPoint {
        code: row.try_get("code")?,
        display: row.try_get("display")?,
        time: rfc3339(row.try_get("time_ms")?),
        value: row.try_get("value")?,
        value_text: row.try_get("value_text")?,
        unit: row.try_get("unit")?,
        file_key: row.try_get("file_key")?,
    })
}
