//! The reads of a person's health data, on behalf of a reader.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;

use super::aggregate::{Bucket, BucketQuery, fold_values};
use crate::records::{CircleMember, FileRecord, HealthRecord, IndicatorSummary, ObservationPage, Series, SeriesPoint};

/// What the health tools read: the care circle, observations, the file index, and
/// conversations' titles. `mirobody-store` implements it over SQLite or PostgreSQL; every
/// method takes the owner's (or reader's) id and is scoped to it.
#[async_trait]
pub trait HealthStore: Send + Sync {
    /// Members who share their health data with `user_id`.
    async fn health_sharers(&self, user_id: &str) -> BackendResult<Vec<CircleMember>>;
    /// Whether `reader` may read `subject`'s health data (true when they are the same user).
    async fn can_read_health(&self, reader: &str, subject: &str) -> BackendResult<bool>;
    /// The newest `limit` observations of `subject`, read on behalf of `reader`.
    ///
    /// The access check is part of the read: `None` when `reader` may not read `subject`'s
    /// health data (they are not the same user and `subject` does not share with `reader`), so
    /// a share revoked between a check and the read is still honoured.
    async fn observations(&self, reader: &str, subject: &str, limit: u32) -> BackendResult<Option<ObservationPage>>;
    /// The indicators `subject` has values of, read on behalf of `reader`; `None` when `reader`
    /// may not read `subject`'s health data (as for [`observations`](Self::observations)).
    async fn indicators(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<IndicatorSummary>>>;
    /// The values of `code` from `start_ms` (inclusive) to `end_ms` (exclusive), the newest
    /// `limit` of them, oldest first; `None` when `reader` may not read `subject`'s data.
    async fn series(
        &self,
        reader: &str,
        subject: &str,
        code: &str,
        start_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> BackendResult<Option<Series>>;
    /// `query`'s values of `subject` summed up by hour or day, oldest first, empty groups left
    /// out; `None` when `reader` may not read `subject`'s data. Stores sum them up in the
    /// database; this default folds the whole series in memory ([`fold_values`]), the same
    /// answer for a store that has no query of its own.
    async fn buckets(
        &self,
        reader: &str,
        subject: &str,
        query: &BucketQuery<'_>,
    ) -> BackendResult<Option<Vec<Bucket>>> {
        let series = self.series(reader, subject, query.code, query.start_ms, query.end_ms, u32::MAX).await?;
        Ok(series.map(|series| fold_values(&series.points, query)))
    }
    /// The newest value of each indicator of `subject`; `None` when `reader` may not read it.
    async fn latest_values(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<SeriesPoint>>>;
    /// `subject`'s conditions, medications and allergies; `None` when `reader` may not read them.
    async fn health_records(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<HealthRecord>>>;
    /// The files `owner` uploaded, newest first.
    async fn files(&self, owner: &str) -> BackendResult<Vec<FileRecord>>;
    /// One of `owner`'s files; `None` when it does not exist or belongs to someone else.
    async fn file(&self, owner: &str, file_key: &str) -> BackendResult<Option<FileRecord>>;
    /// Sets the summary (the title) of `owner`'s conversation `session_id`, recording the
    /// conversation if it is new. Conversations are keyed by owner and session, so one user's
    /// session id never reaches another user's conversation.
    async fn set_conversation_summary(&self, owner: &str, session_id: &str, summary: &str) -> BackendResult<()>;
}
