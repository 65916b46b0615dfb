//! `get_user_health_profile`: a person's health at a glance: the newest value of each
//! indicator, their conditions, medications, allergies, immunizations, procedures and recent
//! reports (what is current first), and the dates the data covers.
//!
//! Named as upstream named it; its answer is built from the person's own imported data, not a
//! profile text, and an empty profile says so plainly (and how to add data) instead of
//! upstream's redirect that also swallowed errors.

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::{Value, json};

use super::{caller, fail, member, query};
use mirobody_health::flags::assess;
use mirobody_health::health_store;
use mirobody_health::records::HealthRecord;

/// The user's health profile: the latest value of each indicator they have data for (flagged
/// low, normal or high against its reference range where there is one), their
/// conditions and medications (active first), allergies, immunizations, procedures and recent
/// reports with their results, and the dates their data covers. Call it first to see what is
/// known about the user's health.
///
/// Args:
///     member: Whose profile: leave empty for the user; otherwise a care-circle member's nickname, email or id.
#[tool(annotations(read_only, idempotent), output_schema = crate::tools::output_schemas::get_user_health_profile())]
async fn get_user_health_profile(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    member: Option<&str>,
) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let db = health_store(ctx).map_err(fail)?;
    let (subject, label) = member::subject(member, me, user, db, ctx).await?;
    let denied = || ToolError::new("Not authorized to read that member's health data.");
    let latest = db.latest_values(me, &subject).await.map_err(fail)?.ok_or_else(denied)?;
    let records = db.health_records(me, &subject).await.map_err(fail)?.ok_or_else(denied)?;
    let indicators = db.indicators(me, &subject).await.map_err(fail)?.ok_or_else(denied)?;

    let latest: Vec<Value> = latest
        .iter()
        .map(|p| {
            let judged = assess(&p.code, p.value, p.unit.as_deref(), p.range.as_ref(), p.interpretation.as_deref());
            let mut item = json!({
                "code": p.code,
                "name": p.display,
                "value": p.value.map_or_else(|| json!(p.value_text), |n| json!(n)),
                "unit": p.unit,
                "time": p.time,
            });
            // Only what there is: most wearable values have no range and no flag.
            if let Value::Object(fields) = &mut item {
                if let Some(flag) = judged.flag {
                    fields.insert("flag".into(), json!(flag.as_str()));
                }
                if let Some(interpretation) = &p.interpretation {
                    fields.insert("interpretation".into(), json!(interpretation));
                }
                if let Some(range) = judged.range {
                    fields.insert("reference_range".into(), json!(range));
                }
            }
            item
        })
        .collect();
    let of_kind = |kind: &str| -> Vec<Value> { listed(&records, kind, MAX_LISTED) };
    let mut counts = serde_json::Map::new();
    for kind in ["condition", "medication", "allergy", "immunization", "procedure", "report"] {
        counts.insert(kind.to_owned(), json!(records.iter().filter(|r| r.kind == kind).count()));
    }
    // RFC 3339 UTC times sort as text.
    let from = indicators.iter().map(|i| i.first.as_str()).min();
    let to = indicators.iter().map(|i| i.last.as_str()).max();
    let mut out = json!({
        "subject": label,
        "latest": latest,
        "conditions": of_kind("condition"),
        "medications": of_kind("medication"),
        "allergies": of_kind("allergy"),
        "immunizations": of_kind("immunization"),
        "procedures": of_kind("procedure"),
        "reports": listed(&records, "report", MAX_REPORTS),
        "counts": counts,
        "covered": {"from": from, "to": to},
    });
    if latest.is_empty() && records.is_empty() {
        let who = if subject == me { "The user has".to_owned() } else { format!("{label} has") };
        query::NothingFound::new(ctx, subject == me, format!("{who} no health data yet.")).add_to(&mut out);
    }
    Ok(ToolResult::ok(out))
}

/// The most records of one kind listed; the answer's `counts` says how many there are.
const MAX_LISTED: usize = 50;
/// The most reports listed, the newest: each carries its results.
const MAX_REPORTS: usize = 10;

/// The records of `kind`, current ones (`active`, or no status) first, then newest first, at
/// most `max` of them.
fn listed(records: &[HealthRecord], kind: &str, max: usize) -> Vec<Value> {
    let mut of_kind: Vec<&HealthRecord> = records.iter().filter(|r| r.kind == kind).collect();
    let current = |r: &HealthRecord| matches!(r.status.as_deref(), None | Some("active" | "recurrence" | "relapse"));
    // RFC 3339 UTC times sort as text; a record with no time goes last.
    of_kind.sort_by(|a, b| current(b).cmp(&current(a)).then_with(|| b.time.cmp(&a.time)));
    of_kind
        .into_iter()
        .take(max)
        .map(|r| {
            let mut item = json!({"name": r.display, "status": r.status, "since": r.time});
            if let (Some(Value::Object(detail)), Value::Object(out)) = (&r.detail, &mut item) {
                out.extend(detail.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            item
        })
        .collect()
}
