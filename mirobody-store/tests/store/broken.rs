//! Stores broken on purpose, to prove the contract suite catches a broken store: `SqlStore` in
//! every method but the one a [`Break`] names.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_health::fhir::ImportItem;
use mirobody_health::{
    CircleMember, CircleOverview, CircleStore, ClaimedText, DeletedImport, FileIndex, FileQuota, FileRecord,
    HealthRecord, HealthStore, ImportCounts, ImportRecord, ImportSource, IndicatorSummary, ItemOutcome, LinkInsert,
    ObservationPage, QuotaExceeded, RecordStore, Series, SeriesPoint, UploadLinkRow, UploadLinkStore,
};
use mirobody_store::SqlStore;
use serde_json::Value;

/// The one promise a [`BrokenStore`] breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Break {
    /// `observations` reads the subject's page without asking whether the reader may.
    ObservationsForAnyone,
    /// `unshare_health` says it ended the share, and leaves it.
    UnshareKeepsSharing,
    /// `add_file_within` stores past the quota.
    FileQuotaIgnored,
    /// `take_upload_link_use` gives every use back at once.
    LinkUsesNeverRunOut,
}

impl Break {
    /// Every break, each with the contract family that must catch it.
    pub(crate) const ALL: [(Break, &'static str); 4] = [
        (Break::ObservationsForAnyone, "scoping"),
        (Break::UnshareKeepsSharing, "scoping"),
        (Break::FileQuotaIgnored, "file_index"),
        (Break::LinkUsesNeverRunOut, "upload_links"),
    ];
}

/// `SqlStore`, with one promise broken.
pub(crate) struct BrokenStore {
    sql: SqlStore,
    broken: Break,
}

impl BrokenStore {
    pub(crate) fn new(sql: SqlStore, broken: Break) -> Self {
        BrokenStore { sql, broken }
    }
}

#[async_trait]
impl HealthStore for BrokenStore {
    async fn health_sharers(&self, user_id: &str) -> BackendResult<Vec<CircleMember>> {
        self.sql.health_sharers(user_id).await
    }
    async fn can_read_health(&self, reader: &str, subject: &str) -> BackendResult<bool> {
        self.sql.can_read_health(reader, subject).await
    }
    async fn observations(&self, reader: &str, subject: &str, limit: u32) -> BackendResult<Option<ObservationPage>> {
        // Read as the subject's own, whoever the reader is.
        let reader = if self.broken == Break::ObservationsForAnyone { subject } else { reader };
        self.sql.observations(reader, subject, limit).await
    }
    async fn indicators(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<IndicatorSummary>>> {
        self.sql.indicators(reader, subject).await
    }
    async fn series(
        &self,
        reader: &str,
        subject: &str,
        code: &str,
        start_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> BackendResult<Option<Series>> {
        self.sql.series(reader, subject, code, start_ms, end_ms, limit).await
    }
    async fn latest_values(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<SeriesPoint>>> {
        self.sql.latest_values(reader, subject).await
    }
    async fn health_records(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<HealthRecord>>> {
        self.sql.health_records(reader, subject).await
    }
    async fn files(&self, owner: &str) -> BackendResult<Vec<FileRecord>> {
        self.sql.files(owner).await
    }
    async fn file(&self, owner: &str, file_key: &str) -> BackendResult<Option<FileRecord>> {
        self.sql.file(owner, file_key).await
    }
    async fn set_conversation_summary(&self, owner: &str, session_id: &str, summary: &str) -> BackendResult<()> {
        self.sql.set_conversation_summary(owner, session_id, summary).await
    }
}

#[async_trait]
impl RecordStore for BrokenStore {
    async fn upsert_user(&self, id: &str, display_name: Option<&str>, email: Option<&str>) -> BackendResult<()> {
        self.sql.upsert_user(id, display_name, email).await
    }
    async fn begin_import(&self, subject: &str, source: &ImportSource) -> BackendResult<i64> {
        self.sql.begin_import(subject, source).await
    }
    async fn import_batch(
        &self,
        subject: &str,
        import_id: i64,
        items: &[&ImportItem],
    ) -> BackendResult<Result<Vec<ItemOutcome>, QuotaExceeded>> {
        self.sql.import_batch(subject, import_id, items).await
    }
    async fn finish_import(&self, subject: &str, import_id: i64, counts: &ImportCounts) -> BackendResult<()> {
        self.sql.finish_import(subject, import_id, counts).await
    }
    async fn imports(&self, subject: &str) -> BackendResult<Vec<ImportRecord>> {
        self.sql.imports(subject).await
    }
    async fn delete_import(&self, subject: &str, import_id: i64) -> BackendResult<Option<DeletedImport>> {
        self.sql.delete_import(subject, import_id).await
    }
    async fn add_observations(&self, subject: &str, resources: &[Value]) -> BackendResult<Vec<i64>> {
        self.sql.add_observations(subject, resources).await
    }
}

#[async_trait]
impl CircleStore for BrokenStore {
    async fn share_health(&self, owner: &str, reader: &str, nickname: Option<&str>) -> BackendResult<()> {
        self.sql.share_health(owner, reader, nickname).await
    }
    async fn unshare_health(&self, owner: &str, reader: &str) -> BackendResult<bool> {
        if self.broken == Break::UnshareKeepsSharing {
            return self.sql.can_read_health(reader, owner).await;
        }
        self.sql.unshare_health(owner, reader).await
    }
    async fn invite_within_quota(
        &self,
        owner: &str,
        invitee: &str,
        nickname: Option<&str>,
    ) -> BackendResult<Result<i64, QuotaExceeded>> {
        self.sql.invite_within_quota(owner, invitee, nickname).await
    }
    async fn accept_invite(&self, user: &str, id: i64, nickname: Option<&str>) -> BackendResult<Option<String>> {
        self.sql.accept_invite(user, id, nickname).await
    }
    async fn drop_invite(&self, user: &str, id: i64) -> BackendResult<bool> {
        self.sql.drop_invite(user, id).await
    }
    async fn leave_circle(&self, user: &str, other: &str) -> BackendResult<bool> {
        self.sql.leave_circle(user, other).await
    }
    async fn circle(&self, user: &str) -> BackendResult<CircleOverview> {
        self.sql.circle(user).await
    }
}

#[async_trait]
impl FileIndex for BrokenStore {
    async fn add_file_within(&self, owner: &str, file: &FileRecord, quota: FileQuota) -> BackendResult<bool> {
        let quota = match self.broken {
            Break::FileQuotaIgnored => FileQuota { max_files: u64::MAX, max_bytes: u64::MAX },
            _ => quota,
        };
        self.sql.add_file_within(owner, file, quota).await
    }
    async fn file_usage(&self, owner: &str) -> BackendResult<(u64, u64)> {
        self.sql.file_usage(owner).await
    }
    async fn owners_waiting_for_text(&self) -> BackendResult<Vec<String>> {
        self.sql.owners_waiting_for_text().await
    }
    async fn claim_text(&self, owner: &str, lease_ms: i64) -> BackendResult<Option<ClaimedText>> {
        self.sql.claim_text(owner, lease_ms).await
    }
    async fn settle_text(&self, owner: &str, file_key: &str, outcome: Result<Option<&str>, &str>) -> BackendResult<()> {
        self.sql.settle_text(owner, file_key, outcome).await
    }
}

#[async_trait]
impl UploadLinkStore for BrokenStore {
    async fn insert_upload_link(
        &self,
        token_hash: &[u8; 32],
        user_id: &str,
        now_ms: i64,
        expires_ms: i64,
        uses: u32,
        max_live: u32,
        settled_before_ms: i64,
    ) -> BackendResult<LinkInsert> {
        self.sql.insert_upload_link(token_hash, user_id, now_ms, expires_ms, uses, max_live, settled_before_ms).await
    }
    async fn upload_link(&self, token_hash: &[u8; 32]) -> BackendResult<Option<UploadLinkRow>> {
        self.sql.upload_link(token_hash).await
    }
    async fn take_upload_link_use(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<(String, i64)>> {
        let taken = self.sql.take_upload_link_use(token_hash, now_ms).await?;
        if self.broken == Break::LinkUsesNeverRunOut && taken.is_some() {
            self.sql.give_back_upload_link_use(token_hash).await?;
        }
        Ok(taken)
    }
    async fn give_back_upload_link_use(&self, token_hash: &[u8; 32]) -> BackendResult<()> {
        self.sql.give_back_upload_link_use(token_hash).await
    }
    async fn revoke_upload_link(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<bool> {
        self.sql.revoke_upload_link(token_hash, now_ms).await
    }
    async fn revoke_upload_links(&self, user_id: &str, now_ms: i64) -> BackendResult<u64> {
        self.sql.revoke_upload_links(user_id, now_ms).await
    }
    async fn live_upload_links(&self, user_id: &str, now_ms: i64) -> BackendResult<u64> {
        self.sql.live_upload_links(user_id, now_ms).await
    }
}
