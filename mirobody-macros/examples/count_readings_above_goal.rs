//! `cargo run -p mirobody-macros --example count_readings_above_goal`
//!
//! The Python engine's "add a tool" example, `GoalService.count_readings_above_goal`, ported:
//! a `...Service` whose public methods are tools, the caller's identity from `&UserInfo`
//! (never an argument), a required and a defaulted parameter, and a structured result.
//!
//! The readings come from a small in-memory table standing in for the embedded database's
//! `th_series_data`; when the database backend exists, `readings` becomes a query through
//! `ctx.db()?`, scoped to the caller as this one is.

use mirobody_core::{Format, Registry, ToolContext, UserInfo, tool_service};
use serde::Serialize;
use serde_json::json;

/// One stored reading: whose, which indicator, how many days ago, when, and its value.
struct Reading {
    user_id: &'static str,
    indicator: &'static str,
    days_ago: u32,
    start_time: &'static str,
    value: f64,
}

/// The stand-in for `th_series_data`.
const READINGS: &[Reading] = &[
    Reading { user_id: "ada", indicator: "steps", days_ago: 1, start_time: "2026-11-29T08:00:00", value: 11_204.0 },
    Reading { user_id: "ada", indicator: "steps", days_ago: 2, start_time: "2026-11-28T08:00:00", value: 6_310.0 },
    Reading { user_id: "ada", indicator: "steps", days_ago: 5, start_time: "2026-11-25T08:00:00", value: 10_050.0 },
    Reading { user_id: "ada", indicator: "steps", days_ago: 45, start_time: "2026-10-16T08:00:00", value: 15_000.0 },
    Reading { user_id: "ada", indicator: "sleep_hours", days_ago: 1, start_time: "2026-11-29T07:00:00", value: 7.5 },
    Reading { user_id: "bob", indicator: "steps", days_ago: 1, start_time: "2026-11-29T09:00:00", value: 20_000.0 },
];

/// What the tool returns: the Python version's `data`, as a type.
#[derive(Serialize)]
struct GoalCount {
    indicator: String,
    goal: f64,
    readings_examined: usize,
    readings_above_goal: usize,
    times: Vec<&'static str>,
}

/// Compares a user's recorded readings with a goal.
#[derive(Default)]
struct GoalService;

#[tool_service]
impl GoalService {
    /// Count how many of the user's recent readings reached a goal value.
    /// Call query_health_indicators first to get the exact indicator name.
    ///
    /// Args:
    ///     indicator: The exact indicator name, as returned by query_health_indicators.
    ///     goal: The value a reading must reach, in the indicator's own unit.
    ///     days: How many days back to look.
    #[tool(annotations(read_only))]
    pub(crate) async fn count_readings_above_goal(
        user: &UserInfo,
        indicator: &str,
        goal: f64,
        #[arg(default = 30)] days: u32,
    ) -> Result<GoalCount, String> {
        // The registry refuses anonymous callers before this runs; the id is the verified one.
        let user_id = user.user_id().ok_or("Authorization required.")?;
        let rows = Self::readings(user_id, indicator, days);
        let hits: Vec<&'static str> = rows.iter().filter(|r| r.value >= goal).map(|r| r.start_time).collect();
        Ok(GoalCount {
            indicator: indicator.to_owned(),
            goal,
            readings_examined: rows.len(),
            readings_above_goal: hits.len(),
            times: hits.into_iter().take(20).collect(),
        })
    }

    /// The user's readings of one indicator in the last `days` days, newest first. Private,
    /// so not a tool.
    fn readings(user_id: &str, indicator: &str, days: u32) -> Vec<&'static Reading> {
        let mut rows: Vec<&Reading> = READINGS
            .iter()
            .filter(|r| r.user_id == user_id && r.indicator == indicator && r.days_ago <= days)
            .collect();
        rows.sort_by_key(|r| r.days_ago);
        rows
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::from_registered().expect("valid tools");
    println!("What an OpenAI model sees:");
    println!("{}\n", serde_json::to_string_pretty(&registry.functions(Format::OpenAi)).unwrap());

    let ctx = ToolContext::new();
    let ada = UserInfo::authenticated("ada");
    let args = json!({"indicator": "steps", "goal": 10000});
    let result = registry.run("count_readings_above_goal", args.clone(), &ada, &ctx).await;
    println!("ada, steps >= 10000 in the last 30 days (the default):\n{}\n", result.first_text().unwrap());
    assert_eq!(result.structured_content().unwrap()["readings_above_goal"], 2);

    let result = registry
        .run("count_readings_above_goal", json!({"indicator": "steps", "goal": 10000, "days": 60}), &ada, &ctx)
        .await;
    println!("ada, the last 60 days:\n{}\n", result.first_text().unwrap());
    assert_eq!(result.structured_content().unwrap()["readings_above_goal"], 3);

    let refused = registry.run("count_readings_above_goal", args, &UserInfo::anonymous(), &ctx).await;
    println!("an anonymous caller:\n{}", refused.first_text().unwrap());
    assert!(refused.is_error());
}
