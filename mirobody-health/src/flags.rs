//! Whether a value is low, normal or high: against the range its source gave, else the
//! catalog's adult range, converted to the value's unit. A range in a unit the value's cannot
//! be converted from gives no flag, never a wrong one.

use serde::{Deserialize, Serialize};

use crate::indicators;
use crate::units::{Scale, normalize_unit, unit_key};

/// Where a value stands against its reference range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Flag {
    /// Below the range's critical bound.
    CriticalLow,
    /// Below the range.
    Low,
    /// Within the range, bounds included.
    Normal,
    /// Above the range.
    High,
    /// Above the range's critical bound.
    CriticalHigh,
    /// Outside the normal, as the source said without saying which way (HL7's `A`).
    Abnormal,
}

impl Flag {
    /// The flag as a word: `low`, `normal`, `critical_high`...
    pub fn as_str(self) -> &'static str {
        match self {
            Flag::CriticalLow => "critical_low",
            Flag::Low => "low",
            Flag::Normal => "normal",
            Flag::High => "high",
            Flag::CriticalHigh => "critical_high",
            Flag::Abnormal => "abnormal",
        }
    }

    /// The flag a source's interpretation code states (HL7 v3 ObservationInterpretation: `L`,
    /// `H`, `LL`, `HH`, `N`, `A`, `AA`, `LU`, `HU`, `<`, `>`), `None` for one that says no
    /// flag (susceptibility, detected...) or is not known.
    pub fn from_interpretation(code: &str) -> Option<Flag> {
        Some(match code.trim() {
            "L" | "LU" | "<" => Flag::Low,
            "H" | "HU" | ">" => Flag::High,
            "LL" => Flag::CriticalLow,
            "HH" => Flag::CriticalHigh,
            "N" => Flag::Normal,
            "A" | "AA" => Flag::Abnormal,
            _ => return None,
        })
    }
}

/// Whose range a value was flagged against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RangeOrigin {
    /// The source's own (a FHIR Observation's `referenceRange`, a laboratory's report).
    Source,
    /// The catalog's adult range, used where the source gave none.
    Catalog,
}

/// A reference range, bounds inclusive, in `unit` (none: the value's own unit).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReferenceRange {
    /// The lowest normal value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    /// The highest normal value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// Below this a value is critically low.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_low: Option<f64>,
    /// Above this a value is critically high.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_high: Option<f64>,
    /// The unit of the bounds.
    pub unit: Option<String>,
    /// The range as the source wrote it (`<200 mg/dL`, `negative`), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whose range it is.
    pub origin: RangeOrigin,
}

impl ReferenceRange {
    /// A range a source gave: `low..=high` in `unit`.
    pub fn from_source(low: Option<f64>, high: Option<f64>, unit: Option<&str>) -> Self {
        ReferenceRange {
            low,
            high,
            critical_low: None,
            critical_high: None,
            unit: unit.map(|u| unit_key(u).to_owned()),
            text: None,
            origin: RangeOrigin::Source,
        }
    }

    /// This range with the source's words for it.
    pub fn with_text(mut self, text: Option<String>) -> Self {
        self.text = text;
        self
    }

    /// Whether the range bounds anything: a low or a high bound.
    pub fn has_bounds(&self) -> bool {
        self.low.is_some() || self.high.is_some() || self.critical_low.is_some() || self.critical_high.is_some()
    }

    /// Where `value` stands against this range (in the range's unit).
    pub fn flag(&self, value: f64) -> Flag {
        let below = |bound: Option<f64>| bound.is_some_and(|b| value < b);
        let above = |bound: Option<f64>| bound.is_some_and(|b| value > b);
        if below(self.critical_low) {
            Flag::CriticalLow
        } else if above(self.critical_high) {
            Flag::CriticalHigh
        } else if below(self.low) {
            Flag::Low
        } else if above(self.high) {
            Flag::High
        } else {
            Flag::Normal
        }
    }

    /// This range in `unit`: itself when the units are one, converted on `scale` when both
    /// are its units, else `None`.
    fn in_unit(&self, unit: &str, scale: Option<&Scale>) -> Option<ReferenceRange> {
        let Some(from) = self.unit.as_deref() else {
            return Some(self.clone());
        };
        if unit_key(from) == unit_key(unit) {
            return Some(self.clone());
        }
        let scale = scale?;
        let convert = |bound: Option<f64>| match bound {
            None => Some(None),
            Some(b) => scale.convert(b, from, unit).map(|v| Some(round_significant(v))),
        };
        Some(ReferenceRange {
            low: convert(self.low)?,
            high: convert(self.high)?,
            critical_low: convert(self.critical_low)?,
            critical_high: convert(self.critical_high)?,
            unit: Some(normalize_unit(unit)?.to_owned()),
            text: self.text.clone(),
            origin: self.origin,
        })
    }
}

/// A value's flag and the range it was judged against, in the value's unit.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Flagged {
    /// Where the value stands.
    pub flag: Flag,
    /// The range used, in the value's unit.
    pub range: ReferenceRange,
}

/// The catalog's adult range for indicator `code` in `unit`, converted when the catalog's
/// unit is another of the indicator's scale; `None` when the catalog has no range for it or
/// `unit` is not one it converts to.
pub fn catalog_range(code: &str, unit: &str) -> Option<ReferenceRange> {
    let indicator = indicators::by_code(code)?;
    let range = indicator.range?;
    let catalog = ReferenceRange {
        low: range.low,
        high: range.high,
        critical_low: range.critical_low,
        critical_high: range.critical_high,
        unit: Some(range.unit.to_owned()),
        text: None,
        origin: RangeOrigin::Catalog,
    };
    catalog.in_unit(unit, indicator.scale)
}

/// Flags `value` in `unit` of indicator `code`: against `source` (the range the source gave)
/// when there is one it can be compared with, else against the catalog's adult range. `None`
/// when neither applies: no range, no unit, or a unit the range cannot be converted to.
///
/// ```
/// use mirobody_health::flags::{Flag, RangeOrigin, flag_value};
/// let flagged = flag_value("2345-7", 7.8, Some("mmol/L"), None).unwrap();
/// assert_eq!(flagged.flag, Flag::High);
/// assert_eq!(flagged.range.origin, RangeOrigin::Catalog);
/// ```
pub fn flag_value(code: &str, value: f64, unit: Option<&str>, source: Option<&ReferenceRange>) -> Option<Flagged> {
    if !value.is_finite() {
        return None;
    }
    let scale = indicators::by_code(code).and_then(|i| i.scale);
    let from_source = source.and_then(|range| match (unit, range.unit.as_deref()) {
        (_, None) => Some(range.clone()),
        (Some(unit), Some(_)) => range.in_unit(unit, scale),
        (None, Some(_)) => None,
    });
    let range = match from_source {
        Some(range) => range,
        None => catalog_range(code, unit?)?,
    };
    Some(Flagged { flag: range.flag(value), range })
}

/// A value judged: its flag and the range shown with it, in the value's unit.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Assessment {
    /// Where the value stands, if that can be told.
    pub flag: Option<Flag>,
    /// The range to show with it: the source's (converted where it can be), else the catalog's.
    pub range: Option<ReferenceRange>,
    /// Whether the flag is the source's own interpretation rather than one computed here.
    pub interpreted: bool,
}

/// Judges one value of indicator `code` as its source gave it: the flag its `interpretation`
/// states when it states one (a laboratory knows its patient and method better than a range
/// does), else [`flag_value`]'s against `source` or the catalog. A text value (`Positive`) is
/// flagged only by an interpretation. The range is the one a computed flag was judged against
/// (a source range that cannot be compared with the value gives way to the catalog's), else
/// the source's as given.
///
/// ```
/// use mirobody_health::flags::{Flag, ReferenceRange, assess};
/// let lab = ReferenceRange::from_source(Some(3.1), Some(6.2), Some("mmol/L"));
/// let judged = assess("15074-8", Some(6.3), Some("mmol/L"), Some(&lab), Some("H"));
/// assert_eq!((judged.flag, judged.interpreted), (Some(Flag::High), true));
/// ```
pub fn assess(
    code: &str,
    value: Option<f64>,
    unit: Option<&str>,
    source: Option<&ReferenceRange>,
    interpretation: Option<&str>,
) -> Assessment {
    let flagged = value.and_then(|v| flag_value(code, v, unit, source.filter(|r| r.has_bounds())));
    let stated = interpretation.and_then(Flag::from_interpretation);
    // `A` says only "abnormal": a computed low or high says which way.
    let stated = match (stated, flagged.as_ref().map(|f| f.flag)) {
        (Some(Flag::Abnormal), Some(computed)) if computed != Flag::Normal => Some(computed),
        (stated, _) => stated,
    };
    // The range a computed flag used; else the source's as given (a text value's); else the
    // catalog's in the value's unit.
    let range = match (&flagged, source) {
        (Some(f), _) => Some(f.range.clone()),
        (None, Some(s)) => Some(s.clone()),
        (None, None) => unit.and_then(|u| catalog_range(code, u)),
    };
    match stated {
        Some(flag) => Assessment { flag: Some(flag), range, interpreted: true },
        None => Assessment { flag: flagged.map(|f| f.flag), range, interpreted: false },
    }
}

/// `value` to four significant digits: a converted bound reads 5.494, not 5.4940053.
fn round_significant(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = 10f64.powi(3 - value.abs().log10().floor() as i32);
    (value * magnitude).round() / magnitude
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(code: &str, value: f64, unit: &str) -> Option<Flag> {
        flag_value(code, value, Some(unit), None).map(|f| f.flag)
    }

    #[test]
    fn values_are_flagged_against_the_catalog_in_their_own_unit() {
        assert_eq!(flag("2345-7", 85.0, "mg/dL"), Some(Flag::Normal));
        assert_eq!(flag("2345-7", 99.0, "mg/dl"), Some(Flag::Normal), "bounds are inclusive");
        assert_eq!(flag("2345-7", 126.0, "mg/dL"), Some(Flag::High));
        assert_eq!(flag("2345-7", 65.0, "mg/dL"), Some(Flag::Low));
        assert_eq!(flag("2345-7", 50.0, "mg/dL"), Some(Flag::CriticalLow));
        assert_eq!(flag("2345-7", 5.0, "mmol/L"), Some(Flag::Normal));
        assert_eq!(flag("2345-7", 7.0, "mmol/L"), Some(Flag::High));
        assert_eq!(flag("2345-7", 2.9, "mmol/L"), Some(Flag::CriticalLow));
        assert_eq!(flag("4548-4", 6.5, "%"), Some(Flag::High));
        assert_eq!(flag("4548-4", 36.0, "mmol/mol"), Some(Flag::Normal), "5.45 %");
        assert_eq!(flag("4548-4", 48.0, "mmol/mol"), Some(Flag::High));
        assert_eq!(flag("2085-9", 35.0, "mg/dL"), Some(Flag::Low));
        assert_eq!(flag("2085-9", 1.5, "mmol/L"), Some(Flag::Normal));
        assert_eq!(flag("8310-5", 100.4, "[degF]"), Some(Flag::High));
        assert_eq!(flag("8310-5", 98.6, "°F"), Some(Flag::Normal));
        assert_eq!(flag("8480-6", 135.0, "mm[Hg]"), Some(Flag::High));
        assert_eq!(flag("8867-4", 72.0, "/min"), Some(Flag::Normal));
        assert_eq!(flag("33914-3", 45.0, "mL/min/{1.73_m2}"), Some(Flag::Low));
    }

    #[test]
    fn no_range_no_unit_or_an_unknown_unit_gives_no_flag() {
        assert_eq!(flag("2345-7", 5.0, "mg/ml"), None, "a unit the scale does not know");
        assert_eq!(flag("2345-7", 5.0, "kg"), None, "another dimension");
        assert_eq!(flag_value("2345-7", 5.0, None, None), None, "no unit");
        assert_eq!(flag("29463-7", 80.0, "kg"), None, "the catalog has no adult weight range");
        assert_eq!(flag("718-7", 10.0, "g/dL"), None, "hemoglobin's range depends on sex");
        assert_eq!(flag("not-a-code", 1.0, "mg/dL"), None);
        assert_eq!(flag("2345-7", f64::NAN, "mg/dL"), None);
    }

    #[test]
    fn the_catalog_range_is_given_in_the_value_unit_and_marked_as_the_catalogs() {
        let range = catalog_range("2345-7", "mmol/l").unwrap();
        assert_eq!((range.low, range.high, range.critical_low), (Some(3.885), Some(5.495), Some(2.997)));
        assert_eq!((range.unit.as_deref(), range.origin), (Some("mmol/L"), RangeOrigin::Catalog));
        let range = catalog_range("2345-7", "mg/dL").unwrap();
        assert_eq!((range.low, range.high), (Some(70.0), Some(99.0)));
        assert_eq!(catalog_range("2093-3", "mmol/L").unwrap().high, Some(5.146));
        assert_eq!(catalog_range("2345-7", "kg"), None);
    }

    #[test]
    fn a_source_range_wins_and_is_converted_when_it_can_be() {
        let lab = ReferenceRange::from_source(Some(3.9), Some(6.1), Some("mmol/L"));
        let flagged = flag_value("2345-7", 104.0, Some("mg/dL"), Some(&lab)).unwrap();
        assert_eq!(
            (flagged.flag, flagged.range.origin),
            (Flag::Normal, RangeOrigin::Source),
            "6.1 mmol/L is 110 mg/dL"
        );
        assert_eq!(flagged.range.high, Some(109.9));
        // The same value against the catalog's range is high.
        assert_eq!(flag("2345-7", 104.0, "mg/dL"), Some(Flag::High));
        // A source range in a unit that cannot be converted falls back to the catalog's.
        let odd = ReferenceRange::from_source(Some(1.0), Some(2.0), Some("mg/ml"));
        let flagged = flag_value("2345-7", 104.0, Some("mg/dL"), Some(&odd)).unwrap();
        assert_eq!(flagged.range.origin, RangeOrigin::Catalog);
        // A range without a unit is in the value's; an indicator the catalog lacks still takes it.
        let plain = ReferenceRange::from_source(Some(10.0), Some(20.0), None);
        assert_eq!(flag_value("x-custom", 25.0, Some("widgets"), Some(&plain)).unwrap().flag, Flag::High);
    }

    #[test]
    fn the_source_interpretation_wins_over_a_computed_flag() {
        let lab = ReferenceRange::from_source(Some(3.1), Some(6.2), Some("mmol/l")).with_text(Some("3.1-6.2".into()));
        let high = assess("15074-8", Some(6.3), Some("mmol/L"), Some(&lab), Some("H"));
        assert_eq!((high.flag, high.interpreted), (Some(Flag::High), true));
        let range = high.range.unwrap();
        assert_eq!((range.low, range.high, range.origin), (Some(3.1), Some(6.2), RangeOrigin::Source));
        assert_eq!(range.text.as_deref(), Some("3.1-6.2"));
        // The laboratory says normal where the range would say high: the laboratory is believed.
        let said = assess("15074-8", Some(6.3), Some("mmol/L"), Some(&lab), Some("N"));
        assert_eq!((said.flag, said.interpreted), (Some(Flag::Normal), true));
        // HH and LL are critical; no interpretation computes against the source's range.
        assert_eq!(
            assess("15074-8", Some(30.0), Some("mmol/L"), Some(&lab), Some("HH")).flag,
            Some(Flag::CriticalHigh)
        );
        assert_eq!(assess("15074-8", Some(1.0), Some("mmol/L"), Some(&lab), Some("LL")).flag, Some(Flag::CriticalLow));
        let computed = assess("15074-8", Some(3.0), Some("mmol/L"), Some(&lab), None);
        assert_eq!((computed.flag, computed.interpreted), (Some(Flag::Low), false));
        // An unknown code is no flag of its own: the computed one stands.
        assert_eq!(assess("15074-8", Some(3.0), Some("mmol/L"), Some(&lab), Some("POS")).flag, Some(Flag::Low));
    }

    #[test]
    fn abnormal_takes_a_direction_from_the_range_and_text_values_only_from_the_source() {
        let lab = ReferenceRange::from_source(Some(3.1), Some(6.2), Some("mmol/L"));
        assert_eq!(assess("15074-8", Some(7.0), Some("mmol/L"), Some(&lab), Some("A")).flag, Some(Flag::High));
        assert_eq!(assess("15074-8", Some(5.0), Some("mmol/L"), Some(&lab), Some("A")).flag, Some(Flag::Abnormal));
        let positive = assess("x-culture", None, None, None, Some("A"));
        assert_eq!((positive.flag, positive.range), (Some(Flag::Abnormal), None));
        let words = ReferenceRange::from_source(None, None, None).with_text(Some("negative".into()));
        let text = assess("x-culture", None, None, Some(&words), None);
        assert_eq!((text.flag, text.range.and_then(|r| r.text)), (None, Some("negative".into())));
        // A source range in a unit that does not convert gives way to the catalog's.
        let odd = ReferenceRange::from_source(Some(1.0), Some(2.0), Some("mg/ml"));
        let judged = assess("2345-7", Some(120.0), Some("mg/dL"), Some(&odd), None);
        assert_eq!((judged.flag, judged.range.map(|r| r.origin)), (Some(Flag::High), Some(RangeOrigin::Catalog)));
        for (code, flag) in [("L", Flag::Low), ("HU", Flag::High), ("<", Flag::Low), ("AA", Flag::Abnormal)] {
            assert_eq!(Flag::from_interpretation(code), Some(flag));
        }
        assert_eq!(Flag::from_interpretation("S"), None);
    }
}
