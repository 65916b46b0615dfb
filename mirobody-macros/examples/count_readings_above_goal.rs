//! `cargo run -p mirobody-macros --example count_readings_above_goal`
//!
//! The Python engine's "add a tool" example, `GoalService.count_readings_above_goal`, ported:
//! a `...Service` whose public methods are tools, the caller's identity from `&UserInfo`
//! (never an argument), a required and a defaulted parameter, and a structured result.
//!
//! The readings are FHIR Observations in the embedded database: mirobody-tools' SQL store on
//! SQLite (here in memory), migrated when it opens, seeded with a few readings of two users.
//! The tool reaches it through `health_store(ctx)?` (the store travels in the context's
//! extensions) and reads the caller's own observations, so one user never counts another's. A
//! registry runs it with a `ToolContext` that carries the store, as the server does.

use mirobody_core::{Format, Registry, ToolContext, ToolResult, UserInfo, tool_service};
use mirobody_health::{HealthStore, RecordStore, health_store};
use mirobody_store::SqlStore;
use serde::Serialize;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

/// The most observations one call reads, newest first.
const MAX_SCANNED: u32 = 1000;
/// The most times a result lists.
const MAX_TIMES: usize = 20;

/// What the tool returns: the Python version's `data`, as a type.
#[derive(Serialize)]
struct GoalCount {
    indicator: String,
    goal: f64,
    readings_examined: usize,
    readings_above_goal: usize,
    /// When the readings that reached the goal were taken, newest first (at most 20).
    times: Vec<String>,
    /// Set when the window holds more observations than one call reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// Compares a user's recorded readings with a goal.
#[derive(Default)]
struct GoalService;

#[tool_service]
impl GoalService {
    /// Count how many of the user's recent readings of one indicator reached a goal value.
    /// Call family_health first to see the exact indicator names.
    ///
    /// Args:
    ///     indicator: The exact indicator name as family_health shows it (e.g. "Step count"),
    ///         or its LOINC code (e.g. "55423-8").
    ///     goal: The value a reading must reach, in the indicator's own unit.
    ///     days: How many days back to look.
    #[tool(annotations(read_only))]
    pub(crate) async fn count_readings_above_goal(
        user: &UserInfo,
        ctx: &ToolContext<'_>,
        indicator: &str,
        goal: f64,
        #[arg(default = 30)] days: u32,
    ) -> Result<GoalCount, String> {
        // The registry refuses anonymous callers before this runs; the id is the verified one.
        let me = user.user_id().ok_or("Authorization required.")?;
        let db = health_store(ctx).map_err(|e| e.to_string())?;
        // Reader and subject are both the caller: only their own observations.
        let page = db.observations(me, me, MAX_SCANNED).await.map_err(|e| e.to_string())?.ok_or("Not authorized.")?;
        let since =
            OffsetDateTime::now_utc().checked_sub(Duration::days(days.into())).unwrap_or(OffsetDateTime::UNIX_EPOCH);
        let readings: Vec<(&str, f64)> = page
            .observations
            .iter()
            .filter(|o| Self::is_indicator(o, indicator))
            .filter_map(|o| {
                let (time, at) = Self::time(o)?;
                Some((time, o["valueQuantity"]["value"].as_f64()?)).filter(|_| at >= since)
            })
            .collect();
        let hits: Vec<&str> = readings.iter().filter(|(_, value)| *value >= goal).map(|(time, _)| *time).collect();
        // The page is newest first: when it is full and its oldest observation is still in the
        // window, older readings in the window were not read.
        let full = page.total > page.observations.len() as u64;
        let oldest_in_window = page.observations.last().and_then(Self::time).is_some_and(|(_, at)| at >= since);
        let note = (full && oldest_in_window).then(|| {
            format!("Only the newest {MAX_SCANNED} observations were read; ask for fewer days for a complete count.")
        });
        Ok(GoalCount {
            indicator: indicator.to_owned(),
            goal,
            readings_examined: readings.len(),
            readings_above_goal: hits.len(),
            times: hits.into_iter().take(MAX_TIMES).map(str::to_owned).collect(),
            note,
        })
    }

    /// Whether an Observation is of `indicator`: its name or one of its codes. Private, so not
    /// a tool.
    fn is_indicator(observation: &Value, indicator: &str) -> bool {
        let code = &observation["code"];
        let codings = code["coding"].as_array().into_iter().flatten();
        code["text"]
            .as_str()
            .into_iter()
            .chain(codings.flat_map(|c| [c["display"].as_str(), c["code"].as_str()]).flatten())
            .any(|name| name.eq_ignore_ascii_case(indicator))
    }

    /// When an Observation was taken, as recorded and as a time.
    fn time(observation: &Value) -> Option<(&str, OffsetDateTime)> {
        let time = observation["effectiveDateTime"].as_str().or(observation["effectiveInstant"].as_str())?;
        Some((time, OffsetDateTime::parse(time, &Rfc3339).ok()?))
    }
}

/// Now, to the second, as readings are recorded.
fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc().replace_nanosecond(0).expect("0 is a valid nanosecond")
}

/// A step count `days_ago` days before now.
fn steps(value: f64, days_ago: i64) -> Value {
    let at = now() - Duration::days(days_ago) - Duration::hours(2);
    json!({
        "resourceType": "Observation",
        "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "55423-8", "display": "Step count"}], "text": "Step count"},
        "valueQuantity": {"value": value, "unit": "steps"},
        "effectiveDateTime": at.format(&Rfc3339).expect("a formattable time"),
    })
}

/// Opens the embedded database in memory and stores a few readings: Ada's steps over the last
/// weeks and a heart rate, and Bob's steps.
async fn seeded_db() -> SqlStore {
    let db = SqlStore::connect("sqlite::memory:", None, 1).await.expect("the embedded database opens");
    let heart_rate = json!({
        "resourceType": "Observation",
        "code": {"coding": [{"system": "http://loinc.org", "code": "8867-4", "display": "Heart rate"}], "text": "Heart rate"},
        "valueQuantity": {"value": 64, "unit": "beats/minute"},
        "effectiveDateTime": now().format(&Rfc3339).expect("a formattable time"),
    });
    let ada = [steps(11_204.0, 1), steps(6_310.0, 2), steps(10_050.0, 5), steps(15_000.0, 45), heart_rate];
    db.add_observations("ada", &ada).await.expect("Ada's readings are stored");
    db.add_observations("bob", &[steps(20_000.0, 1)]).await.expect("Bob's readings are stored");
    db
}

/// The calls the example makes, each with what it is and what it returned.
async fn calls() -> Vec<(&'static str, ToolResult)> {
    let db = seeded_db().await;
    let registry = Registry::from_registered().expect("valid tools");
    let db = std::sync::Arc::new(db);
    let mut state = http::Extensions::new();
    state.insert(std::sync::Arc::clone(&db) as std::sync::Arc<dyn HealthStore>);
    let ctx = ToolContext::new().with_extensions(&state);
    let (ada, bob) = (UserInfo::authenticated("ada"), UserInfo::authenticated("bob"));
    let goal = json!({"indicator": "Step count", "goal": 10000});
    let mut out = Vec::new();
    for (what, args, user) in [
        ("ada, steps >= 10000 in the last 30 days (the default)", goal.clone(), &ada),
        ("ada, the last 60 days, by LOINC code", json!({"indicator": "55423-8", "goal": 10000, "days": 60}), &ada),
        ("bob, the same question: only his own readings", goal.clone(), &bob),
        ("an anonymous caller", goal, &UserInfo::anonymous()),
    ] {
        out.push((what, registry.run("count_readings_above_goal", args, user, &ctx).await));
    }
    db.close().await;
    out
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let tool = GoalService::count_readings_above_goal_tool();
    println!("What an OpenAI model sees:");
    println!("{}\n", serde_json::to_string_pretty(&tool.spec().render(Format::OpenAi)).expect("JSON"));
    for (what, result) in calls().await {
        println!("{what}:\n{}\n", result.first_text().unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[tokio::test]
    async fn counts_only_the_callers_readings_in_the_window() {
        let calls = super::calls().await;
        let counts: Vec<_> = calls
            .iter()
            .map(|(_, result)| {
                result.structured_content().map(|c| (c["readings_examined"].clone(), c["readings_above_goal"].clone()))
            })
            .collect();
        assert_eq!(counts, [Some((json!(3), json!(2))), Some((json!(4), json!(3))), Some((json!(1), json!(1))), None,]);
        let ada = calls[0].1.structured_content().unwrap();
        assert_eq!(ada["indicator"], "Step count");
        assert_eq!(ada["goal"], 10000.0);
        assert_eq!(ada["times"].as_array().unwrap().len(), 2);
        assert!(ada.get("note").is_none());
        let refused = &calls[3].1;
        assert!(refused.is_error());
        assert!(refused.first_text().unwrap().starts_with("Authentication required"), "{refused:?}");
    }

    #[test]
    fn the_declaration_is_read_from_the_signature_and_doc_comment() {
        let tool = super::GoalService::count_readings_above_goal_tool();
        assert!(tool.is_auth());
        let schema = tool.spec().input_schema();
        assert_eq!(schema["required"], json!(["indicator", "goal"]));
        assert_eq!(
            schema["properties"]["days"],
            json!({"type": "integer", "description": "How many days back to look.", "default": 30})
        );
        assert!(schema["properties"].get("user").is_none() && schema["properties"].get("ctx").is_none());
    }
}
