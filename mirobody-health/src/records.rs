//! What a person's health record holds, as the stores return it: the care circle, indicators
//! and their values, conditions, medications and allergies, and the file index.
//!
//! These are plain data a store in any crate builds and matches whole, so none is
//! `#[non_exhaustive]`: a new field or state is meant to fail every store's build until it
//! handles it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::flags::ReferenceRange;

/// A member of the caller's care circle who shares health data with them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircleMember {
    /// The member's user id.
    pub user_id: String,
    /// The name the caller knows them by.
    pub nickname: Option<String>,
    /// Their email address.
    pub email: Option<String>,
}

/// An offer to share one's health data, waiting for the invitee to accept it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircleInvite {
    /// Its id, to accept, decline or cancel it by.
    pub id: i64,
    /// Who offers to share their data.
    pub owner: String,
    /// Who is invited: a user id, or an email address.
    pub invitee: String,
    /// The name the invitee will know the owner by, unless they choose another.
    pub nickname: Option<String>,
    /// When it was made, RFC 3339.
    pub created_at: String,
}

/// A person's care circle, both ways, with the invitations not yet answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircleOverview {
    /// Who shares their health data with this person.
    pub shared_with_me: Vec<CircleMember>,
    /// Whom this person shares their health data with.
    pub my_readers: Vec<CircleMember>,
    /// Invitations this person made that wait for an answer.
    pub invites_sent: Vec<CircleInvite>,
    /// Invitations to this person that wait for their answer.
    pub invites_received: Vec<CircleInvite>,
}

/// A page of FHIR Observations, newest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservationPage {
    /// How many observations the subject has in all.
    pub total: u64,
    /// The FHIR Observation resources of this page.
    pub observations: Vec<Value>,
}

/// An uploaded file in a user's index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// The storage key.
    pub file_key: String,
    /// The name it was uploaded under.
    pub filename: String,
    /// Its real MIME type.
    pub mime_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was uploaded, RFC 3339.
    pub uploaded_at: String,
    /// The storage key of text extracted from it, if any.
    pub text_key: Option<String>,
    /// Where the reading of its text stands (a PDF's or Word file's text is read after the
    /// upload is answered).
    #[serde(default)]
    pub text_state: TextState,
}

/// Where the reading of a file's text stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextState {
    /// Nothing left to do: [`FileRecord::text_key`] says whether it has text.
    #[default]
    Settled,
    /// Waiting in its owner's queue to be read.
    Waiting,
    /// It could not be read; why, in words for the person.
    Unreadable(String),
}

/// An indicator a person has data for: one per code and unit, so that values in different
/// units are never counted together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndicatorSummary {
    /// The indicator's code (LOINC where the source gave one).
    pub code: String,
    /// Its name, as the person's data calls it.
    pub display: String,
    /// The unit of these values, if they have one.
    pub unit: Option<String>,
    /// How many values there are.
    pub count: u64,
    /// The time of the first value, RFC 3339.
    pub first: String,
    /// The time of the last value, RFC 3339.
    pub last: String,
}

/// One value of an indicator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// The indicator's code.
    pub code: String,
    /// Its name.
    pub display: String,
    /// When it was measured, RFC 3339.
    pub time: String,
    /// The value, when it is a number.
    pub value: Option<f64>,
    /// The value, when it is text (a coded or free-text result).
    pub value_text: Option<String>,
    /// The unit of `value`.
    pub unit: Option<String>,
    /// The uploaded file it was read from, if any.
    pub file_key: Option<String>,
    /// The reference range its source gave with it, if any.
    #[serde(default)]
    pub range: Option<ReferenceRange>,
    /// What its source said of it (HL7's `H`, `L`, `HH`, `LL`, `N`, `A`...), if anything.
    #[serde(default)]
    pub interpretation: Option<String>,
}

/// A record of the chart: a condition, medication, allergy, immunization, procedure or report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HealthRecord {
    /// `condition`, `medication`, `allergy`, `immunization`, `procedure` or `report`.
    pub kind: String,
    /// What it is.
    pub display: String,
    /// Its status at the source (`active`, `resolved`, ...).
    pub status: Option<String>,
    /// When it started or was recorded, RFC 3339.
    pub time: Option<String>,
    /// What else is shown of it, as imported ([`NewRecord::detail`](crate::fhir::NewRecord::detail)):
    /// a medication's dosage, a report's results and attachments.
    #[serde(default)]
    pub detail: Option<Value>,
}

/// One value of a series: [`SeriesPoint`] without the code and name the series is asked by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesValue {
    /// When it was measured, RFC 3339.
    pub time: String,
    /// The value, when it is a number.
    pub value: Option<f64>,
    /// The value, when it is text (a coded or free-text result).
    pub value_text: Option<String>,
    /// The unit of `value`.
    pub unit: Option<String>,
    /// The uploaded file it was read from, if any.
    pub file_key: Option<String>,
    /// The reference range its source gave with it, if any.
    #[serde(default)]
    pub range: Option<ReferenceRange>,
    /// What its source said of it (HL7's `H`, `L`, `HH`, `LL`, `N`, `A`...), if anything.
    #[serde(default)]
    pub interpretation: Option<String>,
}

/// The part of a series [`HealthStore::series`](crate::HealthStore::series) returns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The values, oldest first: the newest `limit` in the range.
    pub points: Vec<SeriesValue>,
    /// Whether older values in the range were left out.
    pub truncated: bool,
}

/// The longest storage key accepted.
const MAX_KEY_LEN: usize = 512;

/// Whether `key` is a storage key (a [`FileRecord::file_key`] or `text_key`) any store accepts:
/// segments of `A-Z a-z 0-9 . _ -` separated by `/`, no empty, `.` or `..` segment, at most 512
/// bytes. A key a model passes is checked with it before it reaches a store, and it keeps keys
/// out of paths they must not reach.
///
/// ```
/// assert!(mirobody_health::valid_key("up-0a1b.pdf"));
/// assert!(!mirobody_health::valid_key("../etc/passwd"));
/// ```
pub fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}
