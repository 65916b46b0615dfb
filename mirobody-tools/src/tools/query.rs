//! What the health queries share: matching what a model asks for to the indicators a person
//! has data for, reading a time range, and saying how to add data when nothing is there.

use mirobody_core::{ToolContext, ToolError};
use serde::Serialize;
use serde_json::{Value, json};

#[cfg(feature = "uploads")]
use crate::upload_links::UploadLinks;
use mirobody_health::IndicatorSummary;
use mirobody_health::indicators;
use mirobody_health::text::parse_time_ms;

/// The most names one query takes.
pub(crate) const MAX_NAMES: usize = 20;
/// The most characters in one name.
pub(crate) const MAX_NAME_CHARS: usize = 100;
const DAY_MS: i64 = 86_400_000;

/// The names in the array argument `name`: trimmed, non-empty, bounded in count and length.
pub(crate) fn names<'a>(values: &'a [String], name: &str) -> Result<Vec<&'a str>, ToolError> {
    let names: Vec<&str> = values.iter().map(|n| n.trim()).filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return Err(ToolError::new(format!("'{name}' needs at least one name, for example [\"glucose\"].")));
    }
    if names.len() > MAX_NAMES {
        return Err(ToolError::new(format!("'{name}' takes at most {MAX_NAMES} names; ask in several calls.")));
    }
    if let Some(long) = names.iter().find(|n| n.chars().count() > MAX_NAME_CHARS) {
        return Err(ToolError::new(format!(
            "'{long}' is longer than the {MAX_NAME_CHARS} characters a name may have."
        )));
    }
    Ok(names)
}

/// Whether `summary` is what `wanted` names: its code, a part of its name (three characters or
/// more), or a common name of it ("blood sugar" for glucose, "BP" for blood pressure).
pub(crate) fn matches(summary: &IndicatorSummary, wanted: &str) -> bool {
    let wanted_lower = wanted.to_lowercase();
    summary.code.eq_ignore_ascii_case(wanted)
        || (wanted_lower.chars().count() >= 3 && summary.display.to_lowercase().contains(&wanted_lower))
        || indicators::matching_codes(wanted).contains(&summary.code.as_str())
}

/// `[start, end)` in milliseconds from the optional `start_time` and `end_time` arguments: a
/// date (`2026-03-01`, `2026-03`, `2026`) or an RFC 3339 time. An end given as a date
/// includes that whole day (month, year).
pub(crate) fn range(start_time: Option<&str>, end_time: Option<&str>) -> Result<(i64, i64), ToolError> {
    let read = |name: &str, value: Option<&str>| -> Result<Option<(i64, String)>, ToolError> {
        match value.map(str::trim).filter(|t| !t.is_empty()) {
            None => Ok(None),
            Some(text) => parse_time_ms(text).map(|ms| Some((ms, text.to_owned()))).ok_or_else(|| {
                ToolError::new(format!(
                    "'{name}' must be a date like 2026-03-01 or a time like 2026-03-01T08:00:00Z, not '{text}'."
                ))
            }),
        }
    };
    let start = read("start_time", start_time)?.map_or(i64::MIN, |(ms, _)| ms);
    let end = match read("end_time", end_time)? {
        None => i64::MAX,
        Some((ms, text)) if text.contains('T') => ms,
        Some((ms, text)) => match text.len() {
            4 => parse_time_ms(&format!("{}", text.parse::<i32>().unwrap_or(0) + 1)).unwrap_or(i64::MAX),
            7 => next_month(&text).unwrap_or(i64::MAX),
            _ => ms.saturating_add(DAY_MS),
        },
    };
    if start >= end {
        return Err(ToolError::new("'start_time' must be before 'end_time'."));
    }
    Ok((start, end))
}

fn next_month(year_month: &str) -> Option<i64> {
    let (year, month) = year_month.split_once('-')?;
    let (year, month): (i32, u32) = (year.parse().ok()?, month.parse().ok()?);
    let (year, month) = if month >= 12 { (year + 1, 1) } else { (year, month + 1) };
    parse_time_ms(&format!("{year:04}-{month:02}"))
}

/// What a query that found nothing adds to its answer: a plain message, and for the caller's
/// own data how to add some. No link goes into the answer: a link is made only when the person
/// asks for one (`upload_link`), so answers a model sees carry nothing that uploads as them.
#[derive(Serialize)]
pub(crate) struct NothingFound {
    pub(crate) message: String,
}

impl NothingFound {
    /// `message`, with how to add data when the data asked for is the caller's own and the
    /// server makes upload links (never without the `uploads` feature, which has upload_link).
    pub(crate) fn new(ctx: &ToolContext<'_>, subject_is_me: bool, message: String) -> Self {
        #[cfg(feature = "uploads")]
        let makes_links = ctx.extension::<UploadLinks>().is_some();
        #[cfg(not(feature = "uploads"))]
        let makes_links = {
            let _ = ctx;
            false
        };
        if !subject_is_me || !makes_links {
            return NothingFound { message };
        }
        NothingFound {
            message: format!(
                "{message} The user can add their data: a FHIR export (JSON Bundle or Bulk Data NDJSON), a \
                 CSV of measurements (columns time, indicator, value, unit) or the iPhone Health app's \
                 export.zip are imported as their data; lab reports and letters (PDF, Word, text, images) are \
                 kept as documents to read. If they want to, call upload_link for a page to upload them from \
                 (a link that works once, for a short while)."
            ),
        }
    }

    /// Adds `message` to an answer built as a JSON object.
    pub(crate) fn add_to(self, out: &mut Value) {
        out["message"] = json!(self.message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirobody_health::text::rfc3339;

    fn summary(code: &str, display: &str) -> IndicatorSummary {
        IndicatorSummary {
            code: code.into(),
            display: display.into(),
            unit: None,
            count: 1,
            first: String::new(),
            last: String::new(),
        }
    }

    #[test]
    fn names_find_indicators_by_code_name_and_common_name() {
        let glucose = summary("2339-0", "Glucose [Mass/volume] in Blood");
        assert!(matches(&glucose, "2339-0"));
        assert!(matches(&glucose, "glucose"));
        assert!(matches(&glucose, "blood sugar"));
        assert!(!matches(&glucose, "BP"));
        let systolic = summary("8480-6", "Systolic blood pressure");
        assert!(matches(&systolic, "BP"));
        assert!(matches(&systolic, "blood pressure"));
        assert!(!matches(&systolic, "gl"), "two letters are not a part of a name");
    }

    #[test]
    fn ranges_include_the_whole_end_day_month_or_year() {
        let (s, e) = range(Some("2026-03-01"), Some("2026-03-31")).unwrap();
        assert_eq!((rfc3339(s).as_str(), rfc3339(e).as_str()), ("2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"));
        let (_, e) = range(None, Some("2026-12")).unwrap();
        assert_eq!(rfc3339(e), "2027-01-01T00:00:00Z");
        let (_, e) = range(None, Some("2026")).unwrap();
        assert_eq!(rfc3339(e), "2027-01-01T00:00:00Z");
        let (_, e) = range(None, Some("2026-03-01T08:00:00Z")).unwrap();
        assert_eq!(rfc3339(e), "2026-03-01T08:00:00Z");
        assert_eq!(range(None, None).unwrap(), (i64::MIN, i64::MAX));
        let bad = range(Some("last spring"), None).unwrap_err().to_string();
        assert!(bad.contains("'start_time' must be a date"), "{bad}");
        let backwards = range(Some("2026-05-01"), Some("2026-04-01")).unwrap_err();
        assert!(backwards.to_string().contains("before"));
    }
}
