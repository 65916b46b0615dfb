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
use mirobody_health::flags::ReferenceRange;
use mirobody_health::text::rfc3339;
use mirobody_health::{HealthRecord, HealthStore, IndicatorSummary, Series, SeriesPoint, SeriesValue};

/// A statement in two forms, `[own, shared]`, around its access condition (`$1` is the
/// subject, `$2` the reader): for the reader's own data the condition is only `$2 = $1`; for
/// another's it also asks for the share, in the same statement. A macro, so that each form
/// stays one `&'static str`.
macro_rules! scoped {
    ($($before:expr),+ ; $($after:expr),+) => {
        [
            concat!($($before,)+ "$2 = $1", $($after),+),
            concat!($($before,)+ "EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1)", $($after),+),
        ]
    };
}

/// The form of a [`scoped!`] statement for `reader` reading `subject`'s data.
fn form(sql: &[&'static str; 2], reader: &str, subject: &str) -> &'static str {
    sql[usize::from(reader != subject)]
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
        const SQL: [&str; 2] = scoped!(
            "SELECT code, display, unit, n, first_ms, last_ms FROM health_indicators WHERE subject = $1 AND ";
            " ORDER BY code, unit"
        );
        let found = on_pool!(self, |pool| {
            let rows = sqlx::query(form(&SQL, reader, subject))
                .bind(subject)
                .bind(reader)
                .fetch_all(pool)
                .await
                .map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let count: i64 = row.try_get("n")?;
                    let unit: String = row.try_get("unit")?;
                    Ok(IndicatorSummary {
                        code: row.try_get("code")?,
                        display: row.try_get("display")?,
                        unit: (!unit.is_empty()).then_some(unit),
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
        // Only what differs from value to value is read: the code and name are the caller's.
        const SQL: [&str; 2] = scoped!(
            "SELECT time_ms, value, value_text, unit, file_key, ref_low, ref_high, ref_unit, ref_text, interpretation \
             FROM health_points ",
            "WHERE subject = $1 AND code = $3 AND time_ms >= $4 AND time_ms < $5 AND ";
            " ORDER BY time_ms DESC, id DESC LIMIT $6"
        );
        // Decoded by position into tuples: a thousand values, ten columns each.
        type Row = (
            i64,
            Option<f64>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<f64>,
            Option<f64>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = on_pool!(self, |pool| {
            sqlx::query_as(form(&SQL, reader, subject))
                .bind(subject)
                .bind(reader)
                .bind(code)
                .bind(start_ms)
                .bind(end_ms)
                .bind(i64::from(limit) + 1)
                .fetch_all(pool)
                .await
                .map_err(db_error)
        })?;
        let mut points: Vec<SeriesValue> = rows
            .into_iter()
            .map(|(time_ms, value, value_text, unit, file_key, low, high, ref_unit, ref_text, interpretation)| {
                SeriesValue {
                    time: rfc3339(time_ms),
                    value,
                    value_text,
                    unit,
                    file_key,
                    range: source_range(low, high, ref_unit, ref_text),
                    interpretation,
                }
            })
            .collect();
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
        const SQL: [&str; 2] = scoped!(
            "SELECT p.code, p.display, p.time_ms, p.value, p.value_text, p.unit, p.file_key, p.ref_low, p.ref_high, \
             p.ref_unit, p.ref_text, p.interpretation FROM health_points p WHERE p.subject = $1 AND ";
            " AND p.id = (\
             SELECT q.id FROM health_points q WHERE q.subject = p.subject AND q.code = p.code \
             ORDER BY q.time_ms DESC, q.id DESC LIMIT 1) ORDER BY p.code"
        );
        let found = on_pool!(self, |pool| {
            let rows = sqlx::query(form(&SQL, reader, subject))
                .bind(subject)
                .bind(reader)
                .fetch_all(pool)
                .await
                .map_err(db_error)?;
            rows.iter().map(series_point).collect::<Result<Vec<_>, sqlx::Error>>().map_err(db_error)
        })?;
        if found.is_empty() { self.empty_or_refused(reader, subject, found).await } else { Ok(Some(found)) }
    }

    pub(super) async fn read_health_records(
        &self,
        reader: &str,
        subject: &str,
    ) -> BackendResult<Option<Vec<HealthRecord>>> {
        const SQL: [&str; 2] = scoped!(
            "SELECT kind, display, status, time_ms, detail FROM health_records WHERE subject = $1 AND ";
            " ORDER BY kind, time_ms DESC, id DESC"
        );
        let found = on_pool!(self, |pool| {
            let rows = sqlx::query(form(&SQL, reader, subject))
                .bind(subject)
                .bind(reader)
                .fetch_all(pool)
                .await
                .map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let time: Option<i64> = row.try_get("time_ms")?;
                    let detail: Option<String> = row.try_get("detail")?;
                    Ok(HealthRecord {
                        kind: row.try_get("kind")?,
                        display: row.try_get("display")?,
                        status: row.try_get("status")?,
                        time: time.map(rfc3339),
                        // Written by the import as JSON; a row that is not is shown without it.
                        detail: detail.and_then(|d| serde_json::from_str(&d).ok()),
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
        range: source_range(
            row.try_get("ref_low")?,
            row.try_get("ref_high")?,
            row.try_get("ref_unit")?,
            row.try_get("ref_text")?,
        ),
        interpretation: row.try_get("interpretation")?,
    })
}

/// The reference range a value's source gave, from its columns; `None` when it gave none.
fn source_range(
    low: Option<f64>,
    high: Option<f64>,
    unit: Option<String>,
    text: Option<String>,
) -> Option<ReferenceRange> {
    if low.is_none() && high.is_none() && text.is_none() {
        return None;
    }
    Some(ReferenceRange::from_source(low, high, unit.as_deref()).with_text(text))
}
