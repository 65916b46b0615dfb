//! The store contract suite: what every implementation of the store traits must do, checked
//! through the traits alone, so that "a new database" is "implement the traits and pass these".
//!
//! Each function checks one family of contracts on a store given as `&dyn HealthData` and
//! panics, naming the family and the broken promise, when the store breaks one. Run them from
//! the store's own tests (on a runtime with timers: Tokio's test runtime is one), once per
//! backend:
//!
//! ```no_run
//! # async fn run(store: std::sync::Arc<dyn mirobody_health::HealthData>) {
//! // In the store crate's tests, with `mirobody-health = { features = ["testing"] }`.
//! mirobody_health::testing::check_all(store.as_ref()).await;
//! # }
//! ```
//!
//! - [`scoping`]: a reader reads a subject's health data only when it is the same user or the
//!   subject shares with them, files only their owner; sharing, unsharing and leaving the
//!   circle hold at once.
//! - [`imports`]: FHIR and CSV imports through [`import`](crate::import) store each source id
//!   once per person and read back through every query; `add_observations` likewise.
//! - [`corrections`]: a newer version replaces the stored value in every read, an older one
//!   changes nothing, `entered-in-error` and `DELETE` remove it; imports are listed, and
//!   deleting one undoes exactly it.
//! - [`circle`]: invitations by user id and by email, accepted, declined and withdrawn only by
//!   the people they concern, and the circle overview both ways.
//! - [`file_index`]: the file quota (nothing written when refused), files scoped to their
//!   owner, and the queue of texts to read (leases, settling, the state read back).
//! - [`apple_health`]: a generated Apple Health export stored with the right values per type,
//!   once however often it is imported; one cut short or malformed reported.
//! - [`upload_links`]: the bound on live links, uses taken and given back, revocation, and the
//!   count of live links.
//!
//! Every function makes up its own user ids, file keys and link hashes ([`unique_id`]), so the
//! suite runs on a database other tests share, and runs again on the same one. It reads the
//! clock for the times it passes (upload links); it makes no other assumption about the data
//! already there. Quotas a store is configured with (observations, invitations waiting) are
//! the store's own and are not checked here; the suite stays well within any sensible one.

mod apple;
mod circle;
mod corrections;
mod files;
mod imports;
mod links;
mod scoping;
mod support;

pub use apple::{apple_health, apple_health_at_scale};
pub use circle::circle;
pub use corrections::corrections;
pub use files::file_index;
pub use imports::imports;
pub use links::upload_links;
pub use scoping::scoping;
pub use support::unique_id;

use crate::store::HealthData;

/// Every contract of the suite, one family after another: [`scoping`], [`imports`],
/// [`corrections`], [`circle`], [`file_index`], [`upload_links`], [`apple_health`]. Panics at the first broken one.
pub async fn check_all(store: &dyn HealthData) {
    scoping(store).await;
    imports(store).await;
    corrections(store).await;
    circle(store).await;
    file_index(store).await;
    upload_links(store).await;
    apple_health(store).await;
}
