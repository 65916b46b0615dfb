//! `fetch_health_data`: the values of named indicators over a time range, one series per
//! indicator and unit, each value with its time and the uploaded file it came from.
//!
//! Named and shaped as upstream (`indicators` -> `{name: {count, data: [{time, value, unit,
//! file_key}]}}`). Values in two units are two series, never one mixed series: a name then
//! carries its unit (`Glucose (mg/dL)`, `Glucose (mmol/L)`); spellings of one unit (`mg/dl`,
//! `mg/dL`) are one. With `unit`, each indicator's values from every source and code are
//! converted into one series (`series.rs`), and what cannot be converted is listed apart.

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde::Serialize;

use super::query::{self, matches};
use super::series::{self, Entry};
use super::{caller, fail, member};
use mirobody_health::indicators;
use mirobody_health::units::normalize_unit;
use mirobody_health::{IndicatorSummary, Series, health_store};

/// The default and the most values per series.
const DEFAULT_LIMIT: i64 = 100;
/// The most values one series returns.
pub(crate) const MAX_LIMIT: i64 = 1_000;

/// Get the user's values of health indicators over time (lab results, vital signs, wearable data):
/// one series per indicator and unit, oldest first, each value with its time, the file it came
/// from and a flag (low, normal, high; critical_low, critical_high, abnormal): the lab's own
/// interpretation when it gave one, else against the reference range given with the series
/// (origin "source": the lab's; "catalog": a typical adult range) or with the value. Name
/// indicators by code, name or common name, English or Chinese (see search_health_indicators).
/// Pass unit to get one series per indicator from every source, converted.
///
/// Args:
///     indicators: Indicator names or codes, e.g. ["glucose", "8480-6"].
///     start_time: From this date or time (e.g. 2026-03-01); default: all.
///     end_time: Up to this date (inclusive) or time; default: now.
///     limit: The most values per series (1-1000), the newest kept.
///     member: Whose data: leave empty for the user; otherwise a care-circle member's nickname, email or id.
///     unit: Convert to this unit, e.g. mg/dL, mmol/L, kg, lb, Cel, %: each converted value keeps its original value and unit; values that cannot be converted are listed apart (not_converted).
// Hosts that render MCP Apps views show it live; the result stays what every client reads.
#[tool(annotations(read_only, idempotent), view = crate::views::CHART_VIEW, output_schema = crate::tools::output_schemas::fetch_health_data())]
#[allow(clippy::too_many_arguments)] // One per parameter the model sees.
async fn fetch_health_data(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    indicators: Vec<String>,
    start_time: Option<&str>,
    end_time: Option<&str>,
    #[arg(default = DEFAULT_LIMIT)] limit: i64,
    member: Option<&str>,
    unit: Option<&str>,
) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let wanted = query::names(&indicators, "indicators")?;
    let unit = wanted_unit(unit)?;
    let (start, end) = query::range(start_time, end_time)?;
    let limit = limit.clamp(1, MAX_LIMIT) as u32;
    let db = health_store(ctx).map_err(fail)?;
    let (subject, label) = member::subject(member, me, user, db, ctx).await?;
    let denied = || ToolError::new("Not authorized to read that member's health data.");
    // The series of the codes the names give by themselves (a code, or the catalog's codes for
    // a common name) are read while the person's indicators are: most calls name one
    // indicator, and this saves a round trip to the database.
    let mut direct: Vec<String> = Vec::new();
    for name in &wanted {
        for code in direct_codes(name) {
            if direct.len() < MAX_PREFETCH && !direct.contains(&code) {
                direct.push(code);
            }
        }
    }
    let prefetch =
        futures::future::join_all(direct.iter().map(|code| db.series(me, &subject, code, start, end, limit)));
    let (all, prefetched_results) = futures::join!(db.indicators(me, &subject), prefetch);
    let all = all.map_err(fail)?.ok_or_else(denied)?;
    let mut prefetched = Vec::with_capacity(direct.len());
    for (code, found) in direct.into_iter().zip(prefetched_results) {
        prefetched.push((code, found.map_err(fail)?));
    }

    // Each code once, with the series the store gave for it.
    let mut fetched: Vec<(&IndicatorSummary, Series)> = Vec::new();
    let mut not_found = Vec::new();
    for name in &wanted {
        let mut any = false;
        for summary in all.iter().filter(|s| matches(s, name)) {
            any = true;
            if fetched.iter().any(|(done, _)| done.code == summary.code) {
                continue;
            }
            let found = match prefetched.iter().position(|(code, _)| *code == summary.code) {
                Some(at) => prefetched.swap_remove(at).1,
                None => db.series(me, &subject, &summary.code, start, end, limit).await.map_err(fail)?,
            };
            fetched.push((summary, found.ok_or_else(denied)?));
        }
        if !any {
            not_found.push(*name);
        }
    }
    let mut not_converted = Vec::new();
    let indicators = match unit {
        None => fetched.iter().flat_map(|(summary, found)| series::by_unit(summary, found)).collect(),
        Some(unit) => {
            let converted = series::converted(&fetched, unit, limit as usize);
            if !converted.any_converted && !converted.series.is_empty() {
                return Err(ToolError::new(format!(
                    "None of these indicators converts to '{unit}'; ask without 'unit', or for a unit of their kind \
                     (glucose: mg/dL or mmol/L; weight: kg or [lb_av])."
                )));
            }
            not_converted = converted.not_converted;
            converted.series
        }
    };
    let mut nothing = None;
    if indicators.is_empty() {
        let text = if not_found.is_empty() {
            "No values in that time range.".to_owned()
        } else {
            format!("No data for {}.", not_found.join(", "))
        };
        nothing = Some(query::NothingFound::new(ctx, subject == me, text));
    }
    Ok(ToolResult::ok(Answer { subject: &label, indicators: Named(indicators), not_found, not_converted, nothing }))
}

/// The `unit` argument as a UCUM code, or an error naming what it takes.
pub(super) fn wanted_unit(unit: Option<&str>) -> Result<Option<&'static str>, ToolError> {
    let Some(text) = unit.map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    normalize_unit(text).map(Some).ok_or_else(|| {
        let shown: String = text.chars().take(40).collect();
        ToolError::new(format!(
            "'unit' must be a unit the server converts, like mg/dL, mmol/L, umol/L, %, mmol/mol, kg, [lb_av], cm, \
             [in_i], Cel or [degF]; not '{shown}'."
        ))
    })
}

/// The most series read ahead of knowing which codes the person has.
const MAX_PREFETCH: usize = 4;

/// The codes a name gives without the person's data: itself when it looks like a LOINC code
/// (`2339-0`), else the catalog's codes for it.
fn direct_codes(name: &str) -> Vec<String> {
    let loinc = name.split_once('-').is_some_and(|(number, check)| {
        !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit())
            && check.len() == 1
            && check.bytes().all(|b| b.is_ascii_digit())
    });
    if loinc {
        vec![name.to_owned()]
    } else {
        indicators::matching_codes(name).into_iter().map(str::to_owned).collect()
    }
}

// The answer, serialized straight to JSON text from what the store returned: a year of values
// is a thousand objects, which a `Value` tree would allocate and copy twice.
#[derive(Serialize)]
struct Answer<'a> {
    subject: &'a str,
    indicators: Named<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_found: Vec<&'a str>,
    /// Series left in their own units: a unit the scale of their indicator cannot convert.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_converted: Vec<String>,
    #[serde(flatten)]
    nothing: Option<query::NothingFound>,
}

/// Series by name, in the order found, as a JSON object.
struct Named<'a>(Vec<(String, Entry<'a>)>);

impl Serialize for Named<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, entry)| (name, entry)))
    }
}
