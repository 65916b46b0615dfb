//! [`TaskStore`] for [`SqlStore`]: a row per task of the MCP tasks extension, read only by its
//! owner. An ended task's row never changes again, so a cancel one instance writes stands
//! against the end another writes after it.
//!
//! A task's outcome and its questions can hold a person's data (a `read_file` task's result is
//! a document's decrypted text): [`SqlTaskStore`] seals them with the file cipher when
//! encryption at rest is on, before they are written, and opens them after they are read.

use async_trait::async_trait;
use base64::Engine;
use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_ports::{ANONYMOUS_OWNER_PREFIX, TaskRecord, TaskState, TaskStore};
use serde_json::Value;
use sqlx::Row;

use super::{Pool, SqlStore, db_error};
use crate::FileCipher;

// The terminal states, as stored: an UPDATE never touches a row in one of them.
const ENDED: &str = "('completed', 'failed', 'cancelled')";

// How a sealed column begins; JSON text never begins with a letter, so a row written before
// encryption was turned on is told apart and read as it is.
const SEALED: &str = "sealed:";

/// The task store on a [`SqlStore`], sealing what a task carries of a person's data (its
/// result or error, its questions) with the [`FileCipher`] of stored files when there is one
/// (AES-256-GCM, bound to the task's id, owner and column, so a sealed value moved to another
/// row does not open). Ids, owners, states and times stay in clear: the store queries them.
///
/// What `OpenedBackends::task_store` hands out; [`SqlStore`]'s own [`TaskStore`] is this
/// without a cipher.
#[derive(Clone, Debug)]
pub struct SqlTaskStore {
    sql: SqlStore,
    cipher: Option<FileCipher>,
}

impl SqlTaskStore {
    /// Tasks on `sql`, their outcomes and questions sealed with `cipher` when it is given.
    pub fn new(sql: SqlStore, cipher: Option<FileCipher>) -> Self {
        SqlTaskStore { sql, cipher }
    }
}

// The associated data a column of a task's row is sealed under.
fn binding(id: &str, owner: &str, column: &str) -> String {
    format!("mirobody task\0{id}\0{owner}\0{column}")
}

fn write_json(value: &Option<Value>, cipher: Option<&FileCipher>, aad: impl FnOnce() -> String) -> Option<String> {
    let text = value.as_ref()?.to_string();
    Some(match cipher {
        Some(cipher) => {
            let sealed = cipher.encrypt(&aad(), text.as_bytes());
            format!("{SEALED}{}", base64::engine::general_purpose::STANDARD.encode(sealed))
        }
        None => text,
    })
}

fn read_json(
    text: Option<String>,
    cipher: Option<&FileCipher>,
    aad: impl FnOnce() -> String,
) -> BackendResult<Option<Value>> {
    let Some(text) = text else { return Ok(None) };
    let Some(sealed) = text.strip_prefix(SEALED) else {
        return Ok(serde_json::from_str(&text).ok());
    };
    let Some(cipher) = cipher else {
        return Err(BackendError::new(
            "a stored task is sealed with a file_encryption_key, and none is set; set the key it was written with",
        ));
    };
    let unreadable =
        || BackendError::new("a stored task could not be opened (another file_encryption_key, or damaged)");
    let bytes = base64::engine::general_purpose::STANDARD.decode(sealed).map_err(|_| unreadable())?;
    let plain = cipher.decrypt(&aad(), &bytes).map_err(|_| unreadable())?;
    serde_json::from_slice(&plain).map(Some).map_err(|_| unreadable())
}

impl SqlStore {
    async fn save_task(&self, task: &TaskRecord, cipher: Option<&FileCipher>) -> BackendResult<()> {
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
        let input = write_json(&task.input_requests, cipher, || binding(&task.id, &task.owner, "input_requests"));
        let outcome = write_json(&task.outcome, cipher, || binding(&task.id, &task.owner, "outcome"));
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
                .bind(&input)
                .bind(&outcome)
                .execute(pool)
                .await
                .map(drop)
                .map_err(db_error)
        })
    }

    async fn load_task(
        &self,
        id: &str,
        owner: &str,
        now_ms: i64,
        cipher: Option<&FileCipher>,
    ) -> BackendResult<Option<TaskRecord>> {
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
        let input = read_json(input, cipher, || binding(&id, &owner, "input_requests"))?;
        let outcome = read_json(outcome, cipher, || binding(&id, &owner, "outcome"))?;
        let mut record = TaskRecord::new(id, owner, tool, created_ms, 0, 0);
        record.state = state;
        record.updated_ms = updated_ms;
        record.expires_ms = expires_ms;
        record.lease_until_ms = lease_until_ms;
        record.input_requests = input;
        record.outcome = outcome;
        Ok(Some(record))
    }

    async fn count_live_tasks(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        let sql = format!(
            "SELECT COUNT(*) FROM tasks WHERE owner = $1 AND state NOT IN {ENDED} AND lease_until_ms >= $2 \
             AND expires_ms > $2"
        );
        let count: i64 = on_pool!(self, |pool| {
            sqlx::query_scalar(&sql).bind(owner).bind(now_ms).fetch_one(pool).await.map_err(db_error)?
        });
        Ok(count.max(0) as u64)
    }

    async fn count_kept_tasks(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        const SQL: &str = "SELECT COUNT(*) FROM tasks WHERE owner = $1 AND expires_ms > $2";
        let count: i64 = on_pool!(self, |pool| {
            sqlx::query_scalar(SQL).bind(owner).bind(now_ms).fetch_one(pool).await.map_err(db_error)?
        });
        Ok(count.max(0) as u64)
    }

    async fn count_live_anonymous_tasks(&self, now_ms: i64) -> BackendResult<u64> {
        let condition = format!("state NOT IN {ENDED} AND lease_until_ms >= $3 AND expires_ms > $3");
        self.count_anonymous_tasks(&condition, now_ms).await
    }

    async fn count_kept_anonymous_tasks(&self, now_ms: i64) -> BackendResult<u64> {
        self.count_anonymous_tasks("expires_ms > $3", now_ms).await
    }

    // Anonymous callers' tasks meeting `condition` (on `$3`, the time now), all together.
    async fn count_anonymous_tasks(&self, condition: &str, now_ms: i64) -> BackendResult<u64> {
        // `substr`, not `LIKE` or a range: the same exact, case-sensitive test under either
        // database's collation.
        let sql = format!("SELECT COUNT(*) FROM tasks WHERE substr(owner, 1, $1) = $2 AND {condition}");
        let prefix_chars = ANONYMOUS_OWNER_PREFIX.chars().count() as i32;
        let count: i64 = on_pool!(self, |pool| {
            sqlx::query_scalar(&sql)
                .bind(prefix_chars)
                .bind(ANONYMOUS_OWNER_PREFIX)
                .bind(now_ms)
                .fetch_one(pool)
                .await
                .map_err(db_error)?
        });
        Ok(count.max(0) as u64)
    }

    async fn purge_tasks(&self, now_ms: i64, max: u64) -> BackendResult<u64> {
        // A bounded batch, oldest first, through the expiry index.
        const SQL: &str = "DELETE FROM tasks WHERE id IN \
             (SELECT id FROM tasks WHERE expires_ms <= $1 ORDER BY expires_ms LIMIT $2)";
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let removed = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(now_ms).bind(max).execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(removed)
    }
}

#[async_trait]
impl TaskStore for SqlTaskStore {
    async fn save(&self, task: &TaskRecord) -> BackendResult<()> {
        self.sql.save_task(task, self.cipher.as_ref()).await
    }

    async fn load(&self, id: &str, owner: &str, now_ms: i64) -> BackendResult<Option<TaskRecord>> {
        self.sql.load_task(id, owner, now_ms, self.cipher.as_ref()).await
    }

    async fn live(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        self.sql.count_live_tasks(owner, now_ms).await
    }

    async fn live_anonymous(&self, now_ms: i64) -> BackendResult<u64> {
        self.sql.count_live_anonymous_tasks(now_ms).await
    }

    async fn kept(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        self.sql.count_kept_tasks(owner, now_ms).await
    }

    async fn kept_anonymous(&self, now_ms: i64) -> BackendResult<u64> {
        self.sql.count_kept_anonymous_tasks(now_ms).await
    }

    async fn purge(&self, now_ms: i64, max: u64) -> BackendResult<u64> {
        self.sql.purge_tasks(now_ms, max).await
    }
}

/// Tasks in clear: for a store with no file cipher, as [`SqlTaskStore`] without one.
#[async_trait]
impl TaskStore for SqlStore {
    async fn save(&self, task: &TaskRecord) -> BackendResult<()> {
        self.save_task(task, None).await
    }

    async fn load(&self, id: &str, owner: &str, now_ms: i64) -> BackendResult<Option<TaskRecord>> {
        self.load_task(id, owner, now_ms, None).await
    }

    async fn live(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        self.count_live_tasks(owner, now_ms).await
    }

    async fn live_anonymous(&self, now_ms: i64) -> BackendResult<u64> {
        self.count_live_anonymous_tasks(now_ms).await
    }

    async fn kept(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        self.count_kept_tasks(owner, now_ms).await
    }

    async fn kept_anonymous(&self, now_ms: i64) -> BackendResult<u64> {
        self.count_kept_anonymous_tasks(now_ms).await
    }

    async fn purge(&self, now_ms: i64, max: u64) -> BackendResult<u64> {
        self.purge_tasks(now_ms, max).await
    }
}
