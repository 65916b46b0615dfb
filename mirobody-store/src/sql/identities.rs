//! [`IdentityStore`] for [`SqlStore`]: provider subjects linked to accounts, and sign-ins in
//! flight to a provider (schema 13, `0013_identity_links`).

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_ports::{IdentityLink, IdentityStore, UpstreamLogin};

use super::{Dialect, Pool, SqlStore, db_error};

/// The most links one account's list holds, whatever is stored.
const MAX_LINKS_LISTED: i64 = 100;

#[async_trait]
impl IdentityStore for SqlStore {
    async fn link_identity(&self, link: &IdentityLink) -> BackendResult<bool> {
        const SQL: &str = "INSERT INTO identity_links (provider, subject, account_id, email, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING";
        let stored = on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(&link.provider)
                .bind(&link.subject)
                .bind(&link.account_id)
                .bind(&link.email)
                .bind(link.created_at_ms)
                .execute(pool)
                .await
                .map_err(db_error)?
                .rows_affected()
        });
        Ok(stored == 1)
    }

    async fn identity_account(&self, provider: &str, subject: &str) -> BackendResult<Option<String>> {
        const SQL: &str = "SELECT account_id FROM identity_links WHERE provider = $1 AND subject = $2";
        Ok(on_pool!(self, |pool| {
            sqlx::query_scalar(SQL).bind(provider).bind(subject).fetch_optional(pool).await.map_err(db_error)?
        }))
    }

    /// At most 100 links.
    async fn identities_of(&self, account_id: &str) -> BackendResult<Vec<IdentityLink>> {
        const SQL: &str = "SELECT provider, subject, account_id, email, created_at_ms FROM identity_links \
             WHERE account_id = $1 ORDER BY created_at_ms, provider, subject LIMIT $2";
        let rows: Vec<(String, String, String, Option<String>, i64)> = on_pool!(self, |pool| {
            sqlx::query_as(SQL).bind(account_id).bind(MAX_LINKS_LISTED).fetch_all(pool).await.map_err(db_error)?
        });
        Ok(rows
            .into_iter()
            .map(|(provider, subject, account_id, email, created_at_ms)| IdentityLink {
                provider,
                subject,
                account_id,
                email,
                created_at_ms,
            })
            .collect())
    }

    async fn unlink_identity(&self, account_id: &str, provider: &str, subject: &str) -> BackendResult<bool> {
        const SQL: &str = "DELETE FROM identity_links WHERE account_id = $1 AND provider = $2 AND subject = $3";
        let done = on_pool!(self, |pool| {
            let query = sqlx::query(SQL).bind(account_id).bind(provider).bind(subject);
            query.execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(done == 1)
    }

    /// The count and the insert are one statement; on PostgreSQL a transaction-scoped lock
    /// serialises them besides, as for sign-up tokens. SQLite writes one at a time.
    async fn create_upstream_login(
        &self,
        state_hash: &[u8; 32],
        login: &UpstreamLogin,
        max_live: u32,
    ) -> BackendResult<bool> {
        const INSERT: &str = "INSERT INTO upstream_logins \
             (state_hash, provider, pkce_verifier, nonce, next_path, created_at_ms, expires_at_ms) \
             SELECT $1, $2, $3, $4, $5, $6, $7 \
             WHERE (SELECT COUNT(*) FROM upstream_logins WHERE expires_at_ms > $6) < $8";
        let postgres = self.dialect() == Dialect::Postgres;
        let stored = on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('mirobody upstream logins', 0))")
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
            }
            let stored = sqlx::query(INSERT)
                .bind(&state_hash[..])
                .bind(&login.provider)
                .bind(&login.pkce_verifier)
                .bind(&login.nonce)
                .bind(&login.next)
                .bind(login.created_at_ms)
                .bind(login.expires_at_ms)
                .bind(i64::from(max_live))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?
                .rows_affected();
            tx.commit().await.map_err(db_error)?;
            stored
        });
        Ok(stored == 1)
    }

    /// One `DELETE … RETURNING`: of two concurrent takes, the database gives the row to one.
    /// An expired row is deleted too, and not returned.
    async fn take_upstream_login(&self, state_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<UpstreamLogin>> {
        const SQL: &str = "DELETE FROM upstream_logins WHERE state_hash = $1 \
             RETURNING provider, pkce_verifier, nonce, next_path, created_at_ms, expires_at_ms";
        let row: Option<(String, String, String, String, i64, i64)> = on_pool!(self, |pool| {
            sqlx::query_as(SQL).bind(&state_hash[..]).fetch_optional(pool).await.map_err(db_error)?
        });
        Ok(row.filter(|row| row.5 > now_ms).map(
            |(provider, pkce_verifier, nonce, next, created_at_ms, expires_at_ms)| UpstreamLogin {
                provider,
                pkce_verifier,
                nonce,
                next,
                created_at_ms,
                expires_at_ms,
            },
        ))
    }

    async fn sweep_upstream_logins(&self, now_ms: i64) -> BackendResult<u64> {
        const SQL: &str = "DELETE FROM upstream_logins WHERE expires_at_ms <= $1";
        Ok(on_pool!(self, |pool| {
            sqlx::query(SQL).bind(now_ms).execute(pool).await.map_err(db_error)?.rows_affected()
        }))
    }
}
