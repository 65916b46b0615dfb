//! The health domain of mirobody, apart from any database or protocol.
//!
//! - [`records`]: what a person's health record holds, as stores return it (indicators and
//!   their values, conditions, medications, allergies, the care circle, the file index).
//! - [`store`]: the traits a store implements, reads ([`HealthStore`]) and writes
//!   ([`RecordStore`], [`CircleStore`], [`FileIndex`], [`UploadLinkStore`]); [`HealthData`]
//!   is all of them. `mirobody-store` implements them over SQLite or PostgreSQL.
//! - `apple` (feature `apple`) imports the iPhone Health app's export (zip or XML) as a
//!   stream.
//! - [`formats`] tells an import file's format by its content (the one sniffer of the command
//!   line and the uploads), and imports FHIR Bulk Data NDJSON.
//! - [`fhir`] reads FHIR R4 resources and a wearable's CSV into what [`RecordStore`] stores,
//!   and [`import`] runs an import through it; [`indicators`] is the catalog of indicators
//!   (LOINC codes, English and Chinese names, adult ranges).
//! - [`recording`] stores values recorded by hand (read in a document, or told) as one
//!   import of their own.
//! - [`units`] reads unit spellings as UCUM codes and converts values within an indicator's
//!   scale; [`flags`] says whether a value is low, normal or high.
//! - `testing` (with the `testing` feature): the store contract suite, `testing::check_all`,
//!   that every implementation of the store traits passes.
//! - [`text`]: small helpers the crates above this one share (times as RFC 3339, capping
//!   text on a character boundary).
//!
//! ```
//! use mirobody_health::import::import_csv;
//!
//! # async fn run(store: &dyn mirobody_health::RecordStore) {
//! let csv = "time,indicator,value,unit\n2026-01-02T08:00:00Z,heart rate,72,bpm\n";
//! let response = import_csv(store, "alice", csv).await;
//! assert_eq!(response.summary.created, 1);
//! # }
//! ```

#[cfg(feature = "apple")]
pub mod apple;
pub mod fhir;
pub mod flags;
pub mod formats;
pub mod import;
pub mod indicators;
mod quota;
pub mod recording;
pub mod records;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;
pub mod units;

pub use quota::QuotaExceeded;
pub use records::*;
pub use store::{
    CircleStore, ClaimedText, DeletedImport, FileIndex, FileQuota, HealthData, HealthStore, ImportCounts, ImportKind,
    ImportRecord, ImportSource, ItemOutcome, LinkInsert, PersonalData, RecordStore, ResourceCursor, StoredResource,
    UploadLinkRow, UploadLinkStore, health_store,
};

/// The store traits, to call their methods on a concrete store: `use mirobody_health::prelude::*;`.
pub mod prelude {
    pub use crate::store::{CircleStore, FileIndex, HealthStore, PersonalData, RecordStore, UploadLinkStore};
}
