//! [`SecretStore`] for [`SqlStore`]: personal-secret hashes, one per user, with an optional
//! expiry after which the secret identifies nobody.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_ports::{SecretOwner, SecretStore};
use sqlx::Row;

use super::{Pool, SqlStore, db_error};
use mirobody_health::text::now_ms;

/// What storing a secret does when the user already has one.
enum SecretWrite {
    /// The new secret replaces it.
    Replace,
    /// Nothing is stored, unless the one they have has expired (then it is replaced).
    IfAbsent,
}

impl SqlStore {
    // Stores a secret's hash; the number of rows written.
    async fn write_secret(
        &self,
        mode: SecretWrite,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<u64> {
        let sql = match mode {
            SecretWrite::Replace => {
                "INSERT INTO personal_secrets (user_id, secret_hash, agent, created_at_ms, expires_at_ms) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id) DO UPDATE SET \
                 secret_hash = excluded.secret_hash, agent = excluded.agent, created_at_ms = excluded.created_at_ms, \
                 expires_at_ms = excluded.expires_at_ms"
            }
            // An expired secret is no secret: it is replaced, in the same one statement.
            SecretWrite::IfAbsent => {
                "INSERT INTO personal_secrets (user_id, secret_hash, agent, created_at_ms, expires_at_ms) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id) DO UPDATE SET \
                 secret_hash = excluded.secret_hash, agent = excluded.agent, created_at_ms = excluded.created_at_ms, \
                 expires_at_ms = excluded.expires_at_ms \
                 WHERE personal_secrets.expires_at_ms IS NOT NULL AND personal_secrets.expires_at_ms <= $4"
            }
        };
        let expires_at_ms = expires_at_ms.map(|ms| i64::try_from(ms).unwrap_or(i64::MAX));
        on_pool!(self, |pool| {
            sqlx::query(sql)
                .bind(user_id)
                .bind(&secret_hash[..])
                .bind(agent)
                .bind(now_ms())
                .bind(expires_at_ms)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
                .map_err(db_error)
        })
    }
}

#[async_trait]
impl SecretStore for SqlStore {
    async fn secret_owner(&self, secret_hash: &[u8; 32]) -> BackendResult<Option<SecretOwner>> {
        // An expired secret is found by nobody, as a revoked one.
        const SQL: &str = "SELECT user_id, agent FROM personal_secrets \
             WHERE secret_hash = $1 AND (expires_at_ms IS NULL OR expires_at_ms > $2)";
        on_pool!(self, |pool| {
            let row =
                sqlx::query(SQL).bind(&secret_hash[..]).bind(now_ms()).fetch_optional(pool).await.map_err(db_error)?;
            row.map(|row| Ok(SecretOwner { user_id: row.try_get("user_id")?, agent: row.try_get("agent")? }))
                .transpose()
                .map_err(db_error)
        })
    }

    async fn put_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<()> {
        self.write_secret(SecretWrite::Replace, user_id, secret_hash, agent, expires_at_ms).await.map(|_| ())
    }

    async fn add_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<bool> {
        // One statement, so two concurrent first secrets cannot both be stored.
        Ok(self.write_secret(SecretWrite::IfAbsent, user_id, secret_hash, agent, expires_at_ms).await? == 1)
    }

    async fn has_secret(&self, user_id: &str) -> BackendResult<bool> {
        const SQL: &str = "SELECT CAST(1 AS BIGINT) FROM personal_secrets \
             WHERE user_id = $1 AND (expires_at_ms IS NULL OR expires_at_ms > $2)";
        let found: Option<i64> = on_pool!(self, |pool| {
            sqlx::query_scalar(SQL).bind(user_id).bind(now_ms()).fetch_optional(pool).await.map_err(db_error)
        })?;
        Ok(found.is_some())
    }

    async fn revoke_secret(&self, user_id: &str) -> BackendResult<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query("DELETE FROM personal_secrets WHERE user_id = $1")
                .bind(user_id)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
                .map_err(db_error)
        })?;
        Ok(done > 0)
    }
}
