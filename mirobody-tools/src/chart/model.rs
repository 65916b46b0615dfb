//! Reads an ECharts option into what the image draws: the series with their points (from
//! `data` or a `dataset`, stacked where `stack` says), the category, value or time axis they
//! stand on, horizontal or not, one or two value axes, the areas each series shades
//! (`markArea`); and what it leaves out, with why.

use std::collections::HashMap;

use serde_json::Value;

use super::{NoPreview, first, label_of, num, short};

/// The most data points drawn.
pub(crate) const MAX_POINTS: usize = 20_000;
/// The most value axes drawn (left and right).
const MAX_VALUE_AXES: usize = 2;
/// The most shaded areas (`markArea` items) read per series.
pub(super) const MAX_AREAS: usize = 20;

/// How a cartesian series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mark {
    Line,
    Bar,
    Scatter,
}

/// One point: its place on the base axis (a category index, a number or a time in ms), its
/// value, and where a stacked mark starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Point {
    pub(super) at: f64,
    pub(super) value: f64,
    pub(super) base: Option<f64>,
}

/// A cartesian series.
pub(super) struct Plotted {
    pub(super) mark: Mark,
    pub(super) name: String,
    /// Its place in the option, which picks its color.
    pub(super) index: usize,
    pub(super) points: Vec<Point>,
    /// 0: the first value axis (left, or bottom when horizontal); 1: the second.
    pub(super) axis: usize,
    pub(super) area: bool,
    /// The stack it is in (`stack`): its marks start where the one below ends.
    pub(super) stack: Option<String>,
    /// The areas it shades (`markArea`), drawn under the marks.
    pub(super) bands: Vec<Band>,
}

/// A shaded area (a `markArea` item): its span on the series' value axis and on the base
/// axis (a category index, a number or a time in ms), each low then high. An infinite end
/// reaches the axis's edge, as a side the option leaves open does in ECharts.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Band {
    /// Its place in `markArea.data`, to name it.
    pub(super) item: usize,
    pub(super) value: [f64; 2],
    pub(super) base: [f64; 2],
    /// The first end's `name` (else the second's), cut short; empty for none.
    pub(super) label: String,
}

/// What the base axis (x, or y when horizontal) holds.
#[derive(Debug, PartialEq)]
pub(super) enum Base {
    Category(Vec<String>),
    Value,
    Time,
}

/// A chart on axes.
pub(super) struct Cartesian {
    pub(super) series: Vec<Plotted>,
    pub(super) base: Base,
    /// The category axis is y: bars run left to right.
    pub(super) horizontal: bool,
    /// The value axes' names, one or two.
    pub(super) value_axes: Vec<String>,
}

/// A pie.
pub(super) struct Pie {
    pub(super) slices: Vec<(String, f64)>,
}

/// What is drawn.
pub(super) enum Plot {
    Cartesian(Cartesian),
    Pie(Pie),
}

/// An option read: the plot, and the parts left out with why.
pub(super) struct Read {
    pub(super) plot: Plot,
    pub(super) ignored: Vec<String>,
}

fn axes(option: &Value, key: &str) -> Vec<Value> {
    match &option[key] {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        one => vec![one.clone()],
    }
}

/// A time on a time axis: a number of ms, or a date or time as text.
pub(super) fn time_ms(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|v| v.is_finite()),
        Value::String(s) => {
            let s = s.trim();
            let parse = |t: &str| mirobody_health::text::parse_time_ms(t).map(|ms| ms as f64);
            parse(s).or_else(|| {
                // `2026-03-01 06:00` or `2026-03-01T06:00:00` without a zone: read as UTC.
                let mut t = s.replacen(' ', "T", 1);
                if t.len() == 16 {
                    t.push_str(":00");
                }
                parse(&format!("{t}Z"))
            })
        }
        Value::Object(o) => o.get("value").and_then(time_ms),
        _ => None,
    }
}

/// The rows of a dataset as data items of each series, and its first column as categories.
struct Dataset {
    dimensions: Vec<String>,
    rows: Vec<Vec<Value>>,
}

impl Dataset {
    fn read(option: &Value, index: usize) -> Option<Dataset> {
        let dataset = match &option["dataset"] {
            Value::Array(items) => items.get(index)?,
            Value::Null => return None,
            one => one,
        };
        let source = dataset["source"].as_array()?;
        let mut dimensions: Vec<String> = dataset["dimensions"]
            .as_array()
            .map(|d| d.iter().map(|d| d["name"].as_str().map_or_else(|| label_of(d), str::to_owned)).collect())
            .unwrap_or_default();
        let mut rows: Vec<Vec<Value>> = Vec::with_capacity(source.len());
        if let Some(Value::Object(head)) = source.first() {
            // Rows as objects: their keys are the dimensions.
            if dimensions.is_empty() {
                dimensions = head.keys().cloned().collect();
            }
            for row in source {
                rows.push(dimensions.iter().map(|d| row.get(d).cloned().unwrap_or(Value::Null)).collect());
            }
        } else {
            for row in source {
                rows.push(row.as_array().cloned().unwrap_or_default());
            }
            // A first row of names is the header (ECharts' `sourceHeader: auto`).
            let header = rows.first().is_some_and(|r| r.len() > 1 && r.iter().all(Value::is_string));
            if header && dimensions.is_empty() {
                dimensions = rows.remove(0).iter().map(label_of).collect();
            }
        }
        Some(Dataset { dimensions, rows })
    }

    /// The column `encode` names (`"steps"` or `1`), if any.
    fn column(&self, encoded: &Value) -> Option<usize> {
        match first(encoded) {
            Value::Number(n) => n.as_u64().map(|n| n as usize),
            Value::String(s) => self.dimensions.iter().position(|d| d == s),
            _ => None,
        }
    }
}

/// The data items of the series at `index` (0-based among series on the dataset), as
/// `[base, value]` pairs (`[value, base]` when horizontal), and its name from the dataset.
fn dataset_items(
    set: &Dataset,
    series: &Value,
    nth: usize,
    horizontal: bool,
    pie: bool,
) -> (Vec<Value>, Option<String>) {
    let encode = &series["encode"];
    let (base_key, value_key) = match (pie, horizontal) {
        (true, _) => ("itemName", "value"),
        (false, false) => ("x", "y"),
        (false, true) => ("y", "x"),
    };
    let base = set.column(&encode[base_key]).unwrap_or(0);
    let value = set.column(&encode[value_key]).unwrap_or(if pie { 1 } else { nth + 1 });
    let items = set
        .rows
        .iter()
        .map(|row| {
            let (b, v) =
                (row.get(base).cloned().unwrap_or(Value::Null), row.get(value).cloned().unwrap_or(Value::Null));
            if pie {
                serde_json::json!({"name": label_of(&b), "value": v})
            } else if horizontal {
                Value::Array(vec![v, b])
            } else {
                Value::Array(vec![b, v])
            }
        })
        .collect();
    (items, set.dimensions.get(value).cloned())
}

/// Reads the option.
pub(super) fn read(option: &Value) -> Result<Read, NoPreview> {
    let all: Vec<&Value> = match &option["series"] {
        Value::Array(items) => items.iter().collect(),
        one @ Value::Object(_) => vec![one],
        _ => Vec::new(),
    };
    if all.is_empty() {
        return Err(NoPreview("the option has no series".into()));
    }
    let mut ignored = Vec::new();
    let x_axes = axes(option, "xAxis");
    let y_axes = axes(option, "yAxis");
    let horizontal = first(&option["yAxis"])["type"].as_str() == Some("category")
        && first(&option["xAxis"])["type"].as_str() != Some("category");
    let (base_axis, value_axes, value_key) = if horizontal {
        (first(&option["yAxis"]), &x_axes, "xAxisIndex")
    } else {
        (first(&option["xAxis"]), &y_axes, "yAxisIndex")
    };
    if value_axes.len() > MAX_VALUE_AXES {
        ignored.push(format!(
            "value axes after the second ({} more): their series are drawn on the second",
            value_axes.len() - MAX_VALUE_AXES
        ));
    }
    let mut categories: Vec<String> =
        base_axis["data"].as_array().map(|d| d.iter().map(label_of).collect()).unwrap_or_default();
    let time = base_axis["type"].as_str() == Some("time");
    // Dates on a time axis given as the axis's `data`, one per value.
    let axis_data: Vec<Value> = base_axis["data"].as_array().cloned().unwrap_or_default();
    for key in ["transform", "fromDatasetIndex"] {
        let datasets = axes(option, "dataset");
        if datasets.iter().any(|d| d.get(key).is_some()) {
            ignored.push(format!("dataset '{key}': the image draws a dataset's source as it is"));
        }
    }

    let mut on_dataset = 0;
    let mut pies = Vec::new();
    let mut cartesian = Vec::new();
    let mut total = 0;
    for (i, s) in all.iter().enumerate() {
        let kind = s["type"].as_str().unwrap_or("line");
        let mark = match kind {
            "line" => Mark::Line,
            "bar" => Mark::Bar,
            "scatter" | "effectScatter" => Mark::Scatter,
            "pie" => Mark::Line,
            other => {
                ignored.push(format!("series[{i}] ('{other}'): the image draws line, bar, scatter and pie series"));
                continue;
            }
        };
        let pie = kind == "pie";
        let coordinates = s["coordinateSystem"].as_str().unwrap_or("cartesian2d");
        if !pie && coordinates != "cartesian2d" {
            ignored.push(format!("series[{i}] on '{coordinates}': the image draws x and y axes only"));
            continue;
        }
        let mut name = s["name"].as_str().map(str::to_owned);
        let items: Vec<Value> = match s.get("data").and_then(Value::as_array) {
            Some(data) => data.clone(),
            None => {
                let index = s["datasetIndex"].as_u64().unwrap_or(0) as usize;
                let Some(set) = Dataset::read(option, index) else {
                    ignored.push(format!("series[{i}]: no 'data' and no dataset 'source' to draw"));
                    continue;
                };
                let (items, dimension) = dataset_items(&set, s, if pie { 0 } else { on_dataset }, horizontal, pie);
                if !pie {
                    on_dataset += 1;
                }
                if categories.is_empty() && !time && first(base_axis)["type"].as_str() != Some("value") {
                    categories = set.rows.iter().map(|r| r.first().map(label_of).unwrap_or_default()).collect();
                }
                name = name.or(dimension);
                items
            }
        };
        total += items.len();
        if total > MAX_POINTS {
            return Err(NoPreview(format!("more than {MAX_POINTS} data points")));
        }
        let name = name.unwrap_or_else(|| format!("Series {}", i + 1));
        if pie {
            pies.push((i, Pie { slices: slices(&items) }));
            continue;
        }
        let axis = s[value_key].as_u64().unwrap_or(0).min(MAX_VALUE_AXES as u64 - 1) as usize;
        let stack = s["stack"].as_str().map(str::to_owned);
        cartesian.push((i, mark, name, items, axis, stack, s.get("areaStyle").is_some()));
    }

    if cartesian.is_empty() {
        let Some((i, pie)) = pies.into_iter().next() else {
            return Err(NoPreview(format!("no static preview for {}", ignored.join("; "))));
        };
        if all.iter().filter(|s| s["type"] == "pie").count() > 1 {
            ignored.push(format!("pie series after series[{i}]: the image draws one pie"));
        }
        return Ok(Read { plot: Plot::Pie(pie), ignored });
    }
    for (i, _) in &pies {
        ignored.push(format!("series[{i}] ('pie'): a pie beside axes is not drawn"));
    }

    let numeric_base = !time
        && categories.is_empty()
        && (base_axis["type"].as_str() == Some("value")
            || (base_axis["type"].is_null() && cartesian.iter().all(|c| c.1 == Mark::Scatter)));
    let base = if time {
        Base::Time
    } else if numeric_base {
        Base::Value
    } else {
        Base::Category(Vec::new())
    };
    let mut series = Vec::with_capacity(cartesian.len());
    let mut stacks: HashMap<(usize, String, u64, bool), f64> = HashMap::new();
    for (index, mark, name, items, axis, stack, area) in cartesian {
        let mut points = Vec::with_capacity(items.len());
        for (j, item) in items.iter().enumerate() {
            let pair = match item {
                Value::Array(p) if p.len() >= 2 => Some((&p[0], &p[1])),
                Value::Object(o) => match o.get("value") {
                    Some(Value::Array(p)) if p.len() >= 2 => Some((&p[0], &p[1])),
                    _ => None,
                },
                _ => None,
            };
            // In a horizontal chart a pair is [value, category].
            let (at, value) = match pair {
                Some((a, b)) if horizontal => (b, num(a)),
                Some((a, b)) => (a, num(b)),
                None => (&Value::Null, num(item)),
            };
            let Some(value) = value else { continue };
            let at = match &base {
                Base::Time => match time_ms(if pair.is_some() { at } else { axis_data.get(j).unwrap_or(&Value::Null) })
                {
                    Some(t) => t,
                    None => continue,
                },
                Base::Value => match num(at) {
                    Some(x) => x,
                    None => continue,
                },
                Base::Category(_) if pair.is_some() => {
                    let label = label_of(at);
                    match categories.iter().position(|c| *c == label) {
                        Some(k) => k as f64,
                        None => {
                            categories.push(label);
                            (categories.len() - 1) as f64
                        }
                    }
                }
                Base::Category(_) => j as f64,
            };
            points.push(Point { at, value, base: None });
        }
        if let Some(stack) = &stack {
            for p in &mut points {
                let key = (axis, stack.clone(), p.at.to_bits(), p.value >= 0.0);
                let below = stacks.get(&key).copied().unwrap_or(0.0);
                p.base = Some(below);
                p.value += below;
                stacks.insert(key, p.value);
            }
        }
        series.push(Plotted { mark, name, index, points, axis, area, stack, bands: Vec::new() });
    }
    let base = match base {
        Base::Category(_) => {
            let longest = series.iter().flat_map(|s| s.points.iter().map(|p| p.at as usize + 1)).max().unwrap_or(0);
            while categories.len() < longest {
                categories.push((categories.len() + 1).to_string());
            }
            Base::Category(categories)
        }
        other => other,
    };
    // Areas once the categories are all known: an area may name any of them.
    for s in &mut series {
        s.bands = bands(all[s.index], s, &base, horizontal, &mut ignored);
    }
    let value_axes = (0..=series.iter().map(|s| s.axis).max().unwrap_or(0))
        .map(|i| value_axes.get(i).and_then(|a| a["name"].as_str()).map(|n| short(n, 24)).unwrap_or_default())
        .collect();
    Ok(Read { plot: Plot::Cartesian(Cartesian { series, base, horizontal, value_axes }), ignored })
}

fn slices(items: &[Value]) -> Vec<(String, f64)> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let value = num(d).filter(|v| *v > 0.0)?;
            let name = d["name"].as_str().map_or_else(|| format!("Item {}", i + 1), str::to_owned);
            Some((name, value))
        })
        .collect()
}

/// The statistics ECharts reads in place of a marker's coordinate: the series' own values.
const STATISTICS: [&str; 4] = ["min", "max", "average", "median"];

fn statistic(kind: &str, values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(match kind {
        "min" => sorted[0],
        "max" => sorted[sorted.len() - 1],
        "average" => sorted.iter().sum::<f64>() / sorted.len() as f64,
        _ if sorted.len() % 2 == 1 => sorted[sorted.len() / 2],
        _ => (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0,
    })
}

/// One end's coordinate on an axis: `Ok(None)` when it leaves that axis open, `Err(why)`
/// when it names a place the image cannot find.
fn coordinate(
    raw: Option<&Value>,
    values: &[f64],
    read: impl Fn(&Value) -> Result<f64, String>,
) -> Result<Option<f64>, String> {
    match raw {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if STATISTICS.contains(&s.as_str()) => {
            statistic(s, values).map(Some).ok_or_else(|| format!("'{s}' of a series with no values"))
        }
        Some(raw) => read(raw).map(Some),
    }
}

fn shown(raw: &Value) -> String {
    short(&label_of(raw), 24)
}

/// A place on the base axis: a category (by name, else by index), a number or a time.
fn on_base(raw: &Value, base: &Base) -> Result<f64, String> {
    match base {
        Base::Category(labels) => {
            let label = label_of(raw);
            if let Some(k) = labels.iter().position(|l| *l == label) {
                return Ok(k as f64);
            }
            match raw.as_u64() {
                Some(k) if (k as usize) < labels.len() => Ok(k as f64),
                _ => Err(format!("'{}' is not a category on the axis", shown(raw))),
            }
        }
        Base::Time => time_ms(raw).ok_or_else(|| format!("'{}' is not a time", shown(raw))),
        Base::Value => num(raw).ok_or_else(|| format!("'{}' is not a number", shown(raw))),
    }
}

/// An end's coordinates `(x, y)` as the option gives them: `xAxis`/`yAxis`, or `coord`.
fn ends(point: &serde_json::Map<String, Value>) -> Result<(Option<&Value>, Option<&Value>), &'static str> {
    let given = |key: &str| point.get(key).filter(|v| !v.is_null());
    if given("x").is_some() || given("y").is_some() {
        return Err("a place in pixels (x, y) is not drawn, only one in data (xAxis, yAxis, coord)");
    }
    if let Some(coord) = given("coord") {
        let coord = coord.as_array().ok_or("'coord' is not an array [x, y]")?;
        return Ok((coord.first(), coord.get(1)));
    }
    if given("type").is_some() {
        return Err("an end at a data point ('type') is not drawn, only one in data (xAxis, yAxis, coord)");
    }
    Ok((given("xAxis"), given("yAxis")))
}

/// Reads the `markArea` of `entry` (the option's series drawn as `series`): each item a pair
/// of ends, each end a place on the value axis (`yAxis`, or `xAxis` when horizontal), on the
/// base axis, or both; an axis an end leaves open reaches its edge. What it cannot place is
/// named in `ignored`, never dropped unsaid.
fn bands(entry: &Value, series: &Plotted, base: &Base, horizontal: bool, ignored: &mut Vec<String>) -> Vec<Band> {
    let i = series.index;
    let Some(mark_area) = entry.get("markArea").filter(|m| !m.is_null()) else {
        return Vec::new();
    };
    let items = match mark_area.get("data") {
        None | Some(Value::Null) if mark_area.is_object() => return Vec::new(),
        Some(Value::Array(items)) => items,
        _ => {
            ignored.push(format!("series[{i}].markArea: not an object whose 'data' is an array of [from, to] pairs"));
            return Vec::new();
        }
    };
    if items.len() > MAX_AREAS {
        ignored.push(format!(
            "series[{i}].markArea: the {} areas after the first {MAX_AREAS} (the image shades at most {MAX_AREAS} per series)",
            items.len() - MAX_AREAS
        ));
    }
    let values: Vec<f64> = series.points.iter().map(|p| p.value - p.base.unwrap_or(0.0)).collect();
    let places: Vec<f64> = series.points.iter().map(|p| p.at).collect();
    let mut out = Vec::new();
    for (k, item) in items.iter().take(MAX_AREAS).enumerate() {
        let pair = match item.as_array().map(Vec::as_slice) {
            Some([Value::Object(from), Value::Object(to), ..]) => [from, to],
            _ => {
                ignored.push(format!("series[{i}].markArea.data[{k}]: not a pair of objects [from, to]"));
                continue;
            }
        };
        let label = pair.iter().find_map(|end| match end.get("name") {
            Some(name @ (Value::String(_) | Value::Number(_))) => Some(short(&label_of(name), 24)),
            _ => None,
        });
        let label = label.unwrap_or_default();
        let named = if label.is_empty() { String::new() } else { format!(" ('{label}')") };
        let read = || -> Result<Band, String> {
            let mut value = [f64::NEG_INFINITY, f64::INFINITY];
            let mut along = [f64::NEG_INFINITY, f64::INFINITY];
            let mut placed = false;
            for (side, end) in pair.iter().enumerate() {
                let (x, y) = ends(end)?;
                let (on_value, on_base_axis) = if horizontal { (x, y) } else { (y, x) };
                if let Some(v) = coordinate(on_value, &values, |raw| {
                    num(raw).ok_or_else(|| format!("'{}' is not a number", shown(raw)))
                })? {
                    value[side] = v;
                    placed = true;
                }
                if let Some(b) = coordinate(on_base_axis, &places, |raw| on_base(raw, base))? {
                    along[side] = b;
                    placed = true;
                }
            }
            if !placed {
                return Err("it gives no place on either axis (xAxis, yAxis or coord)".into());
            }
            value.sort_by(f64::total_cmp);
            along.sort_by(f64::total_cmp);
            Ok(Band { item: k, value, base: along, label: label.clone() })
        };
        match read() {
            Ok(band) => out.push(band),
            Err(why) => ignored.push(format!("series[{i}].markArea.data[{k}]{named}: {why}")),
        }
    }
    out
}
