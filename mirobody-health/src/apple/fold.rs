//! What is gathered while the export streams past and stored at its end: daily totals of the
//! cumulative types (one source per type and day) and sleep per night (intervals merged).
//!
//! Both are bounded by days and sources, not by samples: a person's ten years with three
//! sources of each cumulative type is about a hundred thousand buckets.

use std::collections::HashMap;

use super::kinds::{KINDS, SleepState};

/// The most day buckets (type, day, unit, source) kept.
pub(super) const MAX_BUCKETS: usize = 500_000;
/// The most sleep intervals kept.
pub(super) const MAX_SLEEP_INTERVALS: usize = 1_000_000;
/// The most distinct source names and units.
pub(super) const MAX_NAMES: usize = 4096;

/// Names seen (sources, units), each kept once and referred to by number.
#[derive(Default)]
pub(super) struct Names {
    index: HashMap<String, u16>,
    names: Vec<String>,
}

impl Names {
    /// The number of `name`, adding it; `None` past [`MAX_NAMES`].
    pub(super) fn intern(&mut self, name: &str) -> Option<u16> {
        if let Some(&n) = self.index.get(name) {
            return Some(n);
        }
        if self.names.len() >= MAX_NAMES {
            return None;
        }
        let n = self.names.len() as u16;
        self.names.push(name.to_owned());
        self.index.insert(name.to_owned(), n);
        Some(n)
    }

    /// The name numbered `n`.
    pub(super) fn get(&self, n: u16) -> &str {
        &self.names[usize::from(n)]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct DayKey {
    kind: u8,
    day: i32,
    unit: u16,
    source: u16,
}

#[derive(Clone, Copy, Debug)]
struct DaySum {
    sum: f64,
    samples: u32,
    /// The offset of the day's first sample, to tell when the day ended.
    offset: i32,
}

/// One type's total on one local day, from the source chosen.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DailyTotal {
    /// The index of its type in [`KINDS`].
    pub(super) kind: usize,
    /// The local day (days since 1970-01-01).
    pub(super) day: i64,
    /// Its unit, as Apple wrote it: its number in [`Days::units`].
    pub(super) unit: u16,
    /// The total.
    pub(super) value: f64,
    /// The source it is of: its number in [`Days::sources`].
    pub(super) source: u16,
    /// The samples added up.
    pub(super) samples: u64,
    /// The samples of the other sources that day, left out.
    pub(super) left_out: u64,
    /// Whether the day had ended when the export was made.
    pub(super) complete: bool,
}

/// The cumulative samples, added up per type, local day, unit and source.
#[derive(Default)]
pub(super) struct Days {
    sums: HashMap<DayKey, DaySum>,
    pub(super) sources: Names,
    pub(super) units: Names,
}

impl Days {
    /// Adds a sample of type `kind` to its day; `Err` (a sentence) past the bounds.
    pub(super) fn add(
        &mut self,
        kind: usize,
        day: i64,
        offset: i32,
        unit: &str,
        source: &str,
        value: f64,
    ) -> Result<(), String> {
        let source = self.sources.intern(source).ok_or_else(|| format!("more than {MAX_NAMES} sources"))?;
        let unit = self.units.intern(unit).ok_or_else(|| format!("more than {MAX_NAMES} units"))?;
        let day = i32::try_from(day).map_err(|_| "a date out of range".to_owned())?;
        let key = DayKey { kind: kind as u8, day, unit, source };
        if !self.sums.contains_key(&key) && self.sums.len() >= MAX_BUCKETS {
            return Err(format!("more than {MAX_BUCKETS} days × sources of daily totals"));
        }
        let sum = self.sums.entry(key).or_insert(DaySum { sum: 0.0, samples: 0, offset });
        sum.sum += value;
        sum.samples += 1;
        Ok(())
    }

    /// The daily totals, in order of type, day and unit: for each, the source with the
    /// largest total that day. `export_ms` (when the export was made) tells which days had
    /// not ended. The sums are emptied; the names stay, to read the totals' units and sources.
    pub(super) fn totals(&mut self, export_ms: Option<i64>) -> Vec<DailyTotal> {
        let mut keys: Vec<(DayKey, DaySum)> = std::mem::take(&mut self.sums).into_iter().collect();
        keys.sort_by_key(|(k, _)| *k);
        let mut out: Vec<DailyTotal> = Vec::new();
        for group in keys.chunk_by(|(a, _), (b, _)| (a.kind, a.day, a.unit) == (b.kind, b.day, b.unit)) {
            // The largest total; on a tie, the first source by number (the first seen).
            let Some((best, sum)) = group.iter().fold(None::<&(DayKey, DaySum)>, |best, candidate| match best {
                Some(b) if b.1.sum >= candidate.1.sum => Some(b),
                _ => Some(candidate),
            }) else {
                continue;
            };
            let all: u64 = group.iter().map(|(_, s)| u64::from(s.samples)).sum();
            let day = i64::from(best.day);
            let day_end_ms = ((day + 1) * 86_400 - i64::from(sum.offset)) * 1000;
            out.push(DailyTotal {
                kind: usize::from(best.kind),
                day,
                unit: best.unit,
                value: (sum.sum * 1e6).round() / 1e6,
                source: best.source,
                samples: u64::from(sum.samples),
                left_out: all - u64::from(sum.samples),
                complete: export_ms.is_none_or(|export| export >= day_end_ms),
            });
        }
        debug_assert!(out.iter().all(|t| t.kind < KINDS.len()));
        out
    }
}

/// One night's asleep or in-bed time.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct NightTotal {
    /// The day the night ends on (days since 1970-01-01).
    pub(super) day: i64,
    /// Asleep or in bed.
    pub(super) state: SleepState,
    /// The time, in milliseconds, every source's intervals merged.
    pub(super) ms: i64,
    /// The samples it was made of.
    pub(super) samples: u64,
    /// Whether the night had ended (noon of its day) when the export was made.
    pub(super) complete: bool,
}

struct Night {
    /// Sorted, none overlapping another: a sample is merged in as it comes, so a night of
    /// contiguous stages from two sources is one interval.
    intervals: Vec<(i64, i64)>,
    samples: u32,
    offset: i32,
}

/// Adds `(start, end)` to `list` (sorted, none overlapping), merging what it overlaps.
fn merge_in(list: &mut Vec<(i64, i64)>, (start, end): (i64, i64)) {
    let first = list.partition_point(|&(_, e)| e < start);
    let after = list.partition_point(|&(s, _)| s <= end);
    if first >= after {
        list.insert(first, (start, end));
    } else {
        let merged = (start.min(list[first].0), end.max(list[after - 1].1));
        list.splice(first..after, [merged]);
    }
}

/// Sleep samples, gathered per night: the 24 hours from noon to noon, named by the day they
/// end on.
#[derive(Default)]
pub(super) struct Nights {
    nights: HashMap<(i64, SleepState), Night>,
    intervals: usize,
}

impl Nights {
    /// The night a sample starting at `start_ms` (seen at `offset`) belongs to.
    pub(super) fn night_of(start_ms: i64, offset: i32) -> i64 {
        super::kinds::local_day(start_ms + 12 * 3_600_000, offset)
    }

    /// Adds an interval; `Err` past [`MAX_SLEEP_INTERVALS`].
    pub(super) fn add(&mut self, state: SleepState, start_ms: i64, end_ms: i64, offset: i32) -> Result<(), String> {
        if self.intervals >= MAX_SLEEP_INTERVALS {
            return Err(format!("more than {MAX_SLEEP_INTERVALS} sleep samples"));
        }
        self.intervals += 1;
        let night = Self::night_of(start_ms, offset);
        let entry = self.nights.entry((night, state)).or_insert(Night { intervals: Vec::new(), samples: 0, offset });
        entry.samples += 1;
        merge_in(&mut entry.intervals, (start_ms, end_ms.max(start_ms)));
        Ok(())
    }

    /// Each night's time asleep and in bed, overlaps (two sources, or stages that overlap)
    /// counted once, in order of day.
    pub(super) fn totals(self, export_ms: Option<i64>) -> Vec<NightTotal> {
        let mut out: Vec<NightTotal> = self
            .nights
            .into_iter()
            .map(|((day, state), night)| {
                let total: i64 = night.intervals.iter().map(|(start, end)| end - start).sum();
                let noon_ms = (day * 86_400 + 12 * 3600 - i64::from(night.offset)) * 1000;
                NightTotal {
                    day,
                    state,
                    ms: total,
                    samples: u64::from(night.samples),
                    complete: export_ms.is_none_or(|export| export >= noon_ms),
                }
            })
            .collect();
        out.sort_by_key(|n| (n.day, n.state));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_with_the_largest_day_is_taken_not_the_sum() {
        let mut days = Days::default();
        for (source, value) in [("iPhone", 100.0), ("Watch", 70.0), ("iPhone", 50.0), ("Watch", 90.0)] {
            days.add(0, 10, 0, "count", source, value).unwrap();
        }
        days.add(0, 11, 0, "count", "Watch", 5.0).unwrap();
        let totals = days.totals(Some(12 * 86_400_000));
        assert_eq!(totals.len(), 2);
        let source = days.sources.get(totals[0].source);
        assert_eq!((totals[0].value, source, totals[0].left_out), (160.0, "Watch", 2));
        assert_eq!((totals[1].value, totals[1].complete), (5.0, true));
        let mut days = Days::default();
        days.add(0, 11, 0, "count", "Watch", 5.0).unwrap();
        assert!(!days.totals(Some(11 * 86_400_000 + 1))[0].complete, "the export's own day had not ended");
    }

    #[test]
    fn sleep_overlaps_count_once() {
        let mut nights = Nights::default();
        let h = 3_600_000;
        // 23:00 to 07:00 from one source, 01:00 to 08:00 from another.
        nights.add(SleepState::Asleep, 23 * h, 31 * h, 0).unwrap();
        nights.add(SleepState::Asleep, 25 * h, 32 * h, 0).unwrap();
        nights.add(SleepState::InBed, 22 * h, 32 * h, 0).unwrap();
        let totals = nights.totals(None);
        assert_eq!(totals.len(), 2);
        assert_eq!((totals[0].day, totals[0].ms, totals[0].samples), (1, 9 * h, 2));
        assert_eq!((totals[1].state, totals[1].ms), (SleepState::InBed, 10 * h));
    }

    #[test]
    fn intervals_merge_as_they_come() {
        let mut list = Vec::new();
        for interval in [(10, 20), (30, 40), (50, 60), (15, 35), (0, 5), (70, 80), (5, 10), (60, 70)] {
            merge_in(&mut list, interval);
        }
        assert_eq!(list, [(0, 40), (50, 80)]);
        merge_in(&mut list, (-10, 100));
        assert_eq!(list, [(-10, 100)]);
    }
}
