//! `fetch_health_trends` on SQLite and PostgreSQL: the same answers from both; buckets at UTC
//! hour and day boundaries, ISO weeks from Monday, calendar months, empty buckets left out;
//! units converted or kept apart, never mixed in a bucket; low and high counted against the
//! catalog's range, or as a value's source judged it (its range or interpretation); the summary of change; a year of minute values (525,600) in one call under
//! the reply cap; and bad input refused with a clear error. The store's sums are checked
//! against the store-independent fold of the same values (`fold_values`).

use mirobody_health::prelude::*;
use mirobody_health::store::aggregate::{BucketQuery, Grain, fold_values};
use mirobody_health::text::parse_time_ms;
use mirobody_store::SeedValues;
use serde_json::{Value, json};

use crate::support::Env;

/// The most characters of one answer's text: what `read_file` hands out at a time.
const REPLY_CAP_CHARS: usize = 50_000;

fn at(text: &str) -> i64 {
    parse_time_ms(text).unwrap()
}

fn observation(code: &str, value: f64, unit: &str, time: &str) -> Value {
    json!({
        "resourceType": "Observation",
        "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": format!("Code {code}")}]},
        "valueQuantity": {"value": value, "unit": unit},
        "effectiveDateTime": time,
    })
}

/// Alice's values around the boundaries: heart rate either side of midnight and of an hour,
/// on a Sunday and the Monday after, with a day between them empty; glucose in three units.
async fn boundaries(env: &Env) {
    let values = [
        observation("8867-4", 58.0, "/min", "2026-01-03T23:59:59.999Z"),
        observation("8867-4", 72.0, "/min", "2026-01-04T00:00:00Z"),
        observation("8867-4", 110.0, "/min", "2026-01-04T00:59:59Z"),
        observation("8867-4", 80.0, "/min", "2026-01-04T01:00:00Z"),
        observation("8867-4", 90.0, "/min", "2026-01-05T08:00:00Z"),
        observation("2345-7", 90.0, "mg/dL", "2026-01-05T09:00:00Z"),
        observation("2345-7", 180.0, "mg/dl", "2026-01-05T10:00:00Z"),
        observation("15074-8", 5.0, "mmol/L", "2026-01-05T11:00:00Z"),
        observation("15074-8", 0.9, "g/L", "2026-01-05T12:00:00Z"),
        observation("2345-7", 60.0, "mg/dL", "2026-02-01T09:00:00Z"),
    ];
    env.backends.sql().add_observations("alice", &values).await.unwrap();
}

/// Every answer the boundary tests read, by name, for comparing two databases.
async fn boundary_answers(env: &Env) -> Vec<(String, Value)> {
    boundaries(env).await;
    let alice = env.user("alice").await;
    let mut answers = Vec::new();
    for interval in ["hour", "day", "week", "month"] {
        let reply =
            alice.tool("fetch_health_trends", json!({"indicators": ["heart rate"], "interval": interval})).await;
        answers.push((format!("heart rate by {interval}"), reply.ok().clone()));
    }
    for unit in [None, Some("mg/dL"), Some("mmol/L")] {
        let mut args = json!({"indicators": ["glucose"], "interval": "day"});
        if let Some(unit) = unit {
            args["unit"] = json!(unit);
        }
        let reply = alice.tool("fetch_health_trends", args).await;
        answers.push((format!("glucose in {unit:?}"), reply.ok().clone()));
    }
    answers
}

fn starts(series: &Value) -> Vec<&str> {
    series["buckets"].as_array().unwrap().iter().map(|b| b["start"].as_str().unwrap()).collect()
}

fn check_boundaries(answers: &[(String, Value)]) {
    let get = |name: &str| &answers.iter().find(|(n, _)| n == name).unwrap().1;
    let hourly = &get("heart rate by hour")["indicators"]["Code 8867-4"];
    assert_eq!(
        starts(hourly),
        ["2026-01-03T23:00:00Z", "2026-01-04T00:00:00Z", "2026-01-04T01:00:00Z", "2026-01-05T08:00:00Z"],
        "UTC hours, the last millisecond of one in it, empty hours left out: {hourly}"
    );
    assert_eq!(
        hourly["buckets"][1],
        json!({"start": "2026-01-04T00:00:00Z", "count": 2, "min": 72.0, "max": 110.0, "mean": 91.0, "last": 110.0, "high": 1})
    );
    let daily = &get("heart rate by day")["indicators"]["Code 8867-4"];
    assert_eq!(starts(daily), ["2026-01-03", "2026-01-04", "2026-01-05"], "{daily}");
    assert_eq!(
        daily["buckets"][0],
        json!({"start": "2026-01-03", "count": 1, "min": 58.0, "max": 58.0, "mean": 58.0, "last": 58.0, "low": 1})
    );
    assert_eq!(daily["buckets"][1]["count"], 3);
    assert_eq!(daily["buckets"][1]["last"], 80.0, "the newest value of the day");
    assert_eq!(daily["reference_range"]["low"], 60.0);
    let summary = &daily["summary"];
    assert_eq!((summary["days_with_values"].as_u64(), summary["days_out_of_range"].as_u64()), (Some(3), Some(2)));
    assert_eq!((summary["first"]["mean"].as_f64(), summary["last"]["mean"].as_f64()), (Some(58.0), Some(90.0)));
    assert_eq!(
        (summary["change"].as_f64(), summary["low"].as_u64(), summary["high"].as_u64()),
        (Some(32.0), Some(1), Some(1))
    );
    assert!(summary["slope_per_day"].as_f64().unwrap() > 0.0, "{summary}");
    // Saturday the 3rd and Sunday the 4th are in the week from Monday 2025-12-29; Monday the
    // 5th starts the next.
    let weekly = &get("heart rate by week")["indicators"]["Code 8867-4"];
    assert_eq!(starts(weekly), ["2025-12-29", "2026-01-05"], "{weekly}");
    assert_eq!((weekly["buckets"][0]["count"].as_u64(), weekly["buckets"][0]["min"].as_f64()), (Some(4), Some(58.0)));
    let monthly = &get("heart rate by month")["indicators"]["Code 8867-4"];
    assert_eq!(starts(monthly), ["2026-01-01"]);
    assert_eq!(monthly["buckets"][0]["count"], 5);

    // Without a unit: one series per code and unit (spellings of one unit are one), never mixed.
    let apart = &get("glucose in None")["indicators"];
    let serum = &apart["Code 2345-7"];
    assert_eq!(serum["unit"], "mg/dL");
    assert_eq!(
        serum["buckets"][0],
        json!({"start": "2026-01-05", "count": 2, "min": 90.0, "max": 180.0, "mean": 135.0, "last": 180.0, "high": 1})
    );
    assert_eq!(starts(serum), ["2026-01-05", "2026-02-01"], "the empty days between are left out");
    assert_eq!(apart["Code 15074-8 (mmol/L)"]["buckets"][0]["count"], 1, "{apart}");
    assert_eq!(apart["Code 15074-8 (g/L)"]["buckets"][0]["max"], 0.9, "{apart}");
    assert_eq!(
        apart["Code 15074-8 (g/L)"]["reference_range"],
        Value::Null,
        "no range in a unit glucose does not convert"
    );

    // With a unit: every source converted into one series; g/L, which glucose's scale does not
    // know, kept apart and named.
    let in_mg = &get("glucose in Some(\"mg/dL\")");
    let merged = &in_mg["indicators"]["glucose (mg/dL)"];
    assert_eq!(merged["codes"], json!(["2345-7", "15074-8"]), "{in_mg}");
    let day = &merged["buckets"][0];
    assert_eq!((day["count"].as_u64(), day["min"].as_f64(), day["max"].as_f64()), (Some(3), Some(90.0), Some(180.0)));
    assert_eq!(day["last"].as_f64(), Some(90.08), "5 mmol/L at 11:00 is the newest, in mg/dL: {day}");
    assert_eq!(day["high"], 1, "counted as measured, against the range in the unit measured");
    assert_eq!(in_mg["not_converted"], json!(["Code 15074-8 (g/L), not converted"]));
    let in_mmol = &get("glucose in Some(\"mmol/L\")")["indicators"]["glucose (mmol/L)"];
    assert_eq!(in_mmol["buckets"][0]["max"].as_f64(), Some(9.99112), "180 mg/dL in mmol/L: {in_mmol}");
    assert_eq!(in_mmol["buckets"][0]["last"].as_f64(), Some(5.0));
}

#[tokio::test]
async fn buckets_keep_to_utc_iso_weeks_and_units_on_sqlite() {
    let env = Env::sqlite().await;
    check_boundaries(&boundary_answers(&env).await);
}

#[tokio::test]
async fn postgres_gives_the_same_answers_as_sqlite() {
    let Some(pg) = Env::postgres("trends::postgres_gives_the_same_answers_as_sqlite").await else { return };
    let on_pg = boundary_answers(&pg).await;
    check_boundaries(&on_pg);
    let on_sqlite = boundary_answers(&Env::sqlite().await).await;
    for ((name, sqlite), (_, postgres)) in on_sqlite.iter().zip(&on_pg) {
        assert_eq!(sqlite, postgres, "{name}: SQLite and PostgreSQL differ");
    }
}

/// A year (2025, 365 days) of one value a minute, cycling through seven values.
const PATTERN: [f64; 7] = [55.0, 64.5, 70.0, 78.25, 88.0, 101.0, 66.0];
const MINUTES: u32 = 525_600;

async fn a_year_of_minutes(env: &Env, subject: &str) {
    let seed =
        SeedValues::new("8867-4", "Heart rate", Some("/min"), (at("2025-01-01"), 60_000)).values(MINUTES, &PATTERN);
    env.backends.sql().seed_values(subject, &seed).await.unwrap();
}

/// The year's day buckets, as the test computes them from the pattern.
fn expected_days() -> Vec<(u64, f64, f64, f64, f64, u64, u64)> {
    (0..365)
        .map(|day| {
            let values: Vec<f64> = (day * 1440..(day + 1) * 1440).map(|i| PATTERN[i % PATTERN.len()]).collect();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let low = values.iter().filter(|v| **v < 60.0).count() as u64;
            let high = values.iter().filter(|v| **v > 100.0).count() as u64;
            (1440, min, max, mean, *values.last().unwrap(), low, high)
        })
        .collect()
}

async fn check_a_year_answers_in_one_call(env: &Env) {
    a_year_of_minutes(env, "alice").await;
    let alice = env.user("alice").await;
    let reply = alice.tool("fetch_health_trends", json!({"indicators": ["heart rate"], "interval": "day"})).await;
    let text = reply.result()["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.chars().count() <= REPLY_CAP_CHARS, "{} characters", text.chars().count());
    let series = &reply.ok()["indicators"]["Heart rate"];
    let buckets = series["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 365, "every day of 2025, none truncated");
    assert_eq!(series.get("truncated"), None);
    for (day, (b, want)) in buckets.iter().zip(expected_days()).enumerate() {
        let got = (b["count"].as_u64().unwrap(), b["min"].as_f64().unwrap(), b["max"].as_f64().unwrap());
        assert_eq!(got, (want.0, want.1, want.2), "day {day}: {b}");
        assert!((b["mean"].as_f64().unwrap() - want.3).abs() < 1e-3, "day {day}: {b} against {}", want.3);
        assert_eq!(b["last"].as_f64(), Some(want.4), "day {day}");
        assert_eq!((b["low"].as_u64().unwrap_or(0), b["high"].as_u64().unwrap_or(0)), (want.5, want.6), "day {day}");
    }
    assert_eq!(series["summary"]["count"], u64::from(MINUTES));
    assert_eq!(series["summary"]["days_out_of_range"], 365);

    // Months and weeks of the same year, and hours, which are more than one answer holds: the
    // newest kept, said so, still under the cap.
    let months = alice.tool("fetch_health_trends", json!({"indicators": ["heart rate"], "interval": "month"})).await;
    let months = months.ok()["indicators"]["Heart rate"]["buckets"].as_array().unwrap().clone();
    assert_eq!(months.len(), 12);
    assert_eq!(months[1]["count"], 28 * 1440, "February 2025");
    let weeks = alice.tool("fetch_health_trends", json!({"indicators": ["heart rate"], "interval": "week"})).await;
    let weeks = weeks.ok()["indicators"]["Heart rate"]["buckets"].as_array().unwrap().clone();
    assert_eq!((weeks.len(), weeks[0]["start"].as_str()), (53, Some("2024-12-30")), "2025-01-01 was a Wednesday");
    assert_eq!(weeks[0]["count"], 5 * 1440);
    let hours = alice.tool("fetch_health_trends", json!({"indicators": ["heart rate"], "interval": "hour"})).await;
    let text = hours.result()["content"][0]["text"].as_str().unwrap().chars().count();
    assert!(text <= REPLY_CAP_CHARS, "{text} characters");
    let hourly = &hours.ok()["indicators"]["Heart rate"];
    assert_eq!(hourly["truncated"], true);
    assert_eq!(hourly["buckets"].as_array().unwrap().len(), 400);
    assert_eq!(hourly["buckets"][399]["start"], "2025-12-31T23:00:00Z", "the newest kept");
}

#[tokio::test]
async fn a_year_of_minute_values_answers_in_one_call_on_sqlite() {
    check_a_year_answers_in_one_call(&Env::sqlite().await).await;
}

#[tokio::test]
async fn a_year_of_minute_values_answers_in_one_call_on_postgres() {
    let Some(env) = Env::postgres("trends::a_year_of_minute_values_answers_in_one_call_on_postgres").await else {
        return;
    };
    check_a_year_answers_in_one_call(&env).await;
}

/// The store's sums against the fold of the same series in memory: times before 1970 and
/// around midnight, a value without a unit, another person's values, and a shared reader.
async fn check_store_sums_match_the_fold(env: &Env) {
    let times = ["1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z", "2026-03-01T10:00:00Z", "2026-03-01T10:30:00Z"];
    let mut values: Vec<Value> =
        times.iter().zip([50.0, 61.0, 99.0, 140.0]).map(|(t, v)| observation("8867-4", v, "/min", t)).collect();
    values.push(json!({
        "resourceType": "Observation",
        "code": {"coding": [{"system": "http://loinc.org", "code": "8867-4"}]},
        "valueQuantity": {"value": 77.0},
        "effectiveDateTime": "2026-03-01T11:00:00Z",
    }));
    let sql = env.backends.sql();
    sql.add_observations("bob", &values).await.unwrap();
    sql.add_observations("carol", &[observation("8867-4", 10.0, "/min", "2026-03-01T10:00:00Z")]).await.unwrap();
    let db = env.backends.db();
    let series = db.series("bob", "bob", "8867-4", i64::MIN, i64::MAX, 100).await.unwrap().unwrap();
    for grain in [Grain::Hour, Grain::Day] {
        for unit in [Some("/min"), None] {
            let query =
                BucketQuery::new("8867-4", unit, (i64::MIN, i64::MAX), grain).with_bounds(Some(60.0), Some(100.0));
            let stored = db.buckets("bob", "bob", &query).await.unwrap().unwrap();
            assert_eq!(stored, fold_values(&series.points, &query), "{grain:?} {unit:?}");
            assert!(!stored.is_empty());
        }
        let newest = BucketQuery::new("8867-4", Some("/min"), (i64::MIN, i64::MAX), grain).with_limit(1);
        assert_eq!(db.buckets("bob", "bob", &newest).await.unwrap().unwrap().len(), 1);
    }
    let query = BucketQuery::new("8867-4", Some("/min"), (i64::MIN, i64::MAX), Grain::Day);
    assert_eq!(db.buckets("carol", "bob", &query).await.unwrap(), None, "not shared: refused");
    sql.share_health("bob", "carol", None).await.unwrap();
    let shared = db.buckets("carol", "bob", &query).await.unwrap().unwrap();
    assert_eq!(shared.iter().map(|b| b.count).sum::<u64>(), 4, "bob's values only, not carol's own");
    assert_eq!(shared[0].start_ms, at("1969-12-31"), "the floor before 1970");
}

#[tokio::test]
async fn store_sums_match_the_fold_on_sqlite() {
    check_store_sums_match_the_fold(&Env::sqlite().await).await;
}

#[tokio::test]
async fn store_sums_match_the_fold_on_postgres() {
    let Some(env) = Env::postgres("trends::store_sums_match_the_fold_on_postgres").await else { return };
    check_store_sums_match_the_fold(&env).await;
}

/// A glucose value (mg/dL, the catalog's range 70 to 99) with what its laboratory said of it.
fn judged(value: f64, time: &str, range: Option<(f64, f64, &str)>, interpretation: Option<&str>) -> Value {
    let mut o = observation("2345-7", value, "mg/dL", time);
    if let Some((low, high, unit)) = range {
        o["referenceRange"] = json!([{"low": {"value": low, "unit": unit}, "high": {"value": high, "unit": unit}}]);
    }
    if let Some(code) = interpretation {
        o["interpretation"] = json!([{"coding": [{"code": code}]}]);
    }
    o
}

/// Values whose laboratory judged them count as it did, in the database's sums as in the fold:
/// against its own range (converted from mmol/L), by its word over any range, "abnormal" given
/// its direction by the range; the others against the catalog's.
async fn check_values_count_as_their_source_judged(env: &Env) {
    let values = [
        // High by the catalog, normal by the laboratory's range.
        judged(105.0, "2026-03-01T08:00:00Z", Some((65.0, 110.0, "mg/dL")), None),
        // Normal by the catalog, high by the laboratory's word.
        judged(95.0, "2026-03-01T09:00:00Z", None, Some("H")),
        // Nothing from the source: high by the catalog.
        judged(150.0, "2026-03-01T10:00:00Z", None, None),
        // Low either way; the range is in mmol/L (64.9 to 109.9 mg/dL).
        judged(60.0, "2026-03-02T08:00:00Z", Some((3.6, 6.1, "mmol/L")), None),
        // Normal by the catalog, low by the laboratory's range.
        judged(85.0, "2026-03-02T09:00:00Z", Some((90.0, 120.0, "mg/dL")), None),
        // High by the range, normal by the laboratory's word, which wins.
        judged(120.0, "2026-03-03T08:00:00Z", Some((65.0, 110.0, "mg/dL")), Some("N")),
        // "Abnormal", low by its range.
        judged(50.0, "2026-03-03T09:00:00Z", Some((65.0, 110.0, "mg/dL")), Some("A")),
    ];
    let sql = env.backends.sql();
    sql.add_observations("bob", &values).await.unwrap();
    sql.share_health("bob", "carol", None).await.unwrap();
    for reader in ["bob", "carol"] {
        let client = env.user(reader).await;
        let trends = |interval: &str| {
            let mut args = json!({"indicators": ["2345-7"], "interval": interval});
            if reader == "carol" {
                args["member"] = json!("bob");
            }
            client.tool("fetch_health_trends", args)
        };
        let counts = |series: &Value| -> Vec<(u64, u64)> {
            let buckets = series["buckets"].as_array().unwrap();
            buckets.iter().map(|b| (b["low"].as_u64().unwrap_or(0), b["high"].as_u64().unwrap_or(0))).collect()
        };
        let daily = trends("day").await;
        let series = &daily.ok()["indicators"]["Code 2345-7"];
        assert_eq!(counts(series), [(0, 2), (2, 0), (1, 0)], "{reader}: {series}");
        let summary = &series["summary"];
        assert_eq!((summary["low"].as_u64(), summary["high"].as_u64()), (Some(3), Some(2)), "{summary}");
        assert_eq!(summary["days_out_of_range"], 3);
        // 2026-03-01 is a Sunday: two ISO weeks, the days' counts rolled up.
        let weekly = trends("week").await;
        assert_eq!(counts(&weekly.ok()["indicators"]["Code 2345-7"]), [(0, 2), (3, 0)], "{reader}");
    }
    // The database's sums, judged values read apart, equal the fold of the same series.
    let db = env.backends.db();
    let series = db.series("bob", "bob", "2345-7", i64::MIN, i64::MAX, 100).await.unwrap().unwrap();
    for grain in [Grain::Hour, Grain::Day] {
        let query =
            BucketQuery::new("2345-7", Some("mg/dL"), (i64::MIN, i64::MAX), grain).with_bounds(Some(70.0), Some(99.0));
        for reader in ["bob", "carol"] {
            let stored = db.buckets(reader, "bob", &query).await.unwrap().unwrap();
            assert_eq!(stored, fold_values(&series.points, &query), "{grain:?} read by {reader}");
        }
        // Kept to the newest group, the judged values of older ones are not counted in it.
        let newest = db.buckets("bob", "bob", &query.clone().with_limit(1)).await.unwrap().unwrap();
        assert_eq!(newest.len(), 1);
        assert_eq!((newest[0].low, newest[0].high), (1, 0), "{grain:?}: only 50 mg/dL, \"abnormal\" and low");
    }
}

#[tokio::test]
async fn values_count_as_their_source_judged_on_sqlite() {
    check_values_count_as_their_source_judged(&Env::sqlite().await).await;
}

#[tokio::test]
async fn values_count_as_their_source_judged_on_postgres() {
    let Some(env) = Env::postgres("trends::values_count_as_their_source_judged_on_postgres").await else { return };
    check_values_count_as_their_source_judged(&env).await;
}

#[tokio::test]
async fn bad_intervals_and_input_are_refused_clearly() {
    let env = Env::sqlite().await;
    boundaries(&env).await;
    let alice = env.user("alice").await;
    for bad in [json!("fortnight"), json!("Day"), json!("")] {
        let reply = alice.tool("fetch_health_trends", json!({"indicators": ["heart rate"], "interval": bad})).await;
        let message = reply.tool_error();
        assert!(
            message.contains("interval") && message.contains("hour") && message.contains("month"),
            "{bad}: {message}"
        );
    }
    let missing = alice.tool("fetch_health_trends", json!({"indicators": ["heart rate"]})).await;
    assert!(missing.tool_error().contains("interval"), "{}", missing.tool_error());
    let cases = [
        (json!({"indicators": [], "interval": "day"}), "at least one name"),
        (
            json!({"indicators": ["heart rate"], "interval": "day", "start_time": "last spring"}),
            "'start_time' must be a date",
        ),
        (json!({"indicators": ["heart rate"], "interval": "day", "unit": "furlongs"}), "'unit' must be a unit"),
        (
            json!({"indicators": ["heart rate"], "interval": "day", "unit": "kg"}),
            "None of these indicators converts to 'kg'",
        ),
        (json!({"indicators": ["heart rate"], "interval": "day", "member": "stranger@example.com"}), "member"),
    ];
    for (args, expected) in cases {
        let reply = alice.tool("fetch_health_trends", args.clone()).await;
        let message = reply.tool_error();
        assert!(message.contains(expected), "{args}: {message}");
    }
    let nothing = alice
        .tool(
            "fetch_health_trends",
            json!({"indicators": ["heart rate"], "interval": "day", "start_time": "2030-01-01"}),
        )
        .await;
    assert_eq!(nothing.ok()["indicators"], json!({}));
    assert!(nothing.ok()["message"].as_str().unwrap().contains("No numeric values"), "{}", nothing.ok());
}
