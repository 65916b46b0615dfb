//! Corrections and removals: which of two versions of one resource is the newer
//! ([`Revision`]), and the entries that take a stored value away ([`Removal`]: a resource
//! marked `entered-in-error`, a transaction's `DELETE`).

use serde_json::{Map, Value};

use super::{EntryInput, ImportItem, RecordKind, field, source_id};
use crate::text::{cap_chars, parse_time_ms};

/// What a [`Removal`] takes away: an Observation (with its values) or a chart record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// An Observation and its values.
    Observation,
    /// A record of the chart of this kind.
    Record(RecordKind),
}

/// Why a value is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemovalReason {
    /// The resource was re-sent with status (or verification status) `entered-in-error`.
    EnteredInError,
    /// A Bundle entry asked for it with `request.method` `DELETE`.
    Deleted,
}

impl RemovalReason {
    /// The name the store keeps in its history: `entered-in-error` or `deleted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EnteredInError => "entered-in-error",
            Self::Deleted => "deleted",
        }
    }
}

/// A value to take out of every read: the one stored under `source_id` (as [`source_id`]
/// makes it, `Observation/{id}` for a resource with an id). Its earlier versions stay in the
/// store's history; removing one that is not stored changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    /// Which table it is in.
    pub target: Target,
    /// The source id it is stored under.
    pub source_id: String,
    /// Why.
    pub reason: RemovalReason,
}

/// The version a resource says it is, read from `meta.versionId`, `meta.lastUpdated` and
/// `status`, to decide whether it corrects the one stored under the same source id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Revision {
    /// `meta.versionId`.
    pub version_id: Option<String>,
    /// `meta.lastUpdated`, in milliseconds since the epoch.
    pub last_updated_ms: Option<i64>,
    /// Whether `status` is `amended` or `corrected`.
    pub corrected: bool,
}

impl Revision {
    /// Reads the version of `resource` (members of the wrong type count as absent: the
    /// resource was read before and found valid).
    pub fn of(resource: &Value) -> Self {
        let meta = resource.get("meta");
        let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str).map(str::trim);
        Revision {
            version_id: text("versionId").filter(|v| !v.is_empty()).map(str::to_owned),
            last_updated_ms: text("lastUpdated").and_then(parse_time_ms),
            corrected: matches!(resource.get("status").and_then(Value::as_str), Some("amended" | "corrected")),
        }
    }

    /// Whether this version could replace any stored one: it carries a `versionId` or a
    /// `lastUpdated`, or says it is `amended` or `corrected`. One that does not is never a
    /// correction, so a store need not read the stored one to know.
    pub fn may_supersede(&self) -> bool {
        self.version_id.is_some() || self.last_updated_ms.is_some() || self.corrected
    }

    /// Whether this version replaces `stored`, the one kept under the same source id, whose
    /// resource text is `stored_text` (`same_content`: whether this one's is the same).
    ///
    /// The same content is never a change. Else, when both carry a `versionId`, the greater
    /// replaces (compared as numbers when both are, else as text); else, when both carry a
    /// `lastUpdated`, the later; else a resource whose status is `amended` or `corrected`
    /// replaces; anything else is the same resource sent again, and changes nothing.
    pub fn supersedes(&self, stored: &Revision, same_content: bool) -> bool {
        if same_content {
            return false;
        }
        if let (Some(new), Some(old)) = (&self.version_id, &stored.version_id) {
            return match (new.parse::<u64>(), old.parse::<u64>()) {
                (Ok(new), Ok(old)) => new > old,
                _ => new > old,
            };
        }
        if let (Some(new), Some(old)) = (self.last_updated_ms, stored.last_updated_ms) {
            return new > old;
        }
        self.corrected
    }
}

/// The removal an `entered-in-error` resource of `target` asks for.
pub(super) fn entered_in_error(
    target: Target,
    base: &str,
    resource: &Value,
    object: &Map<String, Value>,
) -> Result<EntryInput, String> {
    Ok(EntryInput::Item(ImportItem::Remove(Removal {
        target,
        source_id: source_id(base, resource, object)?,
        reason: RemovalReason::EnteredInError,
    })))
}

/// The most bytes of a `DELETE` entry's `request.url`.
const MAX_URL_BYTES: usize = 1024;

/// A Bundle entry with `request.method` `DELETE`: its `request.url` names the value, as
/// `Type/id` (or a full URL ending so) or `Type?identifier=system|value` (the stored value
/// whose first identifier that is). Another form, or a type that is not imported, is invalid.
pub(super) fn delete_entry(request: &Map<String, Value>) -> EntryInput {
    let url = match field(request, "url") {
        Some(Value::String(url)) => url.trim(),
        Some(_) => return EntryInput::Invalid("entry.request.url must be a string".to_owned()),
        None => return EntryInput::Invalid("a DELETE entry needs request.url, e.g. \"Observation/123\"".to_owned()),
    };
    if url.len() > MAX_URL_BYTES {
        return EntryInput::Invalid(format!("entry.request.url is longer than {MAX_URL_BYTES} bytes"));
    }
    match read_delete_url(url) {
        Ok(removal) => EntryInput::Item(ImportItem::Remove(removal)),
        Err(reason) => EntryInput::Invalid(reason),
    }
}

fn read_delete_url(url: &str) -> Result<Removal, String> {
    let shown = cap_chars(url, 80).0;
    let (path, query) = match url.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (url, None),
    };
    let mut parts = path.trim_end_matches('/').rsplit('/');
    let (resource_type, source_id) = match query {
        None => {
            let (id, resource_type) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
            if !valid_id(id) || resource_type.is_empty() {
                return Err(format!(
                    "DELETE entry.request.url {shown:?} must be Type/id or Type?identifier=system|value"
                ));
            }
            (resource_type, format!("{resource_type}/{id}"))
        }
        Some(query) => {
            let resource_type = parts.next().unwrap_or_default();
            let Some(value) = query.strip_prefix("identifier=").filter(|v| !v.contains('&')) else {
                return Err(format!(
                    "DELETE entry.request.url {shown:?}: the only search taken is ?identifier=system|value"
                ));
            };
            let value =
                percent_decode(value).ok_or_else(|| format!("DELETE entry.request.url {shown:?} is not valid"))?;
            let Some((system, value)) = value.split_once('|').filter(|(_, v)| !v.trim().is_empty()) else {
                return Err(format!("DELETE entry.request.url {shown:?}: the identifier must be system|value"));
            };
            (resource_type, format!("{resource_type}|{}|{}", system.trim(), value.trim()))
        }
    };
    let target = match resource_type {
        "Observation" => Target::Observation,
        "Condition" => Target::Record(RecordKind::Condition),
        "MedicationStatement" | "MedicationRequest" => Target::Record(RecordKind::Medication),
        "AllergyIntolerance" => Target::Record(RecordKind::Allergy),
        "Immunization" => Target::Record(RecordKind::Immunization),
        "Procedure" => Target::Record(RecordKind::Procedure),
        "DiagnosticReport" => Target::Record(RecordKind::Report),
        "" => return Err(format!("DELETE entry.request.url {shown:?} names no resource type")),
        other => {
            return Err(format!(
                "DELETE of a {} is not supported: only {} values are deleted",
                cap_chars(other, 40).0,
                super::SUPPORTED_TYPES
            ));
        }
    };
    Ok(Removal { target, source_id, reason: RemovalReason::Deleted })
}

/// A FHIR id: 1 to 64 letters, digits, `-` and `.`.
fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// `%XX` escapes decoded (and `+` left as it is); `None` for a bad escape or bytes that are not
/// UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delete(url: Value) -> EntryInput {
        delete_entry(json!({"method": "DELETE", "url": url}).as_object().unwrap())
    }

    fn removal(target: Target, source_id: &str) -> EntryInput {
        EntryInput::Item(ImportItem::Remove(Removal {
            target,
            source_id: source_id.into(),
            reason: RemovalReason::Deleted,
        }))
    }

    #[test]
    fn delete_urls_name_the_stored_value() {
        assert_eq!(delete(json!("Observation/g-1")), removal(Target::Observation, "Observation/g-1"));
        assert_eq!(
            delete(json!("https://ehr.example/fhir/Observation/7")),
            removal(Target::Observation, "Observation/7")
        );
        assert_eq!(
            delete(json!("MedicationRequest/m")),
            removal(Target::Record(RecordKind::Medication), "MedicationRequest/m")
        );
        assert_eq!(
            delete(json!("Condition?identifier=urn%3Alab|42")),
            removal(Target::Record(RecordKind::Condition), "Condition|urn:lab|42")
        );
    }

    #[test]
    fn bad_delete_entries_are_refused_clearly() {
        let reason = |url: Value| match delete(url) {
            EntryInput::Invalid(reason) => reason,
            other => panic!("{other:?}"),
        };
        assert!(reason(json!("Patient/1")).contains("DELETE of a Patient is not supported"));
        assert!(reason(json!("Observation")).contains("must be Type/id"));
        assert!(reason(json!("Observation/")).contains("must be Type/id"));
        assert!(reason(json!("Observation/a b")).contains("must be Type/id"));
        assert!(reason(json!("Observation?code=1")).contains("only search taken"));
        assert!(reason(json!("Observation?identifier=%zz|1")).contains("is not valid"));
        assert!(reason(json!("Observation?identifier=nobar")).contains("system|value"));
        assert!(reason(json!(5)).contains("must be a string"));
        assert!(reason(json!("x".repeat(2000))).contains("longer than"));
        let no_url = delete_entry(json!({"method": "DELETE"}).as_object().unwrap());
        assert!(matches!(no_url, EntryInput::Invalid(r) if r.contains("needs request.url")));
    }

    #[test]
    fn newer_versions_supersede_and_older_ones_do_not() {
        let rev = |v: Value| Revision::of(&v);
        let v2 = rev(json!({"meta": {"versionId": "2"}}));
        let v10 = rev(json!({"meta": {"versionId": "10"}}));
        assert!(v10.supersedes(&v2, false), "compared as numbers");
        assert!(!v2.supersedes(&v10, false));
        assert!(!v2.supersedes(&v2, false));
        assert!(!v10.supersedes(&v2, true), "the same content is never a change");
        let early = rev(json!({"meta": {"lastUpdated": "2026-01-01T00:00:00Z"}}));
        let late = rev(json!({"meta": {"lastUpdated": "2026-02-01T00:00:00Z"}}));
        assert!(late.supersedes(&early, false) && !early.supersedes(&late, false));
        let corrected = rev(json!({"status": "corrected"}));
        assert!(corrected.supersedes(&Revision::default(), false));
        assert!(rev(json!({"status": "amended"})).supersedes(&Revision::default(), false));
        assert!(!rev(json!({"status": "final"})).supersedes(&Revision::default(), false));
        let older_but_corrected = rev(json!({"status": "corrected", "meta": {"versionId": "1"}}));
        assert!(!older_but_corrected.supersedes(&v2, false), "an older version changes nothing");
        assert!(!rev(json!({"status": "final"})).may_supersede());
        assert!(v2.may_supersede() && early.may_supersede() && corrected.may_supersede());
    }
}
