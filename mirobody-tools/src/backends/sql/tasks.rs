//! [`TaskStore`] for [`SqlStore`]: a row per task of the MCP tasks extension, read only by its
//! owner. An ended task's row never changes again, so a cancel one instance writes stands
//! against the end another writes after it.

use async_trait::async_trait;
use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_core::{TaskRecord, TaskState, TaskStore};
use serde_json::Value;
use sqlx::Row;

use super::{Pool, SqlStore, db_error};

// The terminal states, as stored: an UPDATE never touches a row in one of them.
const ENDED: &str = "('completed', 'failed', 'cancelled')";

fn json_text(value: &Option<Value>) -> Option<String> {
    value.as_ref().map(Value::to_string)
}

fn read_json(text: Option<String>) -> Option<Value> {
    text.and_then(|text| serde_json::from_str(&text).ok())
}

#[async_trait]
impl TaskStore for SqlStore {
    async fn save(&self, task: &TaskRecord) -> BackendResult<()> {
        // Inserted, or updated when the row is the same owner's and has not ended; a row of
        // another owner with the same id (ids are 128 random bits) is left alone.
        let sql = format!(
            "INSERT INTO tasks (id, owner, tool, state, created_ms, updated_ms, expires_ms, lease_until_ms, \
             input_requests, outcome) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_ms = excluded.updated_ms, \
             lease_until_ms = excluded.lease_until_ms, input_requests = excluded.input_requests, \
             outcome = excluded.outcome \
             WHERE tasks.owner = excluded.owner AND tasks.state NOT IN {ENDED}"
        );
        on_pool!(self, |pool| {
            sqlx::query(&sql)
                .bind(&task.id)
                .bind(&task.owner)
                .bind(&task.tool)
                .bind(task.state.as_str())
                .bind(task.created_ms)
                .bind(task.updated_ms)
                .bind(task.expires_ms)
                .bind(task.lease_until_ms)
                .bind(json_text(&task.input_requests))
                .bind(json_text(&task.outcome))
                .execute(pool)
                .await
                .map(drop)
                .map_err(db_error)
        })
    }

    async fn load(&self, id: &str, owner: &str, now_ms: i64) -> BackendResult<Option<TaskRecord>> {
        const SQL: &str = "SELECT id, owner, tool, state, created_ms, updated_ms, expires_ms, lease_until_ms, \
             input_requests, outcome FROM tasks WHERE id = $1 AND owner = $2 AND expires_ms > $3";
        let row = on_pool!(self, |pool| {
            let row =
                sqlx::query(SQL).bind(id).bind(owner).bind(now_ms).fetch_optional(pool).await.map_err(db_error)?;
            row.map(|row| -> Result<_, sqlx::Error> {
                Ok((
                    row.try_get::<String, _>(0)?,
                    row.try_get::<String, _>(1)?,
                    row.try_get::<String, _>(2)?,
                    row.try_get::<String, _>(3)?,
                    [row.try_get::<i64, _>(4)?, row.try_get(5)?, row.try_get(6)?, row.try_get(7)?],
                    row.try_get::<Option<String>, _>(8)?,
                    row.try_get::<Option<String>, _>(9)?,
                ))
            })
            .transpose()
            .map_err(db_error)?
        });
        let Some((id, owner, tool, state, [created_ms, updated_ms, expires_ms, lease_until_ms], input, outcome)) = row
        else {
            return Ok(None);
        };
        let state = TaskState::from_name(&state)
            .ok_or_else(|| BackendError::new(format!("a stored task has an unknown state: {state}")))?;
        let mut record = TaskRecord::new(id, owner, tool, created_ms, 0, 0);
        record.state = state;
        record.updated_ms = updated_ms;
        record.expires_ms = expires_ms;
        record.lease_until_ms = lease_until_ms;
        record.input_requests = read_json(input);
        record.outcome = read_json(outcome);
        Ok(Some(record))
    }

    async fn live(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        let sql = format!(
            "SELECT COUNT(*) FROM tasks WHERE owner = $1 AND state NOT IN {ENDED} AND lease_until_ms >= $2 \
             AND expires_ms > $2"
        );
        let count: i64 = on_pool!(self, |pool| {
            sqlx::query_scalar(&sql).bind(owner).bind(now_ms).fetch_one(pool).await.map_err(db_error)?
        });
        Ok(count.max(0) as u64)
    }

    async fn purge(&self, now_ms: i64) -> BackendResult<u64> {
        const SQL: &str = "DELETE FROM tasks WHERE expires_ms <= $1";
        let removed = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(now_ms).execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(removed)
    }
}
