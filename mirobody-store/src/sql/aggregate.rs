//! [`HealthStore::buckets`](mirobody_health::HealthStore::buckets) for [`SqlStore`]: one
//! indicator's values in one unit grouped by UTC hour or day in the database, one `GROUP BY`
//! over the `health_points_buckets` index (migration 21), the same SQL on SQLite and
//! PostgreSQL. The last value of each group is one index seek.
//!
//! The access condition is part of the statement, as for every health read (`series.rs`).

use mirobody_core::backend::BackendResult;
use mirobody_health::HealthStore;
use mirobody_health::store::aggregate::{Bucket, BucketQuery};

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

/// One row: start, count, min, max, sum, last time, low, high, last value.
type BucketRow = (i64, i64, f64, f64, f64, i64, i64, i64, Option<f64>);

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
        Ok(Some(buckets))
    }
}
