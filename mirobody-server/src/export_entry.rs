//! One stored resource as an entry of the export's Bundle, written so that importing the
//! Bundle gives back what the tools answered. A resource is kept as it was imported, except
//! where it named another resource of its own Bundle, which is not stored:
//!
//! - every entry gets a `fullUrl` (a `urn:uuid:` made from its source id), so a reference
//!   within the export resolves;
//! - a DiagnosticReport's `result` that named an Observation of its Bundle (a `urn:uuid:`)
//!   names that Observation's entry in the export;
//! - a MedicationRequest or MedicationStatement whose drug was a Medication elsewhere in its
//!   Bundle carries it as a `contained` Medication named as the record is.

use mirobody_health::StoredResource;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The id of the Medication a medication's entry contains.
const CONTAINED_MEDICATION: &str = "exported-medication";
/// The most results of one report linked, as the import reads them.
const MAX_RESULTS: usize = 100;

/// The Bundle entry of `stored`.
pub(crate) fn entry(stored: &StoredResource) -> Value {
    let mut resource = stored.resource.clone();
    if let Some(object) = resource.as_object_mut() {
        match object.get("resourceType").and_then(Value::as_str) {
            Some("MedicationRequest" | "MedicationStatement") => contain_medication(object, stored.display.as_deref()),
            Some("DiagnosticReport") => link_results(object, stored.detail.as_ref()),
            _ => {}
        }
    }
    match &stored.source_id {
        Some(source_id) => json!({"fullUrl": full_url(source_id), "resource": resource}),
        None => json!({"resource": resource}),
    }
}

/// The `urn:uuid:` of the entry whose source id is `source_id`: the same for the same id, so
/// a report's result and its Observation's entry agree (RFC 9562 version 8, from SHA-256).
pub(crate) fn full_url(source_id: &str) -> String {
    let digest = Sha256::new().chain_update(b"mirobody export entry\0").chain_update(source_id.as_bytes()).finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("urn:uuid:{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

// A medication whose `medicationReference` points outside the resource (to a Medication of
// its Bundle, not stored) gets a contained Medication named as the record was.
fn contain_medication(object: &mut Map<String, Value>, display: Option<&str>) {
    let Some(display) = display else { return };
    if object.contains_key("medicationCodeableConcept") {
        return;
    }
    let Some(reference) = object.get_mut("medicationReference").and_then(Value::as_object_mut) else { return };
    if reference.get("reference").and_then(Value::as_str).is_none_or(|r| r.starts_with('#')) {
        return;
    }
    reference.insert("reference".into(), json!(format!("#{CONTAINED_MEDICATION}")));
    let medication = json!({"resourceType": "Medication", "id": CONTAINED_MEDICATION, "code": {"text": display}});
    match object.get_mut("contained").and_then(Value::as_array_mut) {
        Some(contained) => contained.push(medication),
        None => {
            object.insert("contained".into(), json!([medication]));
        }
    }
}

// A report's results that were linked to an Observation of its Bundle (the stored detail has
// their value) name that Observation's entry in the export. The detail lists the results with
// a reference in order, as the import read them.
fn link_results(object: &mut Map<String, Value>, detail: Option<&Value>) {
    let Some(linked) = detail.and_then(|d| d.get("results")).and_then(Value::as_array) else { return };
    let Some(results) = object.get_mut("result").and_then(Value::as_array_mut) else { return };
    let with_reference = results
        .iter_mut()
        .take(MAX_RESULTS)
        .filter_map(Value::as_object_mut)
        .filter(|result| result.get("reference").is_some_and(Value::is_string));
    for (result, linked) in with_reference.zip(linked) {
        let source_id = linked.get("source_id").and_then(Value::as_str);
        if let (Some(source_id), true) = (source_id, linked.get("value").is_some()) {
            result.insert("reference".into(), json!(full_url(source_id)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirobody_health::ResourceCursor;

    fn stored(resource: Value, source_id: &str, display: Option<&str>, detail: Option<Value>) -> StoredResource {
        StoredResource {
            cursor: ResourceCursor { records: true, after_id: 1 },
            source_id: Some(source_id.to_owned()),
            file_key: None,
            resource,
            display: display.map(str::to_owned),
            detail,
        }
    }

    #[test]
    fn a_medication_of_the_bundle_travels_contained() {
        let resource = json!({"resourceType": "MedicationRequest", "id": "r1",
            "medicationReference": {"reference": "urn:uuid:m-1"}});
        let entry = entry(&stored(resource, "MedicationRequest/r1", Some("Metformin 500 MG"), None));
        let written = &entry["resource"];
        assert_eq!(written["medicationReference"]["reference"], "#exported-medication");
        assert_eq!(written["contained"][0]["code"]["text"], "Metformin 500 MG");
        assert_eq!(entry["fullUrl"], full_url("MedicationRequest/r1"));
    }

    #[test]
    fn a_named_or_contained_medication_is_kept_as_it_was() {
        for resource in [
            json!({"resourceType": "MedicationStatement", "medicationCodeableConcept": {"text": "Aspirin"}}),
            json!({"resourceType": "MedicationStatement", "medicationReference": {"reference": "#m"},
                   "contained": [{"resourceType": "Medication", "id": "m", "code": {"text": "Aspirin"}}]}),
        ] {
            let entry = entry(&stored(resource.clone(), "MedicationStatement/s", Some("Aspirin"), None));
            assert_eq!(entry["resource"], resource);
        }
    }

    #[test]
    fn a_report_names_its_observations_entries() {
        let resource = json!({"resourceType": "DiagnosticReport", "id": "lipids", "result": [
            {"display": "no reference"},
            {"reference": "urn:uuid:o-1"},
            {"reference": "Observation/elsewhere", "display": "HDL"}]});
        let detail = json!({"results": [
            {"source_id": "Observation/ldl", "name": "LDL", "value": "3.1 mmol/L"},
            {"source_id": "Observation/elsewhere", "name": "HDL"}]});
        let entry = entry(&stored(resource, "DiagnosticReport/lipids", Some("Lipids"), Some(detail)));
        let results = &entry["resource"]["result"];
        assert_eq!(results[0], json!({"display": "no reference"}));
        assert_eq!(results[1]["reference"], full_url("Observation/ldl"));
        assert_eq!(results[2]["reference"], "Observation/elsewhere", "one not linked stays as it was");
    }

    #[test]
    fn full_urls_are_uuids_that_tell_source_ids_apart() {
        let a = full_url("Observation/a");
        assert_eq!(a, full_url("Observation/a"));
        assert_ne!(a, full_url("Observation/b"));
        let uuid = a.strip_prefix("urn:uuid:").unwrap();
        let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert!(uuid.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }
}
