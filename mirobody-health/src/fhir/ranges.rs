//! An Observation's (or a component's) `referenceRange` and `interpretation`: the range its
//! source judged the value against, and what the source said of it (`H`, `L`, `HH`, `LL`,
//! `A`...), kept so "out of range" is answered from the data rather than guessed.

use serde_json::{Map, Value};

use super::{Concept, array_field, field, object_field, text_field};
use crate::flags::ReferenceRange;
use crate::text::cap_chars;

/// HL7's code system of interpretations, whose coding is preferred.
const INTERPRETATION_SYSTEM: &str = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation";

/// The longest range text kept, in characters; a longer one is cut.
pub(crate) const MAX_RANGE_TEXT_CHARS: usize = 200;
/// The longest interpretation kept, in characters; a longer one is cut.
pub(crate) const MAX_INTERPRETATION_CHARS: usize = 40;
/// The most `referenceRange` entries looked at: the one kept is among the first.
const MAX_RANGES: usize = 20;

/// The range kept of `object`'s `referenceRange` (at `base`): the first whose `type` is absent
/// or `normal` (the others, a therapeutic or a recommended range, are not what "out of range"
/// means), `None` when there is none. A member of the wrong type is an error naming it.
pub(super) fn reference_range(object: &Map<String, Value>, base: &str) -> Result<Option<ReferenceRange>, String> {
    let Some(ranges) = array_field(object, "referenceRange", base)? else {
        return Ok(None);
    };
    for (i, range) in ranges.iter().take(MAX_RANGES).enumerate() {
        let path = format!("{base}.referenceRange[{i}]");
        let range = range.as_object().ok_or_else(|| format!("{path} must be an object"))?;
        let kind = Concept::read_field(range, "type", &path)?;
        let normal = kind.as_ref().is_none_or(|k| k.codings.iter().any(|c| c.code == Some("normal")));
        let (low, low_unit) = bound(range, "low", &path)?;
        let (high, high_unit) = bound(range, "high", &path)?;
        let text = text_field(range, "text", &path)?.map(|t| cap_chars(t, MAX_RANGE_TEXT_CHARS).0.to_owned());
        if !normal || (low.is_none() && high.is_none() && text.is_none()) {
            continue;
        }
        // FHIR gives each bound its own unit; a range has one, the low's where both are given.
        let unit = low_unit.or(high_unit);
        return Ok(Some(ReferenceRange::from_source(low, high, unit).with_text(text)));
    }
    Ok(None)
}

/// A bound of a range (`low` or `high`, a SimpleQuantity) and its unit (else its UCUM code).
fn bound<'a>(range: &'a Map<String, Value>, key: &str, path: &str) -> Result<(Option<f64>, Option<&'a str>), String> {
    let Some(quantity) = object_field(range, key, path)? else {
        return Ok((None, None));
    };
    let at = format!("{path}.{key}");
    let value = match field(quantity, "value") {
        None => None,
        Some(v) => Some(v.as_f64().filter(|v| v.is_finite()).ok_or_else(|| format!("{at}.value must be a number"))?),
    };
    let unit = match text_field(quantity, "unit", &at)? {
        Some(unit) => Some(unit),
        None => text_field(quantity, "code", &at)?,
    };
    Ok((value, value.and(unit)))
}

/// What `object`'s `interpretation` (at `base`) says: the HL7 code of its first concept (`H`,
/// `LL`...), else its first coding's code, else its text; `None` when there is none.
pub(super) fn interpretation(object: &Map<String, Value>, base: &str) -> Result<Option<String>, String> {
    let Some(concepts) = array_field(object, "interpretation", base)? else {
        return Ok(None);
    };
    let Some(first) = concepts.first() else {
        return Ok(None);
    };
    let concept = Concept::read(first, &format!("{base}.interpretation[0]"))?;
    let code = concept
        .codings
        .iter()
        .find(|c| c.system == Some(INTERPRETATION_SYSTEM) && c.code.is_some())
        .and_then(|c| c.code)
        .or_else(|| concept.first_code())
        .or(concept.text);
    Ok(code.map(|c| cap_chars(c, MAX_INTERPRETATION_CHARS).0.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::RangeOrigin;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn the_normal_range_is_kept_with_its_unit_and_text() {
        let o = object(json!({"referenceRange": [
            {"type": {"coding": [{"code": "therapeutic"}]}, "low": {"value": 1}},
            {"low": {"value": 3.1, "unit": "mmol/l", "code": "mmol/L"}, "high": {"value": 6.2, "unit": "mmol/l"},
             "text": "3.1 to 6.2"},
        ]}));
        let range = reference_range(&o, "Observation").unwrap().unwrap();
        assert_eq!((range.low, range.high, range.unit.as_deref()), (Some(3.1), Some(6.2), Some("mmol/L")));
        assert_eq!((range.text.as_deref(), range.origin), (Some("3.1 to 6.2"), RangeOrigin::Source));
        let only_high = object(json!({"referenceRange": [{"high": {"value": 200, "code": "mg/dL"}}]}));
        let range = reference_range(&only_high, "Observation").unwrap().unwrap();
        assert_eq!((range.low, range.high, range.unit.as_deref()), (None, Some(200.0), Some("mg/dL")));
        let words = object(json!({"referenceRange": [{"text": "negative"}]}));
        assert_eq!(reference_range(&words, "Observation").unwrap().unwrap().text.as_deref(), Some("negative"));
        assert_eq!(reference_range(&object(json!({"referenceRange": []})), "Observation").unwrap(), None);
        assert_eq!(reference_range(&object(json!({})), "Observation").unwrap(), None);
        let long = object(json!({"referenceRange": [{"text": "x".repeat(5_000)}]}));
        let cut = reference_range(&long, "Observation").unwrap().unwrap().text.unwrap();
        assert!(cut.chars().count() <= MAX_RANGE_TEXT_CHARS, "a range text is bounded");
    }

    #[test]
    fn a_malformed_range_or_interpretation_names_the_field() {
        let cases = [
            (json!({"referenceRange": {}}), "Observation.referenceRange must be an array"),
            (json!({"referenceRange": [3]}), "Observation.referenceRange[0] must be an object"),
            (json!({"referenceRange": [{"low": 3}]}), "Observation.referenceRange[0].low must be an object"),
            (
                json!({"referenceRange": [{"low": {"value": "3"}}]}),
                "Observation.referenceRange[0].low.value must be a number",
            ),
            (
                json!({"referenceRange": [{"high": {"value": 1, "unit": 5}}]}),
                "Observation.referenceRange[0].high.unit must be a string",
            ),
        ];
        for (value, message) in cases {
            assert_eq!(reference_range(&object(value), "Observation").unwrap_err(), message);
        }
        let bad = object(json!({"interpretation": {"coding": []}}));
        assert_eq!(interpretation(&bad, "Observation").unwrap_err(), "Observation.interpretation must be an array");
        let bad = object(json!({"interpretation": [7]}));
        assert_eq!(interpretation(&bad, "Observation").unwrap_err(), "Observation.interpretation[0] must be an object");
    }

    #[test]
    fn the_hl7_code_is_kept_from_an_interpretation() {
        let hl7 = object(json!({"interpretation": [{"coding": [
            {"system": "http://example.org/local", "code": "HIGH"},
            {"system": INTERPRETATION_SYSTEM, "code": "HH", "display": "Critical high"},
        ]}]}));
        assert_eq!(interpretation(&hl7, "Observation").unwrap().as_deref(), Some("HH"));
        let local = object(json!({"interpretation": [{"coding": [{"code": "L"}]}]}));
        assert_eq!(interpretation(&local, "Observation").unwrap().as_deref(), Some("L"));
        let text = object(json!({"interpretation": [{"text": "Above the range"}]}));
        assert_eq!(interpretation(&text, "Observation").unwrap().as_deref(), Some("Above the range"));
        assert_eq!(interpretation(&object(json!({"interpretation": []})), "Observation").unwrap(), None);
    }
}
