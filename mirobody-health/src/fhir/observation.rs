//! A FHIR Observation read into its indicator values: the code, the time, and one
//! [`HealthPoint`] for its own value and one for each component's (a blood-pressure panel's
//! systolic and diastolic).

use serde_json::{Map, Value};

use super::{
    Concept, EntryInput, HealthPoint, ImportItem, NewObservation, Target, array_field, field, first_time, ranges,
    revision, source_id, str_field,
};
use crate::flags::ReferenceRange;
use crate::text::{cap_chars, parse_time_ms};

/// LOINC's system URI, whose coding an Observation's code prefers.
const LOINC: &str = "http://loinc.org";

/// Where an Observation's time is read from, the first present one winning.
pub(super) const TIME_FIELDS: [&str; 4] = ["effectiveDateTime", "effectiveInstant", "effectivePeriod.start", "issued"];

/// The `value[x]` members read, in the order they are tried.
const VALUE_FIELDS: [&str; 7] = [
    "valueQuantity",
    "valueCodeableConcept",
    "valueString",
    "valueInteger",
    "valueBoolean",
    "valueDateTime",
    "valueTime",
];

/// Reads one Observation resource (`object` is `resource` as an object).
pub(super) fn parse(resource: &Value, object: &Map<String, Value>) -> EntryInput {
    parse_with(resource, object, None)
}

/// [`parse`], the Observation taking `report_time` (that of a DiagnosticReport or panel
/// listing it) when it has no time of its own.
pub(super) fn parse_with(resource: &Value, object: &Map<String, Value>, report_time: Option<i64>) -> EntryInput {
    read(resource, object, report_time).unwrap_or_else(EntryInput::Invalid)
}

/// [`parse_with`], with `?` for the first problem found.
fn read(resource: &Value, object: &Map<String, Value>, report_time: Option<i64>) -> Result<EntryInput, String> {
    /// The start of every path in a message.
    const BASE: &str = "Observation";
    if str_field(object, "status", BASE)? == Some("entered-in-error") {
        return revision::entered_in_error(Target::Observation, BASE, resource, object);
    }
    let (code, display) = code_of(object, BASE)?;
    let time_ms = first_time(object, BASE, &TIME_FIELDS)?.or(report_time).ok_or_else(|| {
        "Observation has no time: none of effectiveDateTime, effectiveInstant, effectivePeriod.start or issued, \
         and no DiagnosticReport or panel of the request with a time lists it"
            .to_owned()
    })?;
    let mut points = Vec::new();
    if let Some(value) = value_of(object, BASE)? {
        points.push(value.judged(object, BASE)?.point(&code, &display, time_ms));
    }
    for (i, component) in array_field(object, "component", BASE)?.into_iter().flatten().enumerate() {
        let path = format!("Observation.component[{i}]");
        let component = component.as_object().ok_or_else(|| format!("{path} must be an object"))?;
        let (code, display) = code_of(component, &path)?;
        // A component without a value (dataAbsentReason) gives no point.
        if let Some(value) = value_of(component, &path)? {
            points.push(value.judged(component, &path)?.point(&code, &display, time_ms));
        }
    }
    let source_id = source_id("Observation", resource, object)?;
    Ok(EntryInput::Item(ImportItem::Observation(NewObservation {
        source_id,
        code,
        time_ms,
        resource: resource.clone(),
        points,
    })))
}

/// The code and display of the `code` of `object` (an Observation or a component at `base`):
/// the LOINC coding if there is one, else the first with a code, else `text:` and the text.
fn code_of(object: &Map<String, Value>, base: &str) -> Result<(String, String), String> {
    let missing = || format!("{base}.code has no coding code or text");
    let concept = Concept::read_field(object, "code", base)?.ok_or_else(missing)?;
    let coding = concept
        .codings
        .iter()
        .find(|c| c.system == Some(LOINC) && c.code.is_some())
        .or_else(|| concept.codings.iter().find(|c| c.code.is_some()));
    match (coding.and_then(|c| c.code.map(|code| (code, c.display))), concept.text) {
        (Some((code, display)), text) => Ok((code.to_owned(), display.or(text).unwrap_or(code).to_owned())),
        (None, Some(text)) => Ok((format!("text:{}", text.to_lowercase()), text.to_owned())),
        (None, None) => Err(missing()),
    }
}

/// A value read from `value[x]`.
#[derive(Debug, PartialEq)]
struct Reading {
    /// The number, if it is one.
    value: Option<f64>,
    /// The text, if it is not a number (or a bound like `<5`).
    text: Option<String>,
    /// The unit of the number.
    unit: Option<String>,
    /// The source's reference range for it.
    range: Option<ReferenceRange>,
    /// The source's interpretation of it.
    interpretation: Option<String>,
}

impl Reading {
    /// The point this value is for the indicator `code` at `time_ms`.
    fn point(self, code: &str, display: &str, time_ms: i64) -> HealthPoint {
        HealthPoint {
            code: code.to_owned(),
            display: display.to_owned(),
            time_ms,
            value: self.value,
            value_text: self.text,
            unit: self.unit,
            range: self.range,
            interpretation: self.interpretation,
        }
    }

    /// This value with the reference range and interpretation `object` (at `base`) gives it.
    fn judged(mut self, object: &Map<String, Value>, base: &str) -> Result<Self, String> {
        self.range = ranges::reference_range(object, base)?;
        self.interpretation = ranges::interpretation(object, base)?;
        Ok(self)
    }

    /// A value that is only text.
    fn text(text: impl Into<String>) -> Self {
        Self { value: None, text: Some(text.into()), unit: None, range: None, interpretation: None }
    }
}

/// The value of `object` (an Observation or a component at `base`), `None` when it has none
/// (or only a kind not read, such as `valueRatio`). Two `value[x]` members are an error: which
/// one is meant cannot be known.
fn value_of(object: &Map<String, Value>, base: &str) -> Result<Option<Reading>, String> {
    let present: Vec<&str> = VALUE_FIELDS.into_iter().filter(|key| field(object, key).is_some()).collect();
    let key = match present[..] {
        [] => return Ok(None),
        [key] => key,
        _ => return Err(format!("{base} has more than one value[x]: {}", present.join(", "))),
    };
    let path = format!("{base}.{key}");
    let value = field(object, key).unwrap_or(&Value::Null);
    let reading = match key {
        "valueQuantity" => quantity(value, &path)?,
        "valueCodeableConcept" => {
            let concept = Concept::read(value, &path)?;
            let label = concept.label().ok_or_else(|| format!("{path} has no text, coding display or code"))?;
            Reading::text(label)
        }
        "valueInteger" => match value.as_i64() {
            // f64 holds every integer FHIR's 32-bit valueInteger can.
            Some(n) => Reading { value: Some(n as f64), text: None, unit: None, range: None, interpretation: None },
            None => return Err(format!("{path} must be an integer")),
        },
        "valueBoolean" => match value.as_bool() {
            Some(b) => Reading::text(b.to_string()),
            None => return Err(format!("{path} must be true or false")),
        },
        "valueDateTime" => match value.as_str() {
            Some(text) if parse_time_ms(text).is_some() => Reading::text(text),
            Some(text) => return Err(format!("{path} {:?} is not a FHIR dateTime", cap_chars(text, 40).0)),
            None => return Err(format!("{path} must be a string")),
        },
        // valueString and valueTime: text as given.
        _ => match value.as_str() {
            Some(text) => Reading::text(text),
            None => return Err(format!("{path} must be a string")),
        },
    };
    Ok(Some(reading))
}

/// A `Quantity` at `path`: its number, and its `unit` (else its UCUM `code`). A comparator
/// (`<`, `>=`...) is kept in the text (`<5`) so a bound is not read as an exact value alone.
fn quantity(value: &Value, path: &str) -> Result<Reading, String> {
    let quantity = value.as_object().ok_or_else(|| format!("{path} must be an object"))?;
    let number =
        field(quantity, "value").and_then(Value::as_f64).ok_or_else(|| format!("{path}.value must be a number"))?;
    let unit = match str_field(quantity, "unit", path)?.map(str::trim).filter(|u| !u.is_empty()) {
        Some(unit) => Some(unit),
        None => str_field(quantity, "code", path)?.map(str::trim).filter(|u| !u.is_empty()),
    };
    let text = match str_field(quantity, "comparator", path)? {
        Some(comparator @ ("<" | "<=" | ">=" | ">")) => Some(format!("{comparator}{number}")),
        Some(other) => return Err(format!("{path}.comparator {:?} is not <, <=, >= or >", cap_chars(other, 10).0)),
        None => None,
    };
    Ok(Reading { value: Some(number), text, unit: unit.map(str::to_owned), range: None, interpretation: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(resource: Value) -> EntryInput {
        parse(&resource, resource.as_object().unwrap())
    }

    fn observation(resource: Value) -> NewObservation {
        match parsed(resource) {
            EntryInput::Item(ImportItem::Observation(o)) => o,
            other => panic!("not an observation: {other:?}"),
        }
    }

    fn invalid(resource: Value) -> String {
        match parsed(resource) {
            EntryInput::Invalid(reason) => reason,
            other => panic!("not invalid: {other:?}"),
        }
    }

    fn with(extra: Value) -> Value {
        let mut resource = json!({
            "resourceType": "Observation", "status": "final",
            "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0", "display": "Glucose"}]},
            "effectiveDateTime": "2026-01-02T08:00:00Z",
        });
        for (key, value) in extra.as_object().unwrap() {
            resource[key] = value.clone();
        }
        resource
    }

    const AT: i64 = 1_767_340_800_000;

    #[test]
    fn a_quantity_is_one_point() {
        let o = observation(with(json!({"valueQuantity": {"value": 5.4, "unit": "mmol/L", "code": "mmol/L"}})));
        assert_eq!((o.code.as_str(), o.time_ms), ("2339-0", AT));
        assert_eq!(
            o.points,
            [HealthPoint {
                code: "2339-0".into(),
                display: "Glucose".into(),
                time_ms: AT,
                value: Some(5.4),
                value_text: None,
                unit: Some("mmol/L".into()),
                range: None,
                interpretation: None,
            }]
        );
        let ucum = observation(with(json!({"valueQuantity": {"value": 96, "code": "mg/dL"}})));
        assert_eq!((ucum.points[0].value, ucum.points[0].unit.as_deref()), (Some(96.0), Some("mg/dL")));
        let bound = observation(with(json!({"valueQuantity": {"value": 5, "comparator": "<"}})));
        assert_eq!((bound.points[0].value, bound.points[0].value_text.as_deref()), (Some(5.0), Some("<5")));
    }

    #[test]
    fn blood_pressure_components_are_points_of_their_own() {
        let o = observation(json!({
            "resourceType": "Observation", "status": "final",
            "code": {"coding": [{"system": "http://loinc.org", "code": "85354-9", "display": "Blood pressure panel"}]},
            "effectivePeriod": {"start": "2026-01-02T08:00:00Z"},
            "component": [
                {"code": {"coding": [{"system": "http://loinc.org", "code": "8480-6", "display": "Systolic"}]},
                 "valueQuantity": {"value": 120, "unit": "mmHg"}},
                {"code": {"coding": [{"system": "http://snomed.info/sct", "code": "271650006"},
                                     {"system": "http://loinc.org", "code": "8462-4", "display": "Diastolic"}]},
                 "valueQuantity": {"value": 80, "unit": "mmHg"}},
                {"code": {"text": "Mean"}, "dataAbsentReason": {"text": "not measured"}},
            ],
        }));
        assert_eq!((o.code.as_str(), o.time_ms), ("85354-9", AT));
        let points: Vec<(&str, &str, Option<f64>, Option<&str>)> =
            o.points.iter().map(|p| (p.code.as_str(), p.display.as_str(), p.value, p.unit.as_deref())).collect();
        assert_eq!(
            points,
            [("8480-6", "Systolic", Some(120.0), Some("mmHg")), ("8462-4", "Diastolic", Some(80.0), Some("mmHg"))]
        );
        let bad = invalid(json!({
            "resourceType": "Observation",
            "code": {"text": "BP"},
            "effectiveDateTime": "2026-01-02",
            "component": [
                {"code": {"text": "Systolic"}, "valueQuantity": {"value": 120}},
                {"code": {"text": "Diastolic"}, "valueQuantity": {"value": "80"}},
            ],
        }));
        assert_eq!(bad, "Observation.component[1].valueQuantity.value must be a number");
        let no_code = invalid(with(json!({"component": [{"valueQuantity": {"value": 1}}]})));
        assert_eq!(no_code, "Observation.component[0].code has no coding code or text");
        assert_eq!(invalid(with(json!({"component": {}}))), "Observation.component must be an array");
        assert_eq!(invalid(with(json!({"component": [3]}))), "Observation.component[0] must be an object");
    }

    #[test]
    fn coded_string_and_other_values_are_text() {
        let coded = observation(with(json!({"valueCodeableConcept": {"coding": [
            {"system": "http://snomed.info/sct", "code": "10828004", "display": "Positive"},
        ]}})));
        assert_eq!((coded.points[0].value, coded.points[0].value_text.as_deref()), (None, Some("Positive")));
        let text = observation(with(json!({"valueCodeableConcept": {"text": "Negative", "coding": [{"code": "x"}]}})));
        assert_eq!(text.points[0].value_text.as_deref(), Some("Negative"));
        let string = observation(with(json!({"valueString": "trace"})));
        assert_eq!((string.points[0].value_text.as_deref(), string.points[0].unit.as_deref()), (Some("trace"), None));
        let integer = observation(with(json!({"valueInteger": 7})));
        assert_eq!(integer.points[0].value, Some(7.0));
        let boolean = observation(with(json!({"valueBoolean": false})));
        assert_eq!(boolean.points[0].value_text.as_deref(), Some("false"));
        let when = observation(with(json!({"valueDateTime": "2025-12-31"})));
        assert_eq!(when.points[0].value_text.as_deref(), Some("2025-12-31"));
        let absent = observation(with(json!({"dataAbsentReason": {"text": "asked but unknown"}})));
        assert_eq!((absent.code.as_str(), absent.points.len()), ("2339-0", 0));
    }

    #[test]
    fn wrong_types_are_invalid_with_the_field_named() {
        let cases = [
            (json!({"valueQuantity": {"value": "5.4"}}), "Observation.valueQuantity.value must be a number"),
            (json!({"valueQuantity": {"unit": "mg/dL"}}), "Observation.valueQuantity.value must be a number"),
            (json!({"valueQuantity": 5.4}), "Observation.valueQuantity must be an object"),
            (json!({"valueQuantity": {"value": 1, "unit": 5}}), "Observation.valueQuantity.unit must be a string"),
            (json!({"valueInteger": 1.5}), "Observation.valueInteger must be an integer"),
            (json!({"valueBoolean": "yes"}), "Observation.valueBoolean must be true or false"),
            (json!({"valueString": 5}), "Observation.valueString must be a string"),
            (
                json!({"valueCodeableConcept": {}}),
                "Observation.valueCodeableConcept has no text, coding display or code",
            ),
            (
                json!({"valueString": "a", "valueInteger": 1}),
                "Observation has more than one value[x]: valueString, valueInteger",
            ),
            (json!({"code": "2339-0"}), "Observation.code must be an object"),
            (json!({"code": {"coding": {"code": "2339-0"}}}), "Observation.code.coding must be an array"),
            (json!({"code": {"coding": ["2339-0"]}}), "Observation.code.coding[0] must be an object"),
            (json!({"code": {"coding": [{"code": 2339}]}}), "Observation.code.coding[0].code must be a string"),
            (json!({"status": 1}), "Observation.status must be a string"),
            (
                json!({"effectiveDateTime": "yesterday"}),
                "Observation.effectiveDateTime \"yesterday\" is not a FHIR date or dateTime",
            ),
            (json!({"effectiveDateTime": 20260102}), "Observation.effectiveDateTime must be a string"),
        ];
        for (extra, reason) in cases {
            assert_eq!(invalid(with(extra.clone())), reason, "{extra}");
        }
    }

    #[test]
    fn codes_prefer_loinc_then_any_code_then_text() {
        let other_first = observation(with(json!({"code": {"coding": [
            {"system": "http://snomed.info/sct", "code": "33747003", "display": "Glucose measurement"},
            {"system": "http://loinc.org", "code": "2339-0"},
        ], "text": "Blood sugar"}})));
        assert_eq!((other_first.code.as_str(), other_first.points.len()), ("2339-0", 0));
        let vq = with(json!({"code": {"coding": [{"system": "urn:local", "code": "GLU"}], "text": "Blood sugar"},
                              "valueQuantity": {"value": 5}}));
        let local = observation(vq);
        assert_eq!((local.points[0].code.as_str(), local.points[0].display.as_str()), ("GLU", "Blood sugar"));
        let text = observation(with(json!({"code": {"text": "Mood Score"}, "valueInteger": 4})));
        assert_eq!((text.code.as_str(), text.points[0].display.as_str()), ("text:mood score", "Mood Score"));
        let bare = observation(with(json!({"code": {"coding": [{"code": "X1"}]}, "valueInteger": 4})));
        assert_eq!(bare.points[0].display, "X1");
        assert_eq!(
            invalid(with(json!({"code": {"coding": [{"display": "Glucose"}]}}))),
            "Observation.code has no coding code or text"
        );
        let mut no_code = with(json!({}));
        no_code.as_object_mut().unwrap().remove("code");
        assert_eq!(invalid(no_code), "Observation.code has no coding code or text");
    }

    #[test]
    fn times_come_from_the_first_effective_field_or_issued() {
        let mut issued = with(json!({"issued": "2026-01-03T00:00:00.000Z"}));
        issued.as_object_mut().unwrap().remove("effectiveDateTime");
        assert_eq!(observation(issued.clone()).time_ms, AT + 16 * 3_600_000);
        issued["effectiveInstant"] = json!("2026-01-02T09:00:00+01:00");
        assert_eq!(observation(issued.clone()).time_ms, AT, "an offset is honoured");
        issued.as_object_mut().unwrap().remove("effectiveInstant");
        issued.as_object_mut().unwrap().remove("issued");
        assert!(invalid(issued).starts_with("Observation has no time"));
        assert_eq!(observation(with(json!({"effectiveDateTime": "2026-01-02"}))).time_ms, AT - 8 * 3_600_000);
    }

    #[test]
    fn entered_in_error_removes_the_stored_one() {
        assert_eq!(
            parsed(with(json!({"id": "g-1", "status": "entered-in-error", "valueQuantity": {"value": 1}}))),
            EntryInput::Item(ImportItem::Remove(super::super::Removal {
                target: Target::Observation,
                source_id: "Observation/g-1".into(),
                reason: super::super::RemovalReason::EnteredInError,
            }))
        );
    }
}
