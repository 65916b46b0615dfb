//! The rows one transaction of an import writes, for `import.rs`: Observations many per
//! statement and their points likewise, a chart record, a removal; a resource re-sent under a
//! stored source id replaces the stored one only when it is a newer version, which moves to the
//! history first (`history.rs`).
//!
//! Macros, not functions, so that each database's transaction keeps its own types while the
//! SQL and the logic are written once (as `on_pool!` does).

use mirobody_health::ItemOutcome;

use super::history::Kept;

/// The head of a multi-row insert of observations (`QueryBuilder::push_values` adds the rows).
pub(super) const INSERT_OBSERVATIONS: &str = "INSERT INTO observations (subject, code, effective_ms, resource, \
     created_at_ms, source_id, file_key, import_id, version_id, last_updated_ms) ";
/// Observations in one statement: ten binds each, well within both databases' bounds.
pub(super) const OBSERVATIONS_PER_STATEMENT: usize = 200;
/// The head of a multi-row insert of points.
pub(super) const INSERT_POINTS: &str = "INSERT INTO health_points \
     (subject, observation_id, code, display, time_ms, value, value_text, unit, file_key, import_id, \
     ref_low, ref_high, ref_unit, ref_text, interpretation) ";
/// Points in one statement: fifteen binds each, within SQLite's 32,766.
pub(super) const POINTS_PER_STATEMENT: usize = 200;

/// What every row of one import's transaction shares.
pub(super) struct Chunk<'a> {
    /// Whose.
    pub(super) subject: &'a str,
    /// The import every row names.
    pub(super) import_id: i64,
    /// The uploaded file the import read, if any.
    pub(super) file_key: Option<&'a str>,
    /// When, in unix milliseconds.
    pub(super) now: i64,
}

/// What the transactions of one import call did: what became of each item (and its row's id),
/// and what undoing them takes.
#[derive(Default)]
pub(super) struct Done {
    /// Per item, in order.
    pub(super) outcomes: Vec<(ItemOutcome, Option<i64>)>,
    /// Source ids of the observations created (none was stored under them before).
    pub(super) observations: Vec<String>,
    /// (kind, source id) of the records created.
    pub(super) records: Vec<(&'static str, String)>,
    /// The versions replaced or removed, in order.
    pub(super) kept: Vec<Kept>,
}

/// Writes `$items` (one transaction's share of an import) on `$tx`, noting in `$done` what
/// became of each: runs of Observations many per statement, records and removals one by one,
/// in the order received.
macro_rules! import_chunk_on {
    ($tx:ident, $chunk:expr, $items:expr, $done:ident) => {{
        let chunk: &super::rows::Chunk<'_> = $chunk;
        let items: &[&mirobody_health::fhir::ImportItem] = $items;
        let mut i = 0;
        while i < items.len() {
            match items[i] {
                mirobody_health::fhir::ImportItem::Observation(_) => {
                    let mut run = Vec::new();
                    while let Some(mirobody_health::fhir::ImportItem::Observation(o)) = items.get(i).copied() {
                        run.push(o);
                        i += 1;
                    }
                    for part in run.chunks(super::rows::OBSERVATIONS_PER_STATEMENT) {
                        super::rows::observations!($tx, chunk, part, $done);
                    }
                }
                mirobody_health::fhir::ImportItem::Record(r) => {
                    super::rows::record!($tx, chunk, r, $done);
                    i += 1;
                }
                mirobody_health::fhir::ImportItem::Remove(r) => {
                    super::rows::removal!($tx, chunk, r, $done);
                    i += 1;
                }
            }
        }
    }};
}

/// Inserts observations `$part` in one statement; the first of each new source id is
/// created, with its points, and any other is a correction or nothing.
macro_rules! observations {
    ($tx:ident, $chunk:expr, $part:expr, $done:ident) => {{
        use mirobody_health::ItemOutcome;
        use mirobody_health::fhir::{HealthPoint, NewObservation, Revision};
        let chunk: &super::rows::Chunk<'_> = $chunk;
        let part: &[&NewObservation] = $part;
        let revisions: Vec<Revision> = part.iter().map(|o| Revision::of(&o.resource)).collect();
        let texts: Vec<String> = part.iter().map(|o| o.resource.to_string()).collect();
        let mut insert = sqlx::QueryBuilder::new(super::rows::INSERT_OBSERVATIONS);
        insert.push_values(part.iter().zip(&revisions).zip(&texts), |mut row, ((o, revision), text)| {
            row.push_bind(chunk.subject)
                .push_bind(&o.code)
                .push_bind(o.time_ms)
                .push_bind(text.as_str())
                .push_bind(chunk.now)
                .push_bind(&o.source_id)
                .push_bind(chunk.file_key)
                .push_bind(chunk.import_id)
                .push_bind(revision.version_id.as_deref())
                .push_bind(revision.last_updated_ms);
        });
        insert.push(" ON CONFLICT (subject, source_id) DO NOTHING RETURNING id, source_id");
        let inserted: Vec<(i64, String)> =
            insert.build_query_as().fetch_all(&mut *$tx).await.map_err(super::db_error)?;
        let mut new_ids: std::collections::HashMap<&str, i64> =
            inserted.iter().map(|(id, source)| (source.as_str(), *id)).collect();
        let mut outcomes: Vec<Option<(ItemOutcome, Option<i64>)>> = vec![None; part.len()];
        let mut points: Vec<(i64, &HealthPoint)> = Vec::new();
        for (k, o) in part.iter().enumerate() {
            // The first of a source id is the row inserted; a repeat in the same part is not.
            if let Some(id) = new_ids.remove(o.source_id.as_str()) {
                outcomes[k] = Some((ItemOutcome::Created, Some(id)));
                $done.observations.push(o.source_id.clone());
                points.extend(o.points.iter().map(|p| (id, p)));
            }
        }
        super::rows::points!($tx, chunk, &points);
        for (k, o) in part.iter().enumerate() {
            if outcomes[k].is_none() {
                let revision = &revisions[k];
                outcomes[k] = Some(if revision.may_supersede() {
                    super::rows::correct_observation!($tx, chunk, o, revision, &texts[k], $done)
                } else {
                    (ItemOutcome::Unchanged, None)
                });
            }
        }
        $done.outcomes.extend(outcomes.into_iter().map(|o| o.unwrap_or((ItemOutcome::Unchanged, None))));
    }};
}

/// Inserts `$points` ((observation id, point) each), many per statement.
macro_rules! points {
    ($tx:ident, $chunk:expr, $points:expr) => {{
        let points: &[(i64, &mirobody_health::fhir::HealthPoint)] = $points;
        for batch in points.chunks(super::rows::POINTS_PER_STATEMENT) {
            let mut insert = sqlx::QueryBuilder::new(super::rows::INSERT_POINTS);
            insert.push_values(batch, |mut row, (id, p)| {
                row.push_bind($chunk.subject)
                    .push_bind(*id)
                    .push_bind(&p.code)
                    .push_bind(&p.display)
                    .push_bind(p.time_ms)
                    .push_bind(p.value)
                    .push_bind(&p.value_text)
                    .push_bind(&p.unit)
                    .push_bind($chunk.file_key)
                    .push_bind($chunk.import_id)
                    .push_bind(p.range.as_ref().and_then(|r| r.low))
                    .push_bind(p.range.as_ref().and_then(|r| r.high))
                    .push_bind(p.range.as_ref().and_then(|r| r.unit.as_deref()))
                    .push_bind(p.range.as_ref().and_then(|r| r.text.as_deref()))
                    .push_bind(p.interpretation.as_deref());
            });
            insert.build().execute(&mut *$tx).await.map_err(super::db_error)?;
        }
    }};
}

/// Replaces the observation stored under `$o`'s source id when `$o` is a newer version: the
/// stored one (and its points) to the history, `$o` and its points in its place. What became
/// of it, with the row's id.
macro_rules! correct_observation {
    ($tx:ident, $chunk:expr, $o:expr, $revision:expr, $text:expr, $done:ident) => {{
        const STORED: &str = "SELECT id, version_id, last_updated_ms, resource FROM observations \
             WHERE subject = $1 AND source_id = $2";
        const REPLACE: &str = "UPDATE observations SET code = $2, effective_ms = $3, resource = $4, file_key = $5, \
             import_id = $6, version_id = $7, last_updated_ms = $8, created_at_ms = $9 WHERE id = $1";
        let (o, revision, text): (&NewObservation, &Revision, &String) = ($o, $revision, $text);
        let stored: Option<(i64, Option<String>, Option<i64>, String)> = sqlx::query_as(STORED)
            .bind($chunk.subject)
            .bind(&o.source_id)
            .fetch_optional(&mut *$tx)
            .await
            .map_err(super::db_error)?;
        match stored {
            Some((id, version_id, last_updated_ms, stored_text)) => {
                let stored_revision = Revision { version_id, last_updated_ms, corrected: false };
                if revision.supersedes(&stored_revision, stored_text == *text) {
                    let kept = super::history::supersede_observation!(
                        $tx,
                        $chunk.subject,
                        id,
                        $chunk.import_id,
                        "replaced",
                        $chunk.now
                    );
                    $done.kept.push(super::history::Kept::Observation(kept));
                    sqlx::query(REPLACE)
                        .bind(id)
                        .bind(&o.code)
                        .bind(o.time_ms)
                        .bind(text.as_str())
                        .bind($chunk.file_key)
                        .bind($chunk.import_id)
                        .bind(revision.version_id.as_deref())
                        .bind(revision.last_updated_ms)
                        .bind($chunk.now)
                        .execute(&mut *$tx)
                        .await
                        .map_err(super::db_error)?;
                    let points: Vec<(i64, &HealthPoint)> = o.points.iter().map(|p| (id, p)).collect();
                    super::rows::points!($tx, $chunk, &points);
                    (ItemOutcome::Updated, Some(id))
                } else {
                    (ItemOutcome::Unchanged, None)
                }
            }
            // The insert met a row of this transaction's: nothing to correct.
            None => (ItemOutcome::Unchanged, None),
        }
    }};
}

/// Stores one chart record: new, a newer version of the stored one (which moves to the
/// history), or nothing.
macro_rules! record {
    ($tx:ident, $chunk:expr, $r:expr, $done:ident) => {{
        use mirobody_health::ItemOutcome;
        use mirobody_health::fhir::{NewRecord, Revision};
        const INSERT: &str = "INSERT INTO health_records (subject, kind, source_id, display, status, time_ms, \
             resource, created_at_ms, detail, import_id, version_id, last_updated_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
             ON CONFLICT (subject, kind, source_id) DO NOTHING RETURNING id";
        const STORED: &str = "SELECT id, version_id, last_updated_ms, resource FROM health_records \
             WHERE subject = $1 AND kind = $2 AND source_id = $3";
        const REPLACE: &str = "UPDATE health_records SET display = $2, status = $3, time_ms = $4, resource = $5, \
             detail = $6, import_id = $7, version_id = $8, last_updated_ms = $9, created_at_ms = $10 WHERE id = $1";
        let r: &NewRecord = $r;
        let revision = Revision::of(&r.resource);
        let text = r.resource.to_string();
        let detail = r.detail.as_ref().map(serde_json::Value::to_string);
        let id: Option<i64> = sqlx::query_scalar(INSERT)
            .bind($chunk.subject)
            .bind(r.kind.as_str())
            .bind(&r.source_id)
            .bind(&r.display)
            .bind(&r.status)
            .bind(r.time_ms)
            .bind(&text)
            .bind($chunk.now)
            .bind(&detail)
            .bind($chunk.import_id)
            .bind(revision.version_id.as_deref())
            .bind(revision.last_updated_ms)
            .fetch_optional(&mut *$tx)
            .await
            .map_err(super::db_error)?;
        let outcome = match id {
            Some(id) => {
                $done.records.push((r.kind.as_str(), r.source_id.clone()));
                (ItemOutcome::Created, Some(id))
            }
            None if !revision.may_supersede() => (ItemOutcome::Unchanged, None),
            None => {
                let stored: Option<(i64, Option<String>, Option<i64>, String)> = sqlx::query_as(STORED)
                    .bind($chunk.subject)
                    .bind(r.kind.as_str())
                    .bind(&r.source_id)
                    .fetch_optional(&mut *$tx)
                    .await
                    .map_err(super::db_error)?;
                match stored {
                    Some((id, version_id, last_updated_ms, stored_text))
                        if revision.supersedes(
                            &Revision { version_id: version_id.clone(), last_updated_ms, corrected: false },
                            stored_text == text,
                        ) =>
                    {
                        let kept = super::history::supersede_record!(
                            $tx,
                            $chunk.subject,
                            id,
                            $chunk.import_id,
                            "replaced",
                            $chunk.now
                        );
                        $done.kept.push(super::history::Kept::Record(kept));
                        sqlx::query(REPLACE)
                            .bind(id)
                            .bind(&r.display)
                            .bind(&r.status)
                            .bind(r.time_ms)
                            .bind(&text)
                            .bind(&detail)
                            .bind($chunk.import_id)
                            .bind(revision.version_id.as_deref())
                            .bind(revision.last_updated_ms)
                            .bind($chunk.now)
                            .execute(&mut *$tx)
                            .await
                            .map_err(super::db_error)?;
                        (ItemOutcome::Updated, Some(id))
                    }
                    _ => (ItemOutcome::Unchanged, None),
                }
            }
        };
        $done.outcomes.push(outcome);
    }};
}

/// Takes the value a removal names out of every read, to the history; nothing when none is
/// stored under its source id.
macro_rules! removal {
    ($tx:ident, $chunk:expr, $r:expr, $done:ident) => {{
        use mirobody_health::ItemOutcome;
        use mirobody_health::fhir::{Removal, Target};
        let r: &Removal = $r;
        let reason = r.reason.as_str();
        let outcome = match r.target {
            Target::Observation => {
                let id: Option<i64> =
                    sqlx::query_scalar("SELECT id FROM observations WHERE subject = $1 AND source_id = $2")
                        .bind($chunk.subject)
                        .bind(&r.source_id)
                        .fetch_optional(&mut *$tx)
                        .await
                        .map_err(super::db_error)?;
                match id {
                    Some(id) => {
                        let kept = super::history::supersede_observation!(
                            $tx,
                            $chunk.subject,
                            id,
                            $chunk.import_id,
                            reason,
                            $chunk.now
                        );
                        $done.kept.push(super::history::Kept::Observation(kept));
                        sqlx::query("DELETE FROM observations WHERE id = $1")
                            .bind(id)
                            .execute(&mut *$tx)
                            .await
                            .map_err(super::db_error)?;
                        ItemOutcome::Removed
                    }
                    None => ItemOutcome::Unchanged,
                }
            }
            Target::Record(kind) => {
                let id: Option<i64> = sqlx::query_scalar(
                    "SELECT id FROM health_records WHERE subject = $1 AND kind = $2 AND source_id = $3",
                )
                .bind($chunk.subject)
                .bind(kind.as_str())
                .bind(&r.source_id)
                .fetch_optional(&mut *$tx)
                .await
                .map_err(super::db_error)?;
                match id {
                    Some(id) => {
                        let kept = super::history::supersede_record!(
                            $tx,
                            $chunk.subject,
                            id,
                            $chunk.import_id,
                            reason,
                            $chunk.now
                        );
                        $done.kept.push(super::history::Kept::Record(kept));
                        sqlx::query("DELETE FROM health_records WHERE id = $1")
                            .bind(id)
                            .execute(&mut *$tx)
                            .await
                            .map_err(super::db_error)?;
                        ItemOutcome::Removed
                    }
                    None => ItemOutcome::Unchanged,
                }
            }
        };
        $done.outcomes.push((outcome, None));
    }};
}

pub(super) use {correct_observation, import_chunk_on, observations, points, record, removal};
