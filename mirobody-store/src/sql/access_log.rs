//! [`AccessLog`] for [`SqlStore`]: a row per tool call or resource read, with its outcome and
//! duration; and [`SqlStore::access_log_of`], which reads a user's rows back.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_ports::{AccessKind, AccessLog, AccessOutcome};
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
        kind: AccessKind,
        name: &str,
        outcome: AccessOutcome,
        duration_ms: u64,
    ) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO access_log (user_id, kind, name, success, outcome, duration_ms, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)";
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
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
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
                    let kind =
                        if row.try_get::<i64, _>("kind")? == 2 { AccessKind::Resource } else { AccessKind::Tool };
                    let success: bool = row.try_get("success")?;
                    let outcome = match row.try_get::<Option<String>, _>("outcome")? {
                        Some(name) => AccessOutcome::from_name(&name).unwrap_or(AccessOutcome::Failed),
                        None if success => AccessOutcome::Ok,
                        None => AccessOutcome::Failed,
                    };
                    let duration: i64 = row.try_get("duration_ms")?;
                    Ok((kind, row.try_get("name")?, outcome, duration.max(0) as u64))
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }
}
