//! [`AccessLog`] for [`SqlStore`]: a row per tool call or resource read, with its outcome,
//! duration and, for a read of another person's data, that person (the subject); the reads of
//! a person's data by others, newest first; the purge by age; and
//! [`SqlStore::access_log_of`], which reads a user's rows back.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_ports::{AccessKind, AccessLog, AccessOutcome, DataRead, MAX_READS_PAGE};
use sqlx::Row;

use super::{Pool, SqlStore, db_error};
use mirobody_health::text::now_ms;

/// The longest name stored in the access log, in bytes (cut on a character boundary).
const MAX_LOGGED_NAME: usize = 128;

#[async_trait]
impl AccessLog for SqlStore {
    async fn record(
        &self,
        user_id: &str,
        subject: Option<&str>,
        kind: AccessKind,
        name: &str,
        outcome: AccessOutcome,
        duration_ms: u64,
    ) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO access_log \
             (user_id, kind, name, success, outcome, duration_ms, created_at_ms, subject) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
        // One's own data has no subject: only reads of someone else's are listed for them.
        let subject = subject.filter(|subject| *subject != user_id);
        let kind: i64 = match kind {
            AccessKind::Tool => 1,
            AccessKind::Resource => 2,
        };
        let (name, _) = mirobody_health::text::cap_bytes(name, MAX_LOGGED_NAME);
        let duration = i64::try_from(duration_ms).unwrap_or(i64::MAX);
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(user_id)
                .bind(kind)
                .bind(name)
                .bind(outcome.is_ok())
                .bind(outcome.as_str())
                .bind(duration)
                .bind(now_ms())
                .bind(subject)
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }

    async fn reads_of(&self, subject: &str, before: Option<i64>, limit: u32) -> BackendResult<Vec<DataRead>> {
        const SQL: &str = "SELECT a.id, a.user_id, a.kind, a.name, a.success, a.outcome, a.duration_ms, \
             a.created_at_ms, COALESCE(u.display_name, ac.display_name, u.email, ac.email) AS reader_name \
             FROM access_log a LEFT JOIN users u ON u.id = a.user_id LEFT JOIN accounts ac ON ac.id = a.user_id \
             WHERE a.subject = $1 AND a.id < $2 ORDER BY a.id DESC LIMIT $3";
        let before = before.unwrap_or(i64::MAX);
        let limit = i64::from(limit.min(MAX_READS_PAGE));
        on_pool!(self, |pool| {
            let rows =
                sqlx::query(SQL).bind(subject).bind(before).bind(limit).fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let duration: i64 = row.try_get("duration_ms")?;
                    Ok(DataRead {
                        id: row.try_get("id")?,
                        reader: row.try_get("user_id")?,
                        reader_name: row.try_get("reader_name")?,
                        kind: kind_of(row.try_get("kind")?),
                        name: row.try_get("name")?,
                        outcome: outcome_of(row.try_get("success")?, row.try_get("outcome")?),
                        at_ms: row.try_get("created_at_ms")?,
                        duration_ms: duration.max(0) as u64,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }

    async fn purge_before(&self, before_ms: i64, max: u64) -> BackendResult<u64> {
        const SQL: &str = "DELETE FROM access_log WHERE id IN \
             (SELECT id FROM access_log WHERE created_at_ms < $1 ORDER BY id LIMIT $2)";
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(before_ms)
                .bind(max)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
                .map_err(db_error)
        })
    }
}

fn kind_of(kind: i64) -> AccessKind {
    if kind == 2 { AccessKind::Resource } else { AccessKind::Tool }
}

// Rows logged before outcomes were (schema 4) read as ok or failed; a name this version does
// not know reads as failed.
fn outcome_of(success: bool, outcome: Option<String>) -> AccessOutcome {
    match outcome {
        Some(name) => AccessOutcome::from_name(&name).unwrap_or(AccessOutcome::Failed),
        None if success => AccessOutcome::Ok,
        None => AccessOutcome::Failed,
    }
}

impl SqlStore {
    /// `user_id`'s access-log rows, oldest first: (kind, name, outcome, duration in ms). Rows
    /// logged before outcomes were (schema 4) read as [`AccessOutcome::Ok`] or
    /// [`AccessOutcome::Failed`]; a name this version does not know reads as `Failed`.
    pub async fn access_log_of(&self, user_id: &str) -> BackendResult<Vec<(AccessKind, String, AccessOutcome, u64)>> {
        const SQL: &str =
            "SELECT kind, name, success, outcome, duration_ms FROM access_log WHERE user_id = $1 ORDER BY id";
        on_pool!(self, |pool| {
            let rows = sqlx::query(SQL).bind(user_id).fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let kind = kind_of(row.try_get("kind")?);
                    let outcome = outcome_of(row.try_get("success")?, row.try_get("outcome")?);
                    let duration: i64 = row.try_get("duration_ms")?;
                    Ok((kind, row.try_get("name")?, outcome, duration.max(0) as u64))
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }
}
