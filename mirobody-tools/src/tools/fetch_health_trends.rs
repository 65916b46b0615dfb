//! `fetch_health_trends`: named indicators summed up per hour, day, week or month (count, min,
//! max, mean, last, and how many values were low or high), with a summary of change over the
//! span (first against last, slope, days out of range). The sums are made in the database
//! (`HealthStore::buckets`): a year of minute values answers in one call of a few hundred
//! buckets, where `fetch_health_data` would hand over a thousand of half a million values.
//!
//! Series are made as `fetch_health_data` makes them: one per code and unit, or with `unit`
//! each indicator's values from every source and code converted into one, values of a unit
//! that does not convert kept apart and named. Each stored unit is summed up on its own, so a
//! bucket never mixes units; low and high are counted as measured: as the value's source judged
//! it (its laboratory's range or interpretation), else against the catalog's range in the unit
//! measured (`mirobody_health::store::aggregate::source_verdict`).

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde::Serialize;

use super::query::{self, matches};
use super::trends::{self, Interval, Shown, Summary};
use super::{caller, fail, member};
use mirobody_health::flags::{ReferenceRange, catalog_range};
use mirobody_health::indicators;
use mirobody_health::store::aggregate::{Bucket, BucketQuery};
use mirobody_health::units::{Scale, unit_key};
use mirobody_health::{IndicatorSummary, health_store};

/// The most buckets one answer holds, shared among its series: a year of days fits.
pub(crate) const MAX_BUCKETS: usize = 400;

/// Get the user's health indicators summed up per hour, day, week or month, computed by the
/// database: for each bucket the count, min, max, mean and last value and how many values were
/// low or high (as the lab that measured them said, else against the reference range given with
/// the series); and a summary of change
/// (first and last bucket, change, slope per day, days out of range). Use it for long or dense
/// data (wearables, a year of heart rate) and for trends; fetch_health_data gives single values.
/// Buckets are in UTC, weeks start on Monday (ISO), empty buckets are left out, at most 400
/// buckets in all, the newest kept.
///
/// Args:
///     indicators: Indicator names or codes, e.g. ["heart rate", "2339-0"].
///     interval: The bucket: hour, day, week or month.
///     start_time: From this date or time (e.g. 2026-03-01); default: all.
///     end_time: Up to this date (inclusive) or time; default: now.
///     member: Whose data: leave empty for the user; otherwise a care-circle member's nickname, email or id.
///     unit: Convert to this unit, e.g. mg/dL, mmol/L, kg, lb, Cel: every source and code of an indicator in one series; values that cannot be converted are listed apart (not_converted).
#[tool(annotations(read_only, idempotent), output_schema = crate::tools::output_schemas::fetch_health_trends())]
#[allow(clippy::too_many_arguments)] // One per parameter the model sees.
async fn fetch_health_trends(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    indicators: Vec<String>,
    interval: Interval,
    start_time: Option<&str>,
    end_time: Option<&str>,
    member: Option<&str>,
    unit: Option<&str>,
) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let wanted = query::names(&indicators, "indicators")?;
    let unit = super::fetch_health_data::wanted_unit(unit)?;
    let range = query::range(start_time, end_time)?;
    let db = health_store(ctx).map_err(fail)?;
    let (subject, label) = member::subject(member, me, user, db, ctx).await?;
    let denied = || ToolError::new("Not authorized to read that member's health data.");
    let all = db.indicators(me, &subject).await.map_err(fail)?.ok_or_else(denied)?;

    let mut matched: Vec<&IndicatorSummary> = Vec::new();
    let mut not_found = Vec::new();
    for name in &wanted {
        let mut any = false;
        for summary in all.iter().filter(|s| matches(s, name)) {
            any = true;
            if !matched.iter().any(|m| m.code == summary.code && m.unit == summary.unit) {
                matched.push(summary);
            }
        }
        if !any {
            not_found.push(*name);
        }
    }
    // The catalog's order, as fetch_health_data merges: the code a name most often means first.
    let position = |code: &str| indicators::catalog().iter().position(|i| i.code == code).unwrap_or(usize::MAX);
    matched.sort_by_key(|s| position(&s.code));
    let plans = plan(&matched, unit);
    if unit.is_some() && !plans.is_empty() && plans.iter().all(|p| p.not_converted) {
        let unit = unit.unwrap_or_default();
        return Err(ToolError::new(format!(
            "None of these indicators converts to '{unit}'; ask without 'unit', or for a unit of their kind \
             (glucose: mg/dL or mmol/L; weight: kg or [lb_av])."
        )));
    }
    let keep = (MAX_BUCKETS / plans.len().max(1)).max(1);
    let limit = u32::try_from(keep + 1).unwrap_or(u32::MAX).saturating_mul(interval.groups_per_bucket());

    let mut series = Vec::new();
    let mut not_converted = Vec::new();
    for plan in &plans {
        let mut groups: Vec<Bucket> = Vec::new();
        for member in &plan.members {
            let (low, high) = bounds(&member.summary.code, member.summary.unit.as_deref());
            let query = BucketQuery::new(&member.summary.code, member.summary.unit.as_deref(), range, interval.grain())
                .with_bounds(low, high)
                .with_limit(limit);
            let found = db.buckets(me, &subject, &query).await.map_err(fail)?.ok_or_else(denied)?;
            match member.scale {
                Some((scale, from, to)) => groups
                    .extend(found.iter().map(|b| trends::converted(b, |v| scale.convert(v, from, to).unwrap_or(v)))),
                None => groups.extend(found),
            }
        }
        if groups.is_empty() {
            continue;
        }
        let (buckets, truncated) = trends::roll_up(&groups, interval, keep);
        if plan.not_converted {
            not_converted.push(plan.name.clone());
        }
        let first = plan.members[0].summary.code.as_str();
        series.push((
            plan.name.clone(),
            Trend {
                code: first,
                codes: if plan.members.len() > 1 { plan.codes() } else { Vec::new() },
                unit: plan.unit.as_deref(),
                summary: trends::summary(&buckets, &groups, interval),
                buckets: trends::shown(&buckets, interval),
                truncated,
                reference_range: plan.unit.as_deref().and_then(|u| catalog_range(first, u)),
            },
        ));
    }
    let mut nothing = None;
    if series.is_empty() {
        let text = if not_found.is_empty() {
            "No numeric values in that time range.".to_owned()
        } else {
            format!("No data for {}.", not_found.join(", "))
        };
        nothing = Some(query::NothingFound::new(ctx, subject == me, text));
    }
    Ok(ToolResult::ok(Answer {
        subject: &label,
        interval,
        indicators: Named(series),
        not_found,
        not_converted,
        nothing,
    }))
}

/// The values counted as low (below) and high (above) in `unit`: the catalog's range there,
/// critical bounds included, as `flags` flags single values.
fn bounds(code: &str, unit: Option<&str>) -> (Option<f64>, Option<f64>) {
    let Some(range) = unit.and_then(|u| catalog_range(code, u)) else {
        return (None, None);
    };
    let pick = |a: Option<f64>, b: Option<f64>, f: fn(f64, f64) -> f64| match (a, b) {
        (Some(a), Some(b)) => Some(f(a, b)),
        (a, b) => a.or(b),
    };
    (pick(range.low, range.critical_low, f64::max), pick(range.high, range.critical_high, f64::min))
}

/// One stored (code, unit) of a series, and how its values convert into the series' unit.
struct Member<'a> {
    summary: &'a IndicatorSummary,
    scale: Option<(&'static Scale, &'a str, &'static str)>,
}

/// One series of the answer, before its values are read.
struct Plan<'a> {
    name: String,
    /// The analyte (first Chinese name) when converted, else the code; and the series' unit.
    key: (String, Option<String>),
    unit: Option<String>,
    members: Vec<Member<'a>>,
    not_converted: bool,
}

impl Plan<'_> {
    fn codes(&self) -> Vec<&str> {
        let mut codes: Vec<&str> = Vec::new();
        for m in &self.members {
            if !codes.contains(&m.summary.code.as_str()) {
                codes.push(&m.summary.code);
            }
        }
        codes
    }
}

/// The series the matched (code, unit) pairs make: by code and unit, or with `unit` by analyte
/// for those that convert to it.
fn plan<'a>(matched: &[&'a IndicatorSummary], unit: Option<&'static str>) -> Vec<Plan<'a>> {
    let mut plans: Vec<Plan<'a>> = Vec::new();
    for summary in matched {
        let stored = summary.unit.as_deref();
        let indicator = indicators::by_code(&summary.code);
        let scale = indicator.and_then(|i| i.scale);
        let conversion = match (unit, scale, stored) {
            (Some(to), Some(scale), Some(from)) if scale.knows(to) && scale.knows(from) => Some((scale, from, to)),
            _ => None,
        };
        let (key, name, series_unit) = match conversion {
            Some((_, _, to)) => {
                let analyte = indicator.and_then(|i| i.chinese.first().copied()).unwrap_or(summary.code.as_str());
                ((analyte.to_owned(), Some(to.to_owned())), format!("{} ({to})", summary.display), Some(to.to_owned()))
            }
            None => {
                let key = stored.map(|u| unit_key(u).to_owned());
                let name = match (&key, unit) {
                    (k, Some(_)) => {
                        format!("{} ({}), not converted", summary.display, k.as_deref().unwrap_or("no unit"))
                    }
                    (Some(k), None)
                        if matched
                            .iter()
                            .any(|o| o.code == summary.code && o.unit.as_deref().map(unit_key) != Some(k.as_str())) =>
                    {
                        format!("{} ({k})", summary.display)
                    }
                    _ => summary.display.clone(),
                };
                ((summary.code.clone(), key.clone()), name, key)
            }
        };
        let member = Member { summary, scale: conversion };
        match plans.iter_mut().find(|p| p.key == key) {
            Some(p) => {
                if !p.members.iter().any(|m| m.summary.code == summary.code) && conversion.is_some() {
                    // Several codes of one analyte: the series is named by the analyte.
                    if let Some(i) = indicator {
                        p.name =
                            format!("{} ({})", i.names.first().copied().unwrap_or(i.display), unit.unwrap_or_default());
                    }
                }
                p.members.push(member);
            }
            None => plans.push(Plan {
                name,
                key,
                unit: series_unit,
                members: vec![member],
                not_converted: unit.is_some() && conversion.is_none(),
            }),
        }
    }
    plans
}

#[derive(Serialize)]
struct Trend<'a> {
    code: &'a str,
    /// Every code merged into a converted series, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    codes: Vec<&'a str>,
    unit: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<Summary>,
    buckets: Vec<Shown>,
    /// Older buckets were left out (the newest kept): ask for a shorter span or a longer interval.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
    /// The catalog's range in the series' unit: what values their source did not judge were
    /// counted against.
    #[serde(skip_serializing_if = "Option::is_none")]
    reference_range: Option<ReferenceRange>,
}

// Serialized straight to JSON text, as fetch_health_data's answer is.
#[derive(Serialize)]
struct Answer<'a> {
    subject: &'a str,
    #[serde(serialize_with = "interval_name")]
    interval: Interval,
    indicators: Named<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_found: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_converted: Vec<String>,
    #[serde(flatten)]
    nothing: Option<query::NothingFound>,
}

fn interval_name<S: serde::Serializer>(interval: &Interval, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(match interval {
        Interval::Hour => "hour",
        Interval::Day => "day",
        Interval::Week => "week",
        Interval::Month => "month",
    })
}

/// Series by name, in the order found, as a JSON object.
struct Named<'a>(Vec<(String, Trend<'a>)>);

impl Serialize for Named<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, trend)| (name, trend)))
    }
}
