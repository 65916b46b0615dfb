//! The sniffer's answers, on the server's FHIR fixtures and files made to look alike.

use super::*;

const SYNTHEA: &[u8] = include_bytes!("../../mirobody-server/tests/fixtures/fhir/synthea_patient.json");
const HL7: &[u8] = include_bytes!("../../mirobody-server/tests/fixtures/fhir/hl7_examples.json");

#[test]
fn fhir_json_is_told_by_its_top_level_resource_type() {
    assert_eq!(detect_bytes(SYNTHEA), DataFormat::FhirBundle);
    assert_eq!(detect_bytes(HL7), DataFormat::FhirBundle);
    let observation =
        br#" {"code": {"text": "x"}, "resourceType": "Observation", "subject": {"resourceType": "Bundle"}}"#;
    assert_eq!(detect_bytes(observation), DataFormat::FhirResource);
    // A nested resourceType is not the file's.
    assert_eq!(detect_bytes(br#"{"entry": [{"resource": {"resourceType": "Bundle"}}]}"#), DataFormat::Other);
    assert_eq!(detect_bytes(br#"{"name": "not FHIR"}"#), DataFormat::Other);
    assert_eq!(detect_bytes(br#"["resourceType", "Bundle"]"#), DataFormat::Other);
    // Cut short, it is still a Bundle, for its import to say what is wrong.
    assert_eq!(detect_bytes(&SYNTHEA[..SYNTHEA.len() / 2]), DataFormat::FhirBundle);
    assert_eq!(detect_bytes(b"\xEF\xBB\xBF{\"resourceType\":\"Bundle\""), DataFormat::FhirBundle);
    // A key that only looks like resourceType, escaped quotes in strings.
    let tricky = br#"{"note": "\"resourceType\": \"Bundle\"", "resourceType": "Condition"}"#;
    assert_eq!(detect_bytes(tricky), DataFormat::FhirResource);
}

#[test]
fn ndjson_is_more_than_one_line_each_a_resource() {
    let ndjson = b"{\"resourceType\":\"Observation\",\"id\":\"a\"}\n{\"resourceType\":\"Condition\",\"id\":\"b\"}\n";
    assert_eq!(detect_bytes(ndjson), DataFormat::FhirNdjson);
    // One line and a newline is one resource.
    assert_eq!(detect_bytes(b"{\"resourceType\":\"Observation\"}\n"), DataFormat::FhirResource);
    // Pretty-printed JSON's first line is not a resource.
    assert_eq!(detect_bytes(b"{\n \"resourceType\": \"Bundle\"\n}\n"), DataFormat::FhirBundle);
}

#[test]
fn a_csv_of_measurements_names_its_columns() {
    assert_eq!(detect_bytes(b"time,indicator,value,unit\n2026-01-02,heart rate,72,bpm\n"), DataFormat::MeasurementsCsv);
    assert_eq!(detect_bytes(b"\n\"Value\";\"Time\";\"Indicator\"\n1;2026-01-02;x\n"), DataFormat::MeasurementsCsv);
    assert_eq!(detect_bytes(b"name,age\nana,40\n"), DataFormat::Other);
    assert_eq!(detect_bytes(b"Glucose 5.4 mmol/L\nHbA1c 5.9 %\n"), DataFormat::Other);
    assert_eq!(detect_bytes(b"%PDF-1.4\n"), DataFormat::Other);
    assert_eq!(detect_bytes(b"time,indicator,value\0"), DataFormat::Other);
    assert_eq!(detect_bytes(b""), DataFormat::Other);
}

#[cfg(feature = "apple")]
#[test]
fn apple_exports_are_told_by_their_content() {
    let mut zip = io::Cursor::new(Vec::new());
    crate::apple::generate::write_zip(1, &mut zip).unwrap();
    let zip = zip.into_inner();
    assert_eq!(detect_bytes(&zip), DataFormat::AppleZip);
    let mut xml = Vec::new();
    crate::apple::generate::write_xml(1, &mut xml).unwrap();
    assert_eq!(detect_bytes(&xml), DataFormat::AppleXml);
    // A zip cut short has no directory to read: not an export.
    assert_eq!(detect_bytes(&zip[..zip.len() / 2]), DataFormat::Other);
    // detect leaves the file at its start.
    let mut file = io::Cursor::new(&zip[..]);
    assert_eq!(detect(&mut file).unwrap(), DataFormat::AppleZip);
    assert_eq!(file.position(), 0);
}
