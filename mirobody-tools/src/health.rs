//! The built-in tools' own store, which core knows nothing of: the care circle, health
//! observations, the file index and conversation titles ([`HealthStore`]).
//!
//! It reaches a tool through the context's extensions, as any application's state does: the
//! server puts an `Arc<dyn HealthStore>` there ([`Backends`](crate::backends) open one), and a
//! handler takes it with [`health_store`]. An application that embeds these tools with its
//! own store implements the trait and does the same.

use std::sync::Arc;

use async_trait::async_trait;
use mirobody_core::ToolContext;
use mirobody_core::backend::{BackendKind, BackendResult, MissingBackend};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The health store of the call, or the error (which a model may read) that none is set up.
///
/// ```
/// use mirobody_core::ToolContext;
///
/// let err = mirobody_tools::health::health_store(&ToolContext::new()).err().unwrap();
/// assert_eq!(err.to_string(), "The database is not configured on this server.");
/// ```
pub fn health_store<'a>(ctx: &ToolContext<'a>) -> Result<&'a dyn HealthStore, MissingBackend> {
    ctx.extension::<Arc<dyn HealthStore>>().map(|store| store.as_ref()).ok_or(MissingBackend(BackendKind::Db))
}

/// A member of the caller's care circle who shares health data with them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircleMember {
    /// The member's user id.
    pub user_id: String,
    /// The name the caller knows them by.
    pub nickname: Option<String>,
    /// Their email address.
    pub email: Option<String>,
}

/// An offer to share one's health data, waiting for the invitee to accept it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CircleInvite {
    /// Its id, to accept, decline or cancel it by.
    pub id: i64,
    /// Who offers to share their data.
    pub owner: String,
    /// Who is invited: a user id, or an email address.
    pub invitee: String,
    /// The name the invitee will know the owner by, unless they choose another.
    pub nickname: Option<String>,
    /// When it was made, RFC 3339.
    pub created_at: String,
}

/// A person's care circle, both ways, with the invitations not yet answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CircleOverview {
    /// Who shares their health data with this person.
    pub shared_with_me: Vec<CircleMember>,
    /// Whom this person shares their health data with.
    pub my_readers: Vec<CircleMember>,
    /// Invitations this person made that wait for an answer.
    pub invites_sent: Vec<CircleInvite>,
    /// Invitations to this person that wait for their answer.
    pub invites_received: Vec<CircleInvite>,
}

/// A page of FHIR Observations, newest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservationPage {
    /// How many observations the subject has in all.
    pub total: u64,
    /// The FHIR Observation resources of this page.
    pub observations: Vec<Value>,
}

/// An uploaded file in a user's index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// The storage key.
    pub file_key: String,
    /// The name it was uploaded under.
    pub filename: String,
    /// Its real MIME type.
    pub mime_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was uploaded, RFC 3339.
    pub uploaded_at: String,
    /// The storage key of text extracted from it, if any.
    pub text_key: Option<String>,
    /// Where the reading of its text stands (a PDF's or Word file's text is read after the
    /// upload is answered).
    #[serde(default)]
    pub text_state: TextState,
}

/// Where the reading of a file's text stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TextState {
    /// Nothing left to do: [`FileRecord::text_key`] says whether it has text.
    #[default]
    Settled,
    /// Waiting in its owner's queue to be read.
    Waiting,
    /// It could not be read; why, in words for the person.
    Unreadable(String),
}

/// An indicator a person has data for: one per code and unit, so that values in different
/// units are never counted together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IndicatorSummary {
    /// The indicator's code (LOINC where the source gave one).
    pub code: String,
    /// Its name, as the person's data calls it.
    pub display: String,
    /// The unit of these values, if they have one.
    pub unit: Option<String>,
    /// How many values there are.
    pub count: u64,
    /// The time of the first value, RFC 3339.
    pub first: String,
    /// The time of the last value, RFC 3339.
    pub last: String,
}

/// One value of an indicator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SeriesPoint {
    /// The indicator's code.
    pub code: String,
    /// Its name.
    pub display: String,
    /// When it was measured, RFC 3339.
    pub time: String,
    /// The value, when it is a number.
    pub value: Option<f64>,
    /// The value, when it is text (a coded or free-text result).
    pub value_text: Option<String>,
    /// The unit of `value`.
    pub unit: Option<String>,
    /// The uploaded file it was read from, if any.
    pub file_key: Option<String>,
}

/// A condition, medication or allergy on record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HealthRecord {
    /// `condition`, `medication` or `allergy`.
    pub kind: String,
    /// What it is.
    pub display: String,
    /// Its status at the source (`active`, `resolved`, ...).
    pub status: Option<String>,
    /// When it started or was recorded, RFC 3339.
    pub time: Option<String>,
}

/// One value of a series: [`SeriesPoint`] without the code and name the series is asked by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SeriesValue {
    /// When it was measured, RFC 3339.
    pub time: String,
    /// The value, when it is a number.
    pub value: Option<f64>,
    /// The value, when it is text (a coded or free-text result).
    pub value_text: Option<String>,
    /// The unit of `value`.
    pub unit: Option<String>,
    /// The uploaded file it was read from, if any.
    pub file_key: Option<String>,
}

/// The part of a series [`HealthStore::series`] returns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Series {
    /// The values, oldest first: the newest `limit` in the range.
    pub points: Vec<SeriesValue>,
    /// Whether older values in the range were left out.
    pub truncated: bool,
}

/// The health application's store: the care circle, observations, the file index and
/// conversations. Implemented over SQLite or PostgreSQL in [`crate::backends`]; every method
/// takes the owner's (or reader's) id and is scoped to it.
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
