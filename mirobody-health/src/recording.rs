//! Values recorded by hand (a model that read them in a document, or the person who said
//! them), stored as one import of their own: all or nothing, one import at a time per person,
//! and no empty import left behind when every value was recorded before.
//!
//! The import names its source (the uploaded file, or none), so deleting the file deletes what
//! was recorded from it, and deleting the import undoes the recording.

use mirobody_core::backend::BackendResult;

use crate::QuotaExceeded;
use crate::fhir::ImportItem;
use crate::import::import_lock;
use crate::store::{ImportCounts, ImportSource, ItemOutcome, RecordStore};

/// What [`record_items`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recorded {
    /// The import that holds the new values; `None` when every value was stored already (no
    /// import is kept for nothing).
    pub import_id: Option<i64>,
    /// What became of each item, in order.
    pub outcomes: Vec<ItemOutcome>,
}

/// Stores `items` as `subject`'s, as one import from `source`. A value stored before under the
/// same source id is left as it was ([`ItemOutcome::Unchanged`]). All or nothing: a failed
/// write leaves no value and no import; past the person's quota nothing is stored and the
/// answer is `Ok(Err)`.
pub async fn record_items(
    store: &dyn RecordStore,
    subject: &str,
    source: &ImportSource,
    items: &[&ImportItem],
) -> BackendResult<Result<Recorded, QuotaExceeded>> {
    let lock = import_lock(subject);
    let _one_at_a_time = lock.lock().await;
    let import_id = store.begin_import(subject, source).await?;
    let outcomes = match store.import_batch(subject, import_id, items).await {
        Ok(Ok(outcomes)) => outcomes,
        failed => {
            // Nothing of it is stored: its record goes too (best effort, the failure stands).
            if let Err(e) = store.delete_import(subject, import_id).await {
                tracing::warn!(error = %e, "an empty import's record could not be deleted");
            }
            return failed.map(|result| result.map(|_| Recorded { import_id: None, outcomes: Vec::new() }));
        }
    };
    let mut counts = ImportCounts::default();
    outcomes.iter().for_each(|outcome| counts.add(*outcome));
    if outcomes.iter().all(|outcome| *outcome == ItemOutcome::Unchanged) {
        // Every value was there already, under an earlier import: this one holds nothing.
        store.delete_import(subject, import_id).await?;
        return Ok(Ok(Recorded { import_id: None, outcomes }));
    }
    store.finish_import(subject, import_id, &counts).await?;
    Ok(Ok(Recorded { import_id: Some(import_id), outcomes }))
}
