//! [`AccountStore`] and [`WebSessionStore`] for [`SqlStore`]: the people who sign in and their
//! signed-in browsers (schema 10, `0010_accounts_oauth`), and sign-up links (schema 11,
//! `0011_signup_tokens`). A session and a sign-up token are keyed by the SHA-256 of their
//! token; every other statement by an account's id or email, or a token's inviter.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_ports::{Account, AccountStore, SignupToken, WebSession, WebSessionStore};

use super::{Dialect, Pool, SqlStore, db_error};

/// The most accounts one page of [`AccountStore::list_accounts`] holds, whatever is asked.
pub(crate) const MAX_ACCOUNT_PAGE: u32 = 1000;

/// The columns of an account, in the order [`account_from`] reads them.
const ACCOUNT_COLUMNS: &str = "id, email, display_name, password_hash, disabled, created_at_ms";

/// One `accounts` row, as read by `sqlx::query_as`.
type AccountRow = (String, String, Option<String>, Option<String>, bool, i64);

fn account_from((id, email, display_name, password_hash, disabled, created_at_ms): AccountRow) -> Account {
    Account { id, email, display_name, password_hash, disabled, created_at_ms }
}

impl SqlStore {
    // The one account a query on one unique column finds.
    async fn one_account(&self, column: &'static str, value: &str) -> BackendResult<Option<Account>> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE {column} = $1");
        let row: Option<AccountRow> =
            on_pool!(self, |pool| { sqlx::query_as(&sql).bind(value).fetch_optional(pool).await.map_err(db_error)? });
        Ok(row.map(account_from))
    }
}

#[async_trait]
impl AccountStore for SqlStore {
    /// Stores the account and, when its id has no `users` row, one with its name and email, in
    /// one transaction: a refused account leaves no `users` row behind.
    async fn create_account(&self, account: &Account) -> BackendResult<bool> {
        // No conflict target: a taken id and a taken email both store nothing.
        const ACCOUNT: &str = "INSERT INTO accounts (id, email, display_name, password_hash, disabled, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING";
        // An existing user keeps their row as it is (name, email, when it was made).
        const USER: &str = "INSERT INTO users (id, display_name, email, created_at_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO NOTHING";
        on_pool!(self, |pool| {
            // The first statement writes, so SQLite takes its write lock at once.
            let mut tx = pool.begin().await.map_err(db_error)?;
            let stored = sqlx::query(ACCOUNT)
                .bind(&account.id)
                .bind(&account.email)
                .bind(&account.display_name)
                .bind(&account.password_hash)
                .bind(account.disabled)
                .bind(account.created_at_ms)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?
                .rows_affected();
            if stored != 1 {
                return Ok(false);
            }
            sqlx::query(USER)
                .bind(&account.id)
                .bind(&account.display_name)
                .bind(&account.email)
                .bind(account.created_at_ms)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            Ok(true)
        })
    }

    async fn account(&self, id: &str) -> BackendResult<Option<Account>> {
        self.one_account("id", id).await
    }

    async fn account_by_email(&self, email: &str) -> BackendResult<Option<Account>> {
        self.one_account("email", email).await
    }

    /// At most [`MAX_ACCOUNT_PAGE`] accounts, however large `limit` is.
    async fn list_accounts(&self, after: Option<&str>, limit: u32) -> BackendResult<Vec<Account>> {
        let limit = i64::from(limit.min(MAX_ACCOUNT_PAGE));
        // Every email sorts after the empty string: the first page needs no statement of its own.
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE email > $1 ORDER BY email LIMIT $2");
        let rows: Vec<AccountRow> = on_pool!(self, |pool| {
            sqlx::query_as(&sql).bind(after.unwrap_or("")).bind(limit).fetch_all(pool).await.map_err(db_error)?
        });
        Ok(rows.into_iter().map(account_from).collect())
    }

    async fn set_password_hash(&self, id: &str, password_hash: Option<&str>) -> BackendResult<bool> {
        const SQL: &str = "UPDATE accounts SET password_hash = $2 WHERE id = $1";
        let done = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(id).bind(password_hash).execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(done == 1)
    }

    async fn set_account_disabled(&self, id: &str, disabled: bool) -> BackendResult<bool> {
        const SQL: &str = "UPDATE accounts SET disabled = $2 WHERE id = $1";
        let done = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(id).bind(disabled).execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(done == 1)
    }

    /// The bound's count and the insert are one statement; on PostgreSQL a transaction-scoped
    /// lock on the inviter serialises them besides (two statements at READ COMMITTED could
    /// each count before the other inserts). SQLite writes one at a time.
    async fn create_signup_token(
        &self,
        token_hash: &[u8; 32],
        token: &SignupToken,
        max_live_per_inviter: u32,
    ) -> BackendResult<bool> {
        const INSERT: &str = "INSERT INTO signup_tokens \
             (token_hash, email, invited_by, created_at_ms, expires_at_ms) SELECT $1, $2, $3, $4, $5 \
             WHERE (SELECT COUNT(*) FROM signup_tokens WHERE invited_by = $3 AND used_at_ms IS NULL \
             AND expires_at_ms > $4) < $6";
        let postgres = self.dialect() == Dialect::Postgres;
        let stored = on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                    .bind(format!("mirobody signup tokens of {}", token.invited_by))
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
            }
            let stored = sqlx::query(INSERT)
                .bind(&token_hash[..])
                .bind(&token.email)
                .bind(&token.invited_by)
                .bind(token.created_at_ms)
                .bind(token.expires_at_ms)
                .bind(i64::from(max_live_per_inviter))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?
                .rows_affected();
            tx.commit().await.map_err(db_error)?;
            stored
        });
        Ok(stored == 1)
    }

    async fn signup_token_email(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<String>> {
        const SQL: &str =
            "SELECT email FROM signup_tokens WHERE token_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2";
        Ok(on_pool!(self, |pool| {
            sqlx::query_scalar(SQL).bind(&token_hash[..]).bind(now_ms).fetch_optional(pool).await.map_err(db_error)?
        }))
    }

    /// One `UPDATE … WHERE used_at_ms IS NULL … RETURNING`: the database lets one of two
    /// concurrent uses match the row.
    async fn use_signup_token(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<String>> {
        const SQL: &str = "UPDATE signup_tokens SET used_at_ms = $2 \
             WHERE token_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2 RETURNING email";
        Ok(on_pool!(self, |pool| {
            sqlx::query_scalar(SQL).bind(&token_hash[..]).bind(now_ms).fetch_optional(pool).await.map_err(db_error)?
        }))
    }

    async fn sweep_signup_tokens(&self, now_ms: i64) -> BackendResult<u64> {
        const SQL: &str = "DELETE FROM signup_tokens WHERE expires_at_ms <= $1";
        Ok(on_pool!(self, |pool| {
            sqlx::query(SQL).bind(now_ms).execute(pool).await.map_err(db_error)?.rows_affected()
        }))
    }
}

#[async_trait]
impl WebSessionStore for SqlStore {
    async fn create_web_session(&self, token_hash: &[u8; 32], session: &WebSession) -> BackendResult<()> {
        const SQL: &str =
            "INSERT INTO web_sessions (token_hash, account_id, created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4)";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(&token_hash[..])
                .bind(&session.account_id)
                .bind(session.created_at_ms)
                .bind(session.expires_at_ms)
                .execute(pool)
                .await
                .map(drop)
                .map_err(db_error)
        })
    }

    /// The session, when it has not expired and its account exists and is enabled: disabling
    /// an account stops its sessions at once, before they are ended.
    async fn web_session(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<WebSession>> {
        const SQL: &str = "SELECT s.account_id, s.created_at_ms, s.expires_at_ms FROM web_sessions s \
             JOIN accounts a ON a.id = s.account_id \
             WHERE s.token_hash = $1 AND s.expires_at_ms > $2 AND a.disabled = FALSE";
        let row: Option<(String, i64, i64)> = on_pool!(self, |pool| {
            sqlx::query_as(SQL).bind(&token_hash[..]).bind(now_ms).fetch_optional(pool).await.map_err(db_error)?
        });
        Ok(row.map(|(account_id, created_at_ms, expires_at_ms)| WebSession {
            account_id,
            created_at_ms,
            expires_at_ms,
        }))
    }

    async fn end_web_session(&self, token_hash: &[u8; 32]) -> BackendResult<bool> {
        const SQL: &str = "DELETE FROM web_sessions WHERE token_hash = $1";
        let done = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(&token_hash[..]).execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(done > 0)
    }

    async fn end_web_sessions_of(&self, account_id: &str) -> BackendResult<u64> {
        const SQL: &str = "DELETE FROM web_sessions WHERE account_id = $1";
        Ok(on_pool!(self, |pool| {
            sqlx::query(SQL).bind(account_id).execute(pool).await.map_err(db_error)?.rows_affected()
        }))
    }

    async fn sweep_web_sessions(&self, now_ms: i64) -> BackendResult<u64> {
        // Expired as `web_session` sees it: no longer later than now.
        const SQL: &str = "DELETE FROM web_sessions WHERE expires_at_ms <= $1";
        Ok(on_pool!(self, |pool| {
            sqlx::query(SQL).bind(now_ms).execute(pool).await.map_err(db_error)?.rows_affected()
        }))
    }
}
