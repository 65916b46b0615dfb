//! Reading FHIR R4 imports (a Bundle or one resource) and a wearable's CSV export into what the
//! health store writes, and building the FHIR answers to them.
//!
//! Imported: Observation (one [`HealthPoint`] per value, a blood-pressure panel's components
//! each their own; one without a time takes that of the report or panel of its Bundle listing
//! it), Condition (with its clinical status), MedicationStatement and
//! MedicationRequest (the drug named by a concept, a contained `Medication` or one elsewhere in
//! the Bundle), AllergyIntolerance, Immunization, Procedure and DiagnosticReport (its results
//! linked to the Observations' source ids, its `presentedForm` attachments described). Any
//! other type is skipped, not refused. The person the data belongs to is never read from a resource:
//! `subject`, `patient` and every other reference are ignored, and the caller stores everything
//! as the authenticated person's. Each item carries a source id (its `id`, else its first
//! `identifier`, else a hash of its JSON) so importing the same resource twice stores it once.
//!
//! Nothing here panics on input: a member of the wrong JSON type, a value that is not a number
//! or a time that does not parse makes that entry [`EntryInput::Invalid`] with a sentence
//! naming the field.

/// MedicationRequests and Statements, Immunizations, Procedures, DiagnosticReports.
mod chart;
/// A wearable's CSV export.
pub(crate) mod csv;
/// Observations into points.
mod observation;
/// An Observation's reference range and interpretation.
mod ranges;
/// Conditions, AllergyIntolerances.
mod records;
/// What the entries of a Bundle call each other, and the times reports and panels lend.
mod refs;
/// The FHIR answers.
mod response;
/// Corrections and removals.
mod revision;
/// The bounds a JSON body's shape is checked against before it is parsed.
pub mod shape;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::flags::ReferenceRange;
use crate::text::{cap_chars, parse_time_ms};

use self::refs::Refs;

pub use self::chart::ReportForm;
pub(crate) use self::chart::report_forms;
pub use self::csv::parse_csv;
pub use response::{operation_outcome, response};
pub use revision::{Removal, RemovalReason, Revision, Target};

/// The most entries (Bundle entries or CSV rows) one request may carry.
pub const MAX_ENTRIES: usize = 10_000;

/// The longest source id stored; a longer one is replaced by a hash of it.
const MAX_SOURCE_ID_BYTES: usize = 256;

/// The resource types that are imported, as the answer for a skipped one lists them.
pub const SUPPORTED_TYPES: &str = "Observation, Condition, MedicationStatement, MedicationRequest, \
     AllergyIntolerance, Immunization, Procedure, DiagnosticReport";

/// One value of one indicator at one time: what series queries read.
#[derive(Clone, Debug, PartialEq)]
pub struct HealthPoint {
    /// The indicator's code: a LOINC (or other system's) code, or `text:` and the lower-case
    /// name when the resource gave only a name.
    pub code: String,
    /// The indicator's name as the resource gave it.
    pub display: String,
    /// When, in milliseconds since the epoch (UTC).
    pub time_ms: i64,
    /// The value, when it is a number.
    pub value: Option<f64>,
    /// The value as text, when it is not a number (a coded answer, a string, a boolean), or a
    /// number with a comparator (`<5`).
    pub value_text: Option<String>,
    /// The unit of a numeric value.
    pub unit: Option<String>,
    /// The range the source gave with the value (its `referenceRange`), if any.
    pub range: Option<ReferenceRange>,
    /// What the source said of the value (its `interpretation`: HL7's `H`, `L`, `HH`, `LL`,
    /// `N`, `A`..., or its text), if anything.
    pub interpretation: Option<String>,
}

/// An Observation ready to store.
#[derive(Clone, Debug, PartialEq)]
pub struct NewObservation {
    /// What identifies it among the person's imports: see [`source_id`].
    pub source_id: String,
    /// The Observation's own code (a panel's code for a panel).
    pub code: String,
    /// When it was observed, in milliseconds since the epoch (UTC).
    pub time_ms: i64,
    /// The resource as received (or as synthesized from a CSV row).
    pub resource: Value,
    /// Its values: none for one without a value (`dataAbsentReason`).
    pub points: Vec<HealthPoint>,
}

/// Which kind of record a [`NewRecord`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// A Condition (a diagnosis, a problem).
    Condition,
    /// A MedicationStatement or MedicationRequest.
    Medication,
    /// An AllergyIntolerance.
    Allergy,
    /// An Immunization.
    Immunization,
    /// A Procedure.
    Procedure,
    /// A DiagnosticReport.
    Report,
}

impl RecordKind {
    /// The name the store keeps: `condition`, `medication`, `allergy`, `immunization`,
    /// `procedure` or `report`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Condition => "condition",
            Self::Medication => "medication",
            Self::Allergy => "allergy",
            Self::Immunization => "immunization",
            Self::Procedure => "procedure",
            Self::Report => "report",
        }
    }

    /// The FHIR resource type (for a medication, the statement; a MedicationRequest is one
    /// too).
    pub fn resource_type(self) -> &'static str {
        match self {
            Self::Condition => "Condition",
            Self::Medication => "MedicationStatement",
            Self::Allergy => "AllergyIntolerance",
            Self::Immunization => "Immunization",
            Self::Procedure => "Procedure",
            Self::Report => "DiagnosticReport",
        }
    }
}

/// A record of the chart (anything but an Observation) ready to store.
#[derive(Clone, Debug, PartialEq)]
pub struct NewRecord {
    /// Which kind it is.
    pub kind: RecordKind,
    /// What identifies it among the person's imports: see [`source_id`].
    pub source_id: String,
    /// Its name: the condition, the medication, the substance.
    pub display: String,
    /// Its status (`active`, `resolved`, `completed`...), when it has one.
    pub status: Option<String>,
    /// When it began or was recorded, in milliseconds since the epoch (UTC).
    pub time_ms: Option<i64>,
    /// What else a reader is shown, as a JSON object: a medication's `dosage`, a report's
    /// `results` (each Observation's `source_id`, name and value) and `attachments`.
    pub detail: Option<Value>,
    /// The resource as received.
    pub resource: Value,
}

/// One thing to store.
#[derive(Clone, Debug, PartialEq)]
pub enum ImportItem {
    /// An Observation and its values.
    Observation(NewObservation),
    /// Any other imported resource: a condition, medication, allergy, immunization,
    /// procedure or report.
    Record(NewRecord),
    /// A stored value to take out of every read (`entered-in-error`, a `DELETE` entry).
    Remove(Removal),
}

/// One entry of a request as parsed.
#[derive(Clone, Debug, PartialEq)]
// Nearly every entry is an item: boxing it would add an allocation per entry and save nothing.
#[allow(clippy::large_enum_variant)]
pub enum EntryInput {
    /// Something to store.
    Item(ImportItem),
    /// A resource type that is not imported (Patient, Encounter...): skipped, not an error.
    /// (An imported type marked entered-in-error is an [`ImportItem::Remove`].)
    Skipped {
        /// The resource type, as the answer names it.
        resource_type: String,
    },
    /// The reason, a sentence naming the field, e.g. "Observation.valueQuantity.value must be
    /// a number".
    Invalid(String),
}

/// What kind of request it was, which decides the shape of the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// One resource, not in a Bundle.
    Resource,
    /// A Bundle of type `batch`: each entry on its own.
    Batch,
    /// A Bundle of type `transaction`: all or nothing.
    Transaction,
    /// A Bundle of type `collection`, answered as a batch.
    Collection,
    /// A Bundle of type `searchset` (a server's search result), answered as a batch.
    Searchset,
}

/// A request as parsed: its kind and its entries in order.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportRequest {
    /// What kind of request it was.
    pub kind: RequestKind,
    /// Its entries, in the order received.
    pub entries: Vec<EntryInput>,
}

/// What the store did with one entry.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryOutcome {
    /// Stored.
    Created,
    /// A newer version of a stored value replaced it (the earlier kept as history).
    Updated,
    /// A stored value was taken out of every read (kept as history).
    Removed,
    /// The same source id was already stored for this person, in this version or a newer one
    /// (or, for a removal, nothing was stored under it); left as it was.
    Unchanged,
    /// Not imported (its type is not one that is).
    Skipped {
        /// The resource type, as in [`EntryInput::Skipped`].
        resource_type: String,
    },
    /// Refused, and why.
    Invalid(String),
}

/// Reads the body of `POST /fhir`: a Bundle (`batch`, `transaction`, `collection` or
/// `searchset`) or one resource. `Err` (a sentence) when the request as a whole cannot be read;
/// a bad entry is [`EntryInput::Invalid`] instead.
pub fn parse_import(body: &Value) -> Result<ImportRequest, String> {
    let Some(object) = body.as_object() else {
        return Err("The body must be a JSON object: a FHIR resource or Bundle.".to_owned());
    };
    let resource_type = match object.get("resourceType") {
        None | Some(Value::Null) => {
            return Err("The body has no resourceType: send a FHIR resource or Bundle.".to_owned());
        }
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err("The body's resourceType must be a string.".to_owned()),
    };
    if resource_type != "Bundle" {
        return Ok(ImportRequest {
            kind: RequestKind::Resource,
            entries: vec![parse_resource(body, &Refs::default())],
        });
    }
    let kind = match object.get("type").and_then(Value::as_str) {
        Some("batch") => RequestKind::Batch,
        Some("transaction") => RequestKind::Transaction,
        Some("collection") => RequestKind::Collection,
        Some("searchset") => RequestKind::Searchset,
        Some(other) => {
            return Err(format!(
                "Bundle.type {:?} is not imported: send a batch, transaction, collection or searchset.",
                cap_chars(other, 40).0
            ));
        }
        None => return Err("Bundle.type must be batch, transaction, collection or searchset.".to_owned()),
    };
    let entries = match object.get("entry") {
        None | Some(Value::Null) => &Vec::new(),
        Some(Value::Array(entries)) => entries,
        Some(_) => return Err("Bundle.entry must be an array.".to_owned()),
    };
    if entries.len() > MAX_ENTRIES {
        return Err(format!(
            "The Bundle has {} entries; at most {MAX_ENTRIES} are taken in one request, send it in parts.",
            entries.len()
        ));
    }
    let refs = Refs::of_bundle(entries);
    Ok(ImportRequest { kind, entries: entries.iter().map(|entry| parse_entry(entry, &refs)).collect() })
}

/// Reads the body of `POST /fhir/Observation`: exactly one Observation (which may still be an
/// invalid or skipped entry); `Err` for anything else.
pub fn parse_observation(body: &Value) -> Result<ImportRequest, String> {
    let Some(object) = body.as_object() else {
        return Err("The body must be a JSON object: a FHIR Observation.".to_owned());
    };
    match object.get("resourceType").and_then(Value::as_str) {
        Some("Observation") => {
            Ok(ImportRequest { kind: RequestKind::Resource, entries: vec![observation::parse(body, object)] })
        }
        Some(other) => Err(format!("Expected an Observation, not a {}.", cap_chars(other, 40).0)),
        None => Err("The body has no resourceType: send a FHIR Observation.".to_owned()),
    }
}

/// One Bundle entry: its `resource`, read as [`parse_resource`] does.
fn parse_entry(entry: &Value, refs: &Refs<'_>) -> EntryInput {
    let Some(entry) = entry.as_object() else {
        return EntryInput::Invalid("entry must be an object".to_owned());
    };
    // A DELETE removes a stored value; a GET or PATCH is not taken.
    if let Some(request) = field(entry, "request") {
        let Some(request) = request.as_object() else {
            return EntryInput::Invalid("entry.request must be an object".to_owned());
        };
        match field(request, "method") {
            None => {}
            Some(Value::String(method)) if matches!(method.as_str(), "POST" | "PUT") => {}
            Some(Value::String(method)) if method == "DELETE" => return revision::delete_entry(request),
            Some(Value::String(method)) => {
                return EntryInput::Invalid(format!(
                    "entry.request.method {:?} is not supported: only POST, PUT and DELETE entries are taken",
                    cap_chars(method, 20).0
                ));
            }
            Some(_) => return EntryInput::Invalid("entry.request.method must be a string".to_owned()),
        }
    }
    match field(entry, "resource") {
        None => EntryInput::Invalid("entry has no resource".to_owned()),
        Some(resource) if !resource.is_object() => EntryInput::Invalid("entry.resource must be an object".to_owned()),
        Some(resource) => parse_resource(resource, refs),
    }
}

/// One resource: an item to store, skipped (a type that is not imported), or invalid.
fn parse_resource(resource: &Value, refs: &Refs<'_>) -> EntryInput {
    let Some(object) = resource.as_object() else {
        return EntryInput::Invalid("the resource must be an object".to_owned());
    };
    let resource_type = match field(object, "resourceType") {
        None => return EntryInput::Invalid("the resource has no resourceType".to_owned()),
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return EntryInput::Invalid("resourceType must be a string".to_owned()),
    };
    match resource_type {
        "Observation" => observation::parse_with(resource, object, refs.report_time(resource)),
        "Condition" => records::parse(RecordKind::Condition, resource, object),
        "MedicationStatement" | "MedicationRequest" => chart::medication(resource_type, resource, object, refs),
        "AllergyIntolerance" => records::parse(RecordKind::Allergy, resource, object),
        "Immunization" => chart::immunization(resource, object),
        "Procedure" => chart::procedure(resource, object),
        "DiagnosticReport" => chart::report(resource, object, refs),
        other => EntryInput::Skipped { resource_type: cap_chars(other, 64).0.to_owned() },
    }
}

/// What identifies a resource among a person's imports, so the same one imported twice is
/// stored once: `{type}/{id}` when it has an `id`; else `{type}|{system}|{value}` of its first
/// `identifier` with a value; else `{type}#sha256:{hex}` of its JSON (member order kept). One
/// longer than 256 bytes is replaced by `{type}#sha256:` and the hash of it.
fn source_id(resource_type: &str, resource: &Value, object: &Map<String, Value>) -> Result<String, String> {
    let id = match field(object, "id") {
        None => None,
        Some(Value::String(id)) => Some(id.trim()).filter(|id| !id.is_empty()),
        Some(_) => return Err(format!("{resource_type}.id must be a string")),
    };
    let found = match id {
        Some(id) => Some(format!("{resource_type}/{id}")),
        None => first_identifier(resource_type, object)?,
    };
    let source_id = match found {
        Some(found) if found.len() <= MAX_SOURCE_ID_BYTES => found,
        Some(long) => format!("{resource_type}#sha256:{}", sha256_hex(long.as_bytes())),
        None => format!("{resource_type}#sha256:{}", sha256_hex(resource.to_string().as_bytes())),
    };
    Ok(source_id)
}

/// `{type}|{system}|{value}` of the first `identifier` with a value, if any.
fn first_identifier(resource_type: &str, object: &Map<String, Value>) -> Result<Option<String>, String> {
    let Some(identifiers) = array_field(object, "identifier", resource_type)? else { return Ok(None) };
    for (i, identifier) in identifiers.iter().enumerate() {
        let path = format!("{resource_type}.identifier[{i}]");
        let identifier = identifier.as_object().ok_or_else(|| format!("{path} must be an object"))?;
        let value = str_field(identifier, "value", &path)?.map(str::trim).filter(|v| !v.is_empty());
        if let Some(value) = value {
            let system = str_field(identifier, "system", &path)?.unwrap_or_default().trim();
            return Ok(Some(format!("{resource_type}|{system}|{value}")));
        }
    }
    Ok(None)
}

/// Lower-case hex of the SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A member of `object`, `None` when absent or JSON `null` (FHIR JSON never means anything by
/// a null member).
fn field<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|v| !v.is_null())
}

/// A string member of `object` (at `path`), or a sentence saying it is not a string.
fn str_field<'a>(object: &'a Map<String, Value>, key: &str, path: &str) -> Result<Option<&'a str>, String> {
    match field(object, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(format!("{path}.{key} must be a string")),
    }
}

/// A non-empty string member, trimmed; an empty one counts as absent.
fn text_field<'a>(object: &'a Map<String, Value>, key: &str, path: &str) -> Result<Option<&'a str>, String> {
    Ok(str_field(object, key, path)?.map(str::trim).filter(|s| !s.is_empty()))
}

/// An object member of `object` (at `path`), or a sentence saying it is not an object.
fn object_field<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match field(object, key) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(format!("{path}.{key} must be an object")),
    }
}

/// An array member of `object` (at `path`), or a sentence saying it is not an array.
fn array_field<'a>(object: &'a Map<String, Value>, key: &str, path: &str) -> Result<Option<&'a Vec<Value>>, String> {
    match field(object, key) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(format!("{path}.{key} must be an array")),
    }
}

/// The string at a dotted path below `object` (`effectivePeriod.start`), every step checked
/// for its type.
fn str_at<'a>(object: &'a Map<String, Value>, base: &str, dotted: &str) -> Result<Option<&'a str>, String> {
    let mut current = object;
    let mut path = base.to_owned();
    let mut parts = dotted.split('.').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            return str_field(current, part, &path);
        }
        match object_field(current, part, &path)? {
            Some(next) => current = next,
            None => return Ok(None),
        }
        path = format!("{path}.{part}");
    }
    Ok(None)
}

/// The time of the first of `fields` (dotted paths) present, in milliseconds; a present one
/// that does not parse is an error rather than a fall-through to the next, which would store a
/// different time than the resource says.
fn first_time(object: &Map<String, Value>, base: &str, fields: &[&str]) -> Result<Option<i64>, String> {
    for dotted in fields {
        if let Some(text) = str_at(object, base, dotted)? {
            return match parse_time_ms(text) {
                Some(ms) => Ok(Some(ms)),
                None => Err(format!("{base}.{dotted} {:?} is not a FHIR date or dateTime", cap_chars(text, 40).0)),
            };
        }
    }
    Ok(None)
}

/// One `Coding` of a `CodeableConcept`, its members checked and blank ones taken as absent.
#[derive(Clone, Copy, Debug, Default)]
struct Coding<'a> {
    /// `system`.
    system: Option<&'a str>,
    /// `code`.
    code: Option<&'a str>,
    /// `display`.
    display: Option<&'a str>,
}

/// A `CodeableConcept` as read: its codings and its text.
#[derive(Clone, Debug, Default)]
struct Concept<'a> {
    /// `coding[]`, in order.
    codings: Vec<Coding<'a>>,
    /// `text`.
    text: Option<&'a str>,
}

impl<'a> Concept<'a> {
    /// Reads the `CodeableConcept` `concept`, found at `path`.
    fn read(concept: &'a Value, path: &str) -> Result<Self, String> {
        let concept = concept.as_object().ok_or_else(|| format!("{path} must be an object"))?;
        let mut codings = Vec::new();
        for (i, coding) in array_field(concept, "coding", path)?.into_iter().flatten().enumerate() {
            let at = format!("{path}.coding[{i}]");
            let coding = coding.as_object().ok_or_else(|| format!("{at} must be an object"))?;
            codings.push(Coding {
                system: text_field(coding, "system", &at)?,
                code: text_field(coding, "code", &at)?,
                display: text_field(coding, "display", &at)?,
            });
        }
        Ok(Self { codings, text: text_field(concept, "text", path)? })
    }

    /// Reads the `CodeableConcept` member `key` of `object`, if present.
    fn read_field(object: &'a Map<String, Value>, key: &str, base: &str) -> Result<Option<Self>, String> {
        field(object, key).map(|concept| Self::read(concept, &format!("{base}.{key}"))).transpose()
    }

    /// What a person would call it: its text, else the first coding display, else the first
    /// coding code.
    fn label(&self) -> Option<&'a str> {
        self.text
            .or_else(|| self.codings.iter().find_map(|c| c.display))
            .or_else(|| self.codings.iter().find_map(|c| c.code))
    }

    /// The first coding's code.
    fn first_code(&self) -> Option<&'a str> {
        self.codings.iter().find_map(|c| c.code)
    }

    /// Whether any coding has `code`.
    fn has_code(&self, code: &str) -> bool {
        self.codings.iter().any(|c| c.code == Some(code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundle(kind: &str, resources: Vec<Value>) -> Value {
        let entry: Vec<Value> = resources.into_iter().map(|r| json!({"resource": r})).collect();
        json!({"resourceType": "Bundle", "type": kind, "entry": entry})
    }

    fn glucose() -> Value {
        json!({
            "resourceType": "Observation", "status": "final",
            "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0", "display": "Glucose"}]},
            "effectiveDateTime": "2026-01-02T08:00:00Z",
            "valueQuantity": {"value": 96, "unit": "mg/dL"},
        })
    }

    fn condition() -> Value {
        json!({"resourceType": "Condition", "code": {"text": "Type 2 diabetes"}, "onsetDateTime": "2020-05"})
    }

    #[test]
    fn bundles_of_every_kind_are_read_in_order() {
        for (name, kind) in [
            ("batch", RequestKind::Batch),
            ("transaction", RequestKind::Transaction),
            ("collection", RequestKind::Collection),
            ("searchset", RequestKind::Searchset),
        ] {
            let body = bundle(name, vec![glucose(), json!({"resourceType": "Patient", "id": "p1"}), condition()]);
            let request = parse_import(&body).unwrap();
            assert_eq!(request.kind, kind);
            assert_eq!(request.entries.len(), 3);
            let EntryInput::Item(ImportItem::Observation(o)) = &request.entries[0] else { panic!("{request:?}") };
            assert_eq!((o.code.as_str(), o.points[0].value), ("2339-0", Some(96.0)));
            assert_eq!(request.entries[1], EntryInput::Skipped { resource_type: "Patient".into() });
            let EntryInput::Item(ImportItem::Record(r)) = &request.entries[2] else { panic!("{request:?}") };
            assert_eq!((r.kind, r.display.as_str()), (RecordKind::Condition, "Type 2 diabetes"));
        }
        let empty = parse_import(&json!({"resourceType": "Bundle", "type": "batch"})).unwrap();
        assert_eq!(empty, ImportRequest { kind: RequestKind::Batch, entries: vec![] });
    }

    #[test]
    fn a_single_resource_is_one_entry() {
        let request = parse_import(&glucose()).unwrap();
        assert_eq!(request.kind, RequestKind::Resource);
        assert!(matches!(&request.entries[..], [EntryInput::Item(ImportItem::Observation(_))]));
        let patient = parse_import(&json!({"resourceType": "Patient"})).unwrap();
        assert_eq!(patient.entries, vec![EntryInput::Skipped { resource_type: "Patient".into() }]);
    }

    #[test]
    fn requests_that_cannot_be_read_are_refused_whole() {
        let err = |body: Value| parse_import(&body).unwrap_err();
        assert!(err(json!([1, 2])).contains("JSON object"));
        assert!(err(json!({"id": "x"})).contains("no resourceType"));
        assert!(err(json!({"resourceType": 5})).contains("must be a string"));
        assert!(err(json!({"resourceType": "Bundle", "type": "document", "entry": []})).contains("\"document\""));
        assert!(err(json!({"resourceType": "Bundle", "entry": []})).contains("Bundle.type"));
        assert!(err(json!({"resourceType": "Bundle", "type": "batch", "entry": {}})).contains("Bundle.entry must be"));
    }

    #[test]
    fn at_most_max_entries_are_taken() {
        let at_limit = bundle("batch", vec![json!({"resourceType": "Patient"}); MAX_ENTRIES]);
        assert_eq!(parse_import(&at_limit).unwrap().entries.len(), MAX_ENTRIES);
        let over = bundle("batch", vec![json!({"resourceType": "Patient"}); MAX_ENTRIES + 1]);
        assert!(parse_import(&over).unwrap_err().contains("at most 10000"));
    }

    #[test]
    fn bad_entries_are_invalid_not_errors() {
        let body = json!({"resourceType": "Bundle", "type": "batch", "entry": [
            "not an object",
            {"fullUrl": "urn:uuid:1"},
            {"resource": "Observation"},
            {"resource": {"status": "final"}},
            {"resource": {"resourceType": ["Observation"]}},
            {"request": {"method": "GET", "url": "Observation/1"}},
            {"request": {"method": "PUT", "url": "Condition/c"}, "resource": condition()},
        ]});
        let entries = parse_import(&body).unwrap().entries;
        let reasons: Vec<&str> = entries
            .iter()
            .map(|e| match e {
                EntryInput::Invalid(reason) => reason.as_str(),
                _ => "ok",
            })
            .collect();
        assert_eq!(
            reasons,
            [
                "entry must be an object",
                "entry has no resource",
                "entry.resource must be an object",
                "the resource has no resourceType",
                "resourceType must be a string",
                "entry.request.method \"GET\" is not supported: only POST, PUT and DELETE entries are taken",
                "ok",
            ]
        );
    }

    #[test]
    fn parse_observation_takes_exactly_one_observation() {
        let request = parse_observation(&glucose()).unwrap();
        assert_eq!(request.kind, RequestKind::Resource);
        assert_eq!(request.entries.len(), 1);
        assert!(parse_observation(&condition()).unwrap_err().contains("not a Condition"));
        assert!(parse_observation(&bundle("batch", vec![glucose()])).is_err());
        assert!(parse_observation(&json!("Observation")).is_err());
        let no_code = json!({"resourceType": "Observation", "effectiveDateTime": "2026-01-01"});
        assert_eq!(
            parse_observation(&no_code).unwrap().entries,
            vec![EntryInput::Invalid("Observation.code has no coding code or text".into())]
        );
    }

    fn id_of(resource: &Value) -> String {
        match parse_resource(resource, &Refs::default()) {
            EntryInput::Item(ImportItem::Observation(o)) => o.source_id,
            EntryInput::Item(ImportItem::Record(r)) => r.source_id,
            EntryInput::Item(ImportItem::Remove(r)) => r.source_id,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_same_resource_twice_has_the_same_source_id() {
        let mut with_id = glucose();
        with_id["id"] = json!("g-1");
        assert_eq!(id_of(&with_id), "Observation/g-1");
        assert_eq!(id_of(&with_id.clone()), id_of(&with_id));

        let mut with_identifier = condition();
        with_identifier["identifier"] = json!([{"system": "urn:x"}, {"system": "urn:lab", "value": "42"}]);
        assert_eq!(id_of(&with_identifier), "Condition|urn:lab|42");

        let hashed = id_of(&glucose());
        assert!(hashed.starts_with("Observation#sha256:") && hashed.len() == "Observation#sha256:".len() + 64);
        assert_eq!(hashed, id_of(&glucose()));
        let mut other = glucose();
        other["valueQuantity"]["value"] = json!(97);
        assert_ne!(id_of(&other), hashed);

        let mut long = glucose();
        long["id"] = json!("x".repeat(300));
        let long_id = id_of(&long);
        assert!(long_id.starts_with("Observation#sha256:") && long_id.len() <= MAX_SOURCE_ID_BYTES, "{long_id}");

        let mut bad = glucose();
        bad["id"] = json!(7);
        assert_eq!(
            parse_resource(&bad, &Refs::default()),
            EntryInput::Invalid("Observation.id must be a string".into())
        );
        let mut bad = glucose();
        bad["identifier"] = json!({"value": "1"});
        assert_eq!(
            parse_resource(&bad, &Refs::default()),
            EntryInput::Invalid("Observation.identifier must be an array".into())
        );
    }

    #[test]
    fn the_subject_is_never_read() {
        let mut theirs = glucose();
        theirs["subject"] = json!({"reference": "Patient/someone-else"});
        let mut mine = glucose();
        mine["subject"] = json!({"reference": "Patient/me"});
        let (EntryInput::Item(ImportItem::Observation(a)), EntryInput::Item(ImportItem::Observation(b))) =
            (parse_resource(&theirs, &Refs::default()), parse_resource(&mine, &Refs::default()))
        else {
            panic!("both are observations");
        };
        assert_eq!((a.points, a.code, a.time_ms), (b.points, b.code, b.time_ms));
        assert_eq!(a.resource["subject"]["reference"], "Patient/someone-else", "kept as received");
    }

    #[test]
    fn times_at_dotted_paths_are_checked() {
        let object = json!({"effectivePeriod": {"start": "2026-01-02"}, "issued": "2026-01-05T00:00:00Z"});
        let object = object.as_object().unwrap();
        let day = parse_time_ms("2026-01-02");
        assert_eq!(first_time(object, "X", &["effectiveDateTime", "effectivePeriod.start", "issued"]), Ok(day));
        let bad = json!({"effectivePeriod": "2026"});
        assert_eq!(
            first_time(bad.as_object().unwrap(), "X", &["effectivePeriod.start"]),
            Err("X.effectivePeriod must be an object".into())
        );
    }
}
