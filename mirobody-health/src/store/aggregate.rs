//! Values summed up in the database: one indicator's numeric values in one stored unit, grouped
//! into UTC hours or days, each group with its count, minimum, maximum, sum, last value and how
//! many were below or above a range. [`HealthStore::buckets`](crate::HealthStore::buckets)
//! answers a [`BucketQuery`]; a store that has no query of its own folds the values of
//! [`HealthStore::series`](crate::HealthStore::series) with [`fold_values`], the same answer.

use crate::records::SeriesValue;
use crate::text::parse_time_ms;

/// A millisecond hour.
pub const HOUR_MS: i64 = 3_600_000;
/// A millisecond day.
pub const DAY_MS: i64 = 86_400_000;

/// The width of the groups a store makes: the finest an interval needs (weeks and months are
/// whole UTC days, so they are made from days).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Grain {
    /// UTC hours.
    Hour,
    /// UTC days.
    Day,
}

impl Grain {
    /// The grain's width in milliseconds.
    pub fn width_ms(self) -> i64 {
        match self {
            Grain::Hour => HOUR_MS,
            Grain::Day => DAY_MS,
        }
    }

    /// The start of the group `time_ms` falls in: the floor, also before 1970.
    pub fn floor(self, time_ms: i64) -> i64 {
        time_ms - time_ms.rem_euclid(self.width_ms())
    }
}

/// What to sum up: the values of `code` in `unit` (`None`: values stored without one) from
/// `start_ms` (inclusive) to `end_ms` (exclusive), grouped by `grain`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BucketQuery<'a> {
    /// The indicator's code.
    pub code: &'a str,
    /// The unit exactly as stored, as [`IndicatorSummary::unit`](crate::IndicatorSummary::unit) gives it.
    pub unit: Option<&'a str>,
    /// From this time, inclusive.
    pub start_ms: i64,
    /// Up to this time, exclusive.
    pub end_ms: i64,
    /// The width of the groups.
    pub grain: Grain,
    /// Values below this are counted as low.
    pub low_below: Option<f64>,
    /// Values above this are counted as high.
    pub high_above: Option<f64>,
    /// The most groups, the newest kept.
    pub limit: u32,
}

impl<'a> BucketQuery<'a> {
    /// The query of `code` in `unit` over `[start_ms, end_ms)` by `grain`, counting nothing as
    /// low or high, with no limit but the range's.
    pub fn new(code: &'a str, unit: Option<&'a str>, (start_ms, end_ms): (i64, i64), grain: Grain) -> Self {
        BucketQuery { code, unit, start_ms, end_ms, grain, low_below: None, high_above: None, limit: u32::MAX }
    }

    /// Counts values below `low` as low and above `high` as high.
    pub fn with_bounds(mut self, low: Option<f64>, high: Option<f64>) -> Self {
        self.low_below = low;
        self.high_above = high;
        self
    }

    /// Keeps the newest `limit` groups.
    pub fn with_limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }
}

/// One group of values: those from `start_ms` for one [`Grain`].
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    /// The group's start, a UTC hour or midnight.
    pub start_ms: i64,
    /// How many numeric values it has (at least one: empty groups are never returned).
    pub count: u64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// The sum of the values (the mean is `sum / count`).
    pub sum: f64,
    /// The newest value (of those at the newest time, the one stored last).
    pub last: f64,
    /// When the newest value was measured.
    pub last_ms: i64,
    /// How many values were below the query's low bound.
    pub low: u64,
    /// How many values were above the query's high bound.
    pub high: u64,
}

/// `values` (a series, oldest first, as [`HealthStore::series`](crate::HealthStore::series)
/// gives it) in `query`'s unit and range grouped as the query asks, oldest first, the newest
/// `query.limit` groups kept. What a store with no query of its own answers.
pub fn fold_values(values: &[SeriesValue], query: &BucketQuery<'_>) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::new();
    let wanted_unit = query.unit.filter(|u| !u.is_empty());
    for point in values {
        let unit = point.unit.as_deref().filter(|u| !u.is_empty());
        let (Some(value), Some(time_ms)) = (point.value, parse_time_ms(&point.time)) else { continue };
        if unit != wanted_unit || time_ms < query.start_ms || time_ms >= query.end_ms {
            continue;
        }
        add_value(&mut out, query, time_ms, value);
    }
    out.sort_by_key(|b| b.start_ms);
    let keep = usize::try_from(query.limit).unwrap_or(usize::MAX);
    if out.len() > keep {
        out.drain(..out.len() - keep);
    }
    out
}

/// Adds one value to the group it falls in (`out` kept in the order groups are first seen).
fn add_value(out: &mut Vec<Bucket>, query: &BucketQuery<'_>, time_ms: i64, value: f64) {
    let start_ms = query.grain.floor(time_ms);
    let low = u64::from(query.low_below.is_some_and(|b| value < b));
    let high = u64::from(query.high_above.is_some_and(|b| value > b));
    // Values come oldest first, so the newest group is usually the one to add to.
    match out.iter_mut().rev().find(|b| b.start_ms == start_ms) {
        Some(b) => {
            b.count += 1;
            b.min = b.min.min(value);
            b.max = b.max.max(value);
            b.sum += value;
            if time_ms >= b.last_ms {
                (b.last, b.last_ms) = (value, time_ms);
            }
            b.low += low;
            b.high += high;
        }
        None => out.push(Bucket {
            start_ms,
            count: 1,
            min: value,
            max: value,
            sum: value,
            last: value,
            last_ms: time_ms,
            low,
            high,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::rfc3339;

    fn value(time_ms: i64, value: f64, unit: Option<&str>) -> SeriesValue {
        SeriesValue {
            time: rfc3339(time_ms),
            value: Some(value),
            value_text: None,
            unit: unit.map(str::to_owned),
            file_key: None,
            range: None,
            interpretation: None,
        }
    }

    #[test]
    fn groups_start_at_utc_hours_and_midnights_before_1970_too() {
        assert_eq!(Grain::Day.floor(DAY_MS + 5), DAY_MS);
        assert_eq!(Grain::Day.floor(-1), -DAY_MS, "the last millisecond of 1969 is in its last day");
        assert_eq!(Grain::Hour.floor(HOUR_MS - 1), 0);
    }

    #[test]
    fn values_fold_into_groups_of_their_unit_with_low_and_high_counted() {
        let day = 20_000 * DAY_MS;
        let values = [
            value(day + 1_000, 70.0, Some("bpm")),
            value(day + 2_000, 50.0, Some("bpm")),
            value(day + 3_000, 999.0, Some("kg")),
            value(day + DAY_MS - 1, 110.0, Some("bpm")),
            value(day + DAY_MS, 80.0, Some("bpm")),
        ];
        let query = BucketQuery::new("8867-4", Some("bpm"), (day, day + 10 * DAY_MS), Grain::Day)
            .with_bounds(Some(60.0), Some(100.0));
        let buckets = fold_values(&values, &query);
        assert_eq!(buckets.len(), 2, "{buckets:?}");
        let first = &buckets[0];
        assert_eq!((first.start_ms, first.count, first.min, first.max, first.sum), (day, 3, 50.0, 110.0, 230.0));
        assert_eq!((first.last, first.last_ms, first.low, first.high), (110.0, day + DAY_MS - 1, 1, 1));
        assert_eq!((buckets[1].start_ms, buckets[1].count, buckets[1].last), (day + DAY_MS, 1, 80.0));
        let newest = fold_values(&values, &query.clone().with_limit(1));
        assert_eq!(newest, vec![buckets[1].clone()], "the newest groups are kept");
    }
}
