//! A catalog of common health indicators (LOINC codes with their names and the words people
//! use for them), for finding an indicator by what someone calls it: "blood sugar" for the
//! glucose codes, "BP" for blood pressure, "a1c" for HbA1c.

/// One indicator of the catalog.
#[derive(Debug, PartialEq, Eq)]
pub struct Indicator {
    /// The LOINC code.
    pub code: &'static str,
    /// The LOINC long common name.
    pub display: &'static str,
    /// Other names, lower case: short forms, plain words, abbreviations.
    pub names: &'static [&'static str],
}

/// Shorthand for a catalog entry.
const fn indicator(code: &'static str, display: &'static str, names: &'static [&'static str]) -> Indicator {
    Indicator { code, display, names }
}

/// The catalog. Where several entries share a name (four glucose codes are all "glucose"),
/// the first is what [`lookup_name`] gives, so the one a plain name most often means comes
/// first.
static CATALOG: &[Indicator] = &[
    indicator("2339-0", "Glucose [Mass/volume] in Blood", &["glucose", "blood glucose", "blood sugar", "sugar", "glu"]),
    indicator(
        "2345-7",
        "Glucose [Mass/volume] in Serum or Plasma",
        &["glucose", "serum glucose", "plasma glucose", "blood sugar", "glu"],
    ),
    indicator("15074-8", "Glucose [Moles/volume] in Blood", &["glucose", "blood glucose", "blood sugar", "glu"]),
    indicator(
        "41653-7",
        "Glucose [Mass/volume] in Capillary blood by Glucometer",
        &["glucose", "blood sugar", "capillary glucose", "fingerstick glucose", "glucometer"],
    ),
    indicator(
        "4548-4",
        "Hemoglobin A1c/Hemoglobin.total in Blood",
        &["hba1c", "a1c", "hemoglobin a1c", "haemoglobin a1c", "glycated hemoglobin", "glycohemoglobin"],
    ),
    indicator(
        "85354-9",
        "Blood pressure panel with all children optional",
        &["blood pressure", "bp", "blood pressure panel"],
    ),
    indicator(
        "8480-6",
        "Systolic blood pressure",
        &["systolic", "systolic bp", "bp systolic", "systolic pressure", "sbp"],
    ),
    indicator(
        "8462-4",
        "Diastolic blood pressure",
        &["diastolic", "diastolic bp", "bp diastolic", "diastolic pressure", "dbp"],
    ),
    indicator("8867-4", "Heart rate", &["heart rate", "pulse", "pulse rate", "hr", "heartbeat"]),
    indicator("40443-4", "Heart rate --resting", &["resting heart rate", "resting hr", "rhr", "resting pulse"]),
    indicator(
        "80404-7",
        "R-R interval.standard deviation (Heart rate variability)",
        &["heart rate variability", "hrv", "sdnn"],
    ),
    indicator("9279-1", "Respiratory rate", &["respiratory rate", "breathing rate", "respiration rate", "rr"]),
    indicator("8310-5", "Body temperature", &["temperature", "body temperature", "temp"]),
    indicator(
        "59408-5",
        "Oxygen saturation in Arterial blood by Pulse oximetry",
        &["spo2", "oxygen saturation", "blood oxygen", "pulse oximetry", "o2 saturation", "o2 sat"],
    ),
    indicator(
        "2708-6",
        "Oxygen saturation in Arterial blood",
        &["spo2", "sao2", "oxygen saturation", "blood oxygen", "o2 saturation", "o2 sat"],
    ),
    indicator("29463-7", "Body weight", &["weight", "body weight", "wt"]),
    indicator("8302-2", "Body height", &["height", "body height", "stature", "ht"]),
    indicator("39156-5", "Body mass index (BMI) [Ratio]", &["bmi", "body mass index"]),
    indicator("41982-0", "Percentage of body fat Measured", &["body fat", "body fat percentage", "fat percentage"]),
    indicator("8280-0", "Waist Circumference at umbilicus by Tape measure", &["waist", "waist circumference"]),
    indicator(
        "2093-3",
        "Cholesterol [Mass/volume] in Serum or Plasma",
        &["cholesterol", "total cholesterol", "chol", "tc"],
    ),
    indicator(
        "13457-7",
        "Cholesterol in LDL [Mass/volume] in Serum or Plasma by calculation",
        &["ldl", "ldl cholesterol", "ldl c", "bad cholesterol", "calculated ldl"],
    ),
    indicator(
        "18262-6",
        "Cholesterol in LDL [Mass/volume] in Serum or Plasma by Direct assay",
        &["ldl", "ldl cholesterol", "ldl c", "bad cholesterol", "direct ldl"],
    ),
    indicator(
        "2085-9",
        "Cholesterol in HDL [Mass/volume] in Serum or Plasma",
        &["hdl", "hdl cholesterol", "hdl c", "good cholesterol"],
    ),
    indicator(
        "2571-8",
        "Triglyceride [Mass/volume] in Serum or Plasma",
        &["triglycerides", "triglyceride", "trig", "tg"],
    ),
    indicator("2160-0", "Creatinine [Mass/volume] in Serum or Plasma", &["creatinine", "serum creatinine", "creat"]),
    indicator(
        "98979-8",
        concat!(
            "Glomerular filtration rate/1.73 sq M.predicted [Volume Rate/Area] in Serum, Plasma or Blood ",
            "by Creatinine-based formula (CKD-EPI 2021)"
        ),
        &["egfr", "gfr", "glomerular filtration rate", "kidney function"],
    ),
    indicator("718-7", "Hemoglobin [Mass/volume] in Blood", &["hemoglobin", "haemoglobin", "hgb", "hb"]),
    indicator(
        "1742-6",
        "Alanine aminotransferase [Enzymatic activity/volume] in Serum or Plasma",
        &["alt", "sgpt", "alanine aminotransferase"],
    ),
    indicator(
        "1920-8",
        "Aspartate aminotransferase [Enzymatic activity/volume] in Serum or Plasma",
        &["ast", "sgot", "aspartate aminotransferase"],
    ),
    indicator(
        "62292-8",
        "25-Hydroxyvitamin D2+D3 [Mass/volume] in Serum or Plasma",
        &["vitamin d", "vit d", "25 oh vitamin d", "25 hydroxyvitamin d"],
    ),
    indicator(
        "3016-3",
        "Thyrotropin [Units/volume] in Serum or Plasma",
        &["tsh", "thyrotropin", "thyroid stimulating hormone"],
    ),
    // A wearable's step counts are usually per interval, so the unspecified-time code is the
    // one "steps" means.
    indicator("55423-8", "Number of steps in unspecified time Pedometer", &["steps", "step count", "pedometer"]),
    indicator(
        "41950-7",
        "Number of steps in 24 hour Measured",
        &["steps", "daily steps", "steps per day", "step count"],
    ),
    indicator("41981-2", "Calories burned", &["calories burned", "active energy", "active calories", "energy burned"]),
    indicator("93832-4", "Sleep duration", &["sleep", "sleep duration", "sleep time", "time asleep", "hours of sleep"]),
];

/// Below this many characters a keyword matches only whole words of a code or a name, never
/// a part of a word or of a long LOINC name ("bp", "hr", "in" and "by" are everywhere inside).
const WHOLE_WORD_BELOW: usize = 4;

/// The indicator whose code, display or one of whose names is `name` (case, spacing and
/// punctuation aside: "Heart Rate", "heart_rate" and "HeartRate" are all heart rate).
pub fn lookup_name(name: &str) -> Option<&'static Indicator> {
    let wanted = compact(name);
    if wanted.is_empty() {
        return None;
    }
    // Compared character by character, not by building each name's compact form: a CSV import
    // looks up every row's indicator.
    let is_wanted = |n: &str| compact_chars(n).eq(wanted.chars());
    CATALOG.iter().find(|i| is_wanted(i.code) || is_wanted(i.display) || i.names.iter().any(|n| is_wanted(n)))
}

/// The codes of every indicator that `keyword` (two characters at least) names: its code,
/// display or a name equal to it or containing it. A keyword shorter than four characters must
/// be a whole word of the code or a name ("BP" finds the blood pressure panel, systolic and
/// diastolic, not every name with "bp" inside); a longer one may be a part ("sugar", "chol").
pub fn matching_codes(keyword: &str) -> Vec<&'static str> {
    let wanted = words(keyword);
    if wanted.chars().count() < 2 {
        return Vec::new();
    }
    let wanted_compact = compact(keyword);
    let short = wanted.chars().count() < WHOLE_WORD_BELOW;
    let padded = format!(" {wanted} ");
    CATALOG
        .iter()
        .filter(|i| {
            let names = || std::iter::once(i.code).chain(i.names.iter().copied());
            let equal = names().chain([i.display]).any(|n| words(n) == wanted || compact(n) == wanted_compact);
            let within = if short {
                names().any(|n| format!(" {} ", words(n)).contains(&padded))
            } else {
                names().chain([i.display]).any(|n| words(n).contains(&wanted))
            };
            equal || within
        })
        .map(|i| i.code)
        .collect()
}

/// `text` lower-cased, with every run of characters other than letters and digits one space,
/// and no space at either end: "Systolic  BP" and "systolic-bp" are both "systolic bp".
fn words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// `text` lower-cased with only its letters and digits: "HeartRate" and "heart rate" are both
/// "heartrate".
fn compact(text: &str) -> String {
    compact_chars(text).collect()
}

/// The characters of [`compact`]`(text)`.
fn compact_chars(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(keyword: &str) -> Vec<&'static str> {
        matching_codes(keyword)
    }

    #[test]
    fn names_are_looked_up_exactly() {
        assert_eq!(lookup_name("glucose").map(|i| i.code), Some("2339-0"));
        assert_eq!(lookup_name("  Blood Sugar ").map(|i| i.code), Some("2339-0"));
        assert_eq!(lookup_name("2345-7").map(|i| i.display), Some("Glucose [Mass/volume] in Serum or Plasma"));
        assert_eq!(lookup_name("Systolic blood pressure").map(|i| i.code), Some("8480-6"));
        assert_eq!(lookup_name("HeartRate").map(|i| i.code), Some("8867-4"));
        assert_eq!(lookup_name("heart_rate").map(|i| i.code), Some("8867-4"));
        assert_eq!(lookup_name("SpO2").map(|i| i.code), Some("59408-5"));
        assert_eq!(lookup_name("HbA1c").map(|i| i.code), Some("4548-4"));
        assert_eq!(lookup_name("BP").map(|i| i.code), Some("85354-9"));
        assert_eq!(lookup_name("steps").map(|i| i.code), Some("55423-8"));
        assert_eq!(lookup_name("TSH").map(|i| i.code), Some("3016-3"));
        assert_eq!(lookup_name("gluc"), None, "exact, not a part");
        assert_eq!(lookup_name("mood"), None);
        assert_eq!(lookup_name("  "), None);
    }

    #[test]
    fn keywords_find_every_code_they_name() {
        assert_eq!(codes("blood sugar"), ["2339-0", "2345-7", "15074-8", "41653-7"]);
        assert_eq!(codes("sugar"), ["2339-0", "2345-7", "15074-8", "41653-7"]);
        assert_eq!(codes("Glucose"), ["2339-0", "2345-7", "15074-8", "41653-7"]);
        assert_eq!(codes("BP"), ["85354-9", "8480-6", "8462-4"]);
        assert_eq!(codes("blood pressure"), ["85354-9", "8480-6", "8462-4"]);
        assert_eq!(codes("a1c"), ["4548-4"]);
        assert_eq!(codes("A1C"), ["4548-4"]);
        assert!(codes("pulse").contains(&"8867-4"));
        assert_eq!(codes("hr"), ["8867-4", "40443-4"]);
        assert_eq!(codes("LDL"), ["13457-7", "18262-6"]);
        assert_eq!(codes("cholesterol"), ["2093-3", "13457-7", "18262-6", "2085-9"]);
        assert_eq!(codes("spo2"), ["59408-5", "2708-6"]);
        assert_eq!(codes("steps"), ["55423-8", "41950-7"]);
        assert_eq!(codes("8480-6"), ["8480-6"]);
        assert_eq!(codes("weight"), ["29463-7"]);
        assert_eq!(codes("sleep"), ["93832-4"]);
        assert_eq!(codes("bmi"), ["39156-5"]);
        assert_eq!(codes("respiratory"), ["9279-1"]);
        assert_eq!(codes("temperature"), ["8310-5"]);
        assert_eq!(codes("creatinine"), ["2160-0", "98979-8"]);
        assert_eq!(codes("hemoglobin"), ["4548-4", "718-7"]);
        assert_eq!(codes("triglycerides"), ["2571-8"]);
        assert_eq!(codes("height"), ["8302-2"]);
    }

    #[test]
    fn short_keywords_match_whole_words_only() {
        assert!(codes("b").is_empty(), "one character is too short");
        assert!(codes("gl").is_empty());
        assert!(codes("in").is_empty(), "not every LOINC name with \"in\"");
        assert!(codes("by").is_empty());
        assert!(!codes("bp").contains(&"2339-0"));
        assert!(codes("zz").is_empty());
        assert!(codes("xyzzy").is_empty());
    }

    #[test]
    fn the_catalog_is_consistent() {
        let wanted = [
            "2339-0", "2345-7", "15074-8", "41653-7", "4548-4", "85354-9", "8480-6", "8462-4", "8867-4", "9279-1",
            "8310-5", "59408-5", "2708-6", "29463-7", "8302-2", "39156-5", "2093-3", "13457-7", "18262-6", "2085-9",
            "2571-8", "2160-0", "718-7", "41950-7", "55423-8", "93832-4", "3016-3",
        ];
        for code in wanted {
            assert!(CATALOG.iter().any(|i| i.code == code), "{code} is missing");
        }
        for (n, indicator) in CATALOG.iter().enumerate() {
            assert!(CATALOG[n + 1..].iter().all(|other| other.code != indicator.code), "{} twice", indicator.code);
            for name in indicator.names {
                assert_eq!(words(name), *name, "names are stored normalized: {name:?}");
            }
        }
    }
}
