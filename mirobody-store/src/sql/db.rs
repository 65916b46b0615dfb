//! [`HealthStore`] for [`SqlStore`]: care-circle sharing, FHIR Observations, the health
//! queries (in `series.rs`), the file index and conversation summaries.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_health::HealthStore;
use mirobody_health::store::aggregate::{Bucket, BucketQuery};
use mirobody_health::{CircleMember, FileRecord, HealthRecord, IndicatorSummary, ObservationPage, Series, SeriesPoint};
use sqlx::Row;

use super::{Pool, SqlStore, db_error};
use mirobody_health::text::{now_ms, rfc3339};

#[async_trait]
impl HealthStore for SqlStore {
    async fn health_sharers(&self, user_id: &str) -> BackendResult<Vec<CircleMember>> {
        const SQL: &str = "SELECT s.owner, s.nickname, u.email FROM health_shares s \
             LEFT JOIN users u ON u.id = s.owner WHERE s.reader = $1 ORDER BY s.created_at_ms, s.owner";
        on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(user_id).fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    Ok(CircleMember {
                        user_id: row.try_get("owner")?,
                        nickname: row.try_get("nickname")?,
                        email: row.try_get("email")?,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }

    async fn can_read_health(&self, reader: &str, subject: &str) -> BackendResult<bool> {
        if reader == subject {
            return Ok(true);
        }
        let found: Option<i64> = on_pool!(self, |pool| {
            sqlx::query_scalar("SELECT CAST(1 AS BIGINT) FROM health_shares WHERE reader = $1 AND owner = $2")
                .bind(reader)
                .bind(subject)
                .fetch_optional(pool)
                .await
                .map_err(db_error)
        })?;
        Ok(found.is_some())
    }

    async fn observations(&self, reader: &str, subject: &str, limit: u32) -> BackendResult<Option<ObservationPage>> {
        // The access check and the total in one statement (-1: not allowed), then the page,
        // which repeats the access condition so a share revoked in between returns nothing.
        const TOTAL: &str = "SELECT CASE WHEN $2 = $1 \
             OR EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1) \
             THEN COALESCE((SELECT total FROM observation_totals WHERE subject = $1), 0) ELSE -1 END";
        const PAGE: &str = "SELECT resource FROM observations WHERE subject = $1 \
             AND ($2 = $1 OR EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1)) \
             ORDER BY effective_ms DESC, id DESC LIMIT $3";
        let total: i64 = on_pool!(self, |pool| {
            sqlx::query_scalar(TOTAL).bind(subject).bind(reader).fetch_one(pool).await.map_err(db_error)
        })?;
        if total < 0 {
            return Ok(None);
        }
        let resources: Vec<String> = on_pool!(self, |pool| {
            sqlx::query_scalar(PAGE)
                .bind(subject)
                .bind(reader)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
                .map_err(db_error)
        })?;
        let observations = resources.iter().filter_map(|text| serde_json::from_str(text).ok()).collect();
        Ok(Some(ObservationPage { total: total as u64, observations }))
    }

    async fn indicators(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<IndicatorSummary>>> {
        self.read_indicators(reader, subject).await
    }

    async fn series(
        &self,
        reader: &str,
        subject: &str,
        code: &str,
        start_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> BackendResult<Option<Series>> {
        self.read_series(reader, subject, code, (start_ms, end_ms), limit).await
    }

    async fn buckets(
        &self,
        reader: &str,
        subject: &str,
        query: &BucketQuery<'_>,
    ) -> BackendResult<Option<Vec<Bucket>>> {
        self.read_buckets(reader, subject, query).await
    }

    async fn latest_values(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<SeriesPoint>>> {
        self.read_latest_values(reader, subject).await
    }

    async fn health_records(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<HealthRecord>>> {
        self.read_health_records(reader, subject).await
    }

    async fn files(&self, owner: &str) -> BackendResult<Vec<FileRecord>> {
        const SQL: &str = "SELECT file_key, filename, mime_type, size, text_key, uploaded_at_ms, text_state, text_error FROM files \
             WHERE owner = $1 ORDER BY uploaded_at_ms DESC, file_key";
        on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(owner).fetch_all(pool).await.map_err(db_error)?;
            rows.iter().map(file_record).collect::<Result<Vec<_>, sqlx::Error>>().map_err(db_error)
        })
    }

    async fn file(&self, owner: &str, file_key: &str) -> BackendResult<Option<FileRecord>> {
        const SQL: &str = "SELECT file_key, filename, mime_type, size, text_key, uploaded_at_ms, text_state, text_error FROM files \
             WHERE owner = $1 AND file_key = $2";
        on_pool!(self, |pool| {
            let row = sqlx::query(SQL).bind(owner).bind(file_key).fetch_optional(pool).await.map_err(db_error)?;
            row.as_ref().map(file_record).transpose().map_err(db_error)
        })
    }

    async fn set_conversation_summary(&self, owner: &str, session_id: &str, summary: &str) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO conversations (owner, session_id, summary, created_at_ms, updated_at_ms) \
             VALUES ($1, $2, $3, $4, $4) ON CONFLICT (owner, session_id) \
             DO UPDATE SET summary = excluded.summary, updated_at_ms = excluded.updated_at_ms";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(owner)
                .bind(session_id)
                .bind(summary)
                .bind(now_ms())
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }
}

fn file_record<R: Row>(row: &R) -> Result<FileRecord, sqlx::Error>
where
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i32: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let size: i64 = row.try_get("size")?;
    Ok(FileRecord {
        file_key: row.try_get("file_key")?,
        filename: row.try_get("filename")?,
        mime_type: row.try_get("mime_type")?,
        size: size.max(0) as u64,
        uploaded_at: rfc3339(row.try_get("uploaded_at_ms")?),
        text_key: row.try_get("text_key")?,
        text_state: super::files::text_state(row.try_get("text_state")?, row.try_get("text_error")?),
    })
}
