//! The series `fetch_health_data` answers with: the values of each code grouped by unit
//! (spellings of one unit are one series), or, when a unit is asked for, each indicator's values
//! from every source and code converted into one series. Every value is flagged low, normal or
//! high (critical low or high, abnormal): as its source interpreted it when it did, else against
//! the range its source gave, else the catalog's adult range; a converted one keeps its original
//! value and unit, its range converted too. Values no scale converts stay in series of their
//! own, never mixed in.

use serde::Serialize;

use mirobody_health::flags::{Assessment, ReferenceRange, assess, catalog_range};
use mirobody_health::indicators::{self, Indicator};
use mirobody_health::units::{Scale, unit_key};
use mirobody_health::{IndicatorSummary, Series, SeriesValue};

/// One series of the answer.
#[derive(Serialize)]
pub(crate) struct Entry<'a> {
    pub(crate) code: &'a str,
    /// Every code merged into a converted series, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) codes: Vec<&'a str>,
    pub(crate) unit: Option<&'a str>,
    pub(crate) count: usize,
    pub(crate) data: Vec<Point<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) truncated: bool,
    /// The range of the newest value that has one (its source's, else the catalog's), in the
    /// series' unit: the range the values were flagged against unless a value names its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reference_range: Option<ReferenceRange>,
}

#[derive(Serialize)]
pub(crate) struct Point<'a> {
    time: &'a str,
    value: PointValue<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<&'a str>,
    /// The value and unit as the source gave them, when converted.
    #[serde(skip_serializing_if = "Option::is_none")]
    original: Option<Original<'a>>,
    /// The code of the value, in a series merged from several.
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flag: Option<&'static str>,
    /// What the source said of the value (`H`, `LL`...), which the flag follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    interpretation: Option<&'a str>,
    /// The value's own range, when it is not the series' (another laboratory's, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    reference_range: Option<ReferenceRange>,
}

#[derive(Serialize)]
struct Original<'a> {
    value: f64,
    unit: &'a str,
}

/// A number, or the text of a coded or free-text result (null when there is neither).
#[derive(Serialize)]
#[serde(untagged)]
enum PointValue<'a> {
    Number(f64),
    Text(Option<&'a str>),
}

impl<'a> Point<'a> {
    /// `p` as stored, flagged in its own unit, with the range it was judged against.
    fn stored(code: &str, p: &'a SeriesValue) -> Self {
        let judged = judge(code, p, p.value, p.unit.as_deref());
        Point {
            time: &p.time,
            value: p.value.map_or(PointValue::Text(p.value_text.as_deref()), PointValue::Number),
            unit: p.unit.as_deref(),
            original: None,
            code: None,
            file_key: p.file_key.as_deref(),
            flag: judged.flag.map(|f| f.as_str()),
            interpretation: p.interpretation.as_deref(),
            reference_range: judged.range,
        }
    }
}

/// `p` of indicator `code` judged as `value` in `unit`, with its source's range and
/// interpretation.
fn judge(code: &str, p: &SeriesValue, value: Option<f64>, unit: Option<&str>) -> Assessment {
    assess(code, value, unit, p.range.as_ref(), p.interpretation.as_deref())
}

/// The series' range: the newest value's that has one, else the catalog's in `unit`; each
/// value then keeps its own only where it differs.
fn series_range(code: &str, unit: Option<&str>, data: &mut [Point<'_>]) -> Option<ReferenceRange> {
    let newest = data.iter().rev().find_map(|p| p.reference_range.clone());
    let range = newest.or_else(|| unit.and_then(|u| catalog_range(code, u)));
    for point in data.iter_mut() {
        if point.reference_range == range {
            point.reference_range = None;
        }
    }
    range
}

/// The series of one code, one per unit (by its UCUM spelling), in the order first seen:
/// `(name, entry)`, the name carrying the unit when there are several.
pub(crate) fn by_unit<'a>(summary: &'a IndicatorSummary, series: &'a Series) -> Vec<(String, Entry<'a>)> {
    grouped(summary, series.points.iter().collect(), series.truncated)
}

/// `points` of `summary`'s code, one series per unit, as [`by_unit`] gives them.
fn grouped<'a>(
    summary: &'a IndicatorSummary,
    points: Vec<&'a SeriesValue>,
    truncated: bool,
) -> Vec<(String, Entry<'a>)> {
    let mut units: Vec<Option<&str>> = Vec::new();
    for point in &points {
        let key = point.unit.as_deref().map(unit_key);
        if !units.contains(&key) {
            units.push(key);
        }
    }
    let several = units.len() > 1;
    units
        .into_iter()
        .map(|unit| {
            let mut data: Vec<Point<'a>> = points
                .iter()
                .filter(|p| p.unit.as_deref().map(unit_key) == unit)
                .map(|p| Point::stored(&summary.code, p))
                .collect();
            let name = match unit {
                Some(unit) if several => format!("{} ({unit})", summary.display),
                _ => summary.display.clone(),
            };
            let reference_range = series_range(&summary.code, unit, &mut data);
            let entry = Entry {
                code: &summary.code,
                codes: Vec::new(),
                unit,
                count: data.len(),
                data,
                truncated,
                reference_range,
            };
            (name, entry)
        })
        .collect()
}

/// The answer's series when the caller asked for values in `unit` (a UCUM code).
#[derive(Default)]
pub(crate) struct Converted<'a> {
    /// The series, in the order first seen.
    pub(crate) series: Vec<(String, Entry<'a>)>,
    /// The names of the series left in their own units.
    pub(crate) not_converted: Vec<String>,
    /// Whether any indicator's scale knew `unit`.
    pub(crate) any_converted: bool,
}

/// The fetched series with every value in `unit` where its indicator's scale converts it:
/// the codes of one analyte (the four glucose codes, blood and serum creatinine) merged into one
/// series, oldest first, the newest `limit` kept. Codes the catalog has no scale for, scales
/// without `unit` and values in a unit their scale does not know keep series of their own,
/// named in `not_converted`.
pub(crate) fn converted<'a>(
    fetched: &'a [(&'a IndicatorSummary, Series)],
    unit: &'a str,
    limit: usize,
) -> Converted<'a> {
    let mut out = Converted::default();
    // Merged groups: the catalog entry that names the group, and the series in it.
    let mut groups: Vec<(&'static Indicator, Vec<&'a (&'a IndicatorSummary, Series)>)> = Vec::new();
    for item in fetched {
        let indicator = indicators::by_code(&item.0.code).filter(|i| i.scale.is_some_and(|s| s.knows(unit)));
        let Some(indicator) = indicator else {
            for (name, entry) in by_unit(item.0, &item.1) {
                out.not_converted.push(name.clone());
                out.series.push((name, entry));
            }
            continue;
        };
        out.any_converted = true;
        match groups.iter_mut().find(|(first, _)| same_analyte(first, indicator)) {
            Some((_, members)) => members.push(item),
            None => groups.push((indicator, vec![item])),
        }
    }
    let position = |code: &str| indicators::catalog().iter().position(|i| i.code == code);
    for (first, mut members) in groups {
        let Some(scale) = first.scale else { continue };
        // The catalog's order, not the store's: the code a name most often means first.
        members.sort_by_key(|m| position(&m.0.code));
        merge(&mut out, first, scale, &members, unit, limit);
    }
    out
}

/// Whether two catalog entries measure the same thing in a scale: the same analyte (their
/// first Chinese name, 血糖 for every glucose code) on the same scale.
fn same_analyte(a: &Indicator, b: &Indicator) -> bool {
    a.chinese.first() == b.chinese.first() && a.scale.zip(b.scale).is_some_and(|(x, y)| std::ptr::eq(x, y))
}

/// One analyte's series merged into `unit`; the values the scale cannot convert go to series
/// of their own.
fn merge<'a>(
    out: &mut Converted<'a>,
    first: &'static Indicator,
    scale: &'static Scale,
    members: &[&'a (&'a IndicatorSummary, Series)],
    unit: &'a str,
    limit: usize,
) {
    let several = members.len() > 1;
    let mut data: Vec<Point<'a>> = Vec::new();
    let mut apart: Vec<(String, Entry<'a>)> = Vec::new();
    let mut truncated = false;
    for (summary, series) in members.iter().map(|m| (m.0, &m.1)) {
        truncated |= series.truncated;
        let mut left: Vec<&'a SeriesValue> = Vec::new();
        for p in &series.points {
            let code = several.then_some(summary.code.as_str());
            let converted = match (p.value, p.unit.as_deref()) {
                (Some(value), Some(from)) => scale.convert(value, from, unit).map(|v| (value, from, v)),
                _ => None,
            };
            let Some((value, from, in_unit)) = converted else {
                left.push(p);
                continue;
            };
            let same = unit_key(from) == unit_key(unit);
            let in_unit = if same { value } else { round_significant(in_unit) };
            // Flagged as measured: a bound converted and rounded must not flip a value at it.
            let measured = judge(&summary.code, p, Some(value), Some(from));
            let flag = measured.flag.map(|f| f.as_str());
            // Shown in the series' unit: the source's range converted, else the catalog's.
            let range = if same { measured.range } else { judge(&summary.code, p, Some(in_unit), Some(unit)).range };
            data.push(Point {
                time: &p.time,
                value: PointValue::Number(in_unit),
                unit: Some(unit),
                original: (!same).then_some(Original { value, unit: from }),
                code,
                file_key: p.file_key.as_deref(),
                flag,
                interpretation: p.interpretation.as_deref(),
                reference_range: range,
            });
        }
        if !left.is_empty() {
            // Values in a unit the scale does not know (or without one): kept apart, by unit.
            for (_, entry) in grouped(summary, left, series.truncated) {
                let name = format!("{} ({}), not converted", summary.display, entry.unit.unwrap_or("no unit"));
                apart.push((name, entry));
            }
        }
    }
    data.sort_by(|a, b| a.time.cmp(b.time));
    if data.len() > limit {
        data.drain(..data.len() - limit);
        truncated = true;
    }
    let codes: Vec<&'a str> = if several { members.iter().map(|m| m.0.code.as_str()).collect() } else { Vec::new() };
    let name =
        if several { format!("{} ({unit})", first.names[0]) } else { format!("{} ({unit})", members[0].0.display) };
    let reference_range = series_range(&members[0].0.code, Some(unit), &mut data);
    let entry = Entry {
        code: &members[0].0.code,
        codes,
        unit: Some(unit),
        count: data.len(),
        data,
        truncated,
        reference_range,
    };
    out.series.push((name, entry));
    out.not_converted.extend(apart.iter().map(|(name, _)| name.clone()));
    out.series.extend(apart);
}

/// `value` to six significant digits: 5.4 mmol/L reads 97.2864 mg/dL, not 97.28640000000001.
fn round_significant(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = 10f64.powi(5 - value.abs().log10().floor() as i32);
    (value * magnitude).round() / magnitude
}
