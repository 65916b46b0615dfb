//! [`PasskeyStore`] for [`SqlStore`]: people's passkeys and the state of passkey ceremonies
//! under way (schema 12, `0012_passkeys`). A passkey is keyed by its credential id, a
//! ceremony by the SHA-256 of its id; deletes of a passkey are scoped to its account.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_ports::{Passkey, PasskeyCeremony, PasskeyStore};

use super::{Dialect, Pool, SqlStore, db_error};

/// The most passkeys one [`PasskeyStore::passkeys_of`] returns, whatever is asked.
const MAX_PASSKEY_PAGE: u32 = 100;

const PASSKEY_COLUMNS: &str = "credential_id, account_id, credential, name, created_at_ms, last_used_at_ms";

type PasskeyRow = (Vec<u8>, String, String, String, i64, Option<i64>);

fn passkey_from((credential_id, account_id, credential, name, created_at_ms, last_used_at_ms): PasskeyRow) -> Passkey {
    Passkey { credential_id, account_id, credential, name, created_at_ms, last_used_at_ms }
}

impl SqlStore {
    // An insert whose WHERE counts the rows it is bounded by, in a transaction that on
    // PostgreSQL first takes a lock on `lock` (at READ COMMITTED two statements could each
    // count before the other inserts; SQLite writes one at a time).
    async fn bounded_insert(&self, lock: String, sql: &'static str, bind: Binds<'_>) -> BackendResult<bool> {
        let postgres = self.dialect() == Dialect::Postgres;
        let stored = on_pool!(self, |pool| {
            let mut tx = pool.begin().await.map_err(db_error)?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                    .bind(&lock)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
            }
            let query = match bind {
                Binds::Passkey(p, max) => sqlx::query(sql)
                    .bind(&p.credential_id)
                    .bind(&p.account_id)
                    .bind(&p.credential)
                    .bind(&p.name)
                    .bind(p.created_at_ms)
                    .bind(p.last_used_at_ms)
                    .bind(i64::from(max)),
                Binds::Ceremony(id_hash, c, max) => sqlx::query(sql)
                    .bind(&id_hash[..])
                    .bind(&c.purpose)
                    .bind(&c.owner)
                    .bind(&c.state)
                    .bind(c.created_at_ms)
                    .bind(c.expires_at_ms)
                    .bind(i64::from(max)),
            };
            let stored = query.execute(&mut *tx).await.map_err(db_error)?.rows_affected();
            tx.commit().await.map_err(db_error)?;
            stored
        });
        Ok(stored == 1)
    }
}

// What a bounded insert binds, in its placeholders' order, with the bound last.
#[derive(Clone, Copy)]
enum Binds<'a> {
    Passkey(&'a Passkey, u32),
    Ceremony(&'a [u8; 32], &'a PasskeyCeremony, u32),
}

#[async_trait]
impl PasskeyStore for SqlStore {
    /// The count and the insert are one statement (a taken credential id stores nothing).
    async fn add_passkey(&self, passkey: &Passkey, max_per_account: u32) -> BackendResult<bool> {
        const SQL: &str = "INSERT INTO passkeys \
             (credential_id, account_id, credential, name, created_at_ms, last_used_at_ms) \
             SELECT $1, $2, $3, $4, $5, $6 WHERE (SELECT COUNT(*) FROM passkeys WHERE account_id = $2) < $7 \
             ON CONFLICT DO NOTHING";
        let lock = format!("mirobody passkeys of {}", passkey.account_id);
        self.bounded_insert(lock, SQL, Binds::Passkey(passkey, max_per_account)).await
    }

    /// At most [`MAX_PASSKEY_PAGE`], however large `limit` is.
    async fn passkeys_of(&self, account_id: &str, limit: u32) -> BackendResult<Vec<Passkey>> {
        let sql = format!(
            "SELECT {PASSKEY_COLUMNS} FROM passkeys WHERE account_id = $1 \
             ORDER BY created_at_ms, credential_id LIMIT $2"
        );
        let limit = i64::from(limit.min(MAX_PASSKEY_PAGE));
        let rows: Vec<PasskeyRow> = on_pool!(self, |pool| {
            sqlx::query_as(&sql).bind(account_id).bind(limit).fetch_all(pool).await.map_err(db_error)?
        });
        Ok(rows.into_iter().map(passkey_from).collect())
    }

    async fn passkey(&self, credential_id: &[u8]) -> BackendResult<Option<Passkey>> {
        let sql = format!("SELECT {PASSKEY_COLUMNS} FROM passkeys WHERE credential_id = $1");
        let row: Option<PasskeyRow> = on_pool!(self, |pool| {
            sqlx::query_as(&sql).bind(credential_id).fetch_optional(pool).await.map_err(db_error)?
        });
        Ok(row.map(passkey_from))
    }

    async fn passkey_used(&self, credential_id: &[u8], credential: &str, used_at_ms: i64) -> BackendResult<bool> {
        const SQL: &str = "UPDATE passkeys SET credential = $2, last_used_at_ms = $3 WHERE credential_id = $1";
        let done = on_pool!(self, |pool| {
            sqlx::query(SQL)
                .bind(credential_id)
                .bind(credential)
                .bind(used_at_ms)
                .execute(pool)
                .await
                .map_err(db_error)?
                .rows_affected()
        });
        Ok(done == 1)
    }

    async fn delete_passkey(&self, account_id: &str, credential_id: &[u8]) -> BackendResult<bool> {
        const SQL: &str = "DELETE FROM passkeys WHERE credential_id = $1 AND account_id = $2";
        let done = on_pool!(self, |pool| {
            sqlx::query(SQL).bind(credential_id).bind(account_id).execute(pool).await.map_err(db_error)?.rows_affected()
        });
        Ok(done == 1)
    }

    async fn delete_passkeys_of(&self, account_id: &str) -> BackendResult<u64> {
        const SQL: &str = "DELETE FROM passkeys WHERE account_id = $1";
        Ok(on_pool!(self, |pool| {
            sqlx::query(SQL).bind(account_id).execute(pool).await.map_err(db_error)?.rows_affected()
        }))
    }

    async fn put_ceremony(
        &self,
        id_hash: &[u8; 32],
        ceremony: &PasskeyCeremony,
        max_live_per_owner: u32,
    ) -> BackendResult<bool> {
        const SQL: &str = "INSERT INTO passkey_ceremonies \
             (id_hash, purpose, owner, state, created_at_ms, expires_at_ms) SELECT $1, $2, $3, $4, $5, $6 \
             WHERE (SELECT COUNT(*) FROM passkey_ceremonies WHERE owner = $3 AND expires_at_ms > $5) < $7 \
             ON CONFLICT DO NOTHING";
        let lock = format!("mirobody passkey ceremonies of {}", ceremony.owner);
        self.bounded_insert(lock, SQL, Binds::Ceremony(id_hash, ceremony, max_live_per_owner)).await
    }

    /// One `DELETE … RETURNING`: of two concurrent takes, the database lets one delete the row.
    /// An expired row is deleted too, and not returned.
    async fn take_ceremony(&self, id_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<PasskeyCeremony>> {
        const SQL: &str = "DELETE FROM passkey_ceremonies WHERE id_hash = $1 \
             RETURNING purpose, owner, state, created_at_ms, expires_at_ms";
        let row: Option<(String, String, String, i64, i64)> = on_pool!(self, |pool| {
            sqlx::query_as(SQL).bind(&id_hash[..]).fetch_optional(pool).await.map_err(db_error)?
        });
        Ok(row.filter(|row| row.4 > now_ms).map(|(purpose, owner, state, created_at_ms, expires_at_ms)| {
            PasskeyCeremony { purpose, owner, state, created_at_ms, expires_at_ms }
        }))
    }

    async fn sweep_ceremonies(&self, now_ms: i64) -> BackendResult<u64> {
        const SQL: &str = "DELETE FROM passkey_ceremonies WHERE expires_at_ms <= $1";
        Ok(on_pool!(self, |pool| {
            sqlx::query(SQL).bind(now_ms).execute(pool).await.map_err(db_error)?.rows_affected()
        }))
    }
}
