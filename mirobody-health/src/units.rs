//! Units of measure: the spellings sources use read as one UCUM code each (`mg/dl` and
//! `mg/dL`, `lbs` and `[lb_av]`, `°C` and `Cel`), and each indicator's scale, the units its
//! values convert between with published factors.
//!
//! A conversion happens only within one scale: glucose's mg/dL and mmol/L, never glucose into
//! cholesterol's mmol/L. A unit no scale knows is never converted, so a caller keeps it apart.

/// How one unit of a scale maps onto the scale's first unit: `base = value * factor + offset`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleUnit {
    /// The unit, as its UCUM code ([`normalize_unit`] spells it so).
    pub unit: &'static str,
    /// The multiplier to the scale's first unit.
    pub factor: f64,
    /// What is added after multiplying: zero except for temperatures and HbA1c's % (NGSP).
    pub offset: f64,
}

/// The units the values of one kind of indicator convert between. The first is the base.
#[derive(Debug, PartialEq)]
pub struct Scale {
    /// What is measured, for messages: `glucose`, `body weight`.
    pub name: &'static str,
    /// The units, the base first (factor 1, offset 0).
    pub units: &'static [ScaleUnit],
}

const fn unit(unit: &'static str, factor: f64) -> ScaleUnit {
    ScaleUnit { unit, factor, offset: 0.0 }
}

/// Glucose, base mmol/L. Molar mass 180.16 g/mol: 1 mg/dL = 10 mg/L / 180.16 = 1/18.016 mmol/L.
pub static GLUCOSE: Scale =
    Scale { name: "glucose", units: &[unit("mmol/L", 1.0), unit("mg/dL", 10.0 / 180.16), unit("mg/L", 1.0 / 180.16)] };

/// Cholesterol and its fractions (total, LDL, HDL), base mmol/L: 1 mmol/L = 38.67 mg/dL
/// (molar mass 386.65 g/mol), the factor lipid laboratories and NCEP use.
pub static CHOLESTEROL: Scale =
    Scale { name: "cholesterol", units: &[unit("mmol/L", 1.0), unit("mg/dL", 1.0 / 38.67)] };

/// Triglycerides, base mmol/L: 1 mmol/L = 88.57 mg/dL (as triolein, 885.7 g/mol).
pub static TRIGLYCERIDES: Scale =
    Scale { name: "triglycerides", units: &[unit("mmol/L", 1.0), unit("mg/dL", 1.0 / 88.57)] };

/// Creatinine, base µmol/L: 1 mg/dL = 88.42 µmol/L (molar mass 113.12 g/mol).
pub static CREATININE: Scale = Scale {
    name: "creatinine",
    units: &[unit("umol/L", 1.0), unit("mg/dL", 88.42), unit("mmol/L", 1000.0), unit("mg/L", 8.842)],
};

/// Urea nitrogen (BUN) in mg/dL and urea in mmol/L, base mmol/L: 1 mg/dL of urea nitrogen is
/// 0.357 mmol/L of urea (two nitrogen atoms, 28.014 g/mol).
pub static UREA: Scale = Scale { name: "urea nitrogen", units: &[unit("mmol/L", 1.0), unit("mg/dL", 0.357)] };

/// HbA1c, base mmol/mol (IFCC). The IFCC-NGSP master equation, NGSP % = 0.09148 × IFCC +
/// 2.152 (Hoelzel et al., Clin Chem 2004), read the other way: IFCC = (NGSP − 2.152) / 0.09148.
pub static HBA1C: Scale = Scale {
    name: "HbA1c",
    units: &[unit("mmol/mol", 1.0), ScaleUnit { unit: "%", factor: 1.0 / 0.09148, offset: -2.152 / 0.09148 }],
};

/// Body mass, base kg: the international avoirdupois pound is 0.45359237 kg exactly, its
/// ounce 1/16 of that.
pub static MASS: Scale = Scale {
    name: "body mass",
    units: &[unit("kg", 1.0), unit("g", 0.001), unit("[lb_av]", 0.45359237), unit("[oz_av]", 0.45359237 / 16.0)],
};

/// Lengths (height, circumferences), base cm: the international inch is 2.54 cm exactly,
/// the foot 12 inches.
pub static LENGTH: Scale = Scale {
    name: "length",
    units: &[unit("cm", 1.0), unit("m", 100.0), unit("mm", 0.1), unit("[in_i]", 2.54), unit("[ft_i]", 30.48)],
};

/// Temperature, base °C: °C = (°F − 32) × 5/9.
pub static TEMPERATURE: Scale = Scale {
    name: "temperature",
    units: &[unit("Cel", 1.0), ScaleUnit { unit: "[degF]", factor: 5.0 / 9.0, offset: -32.0 * 5.0 / 9.0 }],
};

/// Hemoglobin, base g/dL: 1 g/L = 0.1 g/dL; 1 mmol/L (as the Fe monomer, 16.114 g/mol) =
/// 1.6114 g/dL.
pub static HEMOGLOBIN: Scale =
    Scale { name: "hemoglobin", units: &[unit("g/dL", 1.0), unit("g/L", 0.1), unit("mmol/L", 1.6114)] };

/// Proteins in serum (albumin, total protein), base g/dL: 1 g/L = 0.1 g/dL.
pub static PROTEIN: Scale = Scale { name: "protein", units: &[unit("g/dL", 1.0), unit("g/L", 0.1)] };

/// Calcium, base mg/dL: 1 mmol/L = 4.008 mg/dL (40.08 g/mol); a divalent ion, 1 meq/L = 0.5 mmol/L.
pub static CALCIUM: Scale =
    Scale { name: "calcium", units: &[unit("mg/dL", 1.0), unit("mmol/L", 4.008), unit("meq/L", 2.004)] };

/// Bilirubin, base mg/dL: 1 mg/dL = 17.104 µmol/L (584.66 g/mol).
pub static BILIRUBIN: Scale = Scale { name: "bilirubin", units: &[unit("mg/dL", 1.0), unit("umol/L", 1.0 / 17.104)] };

/// Monovalent electrolytes (sodium, potassium, chloride, bicarbonate), base mmol/L: 1 meq/L
/// = 1 mmol/L for a charge of one.
pub static ELECTROLYTE: Scale = Scale { name: "electrolyte", units: &[unit("mmol/L", 1.0), unit("meq/L", 1.0)] };

/// 25-hydroxyvitamin D, base ng/mL: 1 ng/mL = 2.496 nmol/L (400.64 g/mol).
pub static VITAMIN_D: Scale =
    Scale { name: "vitamin D", units: &[unit("ng/mL", 1.0), unit("nmol/L", 1.0 / 2.496), unit("ug/L", 1.0)] };

/// Cell counts in blood, base 10*3/uL: 10^3 per µL is 10^9 per L.
pub static CELL_COUNT: Scale = Scale { name: "cell count", units: &[unit("10*3/uL", 1.0), unit("10*9/L", 1.0)] };

/// Red cell counts, base 10*6/uL: 10^6 per µL is 10^12 per L.
pub static RED_CELL_COUNT: Scale =
    Scale { name: "red cell count", units: &[unit("10*6/uL", 1.0), unit("10*12/L", 1.0)] };

/// Pressures (blood pressure), base mm[Hg]: 1 kPa = 7.50062 mm[Hg].
pub static PRESSURE: Scale = Scale { name: "pressure", units: &[unit("mm[Hg]", 1.0), unit("kPa", 7.50062)] };

/// Energy, base kcal: the thermochemical calorie is 4.184 J exactly.
pub static ENERGY: Scale = Scale { name: "energy", units: &[unit("kcal", 1.0), unit("kJ", 1.0 / 4.184)] };

/// Durations (sleep), base h.
pub static DURATION: Scale = Scale { name: "duration", units: &[unit("h", 1.0), unit("min", 1.0 / 60.0)] };

/// eGFR, normalised to 1.73 m² of body surface.
pub static EGFR: Scale = Scale { name: "eGFR", units: &[unit("mL/min/{1.73_m2}", 1.0)] };

/// Enzyme activities (ALT, AST, ALP): U/L and IU/L are one unit.
pub static ENZYME: Scale = Scale { name: "enzyme activity", units: &[unit("U/L", 1.0)] };

/// Cell volumes (MCV, RDW-SD, MPV), in femtolitres.
pub static CELL_VOLUME: Scale = Scale { name: "cell volume", units: &[unit("fL", 1.0)] };

/// Thyrotropin: mIU/L and µIU/mL are one unit.
pub static THYROTROPIN: Scale = Scale { name: "thyrotropin", units: &[unit("m[IU]/L", 1.0)] };

/// Rates per minute (heart rate, breathing): every spelling is one unit.
pub static PER_MINUTE: Scale = Scale { name: "rate", units: &[unit("/min", 1.0)] };

/// Fractions in percent (SpO2, body fat, hematocrit).
pub static PERCENT: Scale = Scale { name: "percentage", units: &[unit("%", 1.0)] };

/// Body mass index.
pub static BMI: Scale = Scale { name: "body mass index", units: &[unit("kg/m2", 1.0)] };

/// The spellings sources use, lower-cased without spaces, and the UCUM code each means. A
/// spelling missing here is not a unit this module knows.
static SPELLINGS: &[(&str, &str)] = &[
    ("mg/dl", "mg/dL"),
    ("mg/100ml", "mg/dL"),
    ("mmol/l", "mmol/L"),
    ("mm/l", "mmol/L"),
    ("umol/l", "umol/L"),
    ("µmol/l", "umol/L"),
    ("μmol/l", "umol/L"),
    ("mg/l", "mg/L"),
    ("g/dl", "g/dL"),
    ("g/l", "g/L"),
    ("meq/l", "meq/L"),
    ("ng/ml", "ng/mL"),
    ("ug/l", "ug/L"),
    ("µg/l", "ug/L"),
    ("nmol/l", "nmol/L"),
    ("mmol/mol", "mmol/mol"),
    ("%", "%"),
    ("percent", "%"),
    ("kg", "kg"),
    ("kgs", "kg"),
    ("kilogram", "kg"),
    ("kilograms", "kg"),
    ("g", "g"),
    ("[lb_av]", "[lb_av]"),
    ("lb", "[lb_av]"),
    ("lbs", "[lb_av]"),
    ("pound", "[lb_av]"),
    ("pounds", "[lb_av]"),
    ("[oz_av]", "[oz_av]"),
    ("oz", "[oz_av]"),
    ("cm", "cm"),
    ("m", "m"),
    ("mm", "mm"),
    ("[in_i]", "[in_i]"),
    ("[in_us]", "[in_i]"),
    ("in", "[in_i]"),
    ("inch", "[in_i]"),
    ("inches", "[in_i]"),
    ("[ft_i]", "[ft_i]"),
    ("ft", "[ft_i]"),
    ("cel", "Cel"),
    ("°c", "Cel"),
    ("℃", "Cel"),
    ("degc", "Cel"),
    ("celsius", "Cel"),
    ("[degf]", "[degF]"),
    ("°f", "[degF]"),
    ("℉", "[degF]"),
    ("degf", "[degF]"),
    ("fahrenheit", "[degF]"),
    ("mm[hg]", "mm[Hg]"),
    ("mmhg", "mm[Hg]"),
    ("kpa", "kPa"),
    ("/min", "/min"),
    ("1/min", "/min"),
    ("{beats}/min", "/min"),
    ("{breaths}/min", "/min"),
    ("beats/min", "/min"),
    ("breaths/min", "/min"),
    ("bpm", "/min"),
    ("kg/m2", "kg/m2"),
    ("kg/m^2", "kg/m2"),
    ("kg/m²", "kg/m2"),
    ("10*3/ul", "10*3/uL"),
    ("10^3/ul", "10*3/uL"),
    ("k/ul", "10*3/uL"),
    ("10*9/l", "10*9/L"),
    ("10^9/l", "10*9/L"),
    ("10*6/ul", "10*6/uL"),
    ("10^6/ul", "10*6/uL"),
    ("m/ul", "10*6/uL"),
    ("10*12/l", "10*12/L"),
    ("10^12/l", "10*12/L"),
    ("kcal", "kcal"),
    ("ml/min/{1.73_m2}", "mL/min/{1.73_m2}"),
    ("ml/min/1.73m2", "mL/min/{1.73_m2}"),
    ("ml/min/1.73m²", "mL/min/{1.73_m2}"),
    ("u/l", "U/L"),
    ("iu/l", "U/L"),
    ("[iu]/l", "U/L"),
    ("fl", "fL"),
    ("m[iu]/l", "m[IU]/L"),
    ("miu/l", "m[IU]/L"),
    ("uiu/ml", "m[IU]/L"),
    ("µiu/ml", "m[IU]/L"),
    ("μiu/ml", "m[IU]/L"),
    ("u[iu]/ml", "m[IU]/L"),
    ("mg/g", "mg/g"),
    ("kj", "kJ"),
    ("h", "h"),
    ("hr", "h"),
    ("hours", "h"),
    ("min", "min"),
    ("minutes", "min"),
];

/// The longest unit text read; anything longer is no unit this module knows.
const MAX_UNIT_CHARS: usize = 32;

/// The UCUM code `text` spells, case and spaces aside (`mg/dl` → `mg/dL`, `lbs` → `[lb_av]`,
/// `°C` → `Cel`), or `None` when it is no unit this module knows.
///
/// ```
/// use mirobody_health::units::normalize_unit;
/// assert_eq!(normalize_unit(" MG/DL "), Some("mg/dL"));
/// assert_eq!(normalize_unit("µmol/L"), Some("umol/L"));
/// assert_eq!(normalize_unit("furlongs"), None);
/// ```
pub fn normalize_unit(text: &str) -> Option<&'static str> {
    let text = text.trim();
    if text.is_empty() || text.chars().count() > MAX_UNIT_CHARS {
        return None;
    }
    let key: String = text.chars().filter(|c| !c.is_whitespace()).flat_map(char::to_lowercase).collect();
    SPELLINGS.iter().find(|(spelling, _)| *spelling == key).map(|(_, code)| *code)
}

/// `unit` as one spelling for grouping: its UCUM code when known, else the text trimmed.
/// Two values whose units give the same key are in the same unit.
pub fn unit_key(unit: &str) -> &str {
    normalize_unit(unit).unwrap_or_else(|| unit.trim())
}

impl Scale {
    /// The unit of this scale that `text` spells, if any.
    pub fn unit(&self, text: &str) -> Option<&ScaleUnit> {
        let code = normalize_unit(text)?;
        self.units.iter().find(|u| u.unit == code)
    }

    /// Whether `text` spells a unit of this scale.
    pub fn knows(&self, text: &str) -> bool {
        self.unit(text).is_some()
    }

    /// `value` in `from` converted to `to`, or `None` when either is not a unit of this scale
    /// or the value is not finite.
    ///
    /// ```
    /// use mirobody_health::units::GLUCOSE;
    /// let mmol = GLUCOSE.convert(90.0, "mg/dl", "mmol/L").unwrap();
    /// assert!((mmol - 4.9956).abs() < 1e-3);
    /// ```
    pub fn convert(&self, value: f64, from: &str, to: &str) -> Option<f64> {
        let (from, to) = (self.unit(from)?, self.unit(to)?);
        if !value.is_finite() {
            return None;
        }
        if from.unit == to.unit {
            return Some(value);
        }
        let base = value * from.factor + from.offset;
        let out = (base - to.offset) / to.factor;
        out.is_finite().then_some(out)
    }

    /// The UCUM codes of this scale's units, for messages.
    pub fn unit_names(&self) -> Vec<&'static str> {
        self.units.iter().map(|u| u.unit).collect()
    }
}

/// Every scale, for tests and listings.
pub static SCALES: &[&Scale] = &[
    &GLUCOSE,
    &CHOLESTEROL,
    &TRIGLYCERIDES,
    &CREATININE,
    &UREA,
    &HBA1C,
    &MASS,
    &LENGTH,
    &TEMPERATURE,
    &HEMOGLOBIN,
    &PROTEIN,
    &CALCIUM,
    &BILIRUBIN,
    &ELECTROLYTE,
    &VITAMIN_D,
    &CELL_COUNT,
    &RED_CELL_COUNT,
    &PRESSURE,
    &ENERGY,
    &DURATION,
    &EGFR,
    &ENZYME,
    &CELL_VOLUME,
    &THYROTROPIN,
    &PER_MINUTE,
    &PERCENT,
    &BMI,
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[track_caller]
    fn converts(scale: &Scale, value: f64, from: &str, to: &str, expected: f64, tolerance: f64) {
        let got = scale.convert(value, from, to).unwrap_or_else(|| panic!("{value} {from} -> {to} in {}", scale.name));
        assert!(close(got, expected, tolerance), "{value} {from} -> {to}: {got}, expected {expected}");
    }

    #[test]
    fn spellings_become_ucum_codes() {
        for (text, code) in [
            ("mg/dL", "mg/dL"),
            ("mg/dl", "mg/dL"),
            ("MG/DL", "mg/dL"),
            ("mmol/l", "mmol/L"),
            ("mmol / L", "mmol/L"),
            ("umol/L", "umol/L"),
            ("µmol/L", "umol/L"),
            ("μmol/L", "umol/L"),
            ("[lb_av]", "[lb_av]"),
            ("lbs", "[lb_av]"),
            ("Lb", "[lb_av]"),
            ("kg", "kg"),
            ("Cel", "Cel"),
            ("°C", "Cel"),
            ("[degF]", "[degF]"),
            ("°F", "[degF]"),
            ("%", "%"),
            ("mmol/mol", "mmol/mol"),
            ("[in_i]", "[in_i]"),
            ("in", "[in_i]"),
            ("cm", "cm"),
            ("m", "m"),
            ("mm[Hg]", "mm[Hg]"),
            ("mmHg", "mm[Hg]"),
            ("/min", "/min"),
            ("{beats}/min", "/min"),
            ("bpm", "/min"),
            ("kg/m2", "kg/m2"),
            ("10*3/uL", "10*3/uL"),
        ] {
            assert_eq!(normalize_unit(text), Some(code), "{text:?}");
        }
        for unknown in ["", "  ", "mg/ml", "furlongs", "mmol", &"x".repeat(40)] {
            assert_eq!(normalize_unit(unknown), None, "{unknown:?}");
        }
        assert_eq!(unit_key(" mg/dl"), "mg/dL");
        assert_eq!(unit_key(" mg/ml "), "mg/ml", "an unknown unit is kept as written, trimmed");
    }

    #[test]
    fn every_scale_is_well_formed() {
        for scale in SCALES {
            let base = scale.units[0];
            assert_eq!((base.factor, base.offset), (1.0, 0.0), "{}: the base comes first", scale.name);
            for (n, u) in scale.units.iter().enumerate() {
                assert_eq!(normalize_unit(u.unit), Some(u.unit), "{}: {} is a UCUM code it spells", scale.name, u.unit);
                assert!(u.factor > 0.0 && u.factor.is_finite(), "{}: {}", scale.name, u.unit);
                assert!(scale.units[n + 1..].iter().all(|o| o.unit != u.unit), "{}: {} twice", scale.name, u.unit);
            }
        }
    }

    /// Published examples of each factor.
    #[test]
    fn conversions_match_published_values() {
        // Glucose: 100 mg/dL is 5.55 mmol/L; 7.0 mmol/L (the ADA fasting threshold) is 126 mg/dL.
        converts(&GLUCOSE, 100.0, "mg/dL", "mmol/L", 5.5506, 1e-3);
        converts(&GLUCOSE, 7.0, "mmol/L", "mg/dL", 126.1, 0.1);
        converts(&GLUCOSE, 18.016, "mg/dl", "mmol/l", 1.0, 1e-9);
        // Cholesterol: 200 mg/dL is 5.17 mmol/L; 38.67 mg/dL is 1 mmol/L.
        converts(&CHOLESTEROL, 200.0, "mg/dL", "mmol/L", 5.172, 1e-3);
        converts(&CHOLESTEROL, 1.0, "mmol/L", "mg/dL", 38.67, 1e-9);
        // Triglycerides: 150 mg/dL is 1.69 mmol/L.
        converts(&TRIGLYCERIDES, 150.0, "mg/dL", "mmol/L", 1.6936, 1e-3);
        converts(&TRIGLYCERIDES, 1.0, "mmol/L", "mg/dL", 88.57, 1e-9);
        // Creatinine: 1 mg/dL is 88.42 µmol/L; 1.2 mg/dL is 106 µmol/L.
        converts(&CREATININE, 1.0, "mg/dL", "µmol/L", 88.42, 1e-9);
        converts(&CREATININE, 106.1, "umol/L", "mg/dL", 1.2, 1e-3);
        // Urea nitrogen 14 mg/dL is urea 5.0 mmol/L.
        converts(&UREA, 14.0, "mg/dL", "mmol/L", 4.998, 1e-3);
        converts(&UREA, 5.0, "mmol/L", "mg/dL", 14.006, 1e-3);
        // HbA1c, IFCC's table: 6.5 % is 48 mmol/mol, 7.0 % is 53, 5.7 % is 39, 9.0 % is 75.
        converts(&HBA1C, 6.5, "%", "mmol/mol", 48.0, 0.5);
        converts(&HBA1C, 7.0, "%", "mmol/mol", 53.0, 0.5);
        converts(&HBA1C, 5.7, "%", "mmol/mol", 39.0, 0.5);
        converts(&HBA1C, 9.0, "%", "mmol/mol", 75.0, 0.5);
        converts(&HBA1C, 48.0, "mmol/mol", "%", 6.543, 1e-3);
        // Mass and length: exact definitions.
        converts(&MASS, 1.0, "lb", "kg", 0.45359237, 1e-15);
        converts(&MASS, 70.0, "kg", "[lb_av]", 154.3236, 1e-4);
        converts(&MASS, 16.0, "oz", "lb", 1.0, 1e-12);
        converts(&LENGTH, 1.0, "[in_i]", "cm", 2.54, 1e-15);
        converts(&LENGTH, 6.0, "ft", "cm", 182.88, 1e-9);
        converts(&LENGTH, 1.75, "m", "cm", 175.0, 1e-9);
        converts(&LENGTH, 70.0, "in", "m", 1.778, 1e-12);
        // Temperature: water freezes at 32 °F, the body is near 98.6 °F = 37 °C.
        converts(&TEMPERATURE, 32.0, "[degF]", "Cel", 0.0, 1e-12);
        converts(&TEMPERATURE, 98.6, "°F", "°C", 37.0, 1e-9);
        converts(&TEMPERATURE, 100.0, "Cel", "[degF]", 212.0, 1e-9);
        converts(&TEMPERATURE, -40.0, "Cel", "[degF]", -40.0, 1e-9);
        // The rest of the catalog's scales.
        converts(&HEMOGLOBIN, 14.0, "g/dL", "g/L", 140.0, 1e-9);
        converts(&PROTEIN, 4.0, "g/dL", "g/L", 40.0, 1e-9);
        converts(&CALCIUM, 10.0, "mg/dL", "mmol/L", 2.495, 1e-3);
        converts(&BILIRUBIN, 1.0, "mg/dL", "umol/L", 17.104, 1e-9);
        converts(&ELECTROLYTE, 140.0, "mEq/L", "mmol/L", 140.0, 1e-12);
        converts(&VITAMIN_D, 20.0, "ng/mL", "nmol/L", 49.92, 1e-9);
        converts(&CELL_COUNT, 7.2, "10*9/L", "10*3/uL", 7.2, 1e-12);
        converts(&PRESSURE, 16.0, "kPa", "mm[Hg]", 120.01, 0.01);
        converts(&ENERGY, 4.184, "kJ", "kcal", 1.0, 1e-12);
        converts(&DURATION, 90.0, "min", "h", 1.5, 1e-12);
        converts(&PER_MINUTE, 72.0, "bpm", "/min", 72.0, 0.0);
    }

    #[test]
    fn units_outside_a_scale_never_convert() {
        assert_eq!(GLUCOSE.convert(5.0, "mmol/L", "kg"), None, "another dimension");
        assert_eq!(GLUCOSE.convert(5.0, "mg/ml", "mmol/L"), None, "an unknown unit");
        assert_eq!(MASS.convert(70.0, "kg", "mg/dL"), None);
        assert_eq!(HBA1C.convert(6.5, "%", "mmol/L"), None);
        assert_eq!(GLUCOSE.convert(f64::NAN, "mmol/L", "mg/dL"), None);
        assert_eq!(GLUCOSE.convert(f64::INFINITY, "mmol/L", "mg/dL"), None);
        assert_eq!(GLUCOSE.convert(5.5, "mmol/l", "mmol/L"), Some(5.5), "the same unit is the value itself");
    }

    proptest! {
        /// Any value converted to any unit of its scale and back is the value again.
        #[test]
        fn round_trips_return_the_value(value in -1.0e6f64..1.0e6, scale in 0..SCALES.len(), a in 0usize..8, b in 0usize..8) {
            let scale = SCALES[scale];
            let from = scale.units[a % scale.units.len()].unit;
            let to = scale.units[b % scale.units.len()].unit;
            let there = scale.convert(value, from, to).unwrap();
            let back = scale.convert(there, to, from).unwrap();
            prop_assert!(close(back, value, 1e-9 * value.abs().max(1.0)), "{value} {from} -> {there} {to} -> {back}");
        }

        /// Converting is monotonic: a larger value stays larger in every unit.
        #[test]
        fn conversions_keep_order(x in -1.0e4f64..1.0e4, d in 1.0e-3f64..1.0e3, scale in 0..SCALES.len(), b in 0usize..8) {
            let scale = SCALES[scale];
            let from = scale.units[0].unit;
            let to = scale.units[b % scale.units.len()].unit;
            prop_assert!(scale.convert(x, from, to).unwrap() < scale.convert(x + d, from, to).unwrap());
        }
    }
}
