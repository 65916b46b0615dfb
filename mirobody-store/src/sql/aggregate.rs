//! [`HealthStore::buckets`](mirobody_health::HealthStore::buckets) for [`SqlStore`]: one
//! indicator's values in one unit grouped by UTC hour or day in the database, one `GROUP BY`
//! over the `health_points_buckets` index (migration 21), the same SQL on SQLite and
//! PostgreSQL. The last value of each group is one index seek.
//!
//! Low and high are summed against the query's bounds there; the values whose source judged
//! them (a range or an interpretation of their own: laboratory results, few) are then read on
//! their own through a partial index (migration 22) and counted as their source said
//! ([`source_verdict`]), so the sums keep to the covering index.
//!
//! The access condition is part of each statement, as for every health read (`series.rs`).

use futures::TryStreamExt;
use mirobody_core::backend::BackendResult;
use mirobody_health::HealthStore;
use mirobody_health::flags::ReferenceRange;
use mirobody_health::store::aggregate::{Bucket, BucketQuery, source_verdict};

use super::{Pool, SqlStore, db_error};

/// The statement in its four forms: `[own, shared]` × `[a unit, no unit]`. `$1` the subject,
/// `$2` the reader, `$3` the code, `[$4, $5)` the range, `$6` the grain's width, `$7` and `$8`
/// the low and high bounds, `$9` the unit ('' for none), `$10` the most groups.
macro_rules! bucket_sql {
    ($access:literal, $unit:literal) => {
        concat!(
            "WITH b AS (SELECT time_ms - ((time_ms % $6) + $6) % $6 AS start_ms, COUNT(*) AS n, ",
            "MIN(value) AS lo, MAX(value) AS hi, SUM(value) AS total, MAX(time_ms) AS last_ms, ",
            "SUM(CASE WHEN value < $7 THEN 1 ELSE 0 END) AS low, SUM(CASE WHEN value > $8 THEN 1 ELSE 0 END) AS high ",
            "FROM health_points WHERE subject = $1 AND code = $3 AND ",
            $unit,
            " AND time_ms >= $4 AND time_ms < $5 AND value IS NOT NULL AND ",
            $access,
            " GROUP BY start_ms) ",
            "SELECT b.start_ms, b.n, b.lo, b.hi, b.total, b.last_ms, b.low, b.high, ",
            // Unqualified columns here are the inner `p`'s.
            "(SELECT p.value FROM health_points p WHERE p.subject = $1 AND p.code = $3 AND ",
            $unit,
            " AND p.time_ms = b.last_ms AND p.value IS NOT NULL ORDER BY p.id DESC LIMIT 1) AS last ",
            "FROM b ORDER BY b.start_ms DESC LIMIT $10"
        )
    };
}

const BUCKETS_SQL: [[&str; 2]; 2] = [
    [bucket_sql!("$2 = $1", "unit = $9"), bucket_sql!("$2 = $1", "(unit IS NULL OR unit = $9)")],
    [
        bucket_sql!("EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1)", "unit = $9"),
        bucket_sql!(
            "EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1)",
            "(unit IS NULL OR unit = $9)"
        ),
    ],
];

/// The values in range whose source judged them, in the same four forms; `$1` to `$5` as
/// above, `$6` the unit. The condition on the source's columns is the partial index's own (migration 22).
macro_rules! judged_sql {
    ($access:literal, $unit:literal) => {
        concat!(
            "SELECT time_ms, value, ref_low, ref_high, ref_unit, interpretation FROM health_points ",
            "WHERE subject = $1 AND code = $3 AND ",
            $unit,
            " AND time_ms >= $4 AND time_ms < $5 AND value IS NOT NULL AND ",
            "(interpretation IS NOT NULL OR ref_low IS NOT NULL OR ref_high IS NOT NULL) AND ",
            $access
        )
    };
}

const JUDGED_SQL: [[&str; 2]; 2] = [
    [judged_sql!("$2 = $1", "unit = $6"), judged_sql!("$2 = $1", "(unit IS NULL OR unit = $6)")],
    [
        judged_sql!("EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1)", "unit = $6"),
        judged_sql!(
            "EXISTS (SELECT 1 FROM health_shares WHERE reader = $2 AND owner = $1)",
            "(unit IS NULL OR unit = $6)"
        ),
    ],
];

/// One row: start, count, min, max, sum, last time, low, high, last value.
type BucketRow = (i64, i64, f64, f64, f64, i64, i64, i64, Option<f64>);

/// One judged value: time, value, the source's range (low, high, unit) and interpretation.
type JudgedRow = (i64, f64, Option<f64>, Option<f64>, Option<String>, Option<String>);

impl SqlStore {
    pub(super) async fn read_buckets(
        &self,
        reader: &str,
        subject: &str,
        query: &BucketQuery<'_>,
    ) -> BackendResult<Option<Vec<Bucket>>> {
        let unit = query.unit.unwrap_or("");
        let sql = BUCKETS_SQL[usize::from(reader != subject)][usize::from(unit.is_empty())];
        // Bound to what both databases take: a limit past i64 is no limit.
        let limit = i64::from(query.limit);
        let rows: Vec<BucketRow> = on_pool!(self, |pool| {
            sqlx::query_as(sql)
                .bind(subject)
                .bind(reader)
                .bind(query.code)
                .bind(query.start_ms)
                .bind(query.end_ms)
                .bind(query.grain.width_ms())
                .bind(query.low_below)
                .bind(query.high_above)
                .bind(unit)
                .bind(limit)
                .fetch_all(pool)
                .await
                .map_err(db_error)
        })?;
        if rows.is_empty() {
            return Ok(self.can_read_health(reader, subject).await?.then_some(Vec::new()));
        }
        let mut buckets: Vec<Bucket> = rows
            .into_iter()
            .map(|(start_ms, n, min, max, sum, last_ms, low, high, last)| Bucket {
                start_ms,
                count: n.max(0) as u64,
                min,
                max,
                sum,
                // Read in the same statement as the group, so it is there; never null in fact.
                last: last.unwrap_or(max),
                last_ms,
                low: low.max(0) as u64,
                high: high.max(0) as u64,
            })
            .collect();
        buckets.reverse();
        self.rejudge(reader, subject, query, &mut buckets).await?;
        Ok(Some(buckets))
    }

    /// Counts the values in `buckets` (oldest first, not empty) whose source judged them as it
    /// did. Streamed: a person with many such values costs time, not memory.
    async fn rejudge(
        &self,
        reader: &str,
        subject: &str,
        query: &BucketQuery<'_>,
        buckets: &mut [Bucket],
    ) -> BackendResult<()> {
        let unit = query.unit.unwrap_or("");
        let sql = JUDGED_SQL[usize::from(reader != subject)][usize::from(unit.is_empty())];
        // Only the groups kept: the oldest may be past the limit's.
        let from_ms = buckets.first().map_or(query.start_ms, |b| b.start_ms.max(query.start_ms));
        let mut judge = |(time_ms, value, low, high, ref_unit, interpretation): JudgedRow| {
            let range =
                (low.is_some() || high.is_some()).then(|| ReferenceRange::from_source(low, high, ref_unit.as_deref()));
            let Some(verdict) = source_verdict(query, value, range.as_ref(), interpretation.as_deref()) else {
                return;
            };
            let start_ms = query.grain.floor(time_ms);
            if let Ok(at) = buckets.binary_search_by_key(&start_ms, |b| b.start_ms) {
                buckets[at].rejudge(query, value, verdict);
            }
        };
        on_pool!(self, |pool| {
            let mut rows = sqlx::query_as::<_, JudgedRow>(sql)
                .bind(subject)
                .bind(reader)
                .bind(query.code)
                .bind(from_ms)
                .bind(query.end_ms)
                .bind(unit)
                .fetch(pool);
            while let Some(row) = rows.try_next().await.map_err(db_error)? {
                judge(row);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::tests::{new_sqlite_store, sqlite_pool};

    /// SQLite uses a partial index only when the statement repeats its condition: the judged
    /// values of a unit are read through it, and the sums through the covering one. Values
    /// without a unit (`unit IS NULL OR unit = ''`, rare) are read through an index too.
    #[tokio::test]
    async fn each_statement_reads_its_index() {
        let (_dir, store) = new_sqlite_store(1).await;
        let pool = sqlite_pool(&store);
        async fn plan(pool: &sqlx::SqlitePool, sql: &str) -> String {
            let rows: Vec<(i64, i64, i64, String)> =
                sqlx::query_as(&format!("EXPLAIN QUERY PLAN {sql}")).fetch_all(pool).await.unwrap();
            rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n")
        }
        for access in 0..2 {
            let judged = plan(pool, JUDGED_SQL[access][0]).await;
            assert!(judged.contains("INDEX health_points_judged"), "{judged}");
            let sums = plan(pool, BUCKETS_SQL[access][0]).await;
            assert!(sums.contains("COVERING INDEX health_points_buckets"), "{sums}");
            for no_unit in [JUDGED_SQL[access][1], BUCKETS_SQL[access][1]] {
                let plan = plan(pool, no_unit).await;
                assert!(!plan.contains("SCAN health_points"), "{plan}");
            }
        }
    }
}
