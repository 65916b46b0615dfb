//! Values summed up in the database: one indicator's numeric values in one stored unit, grouped
//! into UTC hours or days, each group with its count, minimum, maximum, sum, last value and how
//! many were low or high. [`HealthStore::buckets`](crate::HealthStore::buckets) answers a
//! [`BucketQuery`]; a store that has no query of its own folds the values of
//! [`HealthStore::series`](crate::HealthStore::series) with [`fold_values`], the same answer.
//!
//! Low and high are counted as each value's source judged it where it did (an interpretation,
//! or a reference range of its own: [`flags::assess`]), else against the query's bounds (the
//! catalog's range): a laboratory's range for its own method outranks a population's.

use crate::flags::{self, Flag, ReferenceRange};
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
    /// Values below this are counted as low, unless their source judged them.
    pub low_below: Option<f64>,
    /// Values above this are counted as high, unless their source judged them.
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

    /// Counts values below `low` as low and above `high` as high, those their source judged
    /// aside ([`source_verdict`]).
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
    /// How many values were low: as their source judged them, else below the query's low bound.
    pub low: u64,
    /// How many values were high: as their source judged them, else above the query's high bound.
    pub high: u64,
}

impl Bucket {
    /// Counts one of its values, counted against the query's bounds, as its source judged it
    /// instead: what a store that sums against the bounds in the database adds after, for the
    /// few values whose source gave a range or an interpretation. `verdict` is
    /// [`source_verdict`]'s (low, high).
    pub fn rejudge(&mut self, query: &BucketQuery<'_>, value: f64, verdict: (bool, bool)) {
        let (was_low, was_high) = bounds_verdict(query, value);
        self.low = (self.low + u64::from(verdict.0)).saturating_sub(u64::from(was_low));
        self.high = (self.high + u64::from(verdict.1)).saturating_sub(u64::from(was_high));
    }
}

/// Whether `value` is low and whether high as its source judged it (its `interpretation`, else
/// its own reference `range`, converted to the query's unit where it can be), by
/// [`flags::assess`]; `None` when the source said nothing that tells (no range with bounds it
/// can be compared with, no known interpretation). Critical values count as low or high; an
/// "abnormal" no range gives a direction, as neither.
///
/// ```
/// use mirobody_health::flags::ReferenceRange;
/// use mirobody_health::store::aggregate::{BucketQuery, Grain, source_verdict};
/// let query = BucketQuery::new("15074-8", Some("mmol/L"), (0, 1), Grain::Day);
/// let lab = ReferenceRange::from_source(Some(3.1), Some(6.2), Some("mmol/L"));
/// assert_eq!(source_verdict(&query, 6.3, Some(&lab), None), Some((false, true)));
/// assert_eq!(source_verdict(&query, 6.3, Some(&lab), Some("N")), Some((false, false)), "the lab's word wins");
/// assert_eq!(source_verdict(&query, 6.3, None, None), None, "the query's bounds judge it");
/// ```
pub fn source_verdict(
    query: &BucketQuery<'_>,
    value: f64,
    range: Option<&ReferenceRange>,
    interpretation: Option<&str>,
) -> Option<(bool, bool)> {
    let range = range.filter(|r| r.has_bounds());
    let stated = interpretation.and_then(Flag::from_interpretation);
    if range.is_none() && stated.is_none() {
        return None;
    }
    let judged = flags::assess(query.code, Some(value), query.unit, range, interpretation);
    // A computed flag from the catalog's range (the source's did not convert, and no
    // interpretation) is the query's bounds' own verdict: left to them.
    if !judged.interpreted && judged.range.as_ref().is_none_or(|r| r.origin != flags::RangeOrigin::Source) {
        return None;
    }
    match judged.flag? {
        Flag::CriticalLow | Flag::Low => Some((true, false)),
        Flag::CriticalHigh | Flag::High => Some((false, true)),
        Flag::Normal => Some((false, false)),
        // "Abnormal" with no direction a range gives: neither low nor high.
        _ => Some((false, false)),
    }
}

/// Whether `value` is below the query's low bound and whether above its high one.
fn bounds_verdict(query: &BucketQuery<'_>, value: f64) -> (bool, bool) {
    (query.low_below.is_some_and(|b| value < b), query.high_above.is_some_and(|b| value > b))
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
        let verdict = source_verdict(query, value, point.range.as_ref(), point.interpretation.as_deref());
        add_value(&mut out, query, time_ms, value, verdict);
    }
    out.sort_by_key(|b| b.start_ms);
    let keep = usize::try_from(query.limit).unwrap_or(usize::MAX);
    if out.len() > keep {
        out.drain(..out.len() - keep);
    }
    out
}

/// Adds one value to the group it falls in (`out` kept in the order groups are first seen),
/// low or high as its source's `verdict` says, else against the query's bounds.
fn add_value(out: &mut Vec<Bucket>, query: &BucketQuery<'_>, time_ms: i64, value: f64, verdict: Option<(bool, bool)>) {
    let start_ms = query.grain.floor(time_ms);
    let (low, high) = verdict.unwrap_or_else(|| bounds_verdict(query, value));
    let (low, high) = (u64::from(low), u64::from(high));
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

    #[test]
    fn a_value_its_source_judged_counts_as_the_source_said() {
        let day = 20_000 * DAY_MS;
        // Glucose, catalog bounds 3.9..5.6 mmol/L as a query would give them.
        let query = BucketQuery::new("15074-8", Some("mmol/L"), (day, day + DAY_MS), Grain::Day)
            .with_bounds(Some(3.9), Some(5.6));
        let lab = |low, high, unit: &str| Some(ReferenceRange::from_source(Some(low), Some(high), Some(unit)));
        let judged = |v: f64, range: Option<ReferenceRange>, interpretation: Option<&str>| SeriesValue {
            range,
            interpretation: interpretation.map(str::to_owned),
            ..value(day + 1_000, v, Some("mmol/L"))
        };
        let values = [
            // High by the catalog, normal by the laboratory's own wider range.
            judged(6.0, lab(3.1, 6.2, "mmol/L"), None),
            // Normal by the catalog, high by the laboratory's word.
            judged(5.0, None, Some("H")),
            // A range in mg/dL converts: 100 mg/dL is about 5.55 mmol/L, so 5.8 is high.
            judged(5.8, lab(70.0, 100.0, "mg/dL"), None),
            // A range in a unit that does not convert leaves it to the catalog: low.
            judged(3.0, lab(1.0, 2.0, "kg"), None),
            // Nothing from the source: the catalog says high.
            value(day + 2_000, 9.0, Some("mmol/L")),
            // Critically low by the source: counted as low.
            judged(2.0, None, Some("LL")),
        ];
        let buckets = fold_values(&values, &query);
        assert_eq!(buckets.len(), 1);
        assert_eq!((buckets[0].count, buckets[0].low, buckets[0].high), (6, 2, 3), "{buckets:?}");
        assert_eq!(source_verdict(&query, 5.0, None, Some("A")), Some((false, false)), "no direction: neither");
        assert_eq!(source_verdict(&query, 6.0, None, Some("A")), Some((false, true)), "the catalog gives the way");
        assert_eq!(source_verdict(&query, 6.0, None, Some("POS")), None, "an unknown word leaves it to the bounds");
    }

    #[test]
    fn rejudging_a_value_moves_it_from_the_bounds_verdict_to_the_source() {
        let query =
            BucketQuery::new("15074-8", Some("mmol/L"), (0, DAY_MS), Grain::Day).with_bounds(Some(3.9), Some(5.6));
        let mut bucket =
            Bucket { start_ms: 0, count: 2, min: 6.0, max: 7.0, sum: 13.0, last: 7.0, last_ms: 1, low: 0, high: 2 };
        bucket.rejudge(&query, 6.0, (false, false));
        assert_eq!((bucket.low, bucket.high), (0, 1));
        bucket.rejudge(&query, 7.0, (true, false));
        assert_eq!((bucket.low, bucket.high), (1, 0));
    }
}
