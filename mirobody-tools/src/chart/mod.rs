//! A static rendering of an ECharts option, for clients without a chart widget: the common
//! chart types (line, bar, scatter, pie) drawn as SVG and rasterized to PNG with resvg.
//!
//! It draws what the data says (series from `data` or a `dataset`, stacks, category, value and
//! time axes, horizontal bars, a second value axis, the areas a series shades with `markArea`,
//! legend, title) in ECharts' default palette; styling keys are ignored. `model` reads the option, `axes` draws a chart on axes, and this
//! file the frame and pies. What it cannot draw (maps, graphs, radar, 3-D) is named with why;
//! an option with nothing it can draw gets no image, and the tool says so.

mod axes;
mod model;

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 480.0;
const PALETTE: [&str; 9] =
    ["#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc"];
const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";
pub(crate) use model::MAX_POINTS;

/// Why no image was drawn.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NoPreview(pub(crate) String);

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn short(text: &str, max: usize) -> String {
    let (cut, truncated) = mirobody_health::text::cap_chars(text, max);
    if truncated { format!("{cut}…") } else { cut.to_owned() }
}

fn first(value: &Value) -> &Value {
    match value {
        Value::Array(items) => items.first().unwrap_or(&Value::Null),
        other => other,
    }
}

fn label_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Object(o) => o.get("value").map(label_of).unwrap_or_default(),
        other => other.to_string(),
    }
}

/// A number from a data item: `5`, `"5"`, `{value: 5}`; `None` for gaps (`null`, `"-"`).
fn num(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|v| v.is_finite()),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|v| v.is_finite()),
        Value::Object(o) => o.get("value").and_then(num),
        _ => None,
    }
}

/// Round axis ticks covering `[lo, hi]`.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = if (hi - lo).abs() < f64::EPSILON { (lo - 1.0, hi + 1.0) } else { (lo, hi) };
    let raw = (hi - lo) / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(raw);
    let start = (lo / step).floor() * step;
    let mut out = Vec::new();
    let mut t = start;
    while t <= hi + step * 0.5 && out.len() < 20 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    if out.last().is_some_and(|l| *l < hi) {
        out.push(t);
    }
    out
}

fn fmt_tick(v: f64) -> String {
    let abs = v.abs();
    if abs >= 1e6 {
        format!("{}M", trim_zeros(v / 1e6))
    } else if abs >= 1e4 {
        format!("{}k", trim_zeros(v / 1e3))
    } else {
        trim_zeros(v)
    }
}

fn trim_zeros(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// An option drawn: the SVG, what it shows, and what it leaves out with why.
#[derive(Debug)]
pub(crate) struct Drawing {
    pub(crate) svg: String,
    /// What the image shows, in a few words ("a stacked bar chart of 3 series on a time axis").
    pub(crate) drawn: String,
    /// The parts of the option the image leaves out, each with why.
    pub(crate) ignored: Vec<String>,
}

fn title_of(option: &Value, fallback: Option<&str>) -> Option<String> {
    fallback.map(str::to_owned).or_else(|| first(&option["title"])["text"].as_str().map(str::to_owned))
}

// What a chart on axes shows, in a few words, with the number of areas shaded.
fn describe(chart: &model::Cartesian, areas: usize) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for s in &chart.series {
        let kind = match s.mark {
            model::Mark::Line => "line",
            model::Mark::Bar => "bar",
            model::Mark::Scatter => "scatter",
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    let stacked = if chart.series.iter().any(|s| s.stack.is_some()) { "stacked " } else { "" };
    let horizontal = if chart.horizontal { "horizontal " } else { "" };
    let n = chart.series.len();
    let base = match chart.base {
        model::Base::Category(_) => "a category axis",
        model::Base::Value => "a value axis",
        model::Base::Time => "a time axis",
    };
    let second = if chart.value_axes.len() > 1 { ", with a second value axis" } else { "" };
    let areas = match areas {
        0 => String::new(),
        1 => ", with 1 shaded area (markArea)".to_owned(),
        n => format!(", with {n} shaded areas (markArea)"),
    };
    format!("a {stacked}{horizontal}{} chart of {n} series on {base}{second}{areas}", kinds.join("/"))
}

/// Draws the option as SVG.
pub(crate) fn svg(option: &Value, title: Option<&str>) -> Result<Drawing, NoPreview> {
    let model::Read { plot, mut ignored } = model::read(option)?;
    let mut out = String::new();
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FONT}"><rect width="100%" height="100%" fill="#ffffff"/>"##
    );
    let mut top = 16.0;
    if let Some(title) = title_of(option, title) {
        let _ = write!(
            out,
            r##"<text x="{}" y="34" text-anchor="middle" font-size="20" font-weight="bold" fill="#333">{}</text>"##,
            WIDTH / 2.0,
            escape(&short(&title, 70))
        );
        top = 50.0;
    }
    let drawn = match &plot {
        model::Plot::Pie(p) => {
            pie(&mut out, p, top);
            format!("a pie of {} slices", p.slices.len())
        }
        model::Plot::Cartesian(chart) => {
            if chart.series.iter().all(|s| s.points.is_empty()) {
                return Err(NoPreview("the series have no numeric data".into()));
            }
            if chart.series.len() >= 2 {
                let names: Vec<(usize, &str)> = chart.series.iter().map(|s| (s.index, s.name.as_str())).collect();
                legend(&mut out, &names, top);
                top += 26.0;
            }
            let shaded = axes::draw(&mut out, chart, top);
            ignored.extend(shaded.left_out);
            describe(chart, shaded.areas)
        }
    };
    out.push_str("</svg>");
    Ok(Drawing { svg: out, drawn, ignored })
}

fn legend(out: &mut String, series: &[(usize, &str)], top: f64) {
    let widths: Vec<f64> = series.iter().map(|s| 30.0 + 7.5 * short(s.1, 24).chars().count() as f64).collect();
    let total: f64 = widths.iter().sum();
    let mut x = ((WIDTH - total) / 2.0).max(10.0);
    for (i, (index, name)) in series.iter().enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        let _ = write!(
            out,
            r##"<rect class="legend" x="{x}" y="{}" width="18" height="10" rx="2" fill="{color}"/><text class="legend" x="{}" y="{}" font-size="13" fill="#333">{}</text>"##,
            top + 2.0,
            x + 23.0,
            top + 11.0,
            escape(&short(name, 24))
        );
        x += widths[i];
    }
}

fn pie(out: &mut String, p: &model::Pie, top: f64) {
    let slices = &p.slices;
    let total: f64 = slices.iter().map(|s| s.1).sum();
    let (cx, cy) = (WIDTH / 2.0, (top + HEIGHT) / 2.0);
    let r = ((HEIGHT - top) / 2.0 - 40.0).max(40.0);
    if total <= 0.0 {
        return;
    }
    let mut angle = -std::f64::consts::FRAC_PI_2;
    for (i, (name, value)) in slices.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let sweep = value / total * std::f64::consts::TAU;
        if slices.len() == 1 {
            let _ = write!(out, r#"<circle class="wedge" cx="{cx}" cy="{cy}" r="{r}" fill="{color}"/>"#);
        } else {
            let (x0, y0) = (cx + r * angle.cos(), cy + r * angle.sin());
            let (x1, y1) = (cx + r * (angle + sweep).cos(), cy + r * (angle + sweep).sin());
            let large = i32::from(sweep > std::f64::consts::PI);
            let _ = write!(
                out,
                r##"<path class="wedge" d="M{cx},{cy} L{x0:.2},{y0:.2} A{r},{r} 0 {large} 1 {x1:.2},{y1:.2} Z" fill="{color}" stroke="#fff" stroke-width="1.5"/>"##
            );
        }
        let mid = angle + sweep / 2.0;
        let (lx, ly) = (cx + (r + 18.0) * mid.cos(), cy + (r + 18.0) * mid.sin());
        let anchor = if mid.cos() >= 0.0 { "start" } else { "end" };
        let _ = write!(
            out,
            r##"<text class="slice-label" x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" font-size="13" fill="#333">{} ({:.0}%)</text>"##,
            ly + 4.0,
            escape(&short(name, 24)),
            value / total * 100.0
        );
        angle += sweep;
    }
}

fn fonts() -> Arc<resvg::usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<resvg::usvg::fontdb::Database>> = OnceLock::new();
    Arc::clone(FONTS.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_system_fonts();
        db.set_sans_serif_family("DejaVu Sans");
        Arc::new(db)
    }))
}

/// Rasterizes SVG to PNG bytes.
pub(crate) fn png(svg: &str) -> Result<Vec<u8>, NoPreview> {
    let options = resvg::usvg::Options { fontdb: fonts(), ..resvg::usvg::Options::default() };
    let tree = resvg::usvg::Tree::from_str(svg, &options).map_err(|e| NoPreview(format!("SVG error: {e}")))?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| NoPreview("empty image".into()))?;
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| NoPreview(format!("PNG error: {e}")))
}

#[cfg(test)]
mod tests;
