//! [`OAuthStore`] for [`SqlStore`]: OAuth clients, grants, authorization codes and refresh
//! tokens (schema 10, `0010_accounts_oauth`). Codes and refresh tokens are keyed by their
//! SHA-256. What must happen once is one conditional `UPDATE ... RETURNING` (a code taken, a
//! refresh token used) or, for a registration, a count and an insert in one statement under a
//! lock: of two concurrent calls, one wins on either database.

use async_trait::async_trait;
use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_ports::{AuthorizationCode, CodeUse, Grant, OAuthClient, OAuthStore, RefreshUse, RegistrationBound};

use super::{Dialect, Pool, SqlStore, db_error};

/// The most grants [`OAuthStore::grants_of`] returns: far more apps than one person connects.
pub(crate) const MAX_GRANTS_LISTED: i64 = 1000;

const CLIENT_COLUMNS: &str =
    "client_id, client_name, client_uri, redirect_uris, secret_hash, registered_from, created_at_ms";

/// One `oauth_clients` row, as read by `sqlx::query_as`.
type ClientRow = (String, Option<String>, Option<String>, String, Option<Vec<u8>>, String, i64);

fn client_from(row: ClientRow) -> BackendResult<OAuthClient> {
    let (client_id, client_name, client_uri, redirect_uris, secret_hash, registered_from, created_at_ms) = row;
    let redirect_uris = serde_json::from_str(&redirect_uris)
        .map_err(|_| BackendError::new("a stored OAuth client's redirect URIs are not a list"))?;
    let secret_hash = secret_hash
        .map(|hash| <[u8; 32]>::try_from(hash.as_slice()))
        .transpose()
        .map_err(|_| BackendError::new("a stored OAuth client's secret hash is not 32 bytes"))?;
    Ok(OAuthClient { client_id, client_name, client_uri, redirect_uris, secret_hash, registered_from, created_at_ms })
}

fn redirect_uris_json(client: &OAuthClient) -> BackendResult<String> {
    serde_json::to_string(&client.redirect_uris).map_err(|e| BackendError::new(format!("redirect URIs: {e}")))
}

const GRANT_COLUMNS: &str =
    "id, account_id, client_id, scopes, resource, created_at_ms, last_used_at_ms, revoked_at_ms";

/// One `oauth_grants` row, as read by `sqlx::query_as`.
type GrantRow = (String, String, String, String, String, i64, Option<i64>, Option<i64>);

fn grant_from(row: GrantRow) -> Grant {
    let (id, account_id, client_id, scopes, resource, created_at_ms, last_used_at_ms, revoked_at_ms) = row;
    let scopes = scopes.split_whitespace().map(str::to_owned).collect();
    Grant { id, account_id, client_id, scopes, resource, created_at_ms, last_used_at_ms, revoked_at_ms }
}

/// A grant that still works: not revoked, and its account exists and is enabled. For the
/// statements below, on a row whose grant id is `grant_id`.
const GRANT_LIVE: &str = "EXISTS (SELECT 1 FROM oauth_grants g JOIN accounts a ON a.id = g.account_id \
     WHERE g.id = grant_id AND g.revoked_at_ms IS NULL AND a.disabled = FALSE)";

#[async_trait]
impl OAuthStore for SqlStore {
    /// Counts and inserts in one statement. SQLite runs it whole under its one writer; on
    /// PostgreSQL a transaction-wide advisory lock orders concurrent registrations, so two
    /// cannot both see room for one more.
    async fn register_client(&self, client: &OAuthClient, bound: RegistrationBound) -> BackendResult<bool> {
        const INSERT: &str = "INSERT INTO oauth_clients \
             (client_id, client_name, client_uri, redirect_uris, secret_hash, registered_from, created_at_ms) \
             SELECT $1, $2, $3, $4, $5, $6, $7 \
             WHERE (SELECT COUNT(*) FROM oauth_clients WHERE registered_from = $6 AND created_at_ms >= $8) < $9 \
             AND (SELECT COUNT(*) FROM oauth_clients) < $10";
        let redirect_uris = redirect_uris_json(client)?;
        let secret_hash = client.secret_hash.map(|hash| hash.to_vec());
        let max_total = i64::try_from(bound.max_total).unwrap_or(i64::MAX);
        let postgres = self.dialect() == Dialect::Postgres;
        let stored = on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                    .bind("mirobody oauth client registrations")
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
            }
            let stored = sqlx::query(INSERT)
                .bind(&client.client_id)
                .bind(&client.client_name)
                .bind(&client.client_uri)
                .bind(&redirect_uris)
                .bind(&secret_hash)
                .bind(&client.registered_from)
                .bind(client.created_at_ms)
                .bind(bound.since_ms)
                .bind(i64::from(bound.max_from_one))
                .bind(max_total)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?
                .rows_affected();
            tx.commit().await.map_err(db_error)?;
            stored
        });
        Ok(stored == 1)
    }

    async fn put_client(&self, client: &OAuthClient) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO oauth_clients \
             (client_id, client_name, client_uri, redirect_uris, secret_hash, registered_from, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (client_id) DO UPDATE SET \
             client_name = excluded.client_name, client_uri = excluded.client_uri, \
             redirect_uris = excluded.redirect_uris, secret_hash = excluded.secret_hash, \
             registered_from = excluded.registered_from, created_at_ms = excluded.created_at_ms";
        let redirect_uris = redirect_uris_json(client)?;
        let secret_hash = client.secret_hash.map(|hash| hash.to_vec());
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(&client.client_id)
                .bind(&client.client_name)
                .bind(&client.client_uri)
                .bind(&redirect_uris)
                .bind(&secret_hash)
                .bind(&client.registered_from)
                .bind(client.created_at_ms)
                .execute(pool)
                .await
                .map(drop)
                .map_err(db_error)
        })
    }

    async fn client(&self, client_id: &str) -> BackendResult<Option<OAuthClient>> {
        let sql = format!("SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE client_id = $1");
        let row: Option<ClientRow> = on_pool!(self, |pool| {
            sqlx::query_as(&sql).bind(client_id).fetch_optional(pool).await.map_err(db_error)?
        });
        row.map(client_from).transpose()
    }

    async fn sweep_unused_clients(&self, before_ms: i64) -> BackendResult<u64> {
        const SQL: &str = "DELETE FROM oauth_clients WHERE created_at_ms < $1 \
             AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)";
        Ok(on_pool!(self, |pool| {
            sqlx::query(SQL).bind(before_ms).execute(pool).await.map_err(db_error)?.rows_affected()
        }))
    }

    async fn create_grant(&self, grant: &Grant) -> BackendResult<()> {
        let sql = format!("INSERT INTO oauth_grants ({GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)");
        let scopes = grant.scopes.join(" ");
        on_pool!(self, |pool| {
            sqlx::query(&sql)
                .bind(&grant.id)
                .bind(&grant.account_id)
                .bind(&grant.client_id)
                .bind(&scopes)
                .bind(&grant.resource)
                .bind(grant.created_at_ms)
                .bind(grant.last_used_at_ms)
                .bind(grant.revoked_at_ms)
                .execute(pool)
                .await
                .map(drop)
                .map_err(db_error)
        })
    }

    async fn grant(&self, id: &str) -> BackendResult<Option<Grant>> {
        let sql = format!("SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE id = $1");
        let row: Option<GrantRow> =
            on_pool!(self, |pool| { sqlx::query_as(&sql).bind(id).fetch_optional(pool).await.map_err(db_error)? });
        Ok(row.map(grant_from))
    }

    /// Newest first, at most [`MAX_GRANTS_LISTED`].
    async fn grants_of(&self, account_id: &str) -> BackendResult<Vec<Grant>> {
        let sql = format!(
            "SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE account_id = $1 AND revoked_at_ms IS NULL \
             ORDER BY created_at_ms DESC, id DESC LIMIT $2"
        );
        let rows: Vec<GrantRow> = on_pool!(self, |pool| {
            sqlx::query_as(&sql).bind(account_id).bind(MAX_GRANTS_LISTED).fetch_all(pool).await.map_err(db_error)?
        });
        Ok(rows.into_iter().map(grant_from).collect())
    }

    /// Marks the grant revoked and deletes its codes and refresh tokens, in one transaction:
    /// a code or refresh token of a revoked grant is then unknown, as the contract asks.
    async fn revoke_grant(&self, id: &str, account_id: Option<&str>, now_ms: i64) -> BackendResult<bool> {
        // Two statements rather than `$3 IS NULL OR ...`, whose parameter PostgreSQL cannot type.
        let revoke = match account_id {
            Some(_) => {
                "UPDATE oauth_grants SET revoked_at_ms = $2 \
                 WHERE id = $1 AND revoked_at_ms IS NULL AND account_id = $3"
            }
            None => "UPDATE oauth_grants SET revoked_at_ms = $2 WHERE id = $1 AND revoked_at_ms IS NULL",
        };
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let query = sqlx::query(revoke).bind(id).bind(now_ms);
            let query = match account_id {
                Some(account_id) => query.bind(account_id),
                None => query,
            };
            let revoked = query.execute(&mut *tx).await.map_err(db_error)?.rows_affected();
            if revoked != 1 {
                return Ok(false);
            }
            for sql in
                ["DELETE FROM oauth_refresh_tokens WHERE grant_id = $1", "DELETE FROM oauth_codes WHERE grant_id = $1"]
            {
                sqlx::query(sql).bind(id).execute(&mut *tx).await.map_err(db_error)?;
            }
            tx.commit().await.map_err(db_error)?;
            Ok(true)
        })
    }

    async fn revoke_grants_of(&self, account_id: &str, now_ms: i64) -> BackendResult<u64> {
        const REVOKE: &str =
            "UPDATE oauth_grants SET revoked_at_ms = $2 WHERE account_id = $1 AND revoked_at_ms IS NULL";
        const TOKENS: &str =
            "DELETE FROM oauth_refresh_tokens WHERE grant_id IN (SELECT id FROM oauth_grants WHERE account_id = $1)";
        const CODES: &str =
            "DELETE FROM oauth_codes WHERE grant_id IN (SELECT id FROM oauth_grants WHERE account_id = $1)";
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            let revoked = sqlx::query(REVOKE)
                .bind(account_id)
                .bind(now_ms)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?
                .rows_affected();
            for sql in [TOKENS, CODES] {
                sqlx::query(sql).bind(account_id).execute(&mut *tx).await.map_err(db_error)?;
            }
            tx.commit().await.map_err(db_error)?;
            Ok(revoked)
        })
    }

    async fn revoked_grants_since(&self, since_ms: i64) -> BackendResult<Vec<String>> {
        const SQL: &str = "SELECT id FROM oauth_grants WHERE revoked_at_ms >= $1 ORDER BY revoked_at_ms, id";
        Ok(on_pool!(self, |pool| { sqlx::query_scalar(SQL).bind(since_ms).fetch_all(pool).await.map_err(db_error)? }))
    }

    async fn put_code(&self, code_hash: &[u8; 32], code: &AuthorizationCode) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO oauth_codes \
             (code_hash, grant_id, client_id, redirect_uri, code_challenge, expires_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6)";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(&code_hash[..])
                .bind(&code.grant_id)
                .bind(&code.client_id)
                .bind(&code.redirect_uri)
                .bind(&code.code_challenge)
                .bind(code.expires_at_ms)
                .execute(pool)
                .await
                .map(drop)
                .map_err(db_error)
        })
    }

    /// One `UPDATE ... WHERE used_at_ms IS NULL`: of two concurrent takes, the row lock
    /// (PostgreSQL) or the one writer (SQLite) lets one through, and the other finds it used.
    /// A used code is `Replayed` until it is swept, even once expired: a late replay still
    /// names a grant to revoke.
    async fn take_code(&self, code_hash: &[u8; 32], now_ms: i64) -> BackendResult<CodeUse> {
        let take = format!(
            "UPDATE oauth_codes SET used_at_ms = $2 \
             WHERE code_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2 AND {GRANT_LIVE} \
             RETURNING grant_id, client_id, redirect_uri, code_challenge, expires_at_ms"
        );
        const USED: &str = "SELECT grant_id FROM oauth_codes WHERE code_hash = $1 AND used_at_ms IS NOT NULL";
        let taken: Option<(String, String, String, String, i64)> = on_pool!(self, |pool| {
            sqlx::query_as(&take).bind(&code_hash[..]).bind(now_ms).fetch_optional(pool).await.map_err(db_error)?
        });
        if let Some((grant_id, client_id, redirect_uri, code_challenge, expires_at_ms)) = taken {
            return Ok(CodeUse::Fresh(AuthorizationCode {
                grant_id,
                client_id,
                redirect_uri,
                code_challenge,
                expires_at_ms,
            }));
        }
        let used: Option<String> = on_pool!(self, |pool| {
            sqlx::query_scalar(USED).bind(&code_hash[..]).fetch_optional(pool).await.map_err(db_error)?
        });
        Ok(used.map_or(CodeUse::Unknown, |grant_id| CodeUse::Replayed { grant_id }))
    }

    async fn put_refresh_token(&self, token_hash: &[u8; 32], grant_id: &str, expires_at_ms: i64) -> BackendResult<()> {
        const SQL: &str = "INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at_ms) VALUES ($1, $2, $3)";
        on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(&token_hash[..])
                .bind(grant_id)
                .bind(expires_at_ms)
                .execute(pool)
                .await
                .map(drop)
                .map_err(db_error)
        })
    }

    /// The old token is marked used in one conditional `UPDATE` (unused, unexpired, its grant
    /// live), then the new one stored and the grant stamped, in one transaction. A used token
    /// is `Reused` while its grant is live, even once expired (until swept): it is a copy.
    async fn rotate_refresh_token(
        &self,
        old_hash: &[u8; 32],
        new_hash: &[u8; 32],
        new_expires_at_ms: i64,
        now_ms: i64,
    ) -> BackendResult<RefreshUse> {
        let take = format!(
            "UPDATE oauth_refresh_tokens SET used_at_ms = $2 \
             WHERE token_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2 AND {GRANT_LIVE} \
             RETURNING grant_id"
        );
        const STORE: &str =
            "INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at_ms) VALUES ($1, $2, $3)";
        let stamp = format!("UPDATE oauth_grants SET last_used_at_ms = $2 WHERE id = $1 RETURNING {GRANT_COLUMNS}");
        let reused = format!(
            "SELECT grant_id FROM oauth_refresh_tokens WHERE token_hash = $1 AND used_at_ms IS NOT NULL AND {GRANT_LIVE}"
        );
        let rotated: Option<GrantRow> = on_pool!(self, |pool| {
            // The first statement writes, so SQLite takes its write lock at once.
            let mut tx = pool.begin().await.map_err(db_error)?;
            let grant_id: Option<String> = sqlx::query_scalar(&take)
                .bind(&old_hash[..])
                .bind(now_ms)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_error)?;
            match grant_id {
                None => None,
                Some(grant_id) => {
                    sqlx::query(STORE)
                        .bind(&new_hash[..])
                        .bind(&grant_id)
                        .bind(new_expires_at_ms)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_error)?;
                    let grant: GrantRow = sqlx::query_as(&stamp)
                        .bind(&grant_id)
                        .bind(now_ms)
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(db_error)?;
                    tx.commit().await.map_err(db_error)?;
                    Some(grant)
                }
            }
        });
        if let Some(grant) = rotated {
            return Ok(RefreshUse::Rotated(grant_from(grant)));
        }
        let used: Option<String> = on_pool!(self, |pool| {
            sqlx::query_scalar(&reused).bind(&old_hash[..]).fetch_optional(pool).await.map_err(db_error)?
        });
        Ok(used.map_or(RefreshUse::Unknown, |grant_id| RefreshUse::Reused { grant_id }))
    }

    async fn refresh_token_grant(&self, token_hash: &[u8; 32]) -> BackendResult<Option<String>> {
        const SQL: &str = "SELECT grant_id FROM oauth_refresh_tokens WHERE token_hash = $1";
        Ok(on_pool!(self, |pool| {
            sqlx::query_scalar(SQL).bind(&token_hash[..]).fetch_optional(pool).await.map_err(db_error)?
        }))
    }

    async fn touch_grant(&self, id: &str, now_ms: i64) -> BackendResult<()> {
        const SQL: &str = "UPDATE oauth_grants SET last_used_at_ms = $2 WHERE id = $1";
        on_pool!(self, |pool| {
            sqlx::query(SQL).bind(id).bind(now_ms).execute(pool).await.map(drop).map_err(db_error)
        })
    }

    async fn sweep_oauth(&self, now_ms: i64) -> BackendResult<u64> {
        const CODES: &str = "DELETE FROM oauth_codes WHERE expires_at_ms < $1";
        const TOKENS: &str = "DELETE FROM oauth_refresh_tokens WHERE expires_at_ms < $1";
        let mut swept = 0;
        for sql in [CODES, TOKENS] {
            swept += on_pool!(self, |pool| {
                sqlx::query(sql).bind(now_ms).execute(pool).await.map_err(db_error)?.rows_affected()
            });
        }
        Ok(swept)
    }
}
