//! The twin of `family_health`, with what it needs of its own: how the caller knows a member,
//! the one sharer a name stands for, and the summary of an Observation.

use mirobody_core::{ToolContext, UserInfo, tool};
use mirobody_tools::health::CircleMember;
use serde_json::{Value, json};

use super::harness::{Backends, ada, anonymous, check};

/// Recent health observations (vital signs, lab results, activity; FHIR Observations) of the user,
/// or of a care-circle member who shares their health data with the user. Call it when the user
/// asks about their own or a family member's measurements.
///
/// Args:
///     member: Whose data: leave empty (or "me") for the user; otherwise a family member's
///         nickname, email or id, or a distinctive part of the nickname.
///     count: How many of the newest observations to return (1-100).
#[tool(name = "family_health", annotations(read_only, idempotent), view = "ui://mirobody/chart.html", register = false)]
async fn family_health(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    member: Option<&str>,
    #[arg(default = 20)] count: i64,
) -> Result<Value, String> {
    let me = user.user_id().ok_or("Authentication required: sign in and call the tool again.")?;
    let db = mirobody_tools::health::health_store(ctx).map_err(|e| e.to_string())?;
    let count = count.clamp(1, 100) as u32;
    let wanted = member.map(str::trim).unwrap_or_default();
    if wanted.chars().count() > 200 {
        return Err("'member' is too long: at most 200 characters.".into());
    }
    let is_self = wanted == me || ["me", "self", "myself", "i", "my", "mine"].contains(&wanted.to_lowercase().as_str());
    let (subject, name) = if wanted.is_empty() {
        match user.subject_user_id().filter(|s| *s != me) {
            Some(subject) => {
                let sharers = db.health_sharers(me).await.map_err(|e| e.to_string())?;
                let name = sharers.iter().find(|m| m.user_id == subject).map_or(subject, label);
                (subject.to_owned(), name.to_owned())
            }
            None => (me.to_owned(), "you".to_owned()),
        }
    } else if is_self {
        (me.to_owned(), "you".to_owned())
    } else {
        let sharers = db.health_sharers(me).await.map_err(|e| e.to_string())?;
        let member = resolve_member(wanted, &sharers)?;
        (member.user_id.clone(), label(member).to_owned())
    };
    let page = db
        .observations(me, &subject, count)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("Not authorized to read that member's health data.")?;
    let observations: Vec<Value> = page.observations.iter().map(observation_summary).collect();
    Ok(json!({"subject": name, "observation_count": page.total, "observations": observations}))
}

/// How the caller knows a member.
fn label(member: &CircleMember) -> &str {
    member.nickname.as_deref().or(member.email.as_deref()).unwrap_or(&member.user_id)
}

/// The one sharer `wanted` names: by id, by nickname or email, or by a part of one (three
/// characters at least); two matches are an ambiguity to resolve.
fn resolve_member<'a>(wanted: &str, sharers: &'a [CircleMember]) -> Result<&'a CircleMember, String> {
    if let Some(by_id) = sharers.iter().find(|m| m.user_id == wanted) {
        return Ok(by_id);
    }
    let lower = wanted.to_lowercase();
    let fields =
        |m: &CircleMember| -> Vec<String> { m.nickname.iter().chain(&m.email).map(|f| f.to_lowercase()).collect() };
    let one = |found: Vec<&'a CircleMember>| match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => {
            let names: Vec<&str> = many.iter().map(|m| label(m)).collect();
            Err(format!("'{wanted}' matches more than one member ({}); say which one.", names.join(", ")))
        }
    };
    if let Some(found) = one(sharers.iter().filter(|m| fields(m).contains(&lower)).collect())? {
        return Ok(found);
    }
    if wanted.chars().count() >= 3
        && let Some(found) = one(sharers.iter().filter(|m| fields(m).iter().any(|f| f.contains(&lower))).collect())?
    {
        return Ok(found);
    }
    let available = if sharers.is_empty() {
        " Nobody has shared their health data with you yet.".to_owned()
    } else {
        let mut names: Vec<&str> = sharers.iter().map(label).collect();
        names.sort_unstable_by_key(|n| n.to_lowercase());
        format!(" Available: {}.", names.join(", "))
    };
    Err(format!("No circle member matching '{wanted}' has shared their health data with you.{available}"))
}

/// `{code, value, time}` of a FHIR Observation; the components of one (blood pressure) one by one.
fn observation_summary(o: &Value) -> Value {
    fn number(v: f64) -> String {
        if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v}") }
    }
    fn concept(c: &Value) -> Option<&str> {
        c["text"].as_str().or(c["coding"][0]["display"].as_str()).or(c["coding"][0]["code"].as_str())
    }
    fn value(o: &Value) -> Option<String> {
        let q = &o["valueQuantity"];
        let quantity = q["value"].as_f64().map(|v| match q["unit"].as_str().or(q["code"].as_str()) {
            Some(unit) => format!("{} {unit}", number(v)),
            None => number(v),
        });
        quantity
            .or_else(|| o["valueString"].as_str().map(str::to_owned))
            .or_else(|| concept(&o["valueCodeableConcept"]).map(str::to_owned))
            .or_else(|| o["valueInteger"].as_i64().map(|v| v.to_string()))
            .or_else(|| o["valueBoolean"].as_bool().map(|v| v.to_string()))
    }
    let components = || {
        let parts: Vec<String> = o["component"]
            .as_array()?
            .iter()
            .filter_map(|c| Some(format!("{}: {}", concept(&c["code"])?, value(c)?)))
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    };
    let time = ["effectiveDateTime", "effectiveInstant"]
        .iter()
        .find_map(|k| o[*k].as_str())
        .or(o["effectivePeriod"]["start"].as_str())
        .or(o["issued"].as_str())
        .or(o["meta"]["lastUpdated"].as_str());
    json!({"code": concept(&o["code"]).unwrap_or("unknown"), "value": value(o).or_else(components), "time": time})
}

#[test]
fn family_health_matches_the_builtin() {
    let member = |m: &str| json!({"member": m});
    check(
        mirobody_tools::tools::family_health::tool(),
        family_health_tool(),
        Backends::Shared,
        &[
            (ada(), json!({})),
            (ada(), json!({"count": 2})),
            (ada(), json!({"count": 0})),
            (ada(), json!({"count": 500})),
            (ada(), member("me")),
            (ada(), member(" MySelf ")),
            (ada(), member("ada")),
            (ada(), member("")),
            (ada(), member("u-dad")),
            (ada(), member("mom")),
            (ada(), member("BOB@example.com")),
            (ada(), member("granny")),
            (ada(), member("ann")),
            (ada(), member("a")),
            (ada(), member("Sam")),
            (ada(), member("u-sam")),
            (ada(), member(&"x".repeat(201))),
            (UserInfo::authenticated("ada").with_subject("u-mom"), json!({})),
            (UserInfo::authenticated("ada").with_subject("u-sam"), json!({})),
            (UserInfo::authenticated("eve"), member("Mom")),
            (UserInfo::authenticated("eve"), json!({})),
            (anonymous(), json!({})),
            (ada(), json!({"count": "five"})),
        ],
    );
}
