//! The writes of a person's health data: what imports store, the care circle, and the file
//! index with its queue of texts to read.

use async_trait::async_trait;
use mirobody_core::backend::{BackendError, BackendResult};
use serde_json::Value;

use super::imports::{DeletedImport, ImportCounts, ImportKind, ImportRecord, ImportSource, ItemOutcome};
use crate::fhir::ImportItem;
use crate::quota::QuotaExceeded;
use crate::records::{CircleOverview, FileRecord};

/// The writes imports and set-up make: users, imports with their observations and records,
/// and the history of what corrections replaced.
///
/// Every import is a thing of its own ([`begin_import`](Self::begin_import)): each value it
/// stores names it, a person lists theirs ([`imports`](Self::imports)) and deletes one whole
/// ([`delete_import`](Self::delete_import)). A value re-sent under the same source id replaces
/// the stored one only when it is a newer version
/// ([`Revision::supersedes`](crate::fhir::Revision::supersedes)); the one it replaces, and one
/// an [`ImportItem::Remove`] takes away, are kept as history, which no read returns.
#[async_trait]
pub trait RecordStore: Send + Sync {
    /// Adds or updates a user.
    async fn upsert_user(&self, id: &str, display_name: Option<&str>, email: Option<&str>) -> BackendResult<()>;

    /// Records a new import of `subject`'s from `source`: its id, for
    /// [`import_batch`](Self::import_batch) and [`finish_import`](Self::finish_import).
    async fn begin_import(&self, subject: &str, source: &ImportSource) -> BackendResult<i64>;

    /// Stores `items` as `subject`'s, as part of their import `import_id`: what became of each,
    /// in order. A new source id is stored ([`ItemOutcome::Created`]); a newer version of a
    /// stored one replaces it (`Updated`, the earlier kept as history); a removal takes the
    /// stored one away (`Removed`); anything else changes nothing (`Unchanged`).
    ///
    /// All or nothing: when a write fails, what was written before it is undone (replaced
    /// and removed values served again) and the error returned. A batch that would take
    /// `subject` past their quota of observations stores nothing and is `Ok(Err)`. An
    /// `import_id` that is not one of `subject`'s is an error.
    async fn import_batch(
        &self,
        subject: &str,
        import_id: i64,
        items: &[&ImportItem],
    ) -> BackendResult<Result<Vec<ItemOutcome>, QuotaExceeded>>;

    /// Records what `subject`'s import `import_id` did, when it is over.
    async fn finish_import(&self, subject: &str, import_id: i64, counts: &ImportCounts) -> BackendResult<()>;

    /// `subject`'s imports, newest first.
    async fn imports(&self, subject: &str) -> BackendResult<Vec<ImportRecord>>;

    /// Deletes `subject`'s import `import_id` whole, undoing it: the values it stored leave
    /// every read (and the history); a value it replaced or removed is served again in the
    /// version it had before this import (unless a later import has replaced it since, which
    /// stays); the import's record goes too. `None` when there is no such import of
    /// `subject`'s.
    async fn delete_import(&self, subject: &str, import_id: i64) -> BackendResult<Option<DeletedImport>>;

    /// Stores `items` as `subject`'s, read from the uploaded file `file_key` if any, as one
    /// import of their own ([`ImportKind::Upload`] with a file, else [`ImportKind::Other`]):
    /// for each, whether it changed anything (false: [`ItemOutcome::Unchanged`]).
    ///
    /// All or nothing, as [`import_batch`](Self::import_batch); an import that fails leaves no
    /// record. An import that would take `subject` past their quota of observations stores
    /// nothing and is `Ok(Err)`.
    async fn import_items(
        &self,
        subject: &str,
        items: &[&ImportItem],
        file_key: Option<&str>,
    ) -> BackendResult<Result<Vec<bool>, QuotaExceeded>> {
        let kind = if file_key.is_some() { ImportKind::Upload } else { ImportKind::Other };
        let import_id = self.begin_import(subject, &ImportSource::new(kind).with_file(file_key)).await?;
        let outcomes = match self.import_batch(subject, import_id, items).await {
            Ok(Ok(outcomes)) => outcomes,
            failed => {
                // Nothing of it is stored: its record goes too (best effort, the failure stands).
                let _ = self.delete_import(subject, import_id).await;
                return failed.map(|result| result.map(|_| Vec::new()));
            }
        };
        let mut counts = ImportCounts::default();
        outcomes.iter().for_each(|outcome| counts.add(*outcome));
        self.finish_import(subject, import_id, &counts).await?;
        Ok(Ok(outcomes.into_iter().map(|outcome| outcome != ItemOutcome::Unchanged).collect()))
    }

    /// Stores FHIR Observations of `subject` (`resourceType` may be left out) at once, as an
    /// import of its own does ([`ImportKind::Tool`]; one already stored with the same source
    /// id is replaced only by a newer version); the ids of those that were new. A resource
    /// the importer refuses (no code, no time, a value of the wrong type) is an error and
    /// stores nothing.
    async fn add_observations(&self, subject: &str, resources: &[Value]) -> BackendResult<Vec<i64>>;
}

/// The care circle: who reads whose health data, and the invitations to.
///
/// Every method names the acting user, so nobody accepts, declines or ends what is not
/// theirs: an invitation of someone else's is "not found", the same as one that does not
/// exist.
#[async_trait]
pub trait CircleStore: Send + Sync {
    /// `owner` shares their health data with `reader`, who knows them as `nickname`.
    async fn share_health(&self, owner: &str, reader: &str, nickname: Option<&str>) -> BackendResult<()>;

    /// `owner` stops sharing with `reader`; whether they were sharing.
    async fn unshare_health(&self, owner: &str, reader: &str) -> BackendResult<bool>;

    /// `owner` invites `invitee` (a user id, or an email address when it holds an `@`) to
    /// read their health data, suggesting `nickname` as the name to know them by: the
    /// invitation's id, or `Ok(Err)` when `owner` already has as many invitations waiting as
    /// the store allows (inviting one of them again is no new invitation, and passes).
    /// Inviting the same person again replaces the nickname and keeps one invitation.
    ///
    /// The count and the insert are one step, so invitations sent at once cannot together
    /// pass the quota.
    async fn invite_within_quota(
        &self,
        owner: &str,
        invitee: &str,
        nickname: Option<&str>,
    ) -> BackendResult<Result<i64, QuotaExceeded>>;

    /// [`invite_within_quota`](Self::invite_within_quota), with the quota's refusal as the
    /// error.
    async fn invite_to_circle(&self, owner: &str, invitee: &str, nickname: Option<&str>) -> BackendResult<i64> {
        self.invite_within_quota(owner, invitee, nickname)
            .await?
            .map_err(|exceeded| BackendError::new(exceeded.to_string()))
    }

    /// `user` accepts invitation `id`, knowing its owner as `nickname` (else as the owner
    /// suggested): the owner's id, or `None` when no such invitation is addressed to `user`.
    async fn accept_invite(&self, user: &str, id: i64, nickname: Option<&str>) -> BackendResult<Option<String>>;

    /// Invitation `id` is withdrawn by its owner or declined by its invitee, `user`; whether
    /// there was one of theirs.
    async fn drop_invite(&self, user: &str, id: i64) -> BackendResult<bool>;

    /// `user` ends the sharing with `other`, whichever way it goes (either side may end it);
    /// whether there was any. It holds at once: every read checks the share.
    async fn leave_circle(&self, user: &str, other: &str) -> BackendResult<bool>;

    /// `user`'s care circle both ways, and the invitations waiting.
    async fn circle(&self, user: &str) -> BackendResult<CircleOverview>;
}

/// How much one owner may keep, for [`FileIndex::add_file_within`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileQuota {
    /// The most files.
    pub max_files: u64,
    /// The most bytes, all files together.
    pub max_bytes: u64,
}

/// A file whose text one reader has claimed, for [`FileIndex::claim_text`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedText {
    /// The file's key.
    pub file_key: String,
    /// Its MIME type, decided from its content when it was stored.
    pub mime_type: String,
    /// How many times its reading has been claimed, this one included.
    pub attempts: u32,
}

/// The writes of the file index, and the queue of files whose text is still to be read
/// (claimed, settled, resumed after a restart). Its reads are
/// [`HealthStore::files`](crate::HealthStore::files) and [`file`](crate::HealthStore::file).
#[async_trait]
pub trait FileIndex: Send + Sync {
    /// Adds `file` to `owner`'s index unless that would take them past `quota`; `Ok(false)`,
    /// with nothing written, when it would. The check and the insert are one step, so
    /// uploads made at once cannot together pass the quota.
    async fn add_file_within(&self, owner: &str, file: &FileRecord, quota: FileQuota) -> BackendResult<bool>;

    /// Adds a file to `owner`'s index (after its bytes are stored), with no quota.
    async fn add_file(&self, owner: &str, file: &FileRecord) -> BackendResult<()> {
        let unbounded = FileQuota { max_files: u64::MAX, max_bytes: u64::MAX };
        self.add_file_within(owner, file, unbounded).await.map(|_| ())
    }

    /// How many files `owner` has, and their bytes together.
    async fn file_usage(&self, owner: &str) -> BackendResult<(u64, u64)>;

    /// The owners who have files waiting for their text to be read, each once.
    async fn owners_waiting_for_text(&self) -> BackendResult<Vec<String>>;

    /// Claims `owner`'s oldest file waiting for its text, for `lease_ms` from now: no other
    /// reader takes it until then. A claim whose lease has passed (its reader's process is
    /// gone) is taken again. `None` when nothing of theirs waits unclaimed.
    async fn claim_text(&self, owner: &str, lease_ms: i64) -> BackendResult<Option<ClaimedText>>;

    /// Settles the reading of `owner`'s file `file_key`: its text stored under `text_key`
    /// (`Ok(Some)`), no text (`Ok(None)`), or unreadable, with why (`Err`).
    async fn settle_text(&self, owner: &str, file_key: &str, outcome: Result<Option<&str>, &str>) -> BackendResult<()>;
}
