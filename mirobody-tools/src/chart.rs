//! A static rendering of an ECharts option, for clients without a chart widget: the common
//! chart types (line, bar, scatter, pie) drawn as SVG and rasterized to PNG with resvg.
//!
//! It draws what the data says (series, categories, axes with round ticks, legend, title) in
//! ECharts' default palette; styling keys are ignored. Anything else (maps, graphs, 3-D) gets
//! no image, and the tool says so.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 480.0;
const PALETTE: [&str; 9] =
    ["#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc"];
const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";
/// The most data points drawn.
const MAX_POINTS: usize = 20_000;

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

/// An `(x, y)` pair from `[x, y]` or `{value: [x, y]}`.
fn pair(value: &Value) -> Option<(&Value, Option<f64>)> {
    match value {
        Value::Array(items) if items.len() >= 2 => Some((&items[0], num(&items[1]))),
        Value::Object(o) => o.get("value").and_then(pair),
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

struct Series<'a> {
    kind: &'a str,
    name: String,
    data: &'a [Value],
    area: bool,
}

fn series_list(option: &Value) -> Vec<Series<'_>> {
    let list: Vec<&Value> = match &option["series"] {
        Value::Array(items) => items.iter().collect(),
        one @ Value::Object(_) => vec![one],
        _ => Vec::new(),
    };
    list.into_iter()
        .enumerate()
        .map(|(i, s)| Series {
            kind: s["type"].as_str().unwrap_or("line"),
            name: s["name"].as_str().map_or_else(|| format!("Series {}", i + 1), str::to_owned),
            data: s["data"].as_array().map_or(&[], Vec::as_slice),
            area: s.get("areaStyle").is_some(),
        })
        .collect()
}

fn title_of(option: &Value, fallback: Option<&str>) -> Option<String> {
    fallback.map(str::to_owned).or_else(|| first(&option["title"])["text"].as_str().map(str::to_owned))
}

/// Draws the option as SVG.
pub(crate) fn svg(option: &Value, title: Option<&str>) -> Result<String, NoPreview> {
    let series = series_list(option);
    if series.is_empty() {
        return Err(NoPreview("the option has no series".into()));
    }
    if series.iter().map(|s| s.data.len()).sum::<usize>() > MAX_POINTS {
        return Err(NoPreview(format!("more than {MAX_POINTS} data points")));
    }
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
    if series.iter().all(|s| s.kind == "pie") {
        pie(&mut out, &series[0], top);
    } else if series.iter().all(|s| matches!(s.kind, "line" | "bar" | "scatter" | "effectScatter")) {
        if series.len() >= 2 {
            legend(&mut out, &series, top);
            top += 26.0;
        }
        cartesian(&mut out, option, &series, top)?;
    } else {
        let kinds: Vec<&str> = series.iter().map(|s| s.kind).collect();
        return Err(NoPreview(format!("no static preview for {} charts", kinds.join("/"))));
    }
    out.push_str("</svg>");
    Ok(out)
}

fn legend(out: &mut String, series: &[Series<'_>], top: f64) {
    let widths: Vec<f64> = series.iter().map(|s| 30.0 + 7.5 * short(&s.name, 24).chars().count() as f64).collect();
    let total: f64 = widths.iter().sum();
    let mut x = ((WIDTH - total) / 2.0).max(10.0);
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let _ = write!(
            out,
            r##"<rect x="{x}" y="{}" width="18" height="10" rx="2" fill="{color}"/><text x="{}" y="{}" font-size="13" fill="#333">{}</text>"##,
            top + 2.0,
            x + 23.0,
            top + 11.0,
            escape(&short(&s.name, 24))
        );
        x += widths[i];
    }
}

fn cartesian(out: &mut String, option: &Value, series: &[Series<'_>], top: f64) -> Result<(), NoPreview> {
    let x_axis = first(&option["xAxis"]);
    if first(&option["yAxis"])["type"].as_str() == Some("category") {
        return Err(NoPreview("no static preview for horizontal (category y axis) charts".into()));
    }
    let categories: Vec<String> =
        x_axis["data"].as_array().map(|d| d.iter().map(label_of).collect()).unwrap_or_default();
    let category_x = x_axis["type"].as_str() == Some("category")
        || !categories.is_empty()
        || (x_axis["type"].as_str() != Some("value") && series.iter().any(|s| s.kind == "bar"));
    // Points per series: (x position in category units or value, y).
    let mut points: Vec<Vec<(f64, f64)>> = Vec::with_capacity(series.len());
    let mut n_categories = categories.len();
    for s in series {
        let mut pts = Vec::with_capacity(s.data.len());
        for (i, item) in s.data.iter().enumerate() {
            match pair(item) {
                Some((x, Some(y))) if !category_x => {
                    if let Some(x) = num(x) {
                        pts.push((x, y));
                    }
                }
                Some((x, Some(y))) => {
                    let label = label_of(x);
                    let at = categories.iter().position(|c| *c == label).unwrap_or(i);
                    pts.push((at as f64, y));
                }
                Some((_, None)) => {}
                None => {
                    if let Some(y) = num(item) {
                        pts.push((i as f64, y));
                    }
                }
            }
        }
        n_categories = n_categories.max(s.data.len());
        points.push(pts);
    }
    let ys: Vec<f64> = points.iter().flatten().map(|p| p.1).collect();
    if ys.is_empty() {
        return Err(NoPreview("the series have no numeric data".into()));
    }
    let mut lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if series.iter().any(|s| s.kind == "bar") || lo > 0.0 && lo < hi * 0.5 {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    let y_ticks = ticks(lo, hi);
    let (y_lo, y_hi) = (y_ticks[0], *y_ticks.last().unwrap_or(&hi));
    let (left, right, bottom) = (70.0, WIDTH - 30.0, HEIGHT - 60.0);
    let top = top + 14.0;
    let y_of = |v: f64| bottom - (v - y_lo) / (y_hi - y_lo).max(f64::EPSILON) * (bottom - top);
    for t in &y_ticks {
        let y = y_of(*t);
        let _ = write!(
            out,
            r##"<line x1="{left}" y1="{y:.1}" x2="{right}" y2="{y:.1}" stroke="#e0e6f1"/><text x="{}" y="{:.1}" text-anchor="end" font-size="12" fill="#6e7079">{}</text>"##,
            left - 8.0,
            y + 4.0,
            fmt_tick(*t)
        );
    }
    let _ = write!(out, r##"<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#6e7079"/>"##);
    let x_of: Box<dyn Fn(f64) -> f64> = if category_x {
        let n = n_categories.max(1) as f64;
        let band = (right - left) / n;
        let step = (n_categories / 12).max(1);
        for i in (0..n_categories).step_by(step) {
            let label = categories.get(i).cloned().unwrap_or_else(|| (i + 1).to_string());
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{}" text-anchor="middle" font-size="12" fill="#6e7079">{}</text>"##,
                left + band * (i as f64 + 0.5),
                bottom + 20.0,
                escape(&short(&label, 12))
            );
        }
        Box::new(move |x| left + band * (x + 0.5))
    } else {
        let xs: Vec<f64> = points.iter().flatten().map(|p| p.0).collect();
        let x_ticks = ticks(
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let (x_lo, x_hi) = (x_ticks[0], *x_ticks.last().unwrap_or(&1.0));
        let x_of = move |v: f64| left + (v - x_lo) / (x_hi - x_lo).max(f64::EPSILON) * (right - left);
        for t in &x_ticks {
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{}" text-anchor="middle" font-size="12" fill="#6e7079">{}</text>"##,
                x_of(*t),
                bottom + 20.0,
                fmt_tick(*t)
            );
        }
        Box::new(x_of)
    };
    let bars: Vec<usize> = (0..series.len()).filter(|i| series[*i].kind == "bar").collect();
    let band = (right - left) / n_categories.max(1) as f64;
    let bar_width = (band * 0.7 / bars.len().max(1) as f64).min(60.0);
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts = &points[i];
        match s.kind {
            "bar" => {
                let slot = bars.iter().position(|b| *b == i).unwrap_or(0) as f64;
                let offset = (slot - (bars.len() as f64 - 1.0) / 2.0) * bar_width;
                let zero = y_of(0.0f64.clamp(y_lo, y_hi));
                for (x, y) in pts {
                    let (cx, cy) = (x_of(*x) + offset, y_of(*y));
                    let _ = write!(
                        out,
                        r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
                        cx - bar_width / 2.0 + 1.0,
                        cy.min(zero),
                        (bar_width - 2.0).max(1.0),
                        (zero - cy).abs()
                    );
                }
            }
            "line" => {
                let path: Vec<String> = pts.iter().map(|(x, y)| format!("{:.1},{:.1}", x_of(*x), y_of(*y))).collect();
                if s.area && pts.len() >= 2 {
                    let base = y_of(y_lo.max(0.0f64.min(y_hi)));
                    let _ = write!(
                        out,
                        r#"<polygon points="{:.1},{base:.1} {} {:.1},{base:.1}" fill="{color}" fill-opacity="0.25"/>"#,
                        x_of(pts[0].0),
                        path.join(" "),
                        x_of(pts[pts.len() - 1].0)
                    );
                }
                let _ = write!(
                    out,
                    r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5" stroke-linejoin="round"/>"#,
                    path.join(" ")
                );
                if pts.len() <= 60 {
                    for (x, y) in pts {
                        let _ = write!(
                            out,
                            r##"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="#fff" stroke="{color}" stroke-width="2"/>"##,
                            x_of(*x),
                            y_of(*y)
                        );
                    }
                }
            }
            _ => {
                for (x, y) in pts {
                    let _ = write!(
                        out,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="5" fill="{color}" fill-opacity="0.8"/>"#,
                        x_of(*x),
                        y_of(*y)
                    );
                }
            }
        }
    }
    Ok(())
}

fn pie(out: &mut String, s: &Series<'_>, top: f64) {
    let slices: Vec<(String, f64)> = s
        .data
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let value = num(d).filter(|v| *v > 0.0)?;
            let name = d["name"].as_str().map_or_else(|| format!("Item {}", i + 1), str::to_owned);
            Some((name, value))
        })
        .collect();
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
            let _ = write!(out, r#"<circle cx="{cx}" cy="{cy}" r="{r}" fill="{color}"/>"#);
        } else {
            let (x0, y0) = (cx + r * angle.cos(), cy + r * angle.sin());
            let (x1, y1) = (cx + r * (angle + sweep).cos(), cy + r * (angle + sweep).sin());
            let large = i32::from(sweep > std::f64::consts::PI);
            let _ = write!(
                out,
                r##"<path d="M{cx},{cy} L{x0:.2},{y0:.2} A{r},{r} 0 {large} 1 {x1:.2},{y1:.2} Z" fill="{color}" stroke="#fff" stroke-width="1.5"/>"##
            );
        }
        let mid = angle + sweep / 2.0;
        let (lx, ly) = (cx + (r + 18.0) * mid.cos(), cy + (r + 18.0) * mid.sin());
        let anchor = if mid.cos() >= 0.0 { "start" } else { "end" };
        let _ = write!(
            out,
            r##"<text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" font-size="13" fill="#333">{} ({:.0}%)</text>"##,
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
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 100.0), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let t = ticks(3.2, 7.9);
        assert!(t[0] <= 3.2 && *t.last().unwrap() >= 7.9, "{t:?}");
        assert!(ticks(5.0, 5.0).len() > 1);
        assert_eq!(fmt_tick(25000.0), "25k");
        assert_eq!(fmt_tick(2.5), "2.5");
    }

    #[test]
    fn labels_are_escaped() {
        let option = json!({"title": {"text": "<script>&"}, "xAxis": {"type": "category", "data": ["a\"b"]}, "yAxis": {}, "series": [{"type": "bar", "data": [1]}]});
        let svg = svg(&option, None).unwrap();
        assert!(svg.contains("&lt;script&gt;&amp;") && svg.contains("a&quot;b"), "{svg}");
        assert!(!svg.contains("<script>"));
    }

    #[test]
    fn draws_lines_bars_scatter_and_pies_to_png() {
        for option in [
            json!({"xAxis": {"type": "category", "data": ["Mon", "Tue", "Wed"]}, "yAxis": {"type": "value"},
                   "series": [{"name": "Steps", "type": "bar", "data": [5000, 8000, 6500]}, {"name": "Goal", "type": "line", "data": [7000, 7000, 7000]}]}),
            json!({"xAxis": {"type": "value"}, "yAxis": {"type": "value"}, "series": [{"type": "scatter", "data": [[1, 2], [3, 4.5], [5, null]]}]}),
            json!({"series": [{"type": "pie", "data": [{"name": "Sleep", "value": 8}, {"name": "Work", "value": 9}, {"name": "Other", "value": 7}]}]}),
        ] {
            let svg = svg(&option, Some("Test")).unwrap();
            let png = png(&svg).unwrap();
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
            assert!(png.len() > 2000, "an image with content");
        }
    }

    #[test]
    fn unsupported_charts_say_why() {
        let err = svg(&json!({"series": [{"type": "sankey", "data": []}]}), None).unwrap_err();
        assert!(err.0.contains("sankey"), "{err:?}");
        let err = svg(&json!({"series": []}), None).unwrap_err();
        assert!(err.0.contains("no series"));
    }
}
