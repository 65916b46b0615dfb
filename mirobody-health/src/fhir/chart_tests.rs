//! The chart resources' parsing, tested: medications named three ways, immunizations,
//! procedures, reports and their links, and what is refused.

use super::*;
use crate::fhir::{ImportRequest, RemovalReason, parse_import};
use crate::text::parse_time_ms;

fn one(resource: Value) -> EntryInput {
    let mut request = parse_import(&resource).unwrap();
    request.entries.remove(0)
}

fn record(resource: Value) -> NewRecord {
    match one(resource) {
        EntryInput::Item(ImportItem::Record(r)) => r,
        other => panic!("not a record: {other:?}"),
    }
}

fn records(bundle: Value) -> Vec<EntryInput> {
    let ImportRequest { entries, .. } = parse_import(&bundle).unwrap();
    entries
}

#[test]
fn a_statement_names_its_drug_three_ways() {
    let concept = record(json!({
        "resourceType": "MedicationStatement", "id": "s1", "status": "active",
        "medicationCodeableConcept": {"coding": [{"code": "860975", "display": "Metformin 500 MG"}]},
        "effectivePeriod": {"start": "2024-02-01", "end": "2024-08-01"},
        "dosage": [{"text": "one tablet twice a day"}],
    }));
    assert_eq!(
        (concept.kind, concept.display.as_str(), concept.status.as_deref()),
        (RecordKind::Medication, "Metformin 500 MG", Some("active"))
    );
    assert_eq!(concept.time_ms, parse_time_ms("2024-02-01"));
    assert_eq!(concept.detail, Some(json!({"dosage": "one tablet twice a day"})));
    // The HL7 shape: a contained Medication referenced as `#id`.
    let contained = record(json!({
        "resourceType": "MedicationStatement", "id": "example001", "status": "active",
        "contained": [{"resourceType": "Medication", "id": "med0309",
                       "code": {"coding": [{"system": "http://hl7.org/fhir/sid/ndc", "code": "50580-506-02",
                                            "display": "Tylenol PM"}]}}],
        "medicationReference": {"reference": "#med0309"},
        "effectiveDateTime": "2015-01-23",
    }));
    assert_eq!(
        (contained.display.as_str(), contained.source_id.as_str()),
        ("Tylenol PM", "MedicationStatement/example001")
    );
    // A Medication elsewhere in the Bundle, by `urn:uuid:` and by `Medication/id`.
    let bundle = json!({"resourceType": "Bundle", "type": "collection", "entry": [
        {"fullUrl": "urn:uuid:m-1", "resource": {"resourceType": "Medication", "id": "m1",
                                                 "code": {"text": "Atorvastatin 20 MG"}}},
        {"resource": {"resourceType": "MedicationRequest", "id": "r1", "status": "active", "intent": "order",
                      "medicationReference": {"reference": "urn:uuid:m-1"}, "authoredOn": "2025-03-04",
                      "dosageInstruction": [{"text": "one at night"}]}},
        {"resource": {"resourceType": "MedicationStatement", "id": "s2", "status": "completed",
                      "medicationReference": {"reference": "Medication/m1"}}},
        {"resource": {"resourceType": "MedicationStatement", "id": "s3",
                      "medicationReference": {"reference": "Medication/gone", "display": "Aspirin"}}},
    ]});
    let entries = records(bundle);
    assert_eq!(entries[0], EntryInput::Skipped { resource_type: "Medication".into() });
    let names: Vec<(String, Option<String>)> = entries[1..]
        .iter()
        .map(|e| match e {
            EntryInput::Item(ImportItem::Record(r)) => (r.display.clone(), r.status.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            ("Atorvastatin 20 MG".to_owned(), Some("active".to_owned())),
            ("Atorvastatin 20 MG".to_owned(), Some("completed".to_owned())),
            ("Aspirin".to_owned(), None),
        ]
    );
    let EntryInput::Item(ImportItem::Record(request)) = &entries[1] else { unreachable!() };
    assert_eq!(request.source_id, "MedicationRequest/r1");
    assert_eq!(request.time_ms, parse_time_ms("2025-03-04"));
    assert_eq!(request.detail, Some(json!({"dosage": "one at night"})));
}

#[test]
fn a_medication_that_names_nothing_is_refused_and_entered_in_error_skipped() {
    let EntryInput::Invalid(why) =
        one(json!({"resourceType": "MedicationRequest", "medicationReference": {"reference": "#nope"}}))
    else {
        panic!()
    };
    assert!(why.starts_with("MedicationRequest names no medication"), "{why}");
    assert_eq!(
        one(json!({"resourceType": "MedicationStatement", "status": 3, "medicationCodeableConcept": {"text": "x"}})),
        EntryInput::Invalid("MedicationStatement.status must be a string".into())
    );
    for kind in ["Immunization", "Procedure", "DiagnosticReport", "MedicationRequest"] {
        let resource = json!({"resourceType": kind, "status": "entered-in-error", "code": {"text": "x"},
                              "vaccineCode": {"text": "x"}, "medicationCodeableConcept": {"text": "x"}});
        let EntryInput::Item(ImportItem::Remove(removal)) = one(resource) else { panic!("{kind}: a removal") };
        assert_eq!(removal.reason, RemovalReason::EnteredInError, "{kind}");
        assert!(removal.source_id.starts_with(&format!("{kind}#sha256:")), "{kind}: {}", removal.source_id);
    }
}

#[test]
fn immunizations_and_procedures_keep_name_status_and_time() {
    let shot = record(json!({
        "resourceType": "Immunization", "id": "i1", "status": "completed",
        "vaccineCode": {"coding": [{"system": "http://hl7.org/fhir/sid/cvx", "code": "140",
                                    "display": "Influenza, seasonal, injectable, preservative free"}]},
        "occurrenceDateTime": "2024-10-01T09:00:00Z",
    }));
    assert_eq!((shot.kind, shot.status.as_deref()), (RecordKind::Immunization, Some("completed")));
    assert_eq!(shot.time_ms, parse_time_ms("2024-10-01T09:00:00Z"));
    let vague = record(json!({"resourceType": "Immunization", "vaccineCode": {"text": "Tetanus"},
                              "occurrenceString": "as a child"}));
    assert_eq!((vague.time_ms, vague.detail), (None, Some(json!({"when": "as a child"}))));
    let done = record(json!({
        "resourceType": "Procedure", "id": "p1", "status": "completed",
        "code": {"text": "Appendectomy"}, "performedPeriod": {"start": "2013-04-05", "end": "2013-04-06"},
    }));
    assert_eq!((done.kind, done.display.as_str()), (RecordKind::Procedure, "Appendectomy"));
    assert_eq!(done.time_ms, parse_time_ms("2013-04-05"));
    let EntryInput::Invalid(why) = one(json!({"resourceType": "Procedure", "performedDateTime": "2020"})) else {
        panic!()
    };
    assert!(why.starts_with("Procedure.code is missing"), "{why}");
    let EntryInput::Invalid(why) =
        one(json!({"resourceType": "Immunization", "vaccineCode": {"text": "x"}, "occurrenceDateTime": "soon"}))
    else {
        panic!()
    };
    assert!(why.contains("occurrenceDateTime"), "{why}");
}

#[test]
fn a_report_links_its_results_and_describes_its_attachments() {
    let bundle = json!({"resourceType": "Bundle", "type": "transaction", "entry": [
        {"fullUrl": "urn:uuid:o-1", "resource": {"resourceType": "Observation", "id": "ldl", "status": "final",
            "code": {"coding": [{"system": "http://loinc.org", "code": "18262-6", "display": "LDL"}]},
            "effectiveDateTime": "2025-01-02", "valueQuantity": {"value": 128, "unit": "mg/dL"}}},
        {"resource": {"resourceType": "DiagnosticReport", "id": "lipids", "status": "final",
            "code": {"text": "Lipid panel"}, "effectiveDateTime": "2025-01-02", "conclusion": "LDL high",
            "result": [{"reference": "urn:uuid:o-1"}, {"reference": "Observation/elsewhere", "display": "HDL"}],
            "presentedForm": [{"contentType": "application/pdf", "title": "report.pdf", "data": "JVBERi0xLjQK"}]}},
    ]});
    let entries = records(bundle);
    let EntryInput::Item(ImportItem::Record(report)) = &entries[1] else { panic!("{entries:?}") };
    assert_eq!((report.kind, report.display.as_str()), (RecordKind::Report, "Lipid panel"));
    let detail = report.detail.as_ref().unwrap();
    assert_eq!(
        detail["results"],
        json!([
            {"source_id": "Observation/ldl", "name": "LDL", "value": "128 mg/dL"},
            {"source_id": "Observation/elsewhere", "name": "HDL"},
        ])
    );
    assert_eq!(detail["attachments"][0]["size"], json!(9));
    assert_eq!(detail["attachments"][0]["content_type"], json!("application/pdf"));
    assert_eq!(detail["conclusion"], json!("LDL high"));
}

#[test]
fn an_attachment_past_the_bound_is_refused() {
    let at_bound = "A".repeat(MAX_ATTACHMENT_BYTES / 3 * 4);
    let report = |data: &str| {
        json!({"resourceType": "DiagnosticReport", "code": {"text": "Scan"},
               "presentedForm": [{"contentType": "text/plain", "data": data}]})
    };
    assert!(matches!(one(report(&at_bound)), EntryInput::Item(_)));
    // Padding alone is no underflow: an empty document.
    assert!(matches!(one(report("==")), EntryInput::Item(_)));
    let over = format!("{at_bound}AAAA");
    let EntryInput::Invalid(why) = one(report(&over)) else { panic!() };
    assert_eq!(why, "DiagnosticReport.presentedForm[0].data is larger than 10 MiB");
}

/// HL7's lipid and laboratory Bundles give the time on the report or a panel only: each
/// result takes it, through panels (`hasMember`) too, and one nothing lists (or a lone
/// resource) is still refused for it.
#[test]
fn a_result_without_a_time_takes_its_reports() {
    let result = |id: &str| {
        json!({"resourceType": "Observation", "id": id, "status": "final",
               "code": {"coding": [{"system": "http://loinc.org", "code": "35200-5", "display": "Cholesterol"}]},
               "valueQuantity": {"value": 6.3, "unit": "mmol/L"}})
    };
    let bundle = json!({"resourceType": "Bundle", "type": "collection", "entry": [
        {"fullUrl": "https://example.com/base/DiagnosticReport/lipids", "resource": {
            "resourceType": "DiagnosticReport", "id": "lipids", "status": "final", "code": {"text": "Lipid panel"},
            "effectiveDateTime": "2011-03-04T08:30:00+11:00", "issued": "2013-01-27T11:45:33+11:00",
            "result": [{"reference": "Observation/cholesterol"}, {"reference": "#contained"}]}},
        {"fullUrl": "https://example.com/base/Observation/cholesterol", "resource": result("cholesterol")},
        {"fullUrl": "https://example.com/base/Observation/alone", "resource": result("alone")},
        {"resource": {"resourceType": "Observation", "id": "panel", "status": "final", "code": {"text": "Panel"},
            "issued": "2015-08-17T06:40:17Z", "hasMember": [{"reference": "Observation/member"}]}},
        {"resource": result("member")},
    ]});
    let entries = records(bundle);
    let EntryInput::Item(ImportItem::Observation(linked)) = &entries[1] else { panic!("{entries:?}") };
    let at = parse_time_ms("2011-03-04T08:30:00+11:00");
    assert_eq!((Some(linked.time_ms), linked.points[0].value), (at, Some(6.3)));
    assert_eq!(linked.points[0].time_ms, linked.time_ms);
    let EntryInput::Item(ImportItem::Record(report)) = &entries[0] else { panic!("{entries:?}") };
    assert_eq!(
        report.detail.as_ref().unwrap()["results"][0],
        json!({"source_id": "Observation/cholesterol", "name": "Cholesterol", "value": "6.3 mmol/L"})
    );
    let EntryInput::Invalid(why) = &entries[2] else { panic!("{entries:?}") };
    assert!(why.starts_with("Observation has no time"), "{why}");
    let EntryInput::Item(ImportItem::Observation(member)) = &entries[4] else { panic!("{entries:?}") };
    assert_eq!(Some(member.time_ms), parse_time_ms("2015-08-17T06:40:17Z"), "the panel's time");
    let EntryInput::Invalid(why) = one(result("lone")) else { panic!("a lone result has no report") };
    assert!(why.contains("no DiagnosticReport or panel of the request"), "{why}");
}

/// HL7's TPN and ointment prescriptions name a contained Medication by its ingredients only.
#[test]
fn a_medication_without_a_code_is_named_by_its_ingredients() {
    let request = |medication: Value| {
        json!({"resourceType": "MedicationRequest", "id": "medrx0323", "status": "active", "intent": "order",
               "contained": [medication], "medicationReference": {"reference": "#med0318"},
               "authoredOn": "2015-01-15"})
    };
    let named = record(request(json!({"resourceType": "Medication", "id": "med0318", "ingredient": [
        {"itemCodeableConcept": {"coding": [{"code": "0338-1134-03", "display": "Clinimix 4.25/10"}]}},
        {"itemReference": {"reference": "Substance/x"}},
        {"itemCodeableConcept": {"text": "TPN Electrolytes"}},
    ]})));
    assert_eq!(named.display, "Clinimix 4.25/10 + TPN Electrolytes");
    let EntryInput::Invalid(why) = one(request(json!({"resourceType": "Medication", "id": "med0318"}))) else {
        panic!("a Medication with neither code nor ingredients names nothing")
    };
    assert!(why.starts_with("MedicationRequest names no medication"), "{why}");
    let EntryInput::Invalid(why) =
        one(request(json!({"resourceType": "Medication", "id": "med0318", "ingredient": "x"})))
    else {
        panic!()
    };
    assert!(why.contains("ingredient"), "{why}");
    // A hostile Medication: a thousand ingredients name it by the first 20, in at most 500
    // characters.
    let many = |text: &dyn Fn(usize) -> String| {
        let ingredients: Vec<Value> = (0..1000).map(|i| json!({"itemCodeableConcept": {"text": text(i)}})).collect();
        record(request(json!({"resourceType": "Medication", "id": "med0318", "ingredient": ingredients}))).display
    };
    let short = many(&|i| format!("i{i}"));
    assert_eq!(short.split(" + ").count(), 20, "{short}");
    assert!(short.ends_with("i19"), "{short}");
    let long = many(&|_| "x".repeat(400));
    assert_eq!(long.chars().count(), 500, "cut at 500 characters");
}
