//! The care circle managed for [`SqlStore`]: a person invites another (by user id or email) to
//! read their health data, the other accepts or declines, and either ends the sharing.
//!
//! An invitation by email reaches the user whose address the `users` table holds. Every
//! statement names the acting user, so nobody accepts, declines or ends what is not theirs:
//! an invitation of someone else's is "not found", the same as one that does not exist.

use mirobody_core::backend::{BackendError, BackendResult};
use sqlx::Row;

use async_trait::async_trait;
use mirobody_health::{CircleStore, QuotaExceeded};

use super::quotas::{INVITATION_LOCK_SPACE, PG_OWNER_LOCK, sql_bound};
use super::{Dialect, Pool, SqlStore, db_error};
use mirobody_health::text::{now_ms, rfc3339};
use mirobody_health::{CircleInvite, CircleMember, CircleOverview};

/// The longest user id or email an invitation names, and the longest nickname.
pub const MAX_INVITEE_CHARS: usize = 320;

/// The invitations addressed to `$1`: by user id, or by the email the users table holds.
macro_rules! addressed_to_user {
    () => {
        "((by_email = false AND invitee = $1) OR \
          (by_email = true AND invitee = (SELECT LOWER(email) FROM users WHERE id = $1)))"
    };
}

#[async_trait]
impl CircleStore for SqlStore {
    /// Like [`invite_to_circle`](Self::invite_to_circle), with the quota's refusal apart
    /// from the store's: `Ok(Err)` when `owner` already has
    /// [`max_pending_invitations_per_user`](super::StoreQuotas::max_pending_invitations_per_user)
    /// invitations waiting (inviting one of them again is no new invitation, and passes).
    ///
    /// The count is taken with the insert, in one statement (on PostgreSQL after a lock on the
    /// owner held to the end of its transaction), so invitations sent at once cannot together
    /// pass the quota.
    async fn invite_within_quota(
        &self,
        owner: &str,
        invitee: &str,
        nickname: Option<&str>,
    ) -> BackendResult<Result<i64, QuotaExceeded>> {
        const SQL: &str = "INSERT INTO circle_invites (owner, invitee, by_email, nickname, created_at_ms) \
             SELECT $1, $2, $3, $4, $5 \
             WHERE (SELECT COUNT(*) FROM circle_invites WHERE owner = $1) < $6 \
             OR EXISTS (SELECT 1 FROM circle_invites WHERE owner = $1 AND invitee = $2) \
             ON CONFLICT (owner, invitee) DO UPDATE SET nickname = excluded.nickname \
             RETURNING id";
        let invitee = invitee.trim();
        let by_email = invitee.contains('@');
        let invitee = if by_email { invitee.to_lowercase() } else { invitee.to_owned() };
        if invitee.is_empty() || invitee.chars().count() > MAX_INVITEE_CHARS {
            return Err(BackendError::new(format!(
                "Name the person to invite by their user id or email (1 to {MAX_INVITEE_CHARS} characters)."
            )));
        }
        if invitee == owner {
            return Err(BackendError::new("You cannot invite yourself."));
        }
        if nickname.is_some_and(|n| n.chars().count() > MAX_INVITEE_CHARS) {
            return Err(BackendError::new(format!("The nickname is longer than {MAX_INVITEE_CHARS} characters.")));
        }
        let max = self.quotas.max_pending_invitations_per_user;
        let postgres = self.dialect() == Dialect::Postgres;
        // Alone on SQLite (see `SqlStore::remember`), after the owner's lock on PostgreSQL.
        let id: Option<i64> = on_pool!(self, |pool| {
            let query = sqlx::query_scalar(SQL)
                .bind(owner)
                .bind(&invitee)
                .bind(by_email)
                .bind(nickname)
                .bind(now_ms())
                .bind(sql_bound(max));
            if postgres {
                let mut tx = pool.begin().await.map_err(db_error)?;
                let lock = sqlx::query(PG_OWNER_LOCK).bind(owner).bind(INVITATION_LOCK_SPACE);
                lock.execute(&mut *tx).await.map_err(db_error)?;
                let id = query.fetch_optional(&mut *tx).await.map_err(db_error)?;
                tx.commit().await.map_err(db_error)?;
                id
            } else {
                query.fetch_optional(pool).await.map_err(db_error)?
            }
        });
        Ok(id.ok_or(QuotaExceeded::Invitations { max }))
    }

    /// `user` accepts invitation `id`, knowing its owner as `nickname` (else as the owner
    /// suggested): the owner's id, or `None` when no such invitation is addressed to `user`.
    async fn accept_invite(&self, user: &str, id: i64, nickname: Option<&str>) -> BackendResult<Option<String>> {
        // The share is written from the invitation in one statement: a transaction that read
        // first would have to upgrade its SQLite lock, which fails when another connection
        // wrote in between (the access log does, on every call).
        const SHARE: &str = concat!(
            "INSERT INTO health_shares (reader, owner, nickname, created_at_ms) ",
            "SELECT $1, owner, COALESCE($3, nickname), $4 FROM circle_invites WHERE id = $2 AND ",
            addressed_to_user!(),
            " ON CONFLICT (reader, owner) DO UPDATE SET nickname = excluded.nickname RETURNING owner"
        );
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let owner: Option<String> = sqlx::query_scalar(SHARE)
                .bind(user)
                .bind(id)
                .bind(nickname)
                .bind(now_ms())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_error)?;
            if owner.is_some() {
                sqlx::query("DELETE FROM circle_invites WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
            }
            tx.commit().await.map_err(db_error)?;
            Ok(owner)
        })
    }

    /// Invitation `id` is withdrawn by its owner or declined by its invitee, `user`; whether
    /// there was one of theirs.
    async fn drop_invite(&self, user: &str, id: i64) -> BackendResult<bool> {
        const SQL: &str =
            concat!("DELETE FROM circle_invites WHERE id = $2 AND (owner = $1 OR ", addressed_to_user!(), ")");
        let done = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(user).bind(id).execute(pool).await.map(|r| r.rows_affected()).map_err(db_error)
        })?;
        Ok(done > 0)
    }

    /// `user` ends the sharing with `other`, whichever way it goes (either side may end it);
    /// whether there was any. It holds at once: every read checks the share.
    async fn leave_circle(&self, user: &str, other: &str) -> BackendResult<bool> {
        const SQL: &str =
            "DELETE FROM health_shares WHERE (owner = $1 AND reader = $2) OR (reader = $1 AND owner = $2)";
        let done = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(user).bind(other).execute(pool).await.map(|r| r.rows_affected()).map_err(db_error)
        })?;
        Ok(done > 0)
    }

    /// `user`'s care circle both ways, and the invitations waiting.
    async fn circle(&self, user: &str) -> BackendResult<CircleOverview> {
        const READERS: &str = "SELECT s.reader AS id, u.display_name AS nickname, u.email FROM health_shares s \
             LEFT JOIN users u ON u.id = s.reader WHERE s.owner = $1 ORDER BY s.created_at_ms, s.reader";
        const SENT: &str = "SELECT id, owner, invitee, nickname, created_at_ms FROM circle_invites \
             WHERE owner = $1 ORDER BY created_at_ms, id";
        const RECEIVED: &str = concat!(
            "SELECT id, owner, invitee, nickname, created_at_ms FROM circle_invites WHERE ",
            addressed_to_user!(),
            " ORDER BY created_at_ms, id"
        );
        let shared_with_me = mirobody_health::HealthStore::health_sharers(self, user).await?;
        on_pool!(self, |pool| {
            let readers = sqlx::query(READERS).bind(user).fetch_all(pool).await.map_err(db_error)?;
            let my_readers = readers
                .iter()
                .map(|row| {
                    Ok(CircleMember {
                        user_id: row.try_get("id")?,
                        nickname: row.try_get("nickname")?,
                        email: row.try_get("email")?,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)?;
            let mut invites = [Vec::new(), Vec::new()];
            for (sql, out) in [SENT, RECEIVED].into_iter().zip(invites.iter_mut()) {
                for row in sqlx::query(sql).bind(user).fetch_all(pool).await.map_err(db_error)? {
                    out.push(CircleInvite {
                        id: row.try_get("id").map_err(db_error)?,
                        owner: row.try_get("owner").map_err(db_error)?,
                        invitee: row.try_get("invitee").map_err(db_error)?,
                        nickname: row.try_get("nickname").map_err(db_error)?,
                        created_at: rfc3339(row.try_get("created_at_ms").map_err(db_error)?),
                    });
                }
            }
            let [invites_sent, invites_received] = invites;
            Ok(CircleOverview { shared_with_me, my_readers, invites_sent, invites_received })
        })
    }

    /// `owner` shares their health data with `reader`, who knows them as `nickname`.
    async fn share_health(&self, owner: &str, reader: &str, nickname: Option<&str>) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO health_shares (reader, owner, nickname, created_at_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (reader, owner) DO UPDATE SET nickname = excluded.nickname";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(reader)
                .bind(owner)
                .bind(nickname)
                .bind(now_ms())
                .execute(pool)
                .await
                .map(|_| ())
                .map_err(db_error)
        })?;
        Ok(())
    }

    /// `owner` stops sharing with `reader`; whether they were sharing.
    async fn unshare_health(&self, owner: &str, reader: &str) -> BackendResult<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query("DELETE FROM health_shares WHERE reader = $1 AND owner = $2")
                .bind(reader)
                .bind(owner)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
                .map_err(db_error)
        })?;
        Ok(done > 0)
    }
}
