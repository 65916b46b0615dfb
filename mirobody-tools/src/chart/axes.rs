//! Draws a chart on axes: the base axis (categories, numbers or dates; along x, or along y for
//! a horizontal chart), one or two value axes with round ticks, and the series as bars (side by
//! side, or stacked), lines (with their area) and points, over the areas they shade
//! (`markArea`).

use std::fmt::Write as _;

use super::model::{Base, Cartesian, Mark, Plotted};
use super::{HEIGHT, PALETTE, WIDTH, escape, fmt_tick, short, ticks};

const GRID: &str = "#e0e6f1";
const INK: &str = "#6e7079";

/// What [`draw`] shaded, and the areas it left out with why.
pub(super) struct Shaded {
    pub(super) areas: usize,
    pub(super) left_out: Vec<String>,
}

/// Draws `chart` below `top`.
pub(super) fn draw(out: &mut String, chart: &Cartesian, top: f64) -> Shaded {
    let two = chart.value_axes.len() > 1;
    let (left, right) = (
        if chart.horizontal { 110.0 } else { 70.0 },
        if two && !chart.horizontal { WIDTH - 70.0 } else { WIDTH - 30.0 },
    );
    let top = top + if two && chart.horizontal { 30.0 } else { 14.0 };
    let bottom = HEIGHT - 60.0;
    // Along the base axis: from the first place to the last, in pixels.
    let (base_from, base_to) = if chart.horizontal { (bottom, top) } else { (left, right) };
    let (value_from, value_to) = if chart.horizontal { (left, right) } else { (bottom, top) };

    // Each value axis's range: round ticks over its values (and their stacks' bases).
    let scales: Vec<(Vec<f64>, f64, f64)> = (0..chart.value_axes.len())
        .map(|axis| {
            let on: Vec<&Plotted> = chart.series.iter().filter(|s| s.axis == axis).collect();
            let values: Vec<f64> =
                on.iter().flat_map(|s| s.points.iter().flat_map(|p| [Some(p.value), p.base]).flatten()).collect();
            let mut lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let mut hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if values.is_empty() {
                (lo, hi) = (0.0, 1.0);
            }
            let from_zero = on.iter().any(|s| s.mark == Mark::Bar || s.stack.is_some() || s.area);
            if from_zero || lo > 0.0 && lo < hi * 0.5 {
                lo = lo.min(0.0);
                hi = hi.max(0.0);
            }
            let t = ticks(lo, hi);
            let (a, b) = (t[0], *t.last().unwrap_or(&hi));
            (t, a, b)
        })
        .collect();
    let value_px = |axis: usize, v: f64| {
        let (_, lo, hi) = &scales[axis.min(scales.len() - 1)];
        value_from + (v - lo) / (hi - lo).max(f64::EPSILON) * (value_to - value_from)
    };

    // The base axis: a band per category, or a line over numbers or times.
    let places: Vec<f64> = chart.series.iter().flat_map(|s| s.points.iter().map(|p| p.at)).collect();
    let (count, base_lo, base_hi) = match &chart.base {
        Base::Category(labels) => (labels.len().max(1), 0.0, 0.0),
        _ => {
            let lo = places.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = places.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let (lo, hi) = if places.is_empty() { (0.0, 1.0) } else { (lo, hi) };
            let (lo, hi) = if (hi - lo).abs() < f64::EPSILON { (lo - 1.0, hi + 1.0) } else { (lo, hi) };
            let widest = chart.series.iter().map(|s| s.points.len()).max().unwrap_or(1);
            (widest, lo, hi)
        }
    };
    let (base_lo, base_hi) = match &chart.base {
        Base::Value => {
            let t = ticks(base_lo, base_hi);
            (t[0], *t.last().unwrap_or(&base_hi))
        }
        _ => (base_lo, base_hi),
    };
    let band = (base_to - base_from).abs() / count as f64;
    let has_bars = chart.series.iter().any(|s| s.mark == Mark::Bar);
    // Bars over numbers or times keep half a bar clear at both ends.
    let inset = if has_bars && !matches!(chart.base, Base::Category(_)) { band.min(40.0) / 2.0 } else { 0.0 };
    let sign = if base_to > base_from { 1.0 } else { -1.0 };
    let base_px = |at: f64| match &chart.base {
        Base::Category(_) => base_from + sign * band * (at + 0.5),
        _ => {
            let span = (base_to - base_from).abs() - 2.0 * inset;
            base_from + sign * (inset + (at - base_lo) / (base_hi - base_lo).max(f64::EPSILON) * span)
        }
    };
    let point = |at: f64, v: f64, axis: usize| {
        if chart.horizontal { (value_px(axis, v), base_px(at)) } else { (base_px(at), value_px(axis, v)) }
    };

    // Grid and value labels.
    for (axis, (t, _, _)) in scales.iter().enumerate() {
        for tick in t {
            let p = value_px(axis, *tick);
            let label = fmt_tick(*tick);
            match (chart.horizontal, axis) {
                (false, 0) => {
                    let _ = write!(
                        out,
                        r##"<line x1="{left}" y1="{p:.1}" x2="{right}" y2="{p:.1}" stroke="{GRID}"/><text class="value-label" x="{}" y="{:.1}" text-anchor="end" font-size="12" fill="{INK}">{label}</text>"##,
                        left - 8.0,
                        p + 4.0
                    );
                }
                (false, _) => {
                    let _ = write!(
                        out,
                        r##"<text class="value-label" x="{}" y="{:.1}" text-anchor="start" font-size="12" fill="{INK}">{label}</text>"##,
                        right + 8.0,
                        p + 4.0
                    );
                }
                (true, 0) => {
                    let _ = write!(
                        out,
                        r##"<line x1="{p:.1}" y1="{top}" x2="{p:.1}" y2="{bottom}" stroke="{GRID}"/><text class="value-label" x="{p:.1}" y="{}" text-anchor="middle" font-size="12" fill="{INK}">{label}</text>"##,
                        bottom + 20.0
                    );
                }
                (true, _) => {
                    let _ = write!(
                        out,
                        r##"<text class="value-label" x="{p:.1}" y="{}" text-anchor="middle" font-size="12" fill="{INK}">{label}</text>"##,
                        top - 8.0
                    );
                }
            }
        }
    }
    // Areas after the grid, under the axis line and the marks.
    let shaded = shade(out, chart, &value_px, &base_px, [base_from, base_to], [base_lo, base_hi], &scales);
    for (axis, name) in chart.value_axes.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
        let (x, y, anchor) = match (chart.horizontal, axis) {
            (false, 0) => (left, top - 6.0, "middle"),
            (false, _) => (right, top - 6.0, "middle"),
            (true, 0) => (right, bottom + 40.0, "end"),
            (true, _) => (right, top - 22.0, "end"),
        };
        let _ = write!(
            out,
            r##"<text class="axis-name" x="{x}" y="{y}" text-anchor="{anchor}" font-size="12" fill="{INK}">{}</text>"##,
            escape(name)
        );
    }
    // The base axis line and its labels.
    if chart.horizontal {
        let _ = write!(out, r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{INK}"/>"##);
    } else {
        let _ = write!(out, r##"<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{INK}"/>"##);
    }
    let base_label = |out: &mut String, at: f64, text: &str| {
        let p = base_px(at);
        let text = escape(&short(text, if chart.horizontal { 14 } else { 12 }));
        if chart.horizontal {
            let _ = write!(
                out,
                r##"<text class="base-label" x="{}" y="{:.1}" text-anchor="end" font-size="12" fill="{INK}">{text}</text>"##,
                left - 8.0,
                p + 4.0
            );
        } else {
            let _ = write!(
                out,
                r##"<text class="base-label" x="{p:.1}" y="{}" text-anchor="middle" font-size="12" fill="{INK}">{text}</text>"##,
                bottom + 20.0
            );
        }
    };
    match &chart.base {
        Base::Category(labels) => {
            let most = if chart.horizontal { 16 } else { 12 };
            for (i, label) in labels.iter().enumerate().step_by((labels.len() / most).max(1)) {
                base_label(out, i as f64, label);
            }
        }
        Base::Value => {
            for t in ticks(base_lo, base_hi) {
                base_label(out, t, &fmt_tick(t));
            }
        }
        Base::Time => {
            let span = base_hi - base_lo;
            let with_hours = span < 3.0 * 86_400_000.0;
            for k in 0..=5 {
                let at = base_lo + span * f64::from(k) / 5.0;
                let text = mirobody_health::text::rfc3339(at as i64);
                let shown =
                    if with_hours { format!("{} {}", &text[5..10], &text[11..16]) } else { text[..10].to_owned() };
                base_label(out, at, &shown);
            }
        }
    }

    // The marks. Bars side by side, one slot per stack (or per unstacked series).
    let mut slots: Vec<(usize, Option<&str>)> = Vec::new();
    for (i, s) in chart.series.iter().enumerate().filter(|(_, s)| s.mark == Mark::Bar) {
        if s.stack.is_none() || !slots.iter().any(|(_, k)| *k == s.stack.as_deref()) {
            slots.push((i, s.stack.as_deref()));
        }
    }
    let bar_band = if matches!(chart.base, Base::Category(_)) { band } else { band.min(40.0) };
    let bar_width = (bar_band * 0.7 / slots.len().max(1) as f64).min(60.0);
    // Bars first, so lines and points stay visible over them.
    let bars_first = chart.series.iter().enumerate().filter(|(_, s)| s.mark == Mark::Bar);
    for (i, s) in bars_first.chain(chart.series.iter().enumerate().filter(|(_, s)| s.mark != Mark::Bar)) {
        let color = PALETTE[s.index % PALETTE.len()];
        match s.mark {
            Mark::Bar => {
                let slot = slots
                    .iter()
                    .position(|(first, stack)| *first == i || (s.stack.is_some() && *stack == s.stack.as_deref()))
                    .unwrap_or(0) as f64;
                let offset = (slot - (slots.len() as f64 - 1.0) / 2.0) * bar_width;
                for p in &s.points {
                    let from = value_px(s.axis, p.base.unwrap_or(0.0).clamp(scales[s.axis].1, scales[s.axis].2));
                    let to = value_px(s.axis, p.value);
                    let along = base_px(p.at) + sign * offset;
                    let (x, y, w, h) = if chart.horizontal {
                        (from.min(to), along - bar_width / 2.0 + 1.0, (to - from).abs(), (bar_width - 2.0).max(1.0))
                    } else {
                        (along - bar_width / 2.0 + 1.0, from.min(to), (bar_width - 2.0).max(1.0), (to - from).abs())
                    };
                    let _ = write!(
                        out,
                        r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{color}"/>"#
                    );
                }
            }
            Mark::Line => {
                let mut points = s.points.clone();
                if !matches!(chart.base, Base::Category(_)) {
                    points.sort_by(|a, b| a.at.total_cmp(&b.at));
                }
                let path: Vec<String> = points
                    .iter()
                    .map(|p| point(p.at, p.value, s.axis))
                    .map(|(x, y)| format!("{x:.1},{y:.1}"))
                    .collect();
                if s.area && points.len() >= 2 {
                    // Down to the series below in the stack, or to zero.
                    let floor: Vec<String> = points
                        .iter()
                        .rev()
                        .map(|p| point(p.at, p.base.unwrap_or(0.0).max(scales[s.axis].1), s.axis))
                        .map(|(x, y)| format!("{x:.1},{y:.1}"))
                        .collect();
                    let _ = write!(
                        out,
                        r#"<polygon class="area" points="{} {}" fill="{color}" fill-opacity="0.25"/>"#,
                        path.join(" "),
                        floor.join(" ")
                    );
                }
                let _ = write!(
                    out,
                    r#"<polyline class="line" points="{}" fill="none" stroke="{color}" stroke-width="2.5" stroke-linejoin="round"/>"#,
                    path.join(" ")
                );
                if points.len() <= 60 {
                    for p in &points {
                        let (x, y) = point(p.at, p.value, s.axis);
                        let _ = write!(
                            out,
                            r##"<circle class="line-point" cx="{x:.1}" cy="{y:.1}" r="3.5" fill="#fff" stroke="{color}" stroke-width="2"/>"##
                        );
                    }
                }
            }
            Mark::Scatter => {
                for p in &s.points {
                    let (x, y) = point(p.at, p.value, s.axis);
                    let _ = write!(
                        out,
                        r#"<circle class="point" cx="{x:.1}" cy="{y:.1}" r="5" fill="{color}" fill-opacity="0.8"/>"#
                    );
                }
            }
        }
    }
    shaded
}

/// Shades each series' areas (`markArea`) across the plot in its color, under the marks.
/// An area is clipped to the axes; one wholly outside them is left out: ECharts neither
/// draws it nor widens an axis for it (markers do not count in an axis's extent there).
fn shade(
    out: &mut String,
    chart: &Cartesian,
    value_px: &dyn Fn(usize, f64) -> f64,
    base_px: &dyn Fn(f64) -> f64,
    [base_from, base_to]: [f64; 2],
    [base_lo, base_hi]: [f64; 2],
    scales: &[(Vec<f64>, f64, f64)],
) -> Shaded {
    let mut shaded = Shaded { areas: 0, left_out: Vec::new() };
    // The places on the base axis: a category's middle, or the axis's span.
    let (base_min, base_max) = match &chart.base {
        Base::Category(labels) => (0.0, labels.len().saturating_sub(1) as f64),
        _ => (base_lo, base_hi),
    };
    for s in &chart.series {
        let color = PALETTE[s.index % PALETTE.len()];
        let axis = s.axis.min(scales.len() - 1);
        let (lo, hi) = (scales[axis].1, scales[axis].2);
        for band in &s.bands {
            let [v0, v1] = band.value;
            let [b0, b1] = band.base;
            let outside = if v1 < lo || v0 > hi {
                Some(format!("the value axis's range ({} to {})", fmt_tick(lo), fmt_tick(hi)))
            } else if b1 < base_min || b0 > base_max {
                Some("the base axis's range".to_owned())
            } else {
                None
            };
            if let Some(range) = outside {
                let named = if band.label.is_empty() { String::new() } else { format!(" ('{}')", band.label) };
                shaded.left_out.push(format!(
                    "series[{}].markArea.data[{}]{named}: wholly outside {range}; ECharts hides it too",
                    s.index, band.item
                ));
                continue;
            }
            let value = |v: f64| value_px(axis, v.clamp(lo, hi));
            // An open end reaches the plot's edge, past the first or last category's middle.
            let along = |b: f64| {
                if b == f64::NEG_INFINITY {
                    base_from
                } else if b == f64::INFINITY {
                    base_to
                } else {
                    base_px(b.clamp(base_min, base_max))
                }
            };
            let ([x0, x1], [y0, y1]) = if chart.horizontal {
                ([value(v0), value(v1)], [along(b0), along(b1)])
            } else {
                ([along(b0), along(b1)], [value(v0), value(v1)])
            };
            let (x, y, w, h) = (x0.min(x1), y0.min(y1), (x1 - x0).abs(), (y1 - y0).abs());
            let _ = write!(
                out,
                r#"<rect class="mark-area" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{color}" fill-opacity="0.12"/>"#
            );
            if !band.label.is_empty() {
                let _ = write!(
                    out,
                    r#"<text class="mark-area-label" x="{:.1}" y="{:.1}" font-size="11" fill="{color}">{}</text>"#,
                    x + 4.0,
                    y + 12.0,
                    escape(&band.label)
                );
            }
            shaded.areas += 1;
        }
    }
    shaded
}
