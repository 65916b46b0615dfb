//! Long-term memory: the owner-scoped full-text index (the terms SQLite indexes, the words a
//! query searches for) and [`Memory`] for [`SqlStore`], ranked by FTS5's bm25 on SQLite and
//! `ts_rank_cd` on PostgreSQL.

use async_trait::async_trait;
use mirobody_core::Memory;
use mirobody_core::backend::{BackendError, BackendResult, MemoryRecord, NewMemory};
use sha2::{Digest, Sha256};
use sqlx::Row;

use mirobody_health::QuotaExceeded;

use super::quotas::{MEMORY_LOCK_SPACE, PG_OWNER_LOCK, sql_bound};
use super::{Dialect, Pool, SqlStore, db_error};
use mirobody_health::text::{now_ms, rfc3339};

/// A 20-digit token standing for `owner` in the full-text index, prefixed to each of their
/// words. Digits are consonants to the porter stemmer, so a prefixed word stems as the word
/// alone; a fixed length keeps `<token><word>` unambiguous. Collisions (one in 2^64) are
/// harmless: every search also filters on the owner column.
pub(super) fn owner_tag(owner: &str) -> String {
    let digest = Sha256::digest(owner.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    format!("{:020}", u64::from_be_bytes(first))
}

/// Runs of letters and digits, lower-cased: the words of a text or a query.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// The indexed form of `owner`'s memory: each word prefixed with the owner's token.
pub(super) fn index_terms(owner: &str, text: &str) -> String {
    let tag = owner_tag(owner);
    let mut out = String::with_capacity(text.len() * 2);
    for word in words(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&tag);
        out.push_str(&word);
    }
    out
}

/// Common English words dropped from a recall query when other words remain: they match
/// nearly every memory and only slow the search.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "did", "do", "does", "for", "from", "i", "in", "is", "it",
    "me", "my", "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where", "which", "who", "with",
    "you", "your",
];

/// The searchable words of a query: runs of letters and digits, lower-cased, de-duplicated,
/// at most 32, stop words left out unless nothing else remains.
pub(crate) fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in words(query) {
        if !terms.contains(&word) {
            terms.push(word);
        }
    }
    let content: Vec<String> = terms.iter().filter(|t| !STOP_WORDS.contains(&t.as_str())).cloned().collect();
    let mut chosen = if content.is_empty() { terms } else { content };
    chosen.truncate(32);
    chosen
}

impl SqlStore {
    // The FTS5 query for `terms` of `owner`: each word as the owner's token (an FTS5 string of
    // letters and digits only, so no query syntax comes from the caller), any of them, less the
    // words common among the owner's memories when rarer ones are there.
    async fn sqlite_search(&self, owner: &str, terms: &[String]) -> BackendResult<String> {
        let tag = owner_tag(owner);
        let quoted: Vec<String> = terms.iter().map(|t| format!("\"{tag}{t}\"")).collect();
        #[allow(irrefutable_let_patterns)] // SQLite is the only pool without the postgres feature.
        let Pool::Sqlite(pool) = &self.pool else { return Ok(quoted.join(" OR ")) };
        let rows = sqlx::query(SQLITE_TERM_COUNTS)
            .bind(serde_json::to_string(&quoted).unwrap_or_default())
            .fetch_all(pool)
            .await
            .map_err(db_error)?;
        let mut rare = Vec::new();
        for row in &rows {
            let n: i64 = row.try_get("n").map_err(db_error)?;
            if n <= COMMON_MATCHES {
                rare.push(row.try_get::<String, _>("term").map_err(db_error)?);
            }
        }
        Ok(if rare.is_empty() { quoted.join(" OR ") } else { rare.join(" OR ") })
    }

    // The insert of one memory, and whether it takes the indexed terms as $6 (SQLite). A
    // `bounded` one is made unless its owner already keeps `$7` (SQLite) or `$6` (PostgreSQL)
    // memories: the count is the statement's own, taken with the insert (see `quotas.rs`).
    // Bulk set-up is not bounded, and counts nothing.
    pub(super) fn insert_memory_sql(&self, bounded: bool) -> (&'static str, bool) {
        match (self.dialect(), bounded) {
            (Dialect::Sqlite, false) => (
                "INSERT INTO memories (owner, text, kind, session_id, created_at_ms, terms) \
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                true,
            ),
            (Dialect::Sqlite, true) => (
                "INSERT INTO memories (owner, text, kind, session_id, created_at_ms, terms) \
                 SELECT $1, $2, $3, $4, $5, $6 WHERE (SELECT COUNT(*) FROM memories WHERE owner = $1) < $7 \
                 RETURNING id",
                true,
            ),
            (Dialect::Postgres, false) => (
                "INSERT INTO memories (owner, text, kind, session_id, created_at_ms) \
                 VALUES ($1, $2, $3, $4, $5) RETURNING id",
                false,
            ),
            (Dialect::Postgres, true) => (
                "INSERT INTO memories (owner, text, kind, session_id, created_at_ms) \
                 SELECT $1, $2, $3, $4, $5 WHERE (SELECT COUNT(*) FROM memories WHERE owner = $1) < $6 \
                 RETURNING id",
                false,
            ),
        }
    }
}

/// A word matching more of one owner's memories than this says little about which are
/// relevant: it is left out of the search when rarer words are in the query. And at most the
/// newest this many matches are ranked, which bounds the work of any one search. Owners with
/// fewer memories than this are never affected.
const COMMON_MATCHES: i64 = 2000;

// How many of the owner's memories each word matches (FTS5 counts a posting list without
// reading rows, faster than stopping early); the words come as a JSON array of FTS5 strings.
const SQLITE_TERM_COUNTS: &str = "SELECT j.value AS term, \
     (SELECT count(*) FROM memories_fts WHERE memories_fts MATCH j.value) AS n \
     FROM json_each($1) AS j";

// FTS5 ranks the owner's own postings (bm25) among the newest COMMON_MATCHES matches, and
// only the top rows are joined to their content, where the owner column is checked again.
// CROSS JOIN keeps that order: left to itself, SQLite 3.46 would walk every memory of the
// owner through the owner index and probe the ranked rows (8 ms instead of 0.7 ms for an owner
// with 100,000 memories).
const SQLITE_RECALL: &str = "SELECT m.id, m.text, m.kind, m.created_at_ms, -f.rank AS score \
     FROM (SELECT rowid, bm25(memories_fts) AS rank FROM memories_fts \
           WHERE memories_fts MATCH $2 AND rowid >= COALESCE((SELECT rowid FROM memories_fts \
               WHERE memories_fts MATCH $2 ORDER BY rowid DESC LIMIT 1 OFFSET $4 - 1), 0) \
           ORDER BY rank LIMIT $3) AS f \
     CROSS JOIN memories m ON m.id = f.rowid \
     WHERE m.owner = $1 \
     ORDER BY f.rank, m.id DESC";

const POSTGRES_RECALL: &str = "SELECT id, text, kind, created_at_ms, ts_rank_cd(tsv, q)::float8 AS score \
     FROM memories, to_tsquery('english', $2) AS q \
     WHERE owner = $1 AND tsv @@ q \
     ORDER BY score DESC, id DESC LIMIT $3";

#[async_trait]
impl Memory for SqlStore {
    async fn remember(&self, owner: &str, memory: NewMemory) -> BackendResult<i64> {
        // One insert that counts the owner's memories itself (the index is kept by a
        // trigger): committed, and with SQLite's synchronous=FULL on disk, before the id comes
        // back. SQLite runs it alone (one writer at a time; inside a deferred transaction its
        // write lock would not wait for another writer); PostgreSQL after the owner's lock in
        // the same transaction, so inserts made at once are counted one after another.
        let (sql, with_terms) = self.insert_memory_sql(true);
        let max = self.quotas.max_memories_per_user;
        let postgres = self.dialect() == Dialect::Postgres;
        let id: Option<i64> = on_pool!(self, |pool| {
            let query = sqlx::query_scalar(sql)
                .bind(owner)
                .bind(&memory.text)
                .bind(&memory.kind)
                .bind(&memory.session_id)
                .bind(now_ms());
            let query = if with_terms { query.bind(index_terms(owner, &memory.text)) } else { query };
            let query = query.bind(sql_bound(max));
            if postgres {
                let mut tx = pool.begin().await.map_err(db_error)?;
                let lock = sqlx::query(PG_OWNER_LOCK).bind(owner).bind(MEMORY_LOCK_SPACE);
                lock.execute(&mut *tx).await.map_err(db_error)?;
                let id = query.fetch_optional(&mut *tx).await.map_err(db_error)?;
                tx.commit().await.map_err(db_error)?;
                id
            } else {
                query.fetch_optional(pool).await.map_err(db_error)?
            }
        });
        id.ok_or_else(|| BackendError::new(QuotaExceeded::Memories { max }.to_string()))
    }

    async fn recall(&self, owner: &str, query: &str, top_k: usize) -> BackendResult<Vec<MemoryRecord>> {
        let terms = query_terms(query);
        if terms.is_empty() || top_k == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(top_k).unwrap_or(i64::MAX);
        let search = match self.dialect() {
            Dialect::Sqlite => self.sqlite_search(owner, &terms).await?,
            Dialect::Postgres => terms.join(" | "),
        };
        // SQLite's query also takes the common-match bound, as $4.
        let (sql, sqlite) = match self.dialect() {
            Dialect::Sqlite => (SQLITE_RECALL, true),
            Dialect::Postgres => (POSTGRES_RECALL, false),
        };
        on_pool!(self, |pool| {
            let query = sqlx::query(sql).bind(owner).bind(&search).bind(limit);
            let query = if sqlite { query.bind(COMMON_MATCHES) } else { query };
            let rows = query.fetch_all(pool).await.map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    Ok(MemoryRecord {
                        id: row.try_get("id")?,
                        text: row.try_get("text")?,
                        kind: row.try_get("kind")?,
                        score: row.try_get("score")?,
                        created_at: rfc3339(row.try_get("created_at_ms")?),
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()
                .map_err(db_error)
        })
    }

    async fn forget(&self, owner: &str, id: i64) -> BackendResult<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query("DELETE FROM memories WHERE owner = $1 AND id = $2")
                .bind(owner)
                .bind(id)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
                .map_err(db_error)
        })?;
        Ok(done > 0)
    }
}
