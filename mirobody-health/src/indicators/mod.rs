//! A catalog of common health indicators (LOINC codes with their names and the words people
//! use for them), for finding an indicator by what someone calls it: "blood sugar" for the
//! glucose codes, "BP" for blood pressure, "a1c" for HbA1c.

mod catalog;

use crate::units::Scale;
use catalog::CATALOG;

/// One indicator of the catalog.
#[derive(Debug, PartialEq)]
#[non_exhaustive]
pub struct Indicator {
    /// The LOINC code.
    pub code: &'static str,
    /// The LOINC long common name.
    pub display: &'static str,
    /// Other names, lower case: short forms, plain words, abbreviations.
    pub names: &'static [&'static str],
    /// Names in Simplified Chinese, the most common first (血糖, 收缩压, 总胆固醇).
    pub chinese: &'static [&'static str],
    /// The units its values convert between, if the catalog knows them.
    pub scale: Option<&'static Scale>,
    /// The catalog's adult reference range, where one is well established.
    pub range: Option<CatalogRange>,
}

/// An adult reference range of the catalog, bounds inclusive, in `unit`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct CatalogRange {
    /// The lowest normal value, if there is a lower bound.
    pub low: Option<f64>,
    /// The highest normal value, if there is an upper bound.
    pub high: Option<f64>,
    /// Below this a value is critically low.
    pub critical_low: Option<f64>,
    /// Above this a value is critically high.
    pub critical_high: Option<f64>,
    /// The unit of the bounds, a UCUM code.
    pub unit: &'static str,
}

/// Every indicator of the catalog, in its order.
pub fn catalog() -> &'static [Indicator] {
    CATALOG
}

/// The catalog's indicator with LOINC code `code`.
pub fn by_code(code: &str) -> Option<&'static Indicator> {
    let code = code.trim();
    CATALOG.iter().find(|i| i.code == code)
}

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
    CATALOG.iter().find(|i| is_wanted(i.code) || is_wanted(i.display) || i.all_names().any(is_wanted))
}

/// The codes of every indicator that `keyword` names: its code, display, or an English or
/// Chinese name equal to it or containing it, case aside. An English keyword needs two
/// characters, and below four it must be a whole word of the code or a name ("BP" finds the
/// blood pressure panel, systolic and diastolic, not every name with "bp" inside); a longer one
/// may be a part ("sugar", "chol"). A Chinese keyword of one character must be a whole name
/// (钾, potassium); of two or more it may be a part of one (胆固醇 finds total, LDL and HDL
/// cholesterol), since Chinese writes no spaces between words.
pub fn matching_codes(keyword: &str) -> Vec<&'static str> {
    let wanted = words(keyword);
    let chinese = wanted.chars().any(is_cjk);
    let length = wanted.chars().count();
    if length < if chinese { 1 } else { 2 } {
        return Vec::new();
    }
    let wanted_compact = compact(keyword);
    let short = length < WHOLE_WORD_BELOW;
    let padded = format!(" {wanted} ");
    CATALOG
        .iter()
        .filter(|i| {
            let names = || std::iter::once(i.code).chain(i.all_names());
            let equal = names().chain([i.display]).any(|n| words(n) == wanted || compact(n) == wanted_compact);
            let within = if chinese {
                length >= 2 && i.chinese.iter().any(|n| compact(n).contains(&wanted_compact))
            } else if short {
                names().any(|n| format!(" {} ", words(n)).contains(&padded))
            } else {
                names().chain([i.display]).any(|n| words(n).contains(&wanted))
            };
            equal || within
        })
        .map(|i| i.code)
        .collect()
}

impl Indicator {
    /// Its English and Chinese names.
    fn all_names(&self) -> impl Iterator<Item = &'static str> + use<> {
        let (names, chinese): (&'static [&'static str], &'static [&'static str]) = (self.names, self.chinese);
        names.iter().chain(chinese).copied()
    }
}

/// Whether `c` is a CJK ideograph (the unified block and extension A, where Chinese names are).
fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
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
        assert_eq!(codes("Glucose"), ["2339-0", "2345-7", "15074-8", "41653-7", "25428-4"], "urine glucose too");
        assert_eq!(codes("BP"), ["85354-9", "8480-6", "8462-4"]);
        assert_eq!(codes("blood pressure"), ["85354-9", "8480-6", "8462-4"]);
        assert_eq!(codes("a1c"), ["4548-4"]);
        assert_eq!(codes("A1C"), ["4548-4"]);
        assert!(codes("pulse").contains(&"8867-4"));
        assert_eq!(codes("hr"), ["8867-4", "40443-4"]);
        assert_eq!(codes("LDL"), ["13457-7", "18262-6"]);
        assert_eq!(codes("HDL"), ["2085-9"]);
        assert_eq!(codes("cholesterol"), ["2093-3", "13457-7", "18262-6", "2085-9"]);
        assert_eq!(codes("spo2"), ["59408-5", "2708-6"]);
        assert_eq!(codes("steps"), ["55423-8", "41950-7"]);
        assert_eq!(codes("8480-6"), ["8480-6"]);
        assert_eq!(codes("weight"), ["29463-7", "77606-2"]);
        assert_eq!(codes("sleep"), ["93832-4"]);
        assert_eq!(codes("bmi"), ["39156-5", "59576-9"]);
        assert_eq!(codes("respiratory"), ["9279-1"]);
        assert_eq!(codes("temperature"), ["8310-5"]);
        assert_eq!(codes("creatinine"), ["2160-0", "38483-4", "33914-3", "98979-8", "14959-1"]);
        assert_eq!(codes("hemoglobin"), ["4548-4", "718-7", "785-6", "786-4", "5794-3"]);
        assert_eq!(codes("triglycerides"), ["2571-8"]);
        assert_eq!(codes("height"), ["8302-2"]);
        // Synthea's codes by the names people use.
        assert_eq!(codes("eGFR"), ["33914-3", "98979-8"]);
        assert_eq!(codes("BUN"), ["6299-2", "3094-0"]);
        assert_eq!(codes("urea nitrogen"), ["6299-2", "3094-0"]);
        assert_eq!(codes("na"), ["2947-0", "2951-2"]);
    }

    #[test]
    fn chinese_names_are_found_whole_and_in_part() {
        assert_eq!(codes("血糖"), ["2339-0", "2345-7", "15074-8", "41653-7"]);
        assert_eq!(codes("血压"), ["85354-9", "8480-6", "8462-4"]);
        assert_eq!(codes("收缩压"), ["8480-6"]);
        assert_eq!(codes("舒张压"), ["8462-4"]);
        assert_eq!(codes("总胆固醇"), ["2093-3"]);
        assert_eq!(codes("胆固醇"), ["2093-3", "13457-7", "18262-6", "2085-9"], "a part of each lipid's name");
        assert_eq!(codes("低密度脂蛋白胆固醇"), ["13457-7", "18262-6"]);
        assert_eq!(codes("高密度脂蛋白胆固醇"), ["2085-9"]);
        assert_eq!(codes("甘油三酯"), ["2571-8"]);
        assert_eq!(codes("糖化血红蛋白"), ["4548-4"]);
        assert_eq!(codes("糖化"), ["4548-4"]);
        assert_eq!(codes("心率"), ["8867-4", "40443-4", "80404-7"]);
        assert_eq!(codes("身高"), ["8302-2"]);
        assert_eq!(codes("体温"), ["8310-5"]);
        assert_eq!(codes("肌酐"), ["2160-0", "38483-4", "14959-1"]);
        assert_eq!(codes("尿素氮"), ["6299-2", "3094-0"]);
        assert_eq!(codes("估算肾小球滤过率"), ["33914-3", "98979-8"]);
        assert_eq!(codes(" 钾 "), ["6298-4", "2823-3"], "one character, a whole name");
        assert!(codes("血").is_empty(), "one character is only ever a whole name");
        assert_eq!(lookup_name("血糖").map(|i| i.code), Some("2339-0"));
        assert_eq!(lookup_name("体重").map(|i| i.code), Some("29463-7"));
        assert_eq!(lookup_name("维生素d").map(|i| i.code), Some("62292-8"), "case aside");
        assert_eq!(by_code("33914-3").map(|i| i.chinese[0]), Some("估算肾小球滤过率"));
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
            let code = indicator.code;
            assert!(!indicator.names.is_empty() && !indicator.chinese.is_empty(), "{code}: English and Chinese names");
            assert!(indicator.chinese.iter().all(|n| n.chars().any(is_cjk)), "{code}: Chinese names are Chinese");
            if let Some(range) = indicator.range {
                let known = match indicator.scale {
                    Some(scale) => scale.knows(range.unit),
                    None => crate::units::normalize_unit(range.unit) == Some(range.unit),
                };
                assert!(known, "{code}: its range's unit {} is one it converts", range.unit);
                assert!(range.low.is_some() || range.high.is_some(), "{code}: a range has a bound");
                if let (Some(low), Some(high)) = (range.low, range.high) {
                    assert!(low < high, "{code}: {low} < {high}");
                }
            }
        }
    }
}
