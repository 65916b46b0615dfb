//! The one-pass readers of the hot path, behind one contract: each gives nothing, or exactly what
//! serde_json's derived reader gives for the same bytes. Where a reader gives up (an escape in a
//! name, a member twice, anything not plain), the caller reads the message with serde_json, as it
//! reads every other message; the property tests in each file hold the walk to serde.
//!
//! - `scan.rs`: the walk over a JSON object's members (`Cursor`), and the envelope of a
//!   `tools/call` (`read_call`), which both revisions' readers share.
//! - `tool_call.rs`: a 2025-11-25 `tools/call`'s params.
//! - `meta.rs`: a 2026-07-28 request's params and their `_meta`.

pub(crate) mod meta;
pub(crate) mod scan;
pub(crate) mod tool_call;
