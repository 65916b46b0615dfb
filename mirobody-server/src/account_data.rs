//! The access page's reach into a person's health data (`mirobody_oauth::AccountData`): their
//! files and imports listed, the same export as `GET /export`, the same deletions as
//! `POST /delete`, and the account erased with its grants revoked here at once and its MCP
//! sessions ended.

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use mirobody_core::backend::BackendResult;
use mirobody_health::{HealthStore, PersonalData, RecordStore};
use mirobody_oauth::{AccountData, DataItem, DataItemKind};
use mirobody_store::OpenedBackends;
use mirobody_tools::erasure::{DeleteKind, delete_one};

/// The server's backends as the access page uses them.
pub(crate) struct PageData {
    pub(crate) backends: Arc<OpenedBackends>,
    pub(crate) revoked: mirobody_auth::RevokedGrants,
    /// The MCP endpoint whose sessions an erased account loses: set once it is made, after
    /// the authorization server that holds this.
    pub(crate) mcp: Arc<std::sync::OnceLock<mirobody_mcp::http::McpHttp>>,
}

#[async_trait]
impl AccountData for PageData {
    async fn items(&self, account_id: &str, kind: DataItemKind, limit: usize) -> BackendResult<Vec<DataItem>> {
        let store = self.backends.sql();
        Ok(match kind {
            DataItemKind::File => {
                let mut files = store.files(account_id).await?;
                files.sort_by(|a, b| b.uploaded_at.cmp(&a.uploaded_at));
                files
                    .into_iter()
                    .take(limit)
                    .map(|file| DataItem::new(file.file_key, file.filename, file.uploaded_at))
                    .collect()
            }
            _ => store
                .imports(account_id)
                .await?
                .into_iter()
                .take(limit)
                .map(|import| {
                    let counts = &import.counts;
                    let label = format!(
                        "{} import: {} stored, {} updated, {} removed",
                        import.kind.as_str(),
                        counts.stored,
                        counts.updated,
                        counts.removed
                    );
                    DataItem::new(import.id.to_string(), label, import.at)
                })
                .collect(),
        })
    }

    fn export(&self, account_id: &str) -> BoxStream<'static, BackendResult<Bytes>> {
        crate::personal::export_stream(Arc::clone(&self.backends), account_id.to_owned()).boxed()
    }

    async fn delete(&self, account_id: &str, kind: DataItemKind, id: &str) -> BackendResult<bool> {
        let kind = if kind == DataItemKind::File { DeleteKind::File } else { DeleteKind::Import };
        let store: &dyn PersonalData = self.backends.sql().as_ref();
        let storage = self.backends.storage();
        delete_one(store, storage.as_deref(), account_id, kind, id).await
    }

    async fn erase_account(&self, account_id: &str) -> BackendResult<()> {
        let mcp = self.mcp.get();
        crate::personal::erase_account(&self.backends, Some(&self.revoked), mcp, account_id).await.map(|_| ())
    }
}
