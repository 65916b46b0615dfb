//! What `fetch_health_trends` makes of the store's hourly or daily groups: the groups of each
//! stored unit converted into the series' unit, rolled up into the interval asked for (ISO
//! weeks from Monday, calendar months, all in UTC), and the summary of change a model quotes.
//!
//! Conversions are affine and increasing (`units.rs`), so converting a group's minimum,
//! maximum, mean and last value gives the converted values' own: the store's sums stay exact.

use mirobody_core::ToolEnum;
use serde::Serialize;

use mirobody_health::store::aggregate::{Bucket, DAY_MS, Grain};
use mirobody_health::text::rfc3339;

/// The width of the buckets a model asks for.
#[derive(ToolEnum, Clone, Copy, Debug, PartialEq, Eq)]
#[tool_enum(rename_all = "snake_case")]
pub(crate) enum Interval {
    Hour,
    Day,
    Week,
    Month,
}

impl Interval {
    /// The store's groups this interval is made of.
    pub(crate) fn grain(self) -> Grain {
        if self == Interval::Hour { Grain::Hour } else { Grain::Day }
    }

    /// The most store groups one bucket is made of (for the store's limit).
    pub(crate) fn groups_per_bucket(self) -> u32 {
        match self {
            Interval::Hour | Interval::Day => 1,
            Interval::Week => 7,
            Interval::Month => 31,
        }
    }

    /// The start of the bucket of the group starting at `start_ms`.
    fn bucket_start(self, start_ms: i64) -> i64 {
        let day = start_ms.div_euclid(DAY_MS);
        match self {
            Interval::Hour | Interval::Day => start_ms,
            // 1970-01-01 was a Thursday: Monday is three days before it.
            Interval::Week => (day - (day + 3).rem_euclid(7)) * DAY_MS,
            Interval::Month => {
                let (year, month, _) = civil_from_days(day);
                days_from_civil(year, month, 1) * DAY_MS
            }
        }
    }

    /// A bucket's start as a model reads it: a time for hours, else a date.
    fn label(self, start_ms: i64) -> String {
        let mut text = rfc3339(start_ms);
        if self != Interval::Hour {
            text.truncate(10);
        }
        text
    }
}

/// (year, month, day) of a day counted from 1970-01-01 (the proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The day counted from 1970-01-01 of a date, the inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `b` with every value passed through `convert` (affine and increasing, or the identity).
pub(crate) fn converted(b: &Bucket, convert: impl Fn(f64) -> f64) -> Bucket {
    let count = b.count.max(1) as f64;
    Bucket {
        min: convert(b.min),
        max: convert(b.max),
        sum: convert(b.sum / count) * count,
        last: convert(b.last),
        ..b.clone()
    }
}

/// Groups (each list oldest first, in one unit by now) rolled up into `interval`'s buckets,
/// oldest first, the newest `keep` kept; and whether older ones were left out.
pub(crate) fn roll_up(groups: &[Bucket], interval: Interval, keep: usize) -> (Vec<Bucket>, bool) {
    let mut out: Vec<Bucket> = Vec::new();
    let mut sorted: Vec<&Bucket> = groups.iter().collect();
    sorted.sort_by_key(|b| b.start_ms);
    for group in sorted {
        let start_ms = interval.bucket_start(group.start_ms);
        match out.last_mut().filter(|b| b.start_ms == start_ms) {
            Some(b) => {
                b.count += group.count;
                b.min = b.min.min(group.min);
                b.max = b.max.max(group.max);
                b.sum += group.sum;
                // Of two units' groups at the same time, the later in the list stands.
                if group.last_ms >= b.last_ms {
                    (b.last, b.last_ms) = (group.last, group.last_ms);
                }
                b.low += group.low;
                b.high += group.high;
            }
            None => out.push(Bucket { start_ms, ..group.clone() }),
        }
    }
    let truncated = out.len() > keep;
    if truncated {
        out.drain(..out.len() - keep);
    }
    (out, truncated)
}

/// One bucket of the answer.
#[derive(Serialize)]
pub(crate) struct Shown {
    start: String,
    count: u64,
    min: f64,
    max: f64,
    mean: f64,
    last: f64,
    #[serde(skip_serializing_if = "is_zero")]
    low: u64,
    #[serde(skip_serializing_if = "is_zero")]
    high: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `buckets` as the answer shows them.
pub(crate) fn shown(buckets: &[Bucket], interval: Interval) -> Vec<Shown> {
    buckets
        .iter()
        .map(|b| Shown {
            start: interval.label(b.start_ms),
            count: b.count,
            min: round(b.min),
            max: round(b.max),
            mean: round(mean(b)),
            last: round(b.last),
            low: b.low,
            high: b.high,
        })
        .collect()
}

fn mean(b: &Bucket) -> f64 {
    b.sum / b.count.max(1) as f64
}

/// The change over the buckets shown, in words a model can quote.
#[derive(Serialize, Debug, PartialEq)]
pub(crate) struct Summary {
    /// The first bucket's start and mean.
    first: Point,
    /// The last bucket's start and mean.
    last: Point,
    /// `last.mean - first.mean`.
    change: f64,
    /// The change against the first mean, in percent (none when that is zero).
    #[serde(skip_serializing_if = "Option::is_none")]
    change_percent: Option<f64>,
    /// The least-squares line through the buckets' means, weighted by their counts, per day
    /// (none with one bucket).
    #[serde(skip_serializing_if = "Option::is_none")]
    slope_per_day: Option<f64>,
    /// How many values there are in all, and how many of them low or high.
    count: u64,
    low: u64,
    high: u64,
    /// UTC days with values, and those with a value low or high.
    days_with_values: usize,
    days_out_of_range: usize,
}

#[derive(Serialize, Debug, PartialEq)]
struct Point {
    start: String,
    mean: f64,
}

/// The summary of `buckets` (oldest first, at least one), whose store groups `groups` give
/// the days; only the groups from the first bucket's start on are counted.
pub(crate) fn summary(buckets: &[Bucket], groups: &[Bucket], interval: Interval) -> Option<Summary> {
    let (first, last) = (buckets.first()?, buckets.last()?);
    let (first_mean, last_mean) = (mean(first), mean(last));
    let change = last_mean - first_mean;
    let mut days: Vec<(i64, bool)> = groups
        .iter()
        .filter(|g| g.start_ms >= first.start_ms)
        .map(|g| (g.start_ms.div_euclid(DAY_MS), g.low + g.high > 0))
        .collect();
    days.sort_unstable();
    let mut days_with_values = 0;
    let mut days_out_of_range = 0;
    for (i, (day, out)) in days.iter().enumerate() {
        let new_day = i == 0 || days[i - 1].0 != *day;
        days_with_values += usize::from(new_day);
        // Counted once: at the day's first group that is out of range.
        let earlier_out = days[..i].iter().rev().take_while(|(d, _)| d == day).any(|(_, o)| *o);
        days_out_of_range += usize::from(*out && !earlier_out);
    }
    Some(Summary {
        first: Point { start: interval.label(first.start_ms), mean: round(first_mean) },
        last: Point { start: interval.label(last.start_ms), mean: round(last_mean) },
        change: round(change),
        change_percent: (first_mean != 0.0).then(|| round(change / first_mean.abs() * 100.0)),
        slope_per_day: slope_per_day(buckets).map(round),
        count: buckets.iter().map(|b| b.count).sum(),
        low: buckets.iter().map(|b| b.low).sum(),
        high: buckets.iter().map(|b| b.high).sum(),
        days_with_values,
        days_out_of_range,
    })
}

/// The count-weighted least-squares slope of the buckets' means over their starts, per day.
fn slope_per_day(buckets: &[Bucket]) -> Option<f64> {
    if buckets.len() < 2 {
        return None;
    }
    let origin = buckets[0].start_ms;
    let points: Vec<(f64, f64, f64)> =
        buckets.iter().map(|b| ((b.start_ms - origin) as f64 / DAY_MS as f64, mean(b), b.count as f64)).collect();
    let weight: f64 = points.iter().map(|p| p.2).sum();
    let mean_x = points.iter().map(|p| p.0 * p.2).sum::<f64>() / weight;
    let mean_y = points.iter().map(|p| p.1 * p.2).sum::<f64>() / weight;
    let sxy: f64 = points.iter().map(|p| p.2 * (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let sxx: f64 = points.iter().map(|p| p.2 * (p.0 - mean_x).powi(2)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// `value` to six significant digits, as converted values are shown (`series.rs`).
pub(crate) fn round(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = 10f64.powi(5 - value.abs().log10().floor() as i32);
    (value * magnitude).round() / magnitude
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirobody_health::text::parse_time_ms;

    fn at(text: &str) -> i64 {
        parse_time_ms(text).unwrap()
    }

    fn group(start: &str, values: &[f64]) -> Bucket {
        let start_ms = at(start);
        Bucket {
            start_ms,
            count: values.len() as u64,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            sum: values.iter().sum(),
            last: *values.last().unwrap(),
            last_ms: start_ms + 1,
            low: 0,
            high: 0,
        }
    }

    #[test]
    fn the_calendar_round_trips_and_knows_leap_days() {
        for day in [-800_000, -1, 0, 59, 11_016, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day);
        }
        assert_eq!(civil_from_days(at("2024-02-29") / DAY_MS), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn weeks_start_on_monday_and_months_on_the_first_in_utc() {
        // 2026-01-01 is a Thursday: its ISO week began on Monday 2025-12-29.
        assert_eq!(Interval::Week.label(Interval::Week.bucket_start(at("2026-01-01"))), "2025-12-29");
        assert_eq!(Interval::Week.label(Interval::Week.bucket_start(at("2026-01-04"))), "2025-12-29", "Sunday");
        assert_eq!(Interval::Week.label(Interval::Week.bucket_start(at("2026-01-05"))), "2026-01-05", "Monday");
        assert_eq!(Interval::Week.label(Interval::Week.bucket_start(at("1969-12-31"))), "1969-12-29");
        assert_eq!(Interval::Month.label(Interval::Month.bucket_start(at("2024-02-29"))), "2024-02-01");
        assert_eq!(Interval::Month.label(Interval::Month.bucket_start(at("1969-12-31"))), "1969-12-01");
        assert_eq!(Interval::Hour.label(at("2026-03-01T08:00:00Z")), "2026-03-01T08:00:00Z");
    }

    #[test]
    fn days_roll_up_into_weeks_with_every_figure_merged() {
        let days = [group("2026-01-04", &[10.0, 20.0]), group("2026-01-05", &[1.0]), group("2026-01-11", &[40.0])];
        let (weeks, truncated) = roll_up(&days, Interval::Week, 10);
        assert!(!truncated);
        assert_eq!(weeks.len(), 2, "Sunday the 4th and Monday the 5th are in two weeks");
        assert_eq!((weeks[0].count, weeks[0].min, weeks[0].max, weeks[0].sum), (2, 10.0, 20.0, 30.0));
        assert_eq!(
            (weeks[1].count, weeks[1].min, weeks[1].max, weeks[1].sum, weeks[1].last),
            (2, 1.0, 40.0, 41.0, 40.0)
        );
        let (newest, truncated) = roll_up(&days, Interval::Week, 1);
        assert!(truncated);
        assert_eq!(newest[0].start_ms, at("2026-01-05"));
    }

    #[test]
    fn conversion_keeps_the_mean_exact() {
        let mg = group("2026-01-01", &[90.0, 180.0]);
        let mmol = converted(&mg, |v| v / 18.0);
        assert_eq!((mmol.min, mmol.max, mmol.last, mmol.count), (5.0, 10.0, 10.0, 2));
        assert!((mmol.sum - 15.0).abs() < 1e-9, "{}", mmol.sum);
    }

    #[test]
    fn the_summary_gives_change_slope_and_days_out_of_range() {
        let mut days =
            vec![group("2026-01-01", &[100.0]), group("2026-01-02", &[110.0]), group("2026-01-03", &[120.0])];
        days[1].high = 1;
        let s = summary(&days, &days, Interval::Day).unwrap();
        assert_eq!((s.first.mean, s.last.mean, s.change, s.change_percent), (100.0, 120.0, 20.0, Some(20.0)));
        assert_eq!(s.slope_per_day, Some(10.0));
        assert_eq!((s.days_with_values, s.days_out_of_range, s.high, s.count), (3, 1, 1, 3));
        let one = summary(&days[..1], &days[..1], Interval::Day).unwrap();
        assert_eq!(one.slope_per_day, None, "one bucket has no slope");
    }
}
