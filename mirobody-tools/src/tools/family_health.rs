//! `family_health`: recent FHIR Observations of the caller or of a care-circle member who
//! shares their health data with the caller.
//!
//! A member is named as upstream names them (see [`member`](super::member)); the read itself
//! re-checks access ([`HealthStore::observations`](mirobody_health::HealthStore::observations)
//! takes the reader).

use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use serde_json::{Value, json};

use super::member;
use super::{caller, fail};

use mirobody_health::health_store;

/// The default and the bounds of `count`.
const DEFAULT_COUNT: i64 = 20;
/// The most observations one call returns.
pub(crate) const MAX_COUNT: i64 = 100;

/// Recent health observations (vital signs, lab results, activity; FHIR Observations) of the user,
/// or of a care-circle member who shares their health data with the user. Call it when the user
/// asks about their own or a family member's measurements.
///
/// Args:
///     member: Whose data: leave empty (or "me") for the user; otherwise a family member's nickname,
///         email or id, or a distinctive part of the nickname.
///     count: How many of the newest observations to return (1-100).
// Hosts that render MCP Apps views show the values as a trend per indicator.
#[tool(annotations(read_only, idempotent), view = crate::views::CHART_VIEW, output_schema = crate::tools::output_schemas::family_health())]
async fn family_health(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    member: Option<&str>,
    #[arg(default = DEFAULT_COUNT)] count: i64,
) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let db = health_store(ctx).map_err(fail)?;
    let count = count.clamp(1, MAX_COUNT) as u32;
    let (subject, label) = member::subject(member, me, user, db, ctx).await?;
    let page = db
        .observations(me, &subject, count)
        .await
        .map_err(fail)?
        .ok_or_else(|| ToolError::new("Not authorized to read that member's health data."))?;
    let observations: Vec<Value> = page.observations.iter().map(summary).collect();
    Ok(ToolResult::ok(json!({
        "subject": label,
        "observation_count": page.total,
        "observations": observations,
    })))
}

fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 { format!("{value:.0}") } else { format!("{value}") }
}

fn quantity(q: &Value) -> Option<String> {
    let value = number(q["value"].as_f64()?);
    match q["unit"].as_str().or(q["code"].as_str()) {
        Some(unit) => Some(format!("{value} {unit}")),
        None => Some(value),
    }
}

fn concept_text(c: &Value) -> Option<&str> {
    c["text"].as_str().or(c["coding"][0]["display"].as_str()).or(c["coding"][0]["code"].as_str())
}

fn value_of(o: &Value) -> Option<String> {
    quantity(&o["valueQuantity"])
        .or_else(|| o["valueString"].as_str().map(str::to_owned))
        .or_else(|| concept_text(&o["valueCodeableConcept"]).map(str::to_owned))
        .or_else(|| o["valueInteger"].as_i64().map(|v| v.to_string()))
        .or_else(|| o["valueBoolean"].as_bool().map(|v| v.to_string()))
}

/// `{code, value, time}` of one Observation, as upstream summarised them; components (blood
/// pressure) are listed one by one.
fn summary(o: &Value) -> Value {
    let code = concept_text(&o["code"]).unwrap_or("unknown");
    let value = value_of(o).or_else(|| {
        let parts: Vec<String> = o["component"]
            .as_array()?
            .iter()
            .filter_map(|c| Some(format!("{}: {}", concept_text(&c["code"])?, value_of(c)?)))
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    });
    let time = o["effectiveDateTime"]
        .as_str()
        .or(o["effectiveInstant"].as_str())
        .or(o["effectivePeriod"]["start"].as_str())
        .or(o["issued"].as_str())
        .or(o["meta"]["lastUpdated"].as_str());
    json!({"code": code, "value": value, "time": time})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_are_summarised_as_upstream() {
        let hr = json!({
            "code": {"coding": [{"code": "8867-4", "display": "Heart rate"}]},
            "valueQuantity": {"value": 72.0, "unit": "beats/minute"},
            "effectiveDateTime": "2026-01-02T03:04:05Z",
        });
        assert_eq!(
            summary(&hr),
            json!({"code": "Heart rate", "value": "72 beats/minute", "time": "2026-01-02T03:04:05Z"})
        );
        let weight =
            json!({"code": {"text": "Weight"}, "valueQuantity": {"value": 70.5, "code": "kg"}, "issued": "2026-01-01"});
        assert_eq!(summary(&weight), json!({"code": "Weight", "value": "70.5 kg", "time": "2026-01-01"}));
        let bp = json!({"code": {"text": "Blood pressure"}, "component": [
            {"code": {"text": "Systolic"}, "valueQuantity": {"value": 120, "unit": "mmHg"}},
            {"code": {"text": "Diastolic"}, "valueQuantity": {"value": 80, "unit": "mmHg"}},
        ], "meta": {"lastUpdated": "2026-01-03T00:00:00Z"}});
        assert_eq!(summary(&bp)["value"], "Systolic: 120 mmHg; Diastolic: 80 mmHg");
        assert_eq!(summary(&json!({}))["value"], Value::Null);
    }
}
