//! What each HealthKit type becomes, and Apple's dates.

/// How the samples of a type are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fold {
    /// One value per sample.
    Each,
    /// One total per local day, of the one source with the largest total that day.
    Daily,
}

/// A HealthKit type that is imported.
#[derive(Debug)]
pub(super) struct Kind {
    /// The HealthKit identifier.
    pub(super) hk: &'static str,
    /// The code stored: LOINC where one fits (the catalog's codes), else the identifier.
    pub(super) code: &'static str,
    /// The name stored.
    pub(super) display: &'static str,
    /// One value per sample, or a daily total.
    pub(super) fold: Fold,
}

/// LOINC's system URI.
pub(super) const LOINC: &str = "http://loinc.org";
/// The system of the codes that are HealthKit identifiers.
pub(super) const HEALTHKIT: &str = "https://developer.apple.com/documentation/healthkit";

/// Shorthand for a table row.
const fn kind(hk: &'static str, code: &'static str, display: &'static str, fold: Fold) -> Kind {
    Kind { hk, code, display, fold }
}

/// The imported types. Codes are the indicator catalog's where it has the quantity; the types
/// without a LOINC code that fits (distance, VO2 max, exercise minutes) keep their identifier.
/// Daily totals use the 24-hour codes (steps 41950-7), a sample's value the unspecified-time one.
pub(super) static KINDS: &[Kind] = &[
    kind("HKQuantityTypeIdentifierHeartRate", "8867-4", "Heart rate", Fold::Each),
    kind("HKQuantityTypeIdentifierRestingHeartRate", "40443-4", "Heart rate --resting", Fold::Each),
    kind(
        "HKQuantityTypeIdentifierHeartRateVariabilitySDNN",
        "80404-7",
        "R-R interval.standard deviation (Heart rate variability)",
        Fold::Each,
    ),
    kind("HKQuantityTypeIdentifierBodyMass", "29463-7", "Body weight", Fold::Each),
    kind("HKQuantityTypeIdentifierBodyMassIndex", "39156-5", "Body mass index (BMI) [Ratio]", Fold::Each),
    kind("HKQuantityTypeIdentifierHeight", "8302-2", "Body height", Fold::Each),
    kind("HKQuantityTypeIdentifierBodyFatPercentage", "41982-0", "Percentage of body fat Measured", Fold::Each),
    kind("HKQuantityTypeIdentifierBloodPressureSystolic", "8480-6", "Systolic blood pressure", Fold::Each),
    kind("HKQuantityTypeIdentifierBloodPressureDiastolic", "8462-4", "Diastolic blood pressure", Fold::Each),
    // The code of a glucose value follows its unit: see `code_for_unit`.
    kind("HKQuantityTypeIdentifierBloodGlucose", "2339-0", "Glucose [Mass/volume] in Blood", Fold::Each),
    kind(
        "HKQuantityTypeIdentifierOxygenSaturation",
        "59408-5",
        "Oxygen saturation in Arterial blood by Pulse oximetry",
        Fold::Each,
    ),
    kind("HKQuantityTypeIdentifierRespiratoryRate", "9279-1", "Respiratory rate", Fold::Each),
    kind("HKQuantityTypeIdentifierBodyTemperature", "8310-5", "Body temperature", Fold::Each),
    kind("HKQuantityTypeIdentifierVO2Max", "HKQuantityTypeIdentifierVO2Max", "VO2 max", Fold::Each),
    kind("HKQuantityTypeIdentifierStepCount", "41950-7", "Number of steps in 24 hour Measured", Fold::Daily),
    kind(
        "HKQuantityTypeIdentifierDistanceWalkingRunning",
        "HKQuantityTypeIdentifierDistanceWalkingRunning",
        "Walking and running distance in 24 hours",
        Fold::Daily,
    ),
    kind(
        "HKQuantityTypeIdentifierDistanceCycling",
        "HKQuantityTypeIdentifierDistanceCycling",
        "Cycling distance in 24 hours",
        Fold::Daily,
    ),
    kind("HKQuantityTypeIdentifierActiveEnergyBurned", "41981-2", "Active energy burned in 24 hours", Fold::Daily),
    kind(
        "HKQuantityTypeIdentifierBasalEnergyBurned",
        "HKQuantityTypeIdentifierBasalEnergyBurned",
        "Resting energy burned in 24 hours",
        Fold::Daily,
    ),
    kind(
        "HKQuantityTypeIdentifierFlightsClimbed",
        "HKQuantityTypeIdentifierFlightsClimbed",
        "Flights climbed in 24 hours",
        Fold::Daily,
    ),
    kind(
        "HKQuantityTypeIdentifierAppleExerciseTime",
        "HKQuantityTypeIdentifierAppleExerciseTime",
        "Exercise minutes in 24 hours",
        Fold::Daily,
    ),
];

/// The sleep analysis category.
pub(super) const SLEEP: &str = "HKCategoryTypeIdentifierSleepAnalysis";

/// The imported type `hk`, if it is one.
pub(super) fn kind_of(hk: &str) -> Option<(usize, &'static Kind)> {
    KINDS.iter().enumerate().find(|(_, k)| k.hk == hk)
}

/// The code and name a value of `kind` in `unit` is stored under: blood glucose in mmol/L is
/// LOINC 15074-8, in mg/dL 2339-0.
pub(super) fn code_for_unit(kind: &Kind, unit: &str) -> (&'static str, &'static str) {
    if kind.hk == "HKQuantityTypeIdentifierBloodGlucose" && unit.starts_with("mmol") {
        return ("15074-8", "Glucose [Moles/volume] in Blood");
    }
    (kind.code, kind.display)
}

/// Apple's unit and value as stored: HealthKit's `%` holds a fraction (0.97 is 97 %), written
/// here as the percentage its unit says; glucose's `mmol<180.1558...>/L` (a molar mass
/// annotation) is `mmol/L`. Every other unit is kept as Apple wrote it.
pub(super) fn stored_unit(unit: &str, value: f64) -> (&str, f64) {
    match unit {
        "%" => ("%", (value * 100.0 * 1e6).round() / 1e6),
        u if u.starts_with("mmol<") && u.ends_with(">/L") => ("mmol/L", value),
        u => (u, value),
    }
}

/// A sleep stage's kind: asleep (every asleep stage, merged), in bed, or neither (awake).
pub(super) fn sleep_state(value: &str) -> Option<SleepState> {
    match value {
        "HKCategoryValueSleepAnalysisInBed" => Some(SleepState::InBed),
        "HKCategoryValueSleepAnalysisAsleep"
        | "HKCategoryValueSleepAnalysisAsleepUnspecified"
        | "HKCategoryValueSleepAnalysisAsleepCore"
        | "HKCategoryValueSleepAnalysisAsleepDeep"
        | "HKCategoryValueSleepAnalysisAsleepREM" => Some(SleepState::Asleep),
        _ => None,
    }
}

/// What a night's time is stored as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum SleepState {
    /// Asleep, any stage.
    Asleep,
    /// In bed.
    InBed,
}

/// An Apple date (`2026-01-02 08:00:00 +0800`): milliseconds since the epoch, and the offset
/// in seconds. `None` for anything else.
pub(super) fn parse_date(text: &str) -> Option<(i64, i32)> {
    let b = text.as_bytes();
    if b.len() != 25 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if b[19] != b' ' || !matches!(b[20], b'+' | b'-') {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        b[from..to].iter().try_fold(0i64, |n, d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let (off_h, off_m) = (num(21, 23)?, num(23, 25)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 || off_h > 14 || off_m > 59 {
        return None;
    }
    let sign = if b[20] == b'-' { -1 } else { 1 };
    let offset = sign * (off_h * 3600 + off_m * 60);
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some(((local - offset) * 1000, offset as i32))
}

/// The local day (days since 1970-01-01) of a UTC time seen at `offset` seconds east.
pub(super) fn local_day(ms: i64, offset: i32) -> i64 {
    (ms.div_euclid(1000) + i64::from(offset)).div_euclid(86_400)
}

/// `YYYY-MM-DD` of a day number.
pub(super) fn date_text(day: i64) -> String {
    let (y, m, d) = civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}")
}

/// An Apple date as RFC 3339 (`2026-01-02T08:00:00+08:00`); `text` is one [`parse_date`]
/// accepted.
pub(super) fn rfc3339_local(text: &str) -> String {
    format!("{}T{}{}:{}", &text[..10], &text[11..19], &text[20..23], &text[23..25])
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(super) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number, the inverse of [`days_from_civil`].
pub(super) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (if month <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indicators::lookup_name;

    #[test]
    fn dates_carry_their_own_offset() {
        let (ms, off) = parse_date("2026-01-02 08:00:00 +0800").unwrap();
        assert_eq!((ms, off), (crate::text::parse_time_ms("2026-01-02T00:00:00Z").unwrap(), 28_800));
        assert_eq!(local_day(ms, off), days_from_civil(2026, 1, 2));
        let (ms, off) = parse_date("2026-01-02 23:30:00 -0500").unwrap();
        assert_eq!(date_text(local_day(ms, off)), "2026-01-02");
        assert_eq!(date_text(local_day(ms, 0)), "2026-01-03", "in UTC it is the next day");
        assert_eq!(rfc3339_local("2026-01-02 23:30:00 -0500"), "2026-01-02T23:30:00-05:00");
        for bad in [
            "2026-01-02T08:00:00+0800",
            "2026-02-30 08:00:00 +0800",
            "2026-01-02 08:00:00",
            "",
            "2026-01-02 8:00:00 +08000",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
    }

    #[test]
    fn catalog_codes_are_reused() {
        for kind in KINDS.iter().filter(|k| k.code.chars().next().is_some_and(|c| c.is_ascii_digit())) {
            let known = lookup_name(kind.code).unwrap_or_else(|| panic!("{} is not in the catalog", kind.code));
            assert_eq!(known.code, kind.code);
        }
        let glucose = kind_of("HKQuantityTypeIdentifierBloodGlucose").unwrap().1;
        assert_eq!(code_for_unit(glucose, "mmol<180.15588000005408>/L").0, "15074-8");
        assert_eq!(code_for_unit(glucose, "mg/dL").0, "2339-0");
        assert_eq!(stored_unit("mmol<180.15588000005408>/L", 5.5), ("mmol/L", 5.5));
        assert_eq!(stored_unit("%", 0.97), ("%", 97.0));
        assert_eq!(stored_unit("count/min", 61.0), ("count/min", 61.0));
    }
}
