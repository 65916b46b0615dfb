//! The rows behind [`UploadLinks`](crate::upload_links::UploadLinks): one per link, keyed by
//! the SHA-256 of its id (schema 8, `0008_upload_links`; 9 adds when its last use was taken,
//! `0009_link_last_use`). Every statement is keyed by that hash
//! or scoped to one user; a use is taken and given back in one statement each.

use async_trait::async_trait;
use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_health::{LinkInsert, UploadLinkRow, UploadLinkStore};
use sqlx::Row;

use super::{Dialect, Pool, SqlStore, db_error};

// Whether a link still works at `$now`, for the statements below.
const WORKS: &str = "expires_ms > $2 AND uses_left > 0 AND revoked_ms IS NULL";

#[async_trait]
impl UploadLinkStore for SqlStore {
    /// Stores a link for `user_id` (its id's hash, when it expires, how many files it may
    /// store), unless the user already has `max_live` links that still work. Expired links,
    /// anyone's, are deleted first; and the user's revoked ones, and used-up ones whose last
    /// use was taken before `settled_before_ms`, when they would count against the bound, so
    /// no one keeps more than `max_live` rows however often they make and revoke links.
    #[allow(clippy::too_many_arguments)] // One row's values and the bounds it is stored within.
    async fn insert_upload_link(
        &self,
        token_hash: &[u8; 32],
        user_id: &str,
        now_ms: i64,
        expires_ms: i64,
        uses: u32,
        max_live: u32,
        settled_before_ms: i64,
    ) -> BackendResult<LinkInsert> {
        const PURGE: &str = "DELETE FROM upload_links WHERE expires_ms <= $1";
        // What is left of a used or revoked link only says why it no longer works: it goes
        // when the user is at the bound. A used-up one whose last use is recent stays: its
        // upload may be in progress, and gives the use back if it stores nothing.
        const DROP_DEAD: &str = "DELETE FROM upload_links WHERE user_id = $1 \
             AND (revoked_ms IS NOT NULL \
                  OR (uses_left <= 0 AND (last_use_ms IS NULL OR last_use_ms < $3))) \
             AND (SELECT COUNT(*) FROM upload_links WHERE user_id = $1) >= $2";
        // The count and the insert are one statement: on SQLite, one writer runs it whole; on
        // PostgreSQL, the transaction's advisory lock on the user orders two mints of one user.
        const INSERT: &str = "INSERT INTO upload_links (token_hash, user_id, created_ms, expires_ms, uses_left) \
             SELECT $3, $1, $2, $4, $5 WHERE (SELECT COUNT(*) FROM upload_links WHERE user_id = $1) < $6";
        let postgres = self.dialect() == Dialect::Postgres;
        let stored = on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            sqlx::query(PURGE).bind(now_ms).execute(&mut *tx).await.map_err(db_error)?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                    .bind(format!("mirobody upload links\n{user_id}"))
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
            }
            sqlx::query(DROP_DEAD)
                .bind(user_id)
                .bind(i64::from(max_live))
                .bind(settled_before_ms)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
            let stored = sqlx::query(INSERT)
                .bind(user_id)
                .bind(now_ms)
                .bind(&token_hash[..])
                .bind(expires_ms)
                .bind(i64::from(uses))
                .bind(i64::from(max_live))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?
                .rows_affected();
            tx.commit().await.map_err(db_error)?;
            stored
        });
        if stored == 1 {
            return Ok(LinkInsert::Stored);
        }
        Ok(LinkInsert::TooMany(self.live_upload_links(user_id, now_ms).await?))
    }

    /// The link whose id hashes to `token_hash`, expired or not (until expired links are
    /// deleted), to tell its holder why it no longer works.
    async fn upload_link(&self, token_hash: &[u8; 32]) -> BackendResult<Option<UploadLinkRow>> {
        const SQL: &str = "SELECT user_id, expires_ms, uses_left, revoked_ms FROM upload_links WHERE token_hash = $1";
        on_pool!(self, |pool| {
            let row = sqlx::query(SQL).bind(&token_hash[..]).fetch_optional(pool).await.map_err(db_error)?;
            row.map(|row| -> Result<_, sqlx::Error> {
                Ok(UploadLinkRow::new(
                    row.try_get(0)?,
                    row.try_get(1)?,
                    row.try_get(2)?,
                    row.try_get::<Option<i64>, _>(3)?.is_some(),
                ))
            })
            .transpose()
            .map_err(db_error)
        })
    }

    /// Takes one use of a link that still works, noting when: its user and the uses left after this one,
    /// or `None` (expired, revoked, used up or unknown). One statement, so of two uploads
    /// racing on the last use exactly one gets it.
    async fn take_upload_link_use(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<(String, i64)>> {
        let sql = format!(
            "UPDATE upload_links SET uses_left = uses_left - 1, last_use_ms = $2 \
             WHERE token_hash = $1 AND {WORKS} \
             RETURNING user_id, uses_left"
        );
        on_pool!(self, |pool| {
            let row =
                sqlx::query(&sql).bind(&token_hash[..]).bind(now_ms).fetch_optional(pool).await.map_err(db_error)?;
            row.map(|row| -> Result<_, sqlx::Error> { Ok((row.try_get(0)?, row.try_get(1)?)) })
                .transpose()
                .map_err(db_error)
        })
    }

    /// Gives back a use taken by [`take_upload_link_use`](Self::take_upload_link_use) for an
    /// upload that stored nothing.
    async fn give_back_upload_link_use(&self, token_hash: &[u8; 32]) -> BackendResult<()> {
        const SQL: &str = "UPDATE upload_links SET uses_left = uses_left + 1 WHERE token_hash = $1";
        on_pool!(self, |pool| {
            sqlx::query(SQL).bind(&token_hash[..]).execute(pool).await.map(drop).map_err(db_error)
        })
    }

    /// Revokes one link; whether it was one that had not expired or been revoked before.
    async fn revoke_upload_link(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<bool> {
        const SQL: &str = "UPDATE upload_links SET revoked_ms = $2 \
             WHERE token_hash = $1 AND expires_ms > $2 AND revoked_ms IS NULL";
        let revoked = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(&token_hash[..]).bind(now_ms).execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(revoked == 1)
    }

    /// Revokes every link of `user_id` that still works; how many.
    async fn revoke_upload_links(&self, user_id: &str, now_ms: i64) -> BackendResult<u64> {
        let sql = format!("UPDATE upload_links SET revoked_ms = $2 WHERE user_id = $1 AND {WORKS}");
        let revoked = on_pool!(self, |pool| {
            sqlx::query(&sql).bind(user_id).bind(now_ms).execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(revoked)
    }

    /// How many links of `user_id` still work.
    async fn live_upload_links(&self, user_id: &str, now_ms: i64) -> BackendResult<u64> {
        let sql = format!("SELECT COUNT(*) FROM upload_links WHERE user_id = $1 AND {WORKS}");
        let count: i64 = on_pool!(self, |pool| {
            sqlx::query_scalar(&sql).bind(user_id).bind(now_ms).fetch_one(pool).await.map_err(db_error)?
        });
        u64::try_from(count).map_err(|_| BackendError::new("a negative count of upload links"))
    }
}
