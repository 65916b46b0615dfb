//! Conditions and AllergyIntolerances read into [`NewRecord`]s: a name,
//! a status and a time each, with the resource kept as received.

use serde_json::{Map, Value};

use super::{Concept, EntryInput, ImportItem, NewRecord, RecordKind, Target, first_time, revision, source_id};

/// Reads one resource of `kind` (`object` is `resource` as an object).
pub(super) fn parse(kind: RecordKind, resource: &Value, object: &Map<String, Value>) -> EntryInput {
    read(kind, resource, object).unwrap_or_else(EntryInput::Invalid)
}

/// [`parse`], with `?` for the first problem found.
fn read(kind: RecordKind, resource: &Value, object: &Map<String, Value>) -> Result<EntryInput, String> {
    let base = kind.resource_type();
    let (display, status, time_ms, in_error) = match kind {
        RecordKind::Condition | RecordKind::Allergy => {
            let code = Concept::read_field(object, "code", base)?;
            let display = code.as_ref().and_then(Concept::label).ok_or_else(|| {
                format!("{base}.code is missing or has no text, coding display or code: it names the record")
            })?;
            let status = Concept::read_field(object, "clinicalStatus", base)?;
            let verification = Concept::read_field(object, "verificationStatus", base)?;
            let in_error = verification.is_some_and(|v| v.has_code("entered-in-error"));
            let time_ms = first_time(object, base, &["onsetDateTime", "recordedDate"])?;
            (display, status.as_ref().and_then(Concept::first_code), time_ms, in_error)
        }
        // The rest of the chart is read in `chart`.
        _ => return Err(format!("{base} is not read as a condition or allergy")),
    };
    if in_error {
        return revision::entered_in_error(Target::Record(kind), base, resource, object);
    }
    Ok(EntryInput::Item(ImportItem::Record(NewRecord {
        kind,
        source_id: source_id(base, resource, object)?,
        display: display.to_owned(),
        status: status.map(str::to_owned),
        time_ms,
        detail: None,
        resource: resource.clone(),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse_time_ms;
    use serde_json::json;

    fn parsed(kind: RecordKind, resource: Value) -> EntryInput {
        parse(kind, &resource, resource.as_object().unwrap())
    }

    fn record(kind: RecordKind, resource: Value) -> NewRecord {
        match parsed(kind, resource) {
            EntryInput::Item(ImportItem::Record(r)) => r,
            other => panic!("not a record: {other:?}"),
        }
    }

    fn invalid(kind: RecordKind, resource: Value) -> String {
        match parsed(kind, resource) {
            EntryInput::Invalid(reason) => reason,
            other => panic!("not invalid: {other:?}"),
        }
    }

    #[test]
    fn conditions_take_name_status_and_onset() {
        let r = record(
            RecordKind::Condition,
            json!({
                "resourceType": "Condition", "id": "c1",
                "clinicalStatus": {"coding": [
                    {"system": "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": "active"},
                ]},
                "code": {"coding": [
                    {"system": "http://snomed.info/sct", "code": "44054006", "display": "Diabetes mellitus type 2"},
                ]},
                "subject": {"reference": "Patient/someone-else"},
                "onsetDateTime": "2019-04-01",
                "recordedDate": "2019-05-01",
            }),
        );
        assert_eq!(r.kind, RecordKind::Condition);
        assert_eq!(r.source_id, "Condition/c1");
        assert_eq!(r.display, "Diabetes mellitus type 2");
        assert_eq!(r.status.as_deref(), Some("active"));
        assert_eq!(r.time_ms, parse_time_ms("2019-04-01"));
        let recorded = record(RecordKind::Condition, json!({"code": {"text": "Asthma"}, "recordedDate": "2021"}));
        assert_eq!(
            (recorded.display.as_str(), recorded.status, recorded.time_ms),
            ("Asthma", None, parse_time_ms("2021"))
        );
        let bare = record(RecordKind::Condition, json!({"code": {"coding": [{"code": "J45"}]}}));
        assert_eq!((bare.display.as_str(), bare.time_ms), ("J45", None));
    }

    #[test]
    fn allergies_take_the_substance() {
        let r = record(
            RecordKind::Allergy,
            json!({
                "resourceType": "AllergyIntolerance",
                "identifier": [{"system": "urn:ehr", "value": "a-9"}],
                "clinicalStatus": {"coding": [{"code": "active"}]},
                "code": {"text": "Penicillin"},
                "recordedDate": "2010-06-15T00:00:00Z",
            }),
        );
        assert_eq!(
            (r.kind, r.source_id.as_str(), r.display.as_str()),
            (RecordKind::Allergy, "AllergyIntolerance|urn:ehr|a-9", "Penicillin")
        );
        assert_eq!((r.status.as_deref(), r.time_ms), (Some("active"), parse_time_ms("2010-06-15")));
        assert_eq!(
            parsed(
                RecordKind::Allergy,
                json!({"id": "p", "code": {"text": "Peanut"},
                    "verificationStatus": {"coding": [{"code": "entered-in-error"}]}})
            ),
            EntryInput::Item(ImportItem::Remove(super::super::Removal {
                target: Target::Record(RecordKind::Allergy),
                source_id: "AllergyIntolerance/p".into(),
                reason: super::super::RemovalReason::EnteredInError,
            }))
        );
    }

    #[test]
    fn missing_names_and_wrong_types_are_invalid() {
        let no_code = invalid(RecordKind::Condition, json!({"onsetDateTime": "2020"}));
        assert!(no_code.starts_with("Condition.code is missing"), "{no_code}");
        assert!(invalid(RecordKind::Allergy, json!({"code": {}})).starts_with("AllergyIntolerance.code is missing"));
        assert_eq!(invalid(RecordKind::Condition, json!({"code": "Asthma"})), "Condition.code must be an object");
        assert_eq!(
            invalid(RecordKind::Condition, json!({"code": {"text": "Asthma"}, "clinicalStatus": "active"})),
            "Condition.clinicalStatus must be an object"
        );
        assert_eq!(
            invalid(RecordKind::Condition, json!({"code": {"text": "Asthma"}, "onsetDateTime": "yesterday"})),
            "Condition.onsetDateTime \"yesterday\" is not a FHIR date or dateTime"
        );
        assert_eq!(
            invalid(RecordKind::Report, json!({"code": {"text": "x"}})),
            "DiagnosticReport is not read as a condition or allergy"
        );
    }
}
