//! What the access page offers of a person's health data, which this crate does not hold: the
//! application gives it ([`OAuthServer::with_account_data`](crate::OAuthServer::with_account_data)),
//! and the page then lets a signed-in person download everything, delete a file or an import,
//! and delete their account.

use async_trait::async_trait;
use axum::body::Bytes;
use futures::stream::BoxStream;
use mirobody_core::backend::BackendResult;

/// What a listed thing of a person's is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataItemKind {
    /// An uploaded file, with the values imported from it.
    File,
    /// One import, with the values it stored.
    Import,
}

/// One thing of a person's the access page lists, with its delete button.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DataItem {
    /// What names it to [`AccountData::delete`].
    pub id: String,
    /// What the person knows it by (a file's name, what an import brought).
    pub label: String,
    /// When it arrived, as the page shows it.
    pub at: String,
}

impl DataItem {
    /// A listed thing.
    pub fn new(id: impl Into<String>, label: impl Into<String>, at: impl Into<String>) -> Self {
        DataItem { id: id.into(), label: label.into(), at: at.into() }
    }
}

/// A person's health data as the access page reaches it. Every method is scoped to
/// `account_id`, the signed-in account: another person's file or import is "not found".
#[async_trait]
pub trait AccountData: Send + Sync {
    /// Up to `limit` of the person's things of `kind`, newest first.
    async fn items(&self, account_id: &str, kind: DataItemKind, limit: usize) -> BackendResult<Vec<DataItem>>;

    /// Everything the person holds as one FHIR R4 Bundle, as chunks of JSON text.
    fn export(&self, account_id: &str) -> BoxStream<'static, BackendResult<Bytes>>;

    /// Deletes the person's thing of `kind` named `id`: whether there was one of theirs.
    async fn delete(&self, account_id: &str, kind: DataItemKind, id: &str) -> BackendResult<bool>;

    /// Deletes the account and everything in it; its sessions and grants end with it.
    async fn erase_account(&self, account_id: &str) -> BackendResult<()>;
}
