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
use mirobody_health::{health_store, indicators};

/// Find which health indicators (lab results, vital signs, wearable data) the user has data for.
/// Matches LOINC codes, names and common names, in English or Chinese ("blood sugar" or 血糖 finds
/// glucose, "BP" or 血压 blood pressure, "eGFR", "BUN", "A1c"). Returns each indicator's code, name,
/// unit, how many values and from when to when; pass the names or codes to fetch_health_data for
/// the values.
///
/// Args:
///     keywords: What to look for, e.g. ["glucose", "blood pressure"].
///     member: Whose data: leave empty for the user; otherwise a care-circle member's nickname, email or id.
#[tool(annotations(read_only, idempotent), output_schema = crate::tools::output_schemas::search_health_indicators())]
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
                if let Some(chinese) = indicators::by_code(&hit.code).and_then(|i| i.chinese.first()) {
                    found.last_mut().expect("just pushed")["chinese_name"] = json!(chinese);
                }
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
