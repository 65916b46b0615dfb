//! The store of the health domain, as traits: [`HealthStore`] reads on behalf of a reader,
//! [`RecordStore`], [`CircleStore`] and [`FileIndex`] write, [`UploadLinkStore`] keeps the
//! links to the upload page, [`PersonalData`] takes a person's data out and deletes it. [`HealthData`] is all of them, which `mirobody-store`'s
//! `SqlStore` is over SQLite or PostgreSQL; a new database implements these traits and passes
//! the store contract suite, `testing::check_all` (the `testing` feature), as `mirobody-store`'s
//! store tests run it on both of its databases.
//!
//! The store reaches a tool through the context's extensions, as any application's state
//! does: the server puts an `Arc<dyn HealthStore>` there, and a handler takes it with
//! [`health_store`]. An application that embeds the tools with its own store implements the
//! traits and does the same.

use std::sync::Arc;

use mirobody_core::ToolContext;
use mirobody_core::backend::{BackendKind, MissingBackend};

pub mod aggregate;
mod erase;
mod imports;
mod links;
mod read;
mod write;

pub use erase::{PersonalData, ResourceCursor, StoredResource};
pub use imports::{DeletedImport, ImportCounts, ImportKind, ImportRecord, ImportSource, ItemOutcome};
pub use links::{LinkInsert, UploadLinkRow, UploadLinkStore};
pub use read::HealthStore;
pub use write::{CircleStore, ClaimedText, FileIndex, FileQuota, RecordStore};

/// The health store of the call, or the error (which a model may read) that none is set up.
///
/// ```
/// use mirobody_core::ToolContext;
///
/// let err = mirobody_health::health_store(&ToolContext::new()).err().unwrap();
/// assert_eq!(err.to_string(), "The database is not configured on this server.");
/// ```
pub fn health_store<'a>(ctx: &ToolContext<'a>) -> Result<&'a dyn HealthStore, MissingBackend> {
    ctx.extension::<Arc<dyn HealthStore>>().map(|store| store.as_ref()).ok_or(MissingBackend(BackendKind::Db))
}

/// Every store trait of the health domain, for code that reads and writes all of it (the
/// server's routes, imports, uploads). Implemented for anything that implements each.
pub trait HealthData: HealthStore + RecordStore + CircleStore + FileIndex + UploadLinkStore {}

impl<T: HealthStore + RecordStore + CircleStore + FileIndex + UploadLinkStore + ?Sized> HealthData for T {}
