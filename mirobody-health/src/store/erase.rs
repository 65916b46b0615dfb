//! What a person takes out of the store and removes from it: their stored resources page by
//! page (an export), one value, one file's entry with what was read from it.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use serde_json::Value;

use crate::records::FileRecord;

/// One resource a person holds, as it was imported.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredResource {
    /// Where the next page starts: pass it back as `after`.
    pub cursor: ResourceCursor,
    /// What identifies it among the person's imports (`Observation/abc`, `Condition#sha256:…`).
    pub source_id: Option<String>,
    /// The uploaded file it was read from, if any.
    pub file_key: Option<String>,
    /// The FHIR resource as received.
    pub resource: Value,
    /// What a chart record is shown as (a medication's drug, a report's name); `None` for an
    /// observation.
    pub display: Option<String>,
    /// What else a chart record shows (a report's linked results); `None` for an observation.
    pub detail: Option<Value>,
}

/// Where a page of [`PersonalData::stored_resources`] starts: observations first, then the
/// chart records, each in the order they were stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceCursor {
    /// Whether the observations are done and the chart records are being read.
    pub records: bool,
    /// The last row id read in that table.
    pub after_id: i64,
}

/// What a person takes out and deletes, one thing at a time. Every method is scoped to
/// `owner`: another person's value or file is "not found", the same as one that does not exist.
#[async_trait]
pub trait PersonalData: super::RecordStore + Send + Sync {
    /// Up to `limit` of `owner`'s stored resources after `after` (from the start for `None`):
    /// an export reads them page by page, never all at once. An empty page is the end.
    async fn stored_resources(
        &self,
        owner: &str,
        after: Option<ResourceCursor>,
        limit: u32,
    ) -> BackendResult<Vec<StoredResource>>;

    /// Deletes `owner`'s observation or chart record whose source id is `source_id`, with the
    /// indicator values read from it; whether there was one.
    async fn delete_value(&self, owner: &str, source_id: &str) -> BackendResult<bool>;

    /// Deletes `owner`'s file `file_key` from the index, with every observation and record
    /// imported from it: the entry it was (its objects in storage are the caller's to delete,
    /// `file_key`, `text_key` and their sidecars), or `None` when they have no such file.
    async fn delete_file_entry(&self, owner: &str, file_key: &str) -> BackendResult<Option<FileRecord>>;
}
