//! One value `record_health_data` is asked to record, checked against the catalog: a known
//! indicator or a well-formed LOINC code, a unit of its scale (`mirobody_health::units`), a
//! value a person can have, a time that has been. A value that passes becomes a FHIR
//! Observation whose identifier is made from its source and content, so the same value
//! recorded twice is one stored value.

use serde::Deserialize;
use serde_json::{Value, json};

use mirobody_health::flags::{ReferenceRange, flag_value};
use mirobody_health::indicators::{self, Indicator};
use mirobody_health::text::{parse_time_ms, rfc3339};
use mirobody_health::units::{Scale, normalize_unit};

/// The most values one call records.
pub(crate) const MAX_VALUES: usize = 50;
/// The longest indicator name.
pub(crate) const MAX_NAME_CHARS: usize = 200;
/// The longest code (LOINC codes are at most 7 digits, a dash and a check digit).
pub(crate) const MAX_CODE_CHARS: usize = 16;
/// The longest unit (as `mirobody_health::units` reads them).
pub(crate) const MAX_UNIT_CHARS: usize = 32;
/// The longest time.
pub(crate) const MAX_TIME_CHARS: usize = 40;
/// The identifier system of recorded values.
pub(crate) const RECORDED_SYSTEM: &str = "urn:mirobody:recorded";
/// The earliest time a value may have (a person's record starts no earlier).
const EARLIEST_MS: i64 = -2_208_988_800_000; // 1900-01-01T00:00:00Z
/// How far past now a time may be: a report dated today in a time zone ahead of UTC.
const FUTURE_SLACK_MS: i64 = 36 * 3_600_000;
/// The widest value of an indicator no scale bounds.
const MAX_MAGNITUDE: f64 = 1e9;

/// A value as the model sends it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ValueInput {
    pub(crate) indicator: String,
    pub(crate) value: f64,
    #[serde(default)]
    pub(crate) unit: Option<String>,
    pub(crate) time: String,
    #[serde(default)]
    pub(crate) code: Option<String>,
    #[serde(default)]
    pub(crate) reference_low: Option<f64>,
    #[serde(default)]
    pub(crate) reference_high: Option<f64>,
}

/// A value that passed every check, ready to store.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CheckedValue {
    pub(crate) code: String,
    pub(crate) display: String,
    pub(crate) value: f64,
    /// The unit as its UCUM code.
    pub(crate) unit: Option<&'static str>,
    pub(crate) time_ms: i64,
    pub(crate) range: Option<Bounds>,
}

/// A reference range's low and high bounds, either may be absent.
pub(crate) type Bounds = (Option<f64>, Option<f64>);

/// Checks `input`: the value to store, or why it cannot be (one sentence, naming the part).
pub(crate) fn check(input: &ValueInput, now_ms: i64) -> Result<CheckedValue, String> {
    let name = input.indicator.trim();
    if name.is_empty() {
        return Err("'indicator' is empty: name what was measured (e.g. \"Glucose\").".to_owned());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("'indicator' is longer than {MAX_NAME_CHARS} characters."));
    }
    if name.chars().any(char::is_control) {
        return Err("'indicator' holds control characters.".to_owned());
    }
    let (code, display, known) = indicator_of(name, input.code.as_deref())?;
    let unit = unit_of(input.unit.as_deref(), known, &display)?;
    plausible(input.value, unit, known, &display)?;
    let time_ms = time_of(&input.time, now_ms)?;
    let range = range_of(input.reference_low, input.reference_high)?;
    Ok(CheckedValue { code, display, value: input.value, unit, time_ms, range })
}

/// The code, the name kept, and the catalog's entry if it knows the indicator.
fn indicator_of(name: &str, code: Option<&str>) -> Result<(String, String, Option<&'static Indicator>), String> {
    let by_name = indicators::lookup_name(name);
    let code = code.map(str::trim).filter(|code| !code.is_empty());
    let Some(code) = code.or_else(|| is_loinc(name).then_some(name)) else {
        return match by_name {
            Some(known) => Ok((known.code.to_owned(), known.display.to_owned(), Some(known))),
            None => Err(format!(
                "'{}' is no indicator the catalog knows: give its LOINC code in 'code' (search_health_indicators \
                 finds the known ones).",
                shown(name)
            )),
        };
    };
    if code.chars().count() > MAX_CODE_CHARS || !is_loinc(code) {
        return Err(format!(
            "code '{}' is not a LOINC code (digits, a dash and the check digit, e.g. 2345-7).",
            shown(code)
        ));
    }
    match indicators::by_code(code) {
        Some(known) => {
            // A name that is another indicator of another kind is a mistake in one or the other.
            if let Some(named) = by_name.filter(|named| named.code != known.code && !same_scale(named, known)) {
                return Err(format!(
                    "'{}' is {} ({}), but code {code} is {}: send the code of what was measured.",
                    shown(name),
                    named.display,
                    named.code,
                    known.display
                ));
            }
            Ok((known.code.to_owned(), known.display.to_owned(), Some(known)))
        }
        None if code == name => Err(format!(
            "{code} is no indicator the catalog knows: give its name in 'indicator' and the code in 'code'."
        )),
        None => Ok((code.to_owned(), name.to_owned(), None)),
    }
}

fn same_scale(a: &Indicator, b: &Indicator) -> bool {
    matches!((a.scale, b.scale), (Some(x), Some(y)) if std::ptr::eq(x, y))
}

/// Whether `code` is a LOINC code with a right check digit (LOINC's mod 10 algorithm).
pub(crate) fn is_loinc(code: &str) -> bool {
    let Some((number, check)) = code.split_once('-') else { return false };
    if number.is_empty() || number.len() > 7 || check.len() != 1 {
        return false;
    }
    if !number.bytes().chain(check.bytes()).all(|b| b.is_ascii_digit()) {
        return false;
    }
    // From the rightmost digit, every other one doubled (its digits added), then the rest.
    let mut sum = 0;
    for (i, digit) in number.bytes().rev().map(|b| u32::from(b - b'0')).enumerate() {
        sum += if i % 2 == 0 {
            let doubled = digit * 2;
            doubled / 10 + doubled % 10
        } else {
            digit
        };
    }
    let expected = (10 - sum % 10) % 10;
    u32::from(check.as_bytes()[0] - b'0') == expected
}

/// The unit as its UCUM code: one of the indicator's scale when it has one.
fn unit_of(unit: Option<&str>, known: Option<&Indicator>, display: &str) -> Result<Option<&'static str>, String> {
    let scale = known.and_then(|k| k.scale);
    let Some(text) = unit.map(str::trim).filter(|u| !u.is_empty()) else {
        return match scale {
            Some(scale) => Err(format!("{display} needs its unit: one of {}.", scale.unit_names().join(", "))),
            None => Ok(None),
        };
    };
    if text.chars().count() > MAX_UNIT_CHARS {
        return Err(format!("unit is longer than {MAX_UNIT_CHARS} characters."));
    }
    // Reports print cell counts as "x10^9/L".
    let plain = text.strip_prefix(['x', 'X', '×']).filter(|rest| rest.starts_with("10"));
    let code = normalize_unit(text).or_else(|| plain.and_then(normalize_unit));
    match (code, scale) {
        (Some(code), Some(scale)) if scale.units.iter().any(|u| u.unit == code) => Ok(Some(code)),
        (_, Some(scale)) => Err(format!(
            "unit '{}' is not one {} is measured in: use one of {}.",
            shown(text),
            scale.name,
            scale.unit_names().join(", ")
        )),
        (Some(code), None) => Ok(Some(code)),
        (None, None) => Err(format!("unit '{}' is no unit this server knows (give its UCUM code).", shown(text))),
    }
}

/// The values a person can have, by scale, in the scale's first unit: wider than any living
/// person's, so that what falls outside is a misread value or unit.
fn plausible_bounds(scale: &Scale) -> Option<(f64, f64)> {
    Some(match scale.name {
        "glucose" => (0.5, 150.0),
        "cholesterol" => (0.1, 60.0),
        "triglycerides" => (0.05, 200.0),
        "creatinine" => (5.0, 5_000.0),
        "urea nitrogen" => (0.1, 150.0),
        "HbA1c" => (5.0, 200.0),
        "body mass" => (0.2, 700.0),
        "length" => (1.0, 300.0),
        "temperature" => (20.0, 46.0),
        "hemoglobin" => (1.0, 30.0),
        "protein" => (0.1, 20.0),
        "calcium" => (1.0, 25.0),
        "bilirubin" => (0.0, 60.0),
        "electrolyte" => (0.1, 250.0),
        "vitamin D" => (0.0, 500.0),
        "cell count" => (0.0, 5_000.0),
        "red cell count" => (0.1, 15.0),
        "pressure" => (10.0, 350.0),
        "energy" => (0.0, 100_000.0),
        "duration" => (0.0, 48.0),
        "eGFR" => (0.0, 300.0),
        "enzyme activity" => (0.0, 100_000.0),
        "cell volume" => (10.0, 200.0),
        "thyrotropin" => (0.0, 1_000.0),
        "rate" => (0.0, 400.0),
        "percentage" => (0.0, 100.0),
        "body mass index" => (5.0, 150.0),
        _ => return None,
    })
}

fn plausible(value: f64, unit: Option<&str>, known: Option<&Indicator>, display: &str) -> Result<(), String> {
    if !value.is_finite() || value.abs() > MAX_MAGNITUDE {
        return Err(format!("value {value} is not a measurement."));
    }
    let Some((scale, unit)) = known.and_then(|k| k.scale).zip(unit) else { return Ok(()) };
    let Some((low, high)) = plausible_bounds(scale) else { return Ok(()) };
    let base = scale.units[0].unit;
    let in_base = scale.convert(value, unit, base).unwrap_or(value);
    if (low..=high).contains(&in_base) {
        return Ok(());
    }
    let (low, high) = (in_unit(scale, low, unit), in_unit(scale, high, unit));
    Err(format!(
        "{value} {unit} is not a plausible {display} (between {low} and {high} {unit}): check the value and its unit."
    ))
}

fn in_unit(scale: &Scale, base_value: f64, unit: &str) -> f64 {
    let value = scale.convert(base_value, scale.units[0].unit, unit).unwrap_or(base_value);
    (value * 1000.0).round() / 1000.0
}

fn time_of(text: &str, now_ms: i64) -> Result<i64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("'time' is empty: give the date or time it was measured (e.g. 2026-01-15).".to_owned());
    }
    if text.chars().count() > MAX_TIME_CHARS {
        return Err(format!("'time' is longer than {MAX_TIME_CHARS} characters."));
    }
    let Some(time_ms) = parse_time_ms(text) else {
        return Err(format!(
            "'time' {} is not a date (2026-01-15) or an RFC 3339 time (2026-01-15T08:30:00Z).",
            shown(text)
        ));
    };
    if time_ms > now_ms + FUTURE_SLACK_MS {
        return Err(format!("'time' {text} is in the future."));
    }
    if time_ms < EARLIEST_MS {
        return Err(format!("'time' {text} is before 1900."));
    }
    Ok(time_ms)
}

fn range_of(low: Option<f64>, high: Option<f64>) -> Result<Option<Bounds>, String> {
    for bound in [low, high].into_iter().flatten() {
        if !bound.is_finite() || bound.abs() > MAX_MAGNITUDE {
            return Err(format!("reference bound {bound} is not a number of the value's unit."));
        }
    }
    if let (Some(low), Some(high)) = (low, high)
        && low > high
    {
        return Err(format!("reference_low {low} is above reference_high {high}."));
    }
    Ok((low.is_some() || high.is_some()).then_some((low, high)))
}

/// `text` as a message shows it: at most 60 characters.
fn shown(text: &str) -> &str {
    mirobody_health::text::cap_chars(text, 60).0
}

impl CheckedValue {
    /// The identifier of this value from `source` (a file key, or none for the person): the
    /// same value from the same source is the same identifier, so it is stored once.
    pub(crate) fn identifier(&self, source: Option<&str>) -> String {
        let source = source.map_or_else(|| "person".to_owned(), |key| format!("file:{key}"));
        format!("{source}|{}|{}|{}|{}", self.code, self.time_ms, self.value, self.unit.unwrap_or(""))
    }

    /// The FHIR Observation this value is stored as.
    pub(crate) fn observation(&self, source: Option<&str>) -> Value {
        let mut quantity = json!({"value": self.value});
        if let Some(unit) = self.unit {
            quantity = json!({"value": self.value, "unit": unit, "system": "http://unitsofmeasure.org", "code": unit});
        }
        let mut observation = json!({
            "resourceType": "Observation",
            "status": "final",
            "identifier": [{"system": RECORDED_SYSTEM, "value": self.identifier(source)}],
            "code": {"coding": [{"system": "http://loinc.org", "code": self.code, "display": self.display}], "text": self.display},
            "effectiveDateTime": rfc3339(self.time_ms),
            "valueQuantity": quantity,
        });
        if let Some((low, high)) = self.range {
            let bound = |value: Option<f64>| {
                value.map(|v| match self.unit {
                    Some(unit) => {
                        json!({"value": v, "unit": unit, "system": "http://unitsofmeasure.org", "code": unit})
                    }
                    None => json!({"value": v}),
                })
            };
            let mut range = serde_json::Map::new();
            if let Some(low) = bound(low) {
                range.insert("low".into(), low);
            }
            if let Some(high) = bound(high) {
                range.insert("high".into(), high);
            }
            observation["referenceRange"] = json!([range]);
        }
        let note = match source {
            Some(_) => "Recorded by the assistant from the person's uploaded file.",
            None => "Recorded by the assistant as the person told it.",
        };
        observation["note"] = json!([{"text": note}]);
        observation
    }

    /// Low, normal or high: against the range given with the value, else the catalog's.
    pub(crate) fn flag(&self) -> Option<&'static str> {
        let source = self.range.map(|(low, high)| ReferenceRange::from_source(low, high, self.unit));
        flag_value(&self.code, self.value, self.unit, source.as_ref()).map(|f| f.flag.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirobody_health::fhir::{EntryInput, ImportItem, parse_observation};

    /// 2026-06-01T00:00:00Z, the tests' now.
    const NOW: i64 = 1_780_272_000_000;

    fn input(indicator: &str, value: f64, unit: Option<&str>, time: &str) -> ValueInput {
        ValueInput {
            indicator: indicator.into(),
            value,
            unit: unit.map(Into::into),
            time: time.into(),
            ..ValueInput::default()
        }
    }

    fn refused(input: ValueInput) -> String {
        check(&input, NOW).expect_err("refused")
    }

    #[test]
    fn the_lab_reports_values_pass_with_their_catalog_codes_and_ucum_units() {
        let glucose = check(&input("Glucose", 5.4, Some("mmol/L"), "2026-01-15"), NOW).unwrap();
        assert_eq!((glucose.code.as_str(), glucose.unit), ("2339-0", Some("mmol/L")));
        assert_eq!(glucose.time_ms, parse_time_ms("2026-01-15").unwrap());
        assert_eq!(glucose.flag(), Some("normal"));
        let platelets = check(&input("Platelets", 250.0, Some("x10^9/L"), "2026-01-15"), NOW).unwrap();
        assert_eq!((platelets.code.as_str(), platelets.unit), ("777-3", Some("10*9/L")), "x10^9/L as reports print it");
        let hemoglobin = check(&input("Hemoglobin", 14.1, Some("g/dL"), "2026-01-15"), NOW).unwrap();
        assert_eq!(hemoglobin.code, "718-7");
        assert_eq!(hemoglobin.flag(), None, "the catalog has no range for it (it depends on sex)");
        // The range printed beside it flags it.
        let with_range = ValueInput {
            reference_low: Some(13.5),
            reference_high: Some(17.5),
            ..input("Hemoglobin", 12.0, Some("g/dL"), "2026-01-15")
        };
        assert_eq!(check(&with_range, NOW).unwrap().flag(), Some("low"));
        // A code the catalog lacks, named, is kept under its name.
        let coded = ValueInput { code: Some("2276-4".into()), ..input("Ferritin", 80.0, Some("ng/mL"), "2026-01-15") };
        let ferritin = check(&coded, NOW).unwrap();
        assert_eq!((ferritin.code.as_str(), ferritin.display.as_str()), ("2276-4", "Ferritin"));
        // An indicator without a unit of its own needs none.
        assert!(check(&input("pain score", 3.0, None, "2026-01-15"), NOW).is_ok());
    }

    #[test]
    fn loinc_check_digits_are_checked() {
        for good in ["2345-7", "2339-0", "718-7", "777-3", "8480-6", "33914-3", "2276-4", "4548-4"] {
            assert!(is_loinc(good), "{good}");
        }
        for bad in ["2345-8", "2345", "-7", "2345-77", "23a5-7", "12345678-9", "", "2345-x"] {
            assert!(!is_loinc(bad), "{bad}");
        }
    }

    #[test]
    fn an_unknown_indicator_or_a_bad_code_is_refused() {
        assert!(refused(input("Wellness vibes", 1.0, None, "2026-01-15")).contains("no indicator the catalog knows"));
        let bad_code =
            ValueInput { code: Some("2345-8".into()), ..input("Glucose", 5.4, Some("mmol/L"), "2026-01-15") };
        assert!(refused(bad_code).contains("not a LOINC code"));
        assert!(refused(input("9999-4", 1.0, None, "2026-01-15")).contains("give its name"), "an unknown code alone");
        let mismatch =
            ValueInput { code: Some("2093-3".into()), ..input("Platelets", 250.0, Some("10^9/L"), "2026-01-15") };
        let why = refused(mismatch);
        assert!(why.contains("777-3") && why.contains("2093-3"), "{why}");
        assert!(refused(input("  ", 1.0, None, "2026-01-15")).contains("'indicator' is empty"));
        assert!(refused(input(&"g".repeat(MAX_NAME_CHARS + 1), 1.0, None, "2026-01-15")).contains("longer than"));
        assert!(refused(input("Glu\u{7}cose", 1.0, None, "2026-01-15")).contains("control characters"));
        let long_code =
            ValueInput { code: Some("1".repeat(40)), ..input("Glucose", 5.4, Some("mmol/L"), "2026-01-15") };
        assert!(refused(long_code).contains("not a LOINC code"));
    }

    #[test]
    fn a_unit_the_indicator_is_not_measured_in_is_refused() {
        let why = refused(input("Glucose", 5.4, Some("kg"), "2026-01-15"));
        assert!(why.contains("not one glucose is measured in") && why.contains("mmol/L, mg/dL"), "{why}");
        assert!(refused(input("Glucose", 5.4, None, "2026-01-15")).contains("needs its unit"));
        assert!(refused(input("Glucose", 5.4, Some("furlongs"), "2026-01-15")).contains("not one glucose"));
        assert!(
            refused(input("pain score", 3.0, Some("furlongs"), "2026-01-15")).contains("no unit this server knows")
        );
        assert!(
            refused(input("Glucose", 5.4, Some(&"m".repeat(MAX_UNIT_CHARS + 1)), "2026-01-15")).contains("longer than")
        );
    }

    #[test]
    fn an_implausible_value_is_refused_in_its_own_unit() {
        // 5.4 is a glucose in mmol/L, never in mg/dL; 80 a creatinine in umol/L, not in mg/dL.
        let why = refused(input("Glucose", 5.4, Some("mg/dL"), "2026-01-15"));
        assert!(why.contains("not a plausible") && why.contains("between 9.008 and 2702.4 mg/dL"), "{why}");
        assert!(check(&input("Glucose", 95.0, Some("mg/dL"), "2026-01-15"), NOW).is_ok());
        assert!(refused(input("Creatinine", 80.0, Some("mg/dL"), "2026-01-15")).contains("not a plausible"));
        assert!(check(&input("Creatinine", 80.0, Some("umol/L"), "2026-01-15"), NOW).is_ok());
        assert!(refused(input("Body temperature", 98.6, Some("Cel"), "2026-01-15")).contains("not a plausible"));
        assert!(check(&input("Body temperature", 98.6, Some("[degF]"), "2026-01-15"), NOW).is_ok());
        assert!(refused(input("Glucose", -1.0, Some("mmol/L"), "2026-01-15")).contains("not a plausible"));
        assert!(refused(input("pain score", 1e12, None, "2026-01-15")).contains("not a measurement"));
    }

    #[test]
    fn every_scale_has_plausible_bounds_that_hold_its_catalog_ranges() {
        for scale in mirobody_health::units::SCALES {
            let (low, high) =
                plausible_bounds(scale).unwrap_or_else(|| panic!("{} has no plausible bounds", scale.name));
            assert!(low < high, "{}", scale.name);
        }
        for indicator in indicators::catalog() {
            let (Some(scale), Some(range)) = (indicator.scale, indicator.range) else { continue };
            let (low, high) = plausible_bounds(scale).unwrap();
            for bound in [range.low, range.high].into_iter().flatten() {
                let base = scale.convert(bound, range.unit, scale.units[0].unit).unwrap();
                assert!((low..=high).contains(&base), "{}: its normal range is plausible", indicator.code);
            }
        }
    }

    #[test]
    fn a_time_that_is_not_a_past_date_is_refused() {
        assert!(refused(input("Glucose", 5.4, Some("mmol/L"), "")).contains("'time' is empty"));
        assert!(refused(input("Glucose", 5.4, Some("mmol/L"), "last Tuesday")).contains("not a date"));
        assert!(refused(input("Glucose", 5.4, Some("mmol/L"), "2027-01-01")).contains("in the future"));
        assert!(refused(input("Glucose", 5.4, Some("mmol/L"), "1850-01-01")).contains("before 1900"));
        assert!(
            refused(input("Glucose", 5.4, Some("mmol/L"), &"2".repeat(MAX_TIME_CHARS + 1))).contains("longer than")
        );
        assert!(check(&input("Glucose", 5.4, Some("mmol/L"), "2026-06-01T20:00:00+08:00"), NOW).is_ok());
    }

    #[test]
    fn a_reference_range_upside_down_is_refused() {
        let upside_down = ValueInput {
            reference_low: Some(5.5),
            reference_high: Some(3.9),
            ..input("Glucose", 5.4, Some("mmol/L"), "2026-01-15")
        };
        assert!(refused(upside_down).contains("is above reference_high"));
    }

    #[test]
    fn the_same_value_from_the_same_source_is_the_same_observation() {
        let value = check(&input("Glucose", 5.4, Some("mmol/l"), "2026-01-15"), NOW).unwrap();
        let again = check(&input(" glucose ", 5.4, Some("MMOL/L"), "2026-01-15T00:00:00Z"), NOW).unwrap();
        assert_eq!(value.identifier(Some("up-1")), again.identifier(Some("up-1")), "spellings aside");
        assert_ne!(value.identifier(Some("up-1")), value.identifier(Some("up-2")));
        assert_ne!(value.identifier(Some("up-1")), value.identifier(None));
        let other = check(&input("Glucose", 5.5, Some("mmol/L"), "2026-01-15"), NOW).unwrap();
        assert_ne!(value.identifier(None), other.identifier(None));
        // What is stored: the importer reads it back as this value, under the identifier.
        let ValueInput { reference_low, .. } = ValueInput::default();
        assert_eq!(reference_low, None);
        let parsed = parse_observation(&value.observation(Some("up-1"))).unwrap().entries.pop();
        let Some(EntryInput::Item(ImportItem::Observation(observation))) = parsed else { panic!("{parsed:?}") };
        assert_eq!(observation.source_id, format!("Observation|{RECORDED_SYSTEM}|{}", value.identifier(Some("up-1"))));
        assert_eq!(observation.points.len(), 1);
        let point = &observation.points[0];
        assert_eq!((point.code.as_str(), point.value, point.unit.as_deref()), ("2339-0", Some(5.4), Some("mmol/L")));
        assert_eq!(point.time_ms, value.time_ms);
    }
}
