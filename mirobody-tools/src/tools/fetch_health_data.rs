//! `fetch_health_data`: the values of named indicators over a time range, one series per
//! indicator and unit, each value with its time and the uploaded file it came from.
//!
//! Named and shaped as upstream (`indicators` -> `{name: {count, data: [{time, value, unit,
//! file_key}]}}`). Values in two units are two series, never one mixed series: a name then
//! carries its unit (`Glucose (mg/dL)`, `Glucose (mmol/L)`).

use mirobody_core::{
    Annotations, Args, Param, Tool, ToolContext, ToolError, ToolResult, Type, UserInfo, register_tool,
};
use serde_json::{Map, Value, json};

use super::query::{self, matches};
use super::{caller, fail, member};
use crate::health::{IndicatorSummary, health_store};

/// The default and the most values per series.
pub const DEFAULT_LIMIT: i64 = 100;
/// The most values one series returns.
pub const MAX_LIMIT: i64 = 1_000;

/// The declaration of `fetch_health_data`.
pub fn tool() -> Tool {
    Tool::new(
        "fetch_health_data",
        "Get the user's values of health indicators over time (lab results, vital signs, wearable data): \
         one series per indicator and unit, oldest first, each value with its time and the file it came \
         from. Name indicators by code, name or common name (see search_health_indicators).",
    )
    .param(
        Param::required("indicators", Type::Array, "Indicator names or codes, e.g. [\"glucose\", \"8480-6\"].")
            .items(Type::String),
    )
    .param(Param::optional("start_time", Type::String, "From this date or time (e.g. 2026-03-01); default: all."))
    .param(Param::optional("end_time", Type::String, "Up to this date (inclusive) or time; default: now."))
    .param(
        Param::optional("limit", Type::Integer, "The most values per series (1-1000), the newest kept.")
            .default(DEFAULT_LIMIT),
    )
    .param(Param::optional(
        "member",
        Type::String,
        "Whose data: leave empty for the user; otherwise a care-circle member's nickname, email or id.",
    ))
    .annotations(Annotations::read_only().idempotent(true))
    .auth(true)
    .handler(fetch_health_data)
}

async fn fetch_health_data(args: Args, user: &UserInfo, ctx: &ToolContext<'_>) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let wanted = query::names(&args, "indicators")?;
    let (start, end) = query::range(&args)?;
    let limit = args.integer("limit", DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as u32;
    let db = health_store(ctx).map_err(fail)?;
    let (subject, label) = member::subject(args.str("member"), me, user, db).await?;
    let denied = || ToolError::new("Not authorized to read that member's health data.");
    let all = db.indicators(me, &subject).await.map_err(fail)?.ok_or_else(denied)?;

    let mut series = Map::new();
    let mut not_found = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for name in &wanted {
        let codes: Vec<&IndicatorSummary> = all.iter().filter(|s| matches(s, name)).collect();
        if codes.is_empty() {
            not_found.push(*name);
            continue;
        }
        for summary in codes {
            if seen.contains(&summary.code.as_str()) {
                continue;
            }
            seen.push(&summary.code);
            let found = db.series(me, &subject, &summary.code, start, end, limit).await.map_err(fail)?;
            let found = found.ok_or_else(denied)?;
            // One series per unit: values are never silently mixed across units.
            let mut units: Vec<Option<&str>> = Vec::new();
            for point in &found.points {
                if !units.contains(&point.unit.as_deref()) {
                    units.push(point.unit.as_deref());
                }
            }
            for unit in &units {
                let data: Vec<Value> = found
                    .points
                    .iter()
                    .filter(|p| p.unit.as_deref() == *unit)
                    .map(|p| {
                        let mut v =
                            json!({"time": p.time, "value": p.value.map_or_else(|| json!(p.value_text), |n| json!(n))});
                        if let Some(unit) = &p.unit {
                            v["unit"] = json!(unit);
                        }
                        if let Some(file_key) = &p.file_key {
                            v["file_key"] = json!(file_key);
                        }
                        v
                    })
                    .collect();
                let key = match unit {
                    Some(unit) if units.len() > 1 => format!("{} ({unit})", summary.display),
                    _ => summary.display.clone(),
                };
                let mut entry = json!({"code": summary.code, "unit": unit, "count": data.len(), "data": data});
                if found.truncated {
                    entry["truncated"] = json!(true);
                }
                series.insert(key, entry);
            }
        }
    }
    let mut out = json!({"subject": label, "indicators": series});
    if !not_found.is_empty() {
        out["not_found"] = json!(not_found);
    }
    if series_is_empty(&out) {
        let message = if not_found.is_empty() {
            "No values in that time range.".to_owned()
        } else {
            format!("No data for {}.", not_found.join(", "))
        };
        let nothing = query::nothing_found(ctx, me, subject == me, message);
        out.as_object_mut().expect("an object").extend(nothing.as_object().cloned().unwrap_or_default());
    }
    Ok(ToolResult::ok(out))
}

fn series_is_empty(out: &Value) -> bool {
    out["indicators"].as_object().is_none_or(|m| m.values().all(|s| s["count"] == 0))
}

register_tool!(tool);
