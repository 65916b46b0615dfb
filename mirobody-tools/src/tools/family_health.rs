//! `family_health`: recent FHIR Observations of the caller or of a care-circle member who
//! shares their health data with the caller.
//!
//! A member is named as upstream names them (a self word, an id, a nickname or email, or a
//! unique part of one), but only among the members who share with the caller, so the tool
//! cannot be used to learn who else exists. Upstream's "single substring hit" picked whoever
//! happened to contain `a`; a part of a name must now be at least three characters, and two
//! matches are an ambiguity the model must resolve. The read itself re-checks access
//! ([`HealthStore::observations`](crate::health::HealthStore::observations) takes the reader).

use crate::health::CircleMember;
use mirobody_core::{
    Annotations, Args, Param, Tool, ToolContext, ToolError, ToolResult, Type, UserInfo, register_tool,
};
use serde_json::{Value, json};

use super::{caller, fail};

use crate::health::health_store;

/// Words that name the caller.
const SELF_WORDS: [&str; 6] = ["me", "self", "myself", "i", "my", "mine"];
/// The shortest part of a nickname or email that may name a member.
pub const MIN_PARTIAL_MATCH: usize = 3;
/// The most characters in `member`.
pub const MAX_MEMBER_CHARS: usize = 200;
/// The default and the bounds of `count`.
pub const DEFAULT_COUNT: i64 = 20;
/// The most observations one call returns.
pub const MAX_COUNT: i64 = 100;

/// The declaration of `family_health`.
pub fn tool() -> Tool {
    Tool::new(
        "family_health",
        "Recent health observations (vital signs, lab results, activity; FHIR Observations) of the user, \
         or of a care-circle member who shares their health data with the user. Call it when the user \
         asks about their own or a family member's measurements.",
    )
    .param(Param::optional(
        "member",
        Type::String,
        "Whose data: leave empty (or \"me\") for the user; otherwise a family member's nickname, email \
         or id, or a distinctive part of the nickname.",
    ))
    .param(
        Param::optional("count", Type::Integer, "How many of the newest observations to return (1-100).")
            .default(DEFAULT_COUNT),
    )
    .annotations(Annotations::read_only().idempotent(true))
    .auth(true)
    .handler(family_health)
}

fn label(member: &CircleMember) -> &str {
    member.nickname.as_deref().or(member.email.as_deref()).unwrap_or(&member.user_id)
}

fn available(sharers: &[CircleMember]) -> String {
    if sharers.is_empty() {
        return " Nobody has shared their health data with you yet.".into();
    }
    let mut names: Vec<&str> = sharers.iter().map(label).collect();
    names.sort_unstable_by_key(|n| n.to_lowercase());
    format!(" Available: {}.", names.join(", "))
}

/// The one sharer `wanted` names, or an error the model can act on.
fn resolve<'a>(wanted: &str, sharers: &'a [CircleMember]) -> Result<&'a CircleMember, ToolError> {
    if let Some(by_id) = sharers.iter().find(|m| m.user_id == wanted) {
        return Ok(by_id);
    }
    let wanted_lower = wanted.to_lowercase();
    let fields = |m: &'a CircleMember| m.nickname.iter().chain(m.email.iter()).map(|f| f.to_lowercase());
    let pick = |matches: Vec<&'a CircleMember>| -> Result<Option<&'a CircleMember>, ToolError> {
        match matches.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            many => {
                let names: Vec<&str> = many.iter().map(|m| label(m)).collect();
                Err(ToolError::new(format!(
                    "'{wanted}' matches more than one member ({}); say which one.",
                    names.join(", ")
                )))
            }
        }
    };
    let exact: Vec<&CircleMember> = sharers.iter().filter(|m| fields(m).any(|f| f == wanted_lower)).collect();
    if let Some(found) = pick(exact)? {
        return Ok(found);
    }
    if wanted.chars().count() >= MIN_PARTIAL_MATCH {
        let partial: Vec<&CircleMember> =
            sharers.iter().filter(|m| fields(m).any(|f| f.contains(&wanted_lower))).collect();
        if let Some(found) = pick(partial)? {
            return Ok(found);
        }
    }
    Err(ToolError::new(format!(
        "No circle member matching '{wanted}' has shared their health data with you.{}",
        available(sharers)
    )))
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

async fn family_health(args: Args, user: &UserInfo, ctx: &ToolContext<'_>) -> Result<ToolResult, ToolError> {
    let me = caller(user)?;
    let db = health_store(ctx).map_err(fail)?;
    let count = args.integer("count", DEFAULT_COUNT).clamp(1, MAX_COUNT) as u32;
    let wanted = args.str("member").map(str::trim).unwrap_or_default();
    if wanted.chars().count() > MAX_MEMBER_CHARS {
        return Err(ToolError::new(format!("'member' is too long: at most {MAX_MEMBER_CHARS} characters.")));
    }
    let is_self = wanted == me || SELF_WORDS.contains(&wanted.to_lowercase().as_str());
    let (subject, label): (String, String) = if wanted.is_empty() {
        match user.subject_user_id().filter(|s| *s != me) {
            // The member the caller acts for; the read below checks the share again.
            Some(subject) => {
                let sharers = db.health_sharers(me).await.map_err(fail)?;
                let name = sharers.iter().find(|m| m.user_id == subject).map_or(subject, label);
                (subject.to_owned(), name.to_owned())
            }
            None => (me.to_owned(), "you".to_owned()),
        }
    } else if is_self {
        (me.to_owned(), "you".to_owned())
    } else {
        let sharers = db.health_sharers(me).await.map_err(fail)?;
        let member = resolve(wanted, &sharers)?;
        (member.user_id.clone(), label(member).to_owned())
    };
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

register_tool!(tool);

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, nickname: Option<&str>, email: Option<&str>) -> CircleMember {
        CircleMember { user_id: id.into(), nickname: nickname.map(Into::into), email: email.map(Into::into) }
    }

    fn circle() -> Vec<CircleMember> {
        vec![
            member("u-mom", Some("Mom"), Some("ann@example.com")),
            member("u-dad", Some("Dad"), Some("bob@example.com")),
            member("u-gran", Some("Granny Ann"), None),
        ]
    }

    #[test]
    fn members_resolve_by_id_name_email_or_a_unique_part() {
        let c = circle();
        assert_eq!(resolve("u-dad", &c).unwrap().user_id, "u-dad");
        assert_eq!(resolve("mom", &c).unwrap().user_id, "u-mom");
        assert_eq!(resolve("BOB@example.com", &c).unwrap().user_id, "u-dad");
        assert_eq!(resolve("granny", &c).unwrap().user_id, "u-gran");
    }

    #[test]
    fn short_or_ambiguous_parts_do_not_pick_someone() {
        let c = circle();
        let short = resolve("a", &c).unwrap_err().to_string();
        assert!(
            short.contains("No circle member matching 'a'") && short.contains("Available: Dad, Granny Ann, Mom"),
            "{short}"
        );
        let two = resolve("ann", &c).unwrap_err().to_string();
        assert!(two.contains("more than one member"), "{two}");
        let none = resolve("Uncle", &[]).unwrap_err().to_string();
        assert!(none.contains("Nobody has shared"), "{none}");
    }

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
