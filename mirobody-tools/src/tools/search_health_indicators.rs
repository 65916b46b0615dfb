//! `search_health_indicators`: which indicators the caller (or a care-circle member who shares
//! with them) has data for, matched by code, name or common name, with counts and date ranges.
//!
//! Named as upstream named it, so agents written for it keep working. Upstream hid errors
//! behind a redirect to its upload page; here an error stays an error, and only an honest
//! "nothing found" says how to add data (`upload_link`, when the person wants to).

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::{Value, json};

use super::query::{self, matches};
use super::{caller, fail, member};
use mirobody_health::health_store;

/// Find which health indicators (lab results, vital signs, wearable data) the user has data for.
/// Matches LOINC codes, names and common names ("blood sugar" finds glucose, "BP" blood pressure).
/// Returns each indicator's code, name, unit, how many values and from when to when; pass the names
/// or codes to fetch_health_data for the values.
///
/// Args:
///     keywords: What to look for, e.g. ["glucose", "blood pressure"].
///     member: Whose data: leave empty for the user; otherwise a care-circle member's nickname, email or id.
#[tool(annotations(read_only, idempotent))]
async fn search_health_indicators(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    keywords: Vec<String>,
    member: Option<&str>,
) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let keywords = query::names(&keywords, "keywords")?;
    let db = health_store(ctx).map_err(fail)?;
    let (subject, label) = member::subject(member, me, user, db, ctx).await?;
    let all = db
        .indicators(me, &subject)
        .await
        .map_err(fail)?
        .ok_or_else(|| ToolError::new("Not authorized to read that member's health data."))?;
    let mut found: Vec<Value> = Vec::new();
    let mut not_found: Vec<&str> = Vec::new();
    for keyword in &keywords {
        let hits: Vec<&mirobody_health::IndicatorSummary> = all.iter().filter(|s| matches(s, keyword)).collect();
        if hits.is_empty() {
            not_found.push(keyword);
        }
        for hit in hits {
            if !found.iter().any(|f| f["code"] == hit.code.as_str() && f["unit"] == json!(hit.unit)) {
                found.push(json!({
                    "code": hit.code,
                    "name": hit.display,
                    "unit": hit.unit,
                    "count": hit.count,
                    "first": hit.first,
                    "last": hit.last,
                    "matched": keyword,
                }));
            }
        }
    }
    let mut out = json!({"subject": label, "indicators": found});
    if !not_found.is_empty() {
        out["not_found"] = json!(not_found);
    }
    if found.is_empty() {
        let who = if subject == me { "The user has".to_owned() } else { format!("{label} has") };
        query::NothingFound::new(ctx, subject == me, format!("{who} no data matching {}.", keywords.join(", ")))
            .add_to(&mut out);
    }
    Ok(ToolResult::ok(out))
}
