//! The drawing's tests: the SVG's structure for each chart type and option feature (marks
//! counted, their places compared, labels present), what is left out and why, the bounds.

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
    let svg = svg(&option, None).unwrap().svg;
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
        let svg = svg(&option, Some("Test")).unwrap().svg;
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

/// Each `<tag class="class" ...>` of `svg`: its numeric attributes by name.
fn marks(svg: &str, tag: &str, class: &str) -> Vec<std::collections::HashMap<String, f64>> {
    let opening = format!("<{tag} class=\"{class}\" ");
    svg.match_indices(&opening)
        .map(|(at, _)| {
            let rest = &svg[at + opening.len()..];
            let attributes = &rest[..rest.find('>').unwrap()];
            attributes
                .split("\" ")
                .filter_map(|pair| {
                    let (name, value) = pair.split_once("=\"")?;
                    Some((name.to_owned(), value.trim_end_matches(['"', '/']).parse().ok()?))
                })
                .collect()
        })
        .collect()
}

fn texts(svg: &str, class: &str) -> Vec<String> {
    let opening = format!("<text class=\"{class}\" ");
    svg.match_indices(&opening)
        .map(|(at, _)| {
            let rest = &svg[at..];
            let start = rest.find('>').unwrap() + 1;
            rest[start..start + rest[start..].find("</text>").unwrap()].to_owned()
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.15
}

#[test]
fn stacked_bars_share_a_slot_and_start_where_the_one_below_ends() {
    let option = json!({"xAxis": {"type": "category", "data": ["Mon", "Tue", "Wed"]}, "yAxis": {"type": "value"},
        "series": [{"name": "Walk", "type": "bar", "stack": "all", "data": [3000, 4000, 5000]},
                   {"name": "Run", "type": "bar", "stack": "all", "data": [2000, 1000, 3000]},
                   {"name": "Goal", "type": "line", "data": [6000, 6000, 6000]}]});
    let drawing = svg(&option, None).unwrap();
    let bars = marks(&drawing.svg, "rect", "bar");
    assert_eq!(bars.len(), 6, "{}", drawing.svg);
    for day in 0..3 {
        let (walk, run) = (&bars[day], &bars[day + 3]);
        assert!(close(walk["x"], run["x"]), "one slot per stack: {walk:?} {run:?}");
        assert!(close(run["y"] + run["height"], walk["y"]), "Run sits on Walk: {walk:?} {run:?}");
    }
    // The stack's top is the sum: Wed's 8000 is the tallest.
    let top = |i: usize| bars[i + 3]["y"];
    assert!(top(2) < top(0) && top(0) < top(1) + 0.2, "{bars:?}");
    assert_eq!(texts(&drawing.svg, "legend"), ["Walk", "Run", "Goal"]);
    assert_eq!(drawing.drawn, "a stacked bar/line chart of 3 series on a category axis");
    assert!(drawing.ignored.is_empty(), "{:?}", drawing.ignored);
    assert!(png(&drawing.svg).is_ok());
}

#[test]
fn stacked_lines_add_up_and_their_areas_reach_down_to_the_one_below() {
    let option = json!({"xAxis": {"type": "category", "data": ["a", "b"]}, "yAxis": {},
        "series": [{"name": "Deep", "type": "line", "stack": "sleep", "areaStyle": {}, "data": [1, 2]},
                   {"name": "Light", "type": "line", "stack": "sleep", "areaStyle": {}, "data": [4, 4]}]});
    let read = model::read(&option).unwrap();
    let model::Plot::Cartesian(chart) = &read.plot else { panic!("axes") };
    let light: Vec<(f64, Option<f64>)> = chart.series[1].points.iter().map(|p| (p.value, p.base)).collect();
    assert_eq!(light, [(5.0, Some(1.0)), (6.0, Some(2.0))]);
    let drawing = svg(&option, None).unwrap();
    assert_eq!(marks(&drawing.svg, "polygon", "area").len(), 2);
    assert_eq!(drawing.svg.matches("class=\"line\"").count(), 2);
}

#[test]
fn a_second_value_axis_scales_its_own_series_and_labels_the_right_side() {
    let option = json!({"xAxis": {"type": "category", "data": ["Mon", "Tue", "Wed"]},
        "yAxis": [{"type": "value", "name": "steps"}, {"type": "value", "name": "kg"}],
        "series": [{"name": "Steps", "type": "bar", "data": [5000, 8000, 6500]},
                   {"name": "Weight", "type": "line", "yAxisIndex": 1, "data": [70.2, 70.8, 71.5]}]});
    let drawing = svg(&option, None).unwrap();
    assert!(drawing.drawn.ends_with("with a second value axis"), "{}", drawing.drawn);
    let right: Vec<String> = texts(&drawing.svg, "value-label").into_iter().filter(|t| t.contains('.')).collect();
    assert!(!right.is_empty(), "the kg axis has its own (fractional) ticks: {}", drawing.svg);
    assert!(drawing.svg.contains("text-anchor=\"start\" font-size=\"12\""), "labels on the right");
    assert_eq!(texts(&drawing.svg, "axis-name"), ["steps", "kg"]);
    // On its own axis the weight spans the plot; on the steps axis it would lie flat at 0.
    let points = marks(&drawing.svg, "circle", "line-point");
    let (high, low) = (points[2]["cy"], points[0]["cy"]);
    assert!(low - high > 100.0, "{points:?}");
}

#[test]
fn a_time_axis_places_dates_by_time_and_labels_them() {
    let option = json!({"xAxis": {"type": "time"}, "yAxis": {"type": "value"},
        "series": [{"name": "Weight", "type": "line",
                    "data": [["2026-03-01", 70], ["2026-03-03T12:00:00Z", 71], ["2026-03-11 00:00", 70.5], ["not a date", 1]]}]});
    let drawing = svg(&option, None).unwrap();
    let points = marks(&drawing.svg, "circle", "line-point");
    assert_eq!(points.len(), 3, "the undated value is left out: {}", drawing.svg);
    let (a, b, c) = (points[0]["cx"], points[1]["cx"], points[2]["cx"]);
    assert!(((b - a) / (c - a) - 0.25).abs() < 0.01, "2.5 of 10 days: {a} {b} {c}");
    let labels = texts(&drawing.svg, "base-label");
    assert_eq!(labels.first().map(String::as_str), Some("2026-03-01"), "{labels:?}");
    assert_eq!(labels.last().map(String::as_str), Some("2026-03-11"), "{labels:?}");
    assert!(drawing.drawn.contains("on a time axis"), "{}", drawing.drawn);

    // Dates as the axis's data, values as the series' data.
    let option = json!({"xAxis": {"type": "time", "data": ["2026-01-01", "2026-01-02", "2026-01-05"]}, "yAxis": {},
        "series": [{"name": "HR", "type": "scatter", "data": [60, 62, 58]}]});
    let points = marks(&svg(&option, None).unwrap().svg, "circle", "point");
    let (a, b, c) = (points[0]["cx"], points[1]["cx"], points[2]["cx"]);
    assert!(((b - a) / (c - a) - 0.25).abs() < 0.01, "{a} {b} {c}");
}

#[test]
fn horizontal_bars_run_from_the_category_axis() {
    let option = json!({"yAxis": {"type": "category", "data": ["Glucose", "LDL", "HDL"]}, "xAxis": {"type": "value"},
        "series": [{"name": "Value", "type": "bar", "data": [100, 50, 25]}]});
    let drawing = svg(&option, None).unwrap();
    let bars = marks(&drawing.svg, "rect", "bar");
    assert_eq!(bars.len(), 3);
    assert!(close(bars[0]["x"], bars[1]["x"]) && close(bars[0]["height"], bars[2]["height"]), "{bars:?}");
    assert!((bars[0]["width"] / bars[1]["width"] - 2.0).abs() < 0.02, "widths by value: {bars:?}");
    assert!((bars[1]["width"] / bars[2]["width"] - 2.0).abs() < 0.05, "{bars:?}");
    assert!(bars[0]["y"] > bars[2]["y"], "the first category at the bottom, as ECharts puts it");
    assert_eq!(texts(&drawing.svg, "base-label"), ["Glucose", "LDL", "HDL"]);
    assert!(drawing.drawn.starts_with("a horizontal bar chart"), "{}", drawing.drawn);
}

#[test]
fn a_dataset_maps_columns_to_series_by_default_or_by_encode() {
    let option = json!({"dataset": {"source": [["day", "steps", "sleep"], ["Mon", 5000, 7], ["Tue", 8000, 6], ["Wed", 6000, 8]]},
        "xAxis": {"type": "category"}, "yAxis": {}, "series": [{"type": "bar"}, {"type": "bar"}]});
    let drawing = svg(&option, None).unwrap();
    assert_eq!(marks(&drawing.svg, "rect", "bar").len(), 6);
    assert_eq!(texts(&drawing.svg, "legend"), ["steps", "sleep"], "named by their columns");
    assert_eq!(texts(&drawing.svg, "base-label"), ["Mon", "Tue", "Wed"]);

    // Rows as objects, a column picked by encode.
    let option = json!({"dataset": {"source": [{"day": "Mon", "steps": 5000, "sleep": 7}, {"day": "Tue", "steps": 8000, "sleep": 6}]},
        "xAxis": {"type": "category"}, "yAxis": {},
        "series": [{"type": "line", "name": "Sleep", "encode": {"x": "day", "y": "sleep"}}]});
    let read = model::read(&option).unwrap();
    let model::Plot::Cartesian(chart) = &read.plot else { panic!("axes") };
    let values: Vec<f64> = chart.series[0].points.iter().map(|p| p.value).collect();
    assert_eq!(values, [7.0, 6.0]);
    assert_eq!(chart.base, model::Base::Category(vec!["Mon".into(), "Tue".into()]));

    // A pie from a dataset: names and values from the first two columns.
    let option = json!({"dataset": {"source": [["kind", "minutes"], ["Deep", 90], ["Light", 240], ["REM", 100]]},
        "series": [{"type": "pie"}]});
    let drawing = svg(&option, None).unwrap();
    assert_eq!(marks(&drawing.svg, "path", "wedge").len(), 3);
    assert!(texts(&drawing.svg, "slice-label").iter().any(|t| t.starts_with("Light (56%)")), "{}", drawing.svg);
}

#[test]
fn pies_are_wedges_and_scatters_are_points() {
    let option = json!({"series": [{"type": "pie", "data": [{"name": "Sleep", "value": 8}, {"name": "Work", "value": 8}, {"name": "Other", "value": 8}, {"name": "None", "value": 0}]}]});
    let drawing = svg(&option, None).unwrap();
    assert_eq!(marks(&drawing.svg, "path", "wedge").len(), 3, "a wedge per positive value");
    assert_eq!(texts(&drawing.svg, "slice-label"), ["Sleep (33%)", "Work (33%)", "Other (33%)"]);
    assert_eq!(drawing.drawn, "a pie of 3 slices");
    assert!(!drawing.svg.contains("class=\"bar\""));

    let option = json!({"xAxis": {"type": "value"}, "yAxis": {"type": "value"}, "series": [{"type": "scatter", "data": [[1, 2], [3, 4.5], [5, null]]}]});
    let drawing = svg(&option, None).unwrap();
    assert_eq!(marks(&drawing.svg, "circle", "point").len(), 2);
    assert!(!drawing.svg.contains("class=\"line\""), "no line joins a scatter's points");
    assert_eq!(drawing.drawn, "a scatter chart of 1 series on a value axis");
}

#[test]
fn what_is_not_drawn_is_named_with_why() {
    let option = json!({"xAxis": {"type": "category", "data": ["a", "b"]}, "yAxis": [{}, {}, {}],
        "series": [{"name": "HR", "type": "line", "data": [60, 62]},
                   {"name": "Radar", "type": "radar", "data": [{"value": [1, 2]}]},
                   {"name": "Share", "type": "pie", "data": [{"name": "x", "value": 1}]},
                   {"name": "Polar", "type": "bar", "coordinateSystem": "polar", "data": [1]}]});
    let drawing = svg(&option, None).unwrap();
    assert_eq!(drawing.drawn, "a line chart of 1 series on a category axis");
    let ignored = drawing.ignored.join("\n");
    for expected in ["series[1] ('radar')", "series[2] ('pie')", "series[3] on 'polar'", "value axes after the second"]
    {
        assert!(ignored.contains(expected), "{expected} in {ignored}");
    }
    let two_pies = json!({"series": [{"type": "pie", "data": [1, 2]}, {"type": "pie", "data": [3]}]});
    let drawing = svg(&two_pies, None).unwrap();
    assert_eq!(drawing.ignored, ["pie series after series[0]: the image draws one pie"]);
    let transformed = json!({"dataset": [{"source": [["a", 1]]}, {"transform": {"type": "filter"}}], "xAxis": {}, "yAxis": {}, "series": [{"type": "bar"}]});
    assert!(svg(&transformed, None).unwrap().ignored[0].contains("'transform'"));
}

#[test]
fn too_many_points_get_no_image() {
    let data: Vec<u32> = (0..MAX_POINTS as u32 / 2 + 1).collect();
    let option =
        json!({"xAxis": {}, "yAxis": {}, "series": [{"type": "line", "data": data}, {"type": "line", "data": data}]});
    let err = svg(&option, None).unwrap_err();
    assert!(err.0.contains(&format!("more than {MAX_POINTS} data points")), "{err:?}");
    let at_the_bound: Vec<u32> = (0..MAX_POINTS as u32 / 2).collect();
    let option = json!({"xAxis": {}, "yAxis": {}, "series": [{"type": "line", "data": at_the_bound}, {"type": "line", "data": at_the_bound}]});
    assert!(svg(&option, None).is_ok());
}

/// A line over categories a, b, c at `values`, with `mark_area` as its `markArea`.
fn with_areas(values: [f64; 3], mark_area: serde_json::Value) -> Drawing {
    let option = json!({"xAxis": {"type": "category", "data": ["a", "b", "c"]}, "yAxis": {"type": "value"},
        "series": [{"name": "Glucose", "type": "line", "data": values, "markArea": mark_area}]});
    svg(&option, None).unwrap()
}

#[test]
fn an_area_lies_between_the_rows_of_its_values_under_the_marks() {
    let drawing =
        with_areas([3.0, 6.0, 9.0], json!({"data": [[{"yAxis": 3, "name": "Normal <3-6> & \"ok\""}, {"yAxis": "6"}]]}));
    let points = marks(&drawing.svg, "circle", "line-point");
    let areas = marks(&drawing.svg, "rect", "mark-area");
    assert_eq!(areas.len(), 1, "{}", drawing.svg);
    let area = &areas[0];
    assert!(close(area["y"], points[1]["cy"]), "the top at 6: {area:?} {points:?}");
    assert!(close(area["y"] + area["height"], points[0]["cy"]), "the bottom at 3: {area:?} {points:?}");
    assert!(area["x"] < points[0]["cx"] && area["x"] + area["width"] > points[2]["cx"], "across the plot: {area:?}");
    assert!(drawing.svg.contains(r##"class="mark-area" "##) && drawing.svg.contains(r#"fill-opacity="0.12""#));
    assert!(drawing.svg.find("mark-area").unwrap() < drawing.svg.find("class=\"line\"").unwrap(), "under the line");
    assert_eq!(texts(&drawing.svg, "mark-area-label"), ["Normal &lt;3-6&gt; &amp; &quot;ok&quot;"]);
    let label = &marks(&drawing.svg, "text", "mark-area-label")[0];
    assert!(label["x"] > area["x"] && label["y"] > area["y"] && label["y"] < area["y"] + area["height"], "inside");
    assert_eq!(drawing.drawn, "a line chart of 1 series on a category axis, with 1 shaded area (markArea)");
    assert!(drawing.ignored.is_empty(), "{:?}", drawing.ignored);
    let png = png(&drawing.svg).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn an_area_partly_outside_is_clipped_and_one_wholly_outside_is_left_out() {
    // The axis runs 0 to 10; the areas do not widen it, as in ECharts.
    let drawing = with_areas(
        [3.0, 6.0, 10.0],
        json!({"data": [[{"yAxis": 6, "name": "High"}, {"yAxis": 50}], [{"yAxis": 20, "name": "Very high"}, {"yAxis": 30}]]}),
    );
    let points = marks(&drawing.svg, "circle", "line-point");
    let areas = marks(&drawing.svg, "rect", "mark-area");
    assert_eq!(areas.len(), 1, "{}", drawing.svg);
    assert!(close(areas[0]["y"], points[2]["cy"]), "cut at the axis's top, 10: {areas:?} {points:?}");
    assert!(close(areas[0]["y"] + areas[0]["height"], points[1]["cy"]), "{areas:?} {points:?}");
    assert_eq!(texts(&drawing.svg, "mark-area-label"), ["High"], "no label for the area left out");
    assert_eq!(texts(&drawing.svg, "value-label").last().map(String::as_str), Some("10"), "the axis is not widened");
    assert_eq!(
        drawing.ignored,
        [
            "series[0].markArea.data[1] ('Very high'): wholly outside the value axis's range (0 to 10); ECharts hides it too"
        ]
    );
    assert!(drawing.drawn.ends_with("with 1 shaded area (markArea)"), "{}", drawing.drawn);
}

#[test]
fn an_open_end_reaches_the_edge_and_min_max_are_the_series_values() {
    let drawing = with_areas([3.0, 6.0, 10.0], json!({"data": [[{"yAxis": 6}, {}], [{"yAxis": null}, {"yAxis": 3}]]}));
    let points = marks(&drawing.svg, "circle", "line-point");
    let areas = marks(&drawing.svg, "rect", "mark-area");
    assert_eq!(areas.len(), 2, "{}", drawing.svg);
    assert!(close(areas[0]["y"], points[2]["cy"]), "up to the top: {areas:?}");
    let bottom = areas[1]["y"] + areas[1]["height"];
    assert!(bottom > points[0]["cy"] + 50.0, "down to the axis's 0: {areas:?}");
    assert!(close(areas[1]["y"], points[0]["cy"]), "{areas:?}");

    // As ECharts reads them, 'min', 'max' and 'average' are the series' own values.
    let drawing = with_areas(
        [3.0, 6.0, 9.0],
        json!({"data": [[{"yAxis": "min"}, {"yAxis": "max"}], [{"yAxis": "average"}, {"yAxis": 9}]]}),
    );
    let points = marks(&drawing.svg, "circle", "line-point");
    let areas = marks(&drawing.svg, "rect", "mark-area");
    assert!(close(areas[0]["y"], points[2]["cy"]) && close(areas[0]["y"] + areas[0]["height"], points[0]["cy"]));
    assert!(close(areas[1]["y"] + areas[1]["height"], points[1]["cy"]), "the average, 6: {areas:?}");
}

#[test]
fn an_area_on_the_base_axis_spans_its_categories_or_times() {
    let drawing = with_areas(
        [3.0, 6.0, 10.0],
        json!({"data": [[{"xAxis": "b", "name": "Tue"}, {"xAxis": "c"}], [{"coord": ["a", 3]}, {"coord": [1, 6]}]]}),
    );
    let points = marks(&drawing.svg, "circle", "line-point");
    let areas = marks(&drawing.svg, "rect", "mark-area");
    assert_eq!(areas.len(), 2, "{}", drawing.svg);
    let (strip, rect) = (&areas[0], &areas[1]);
    assert!(close(strip["x"], points[1]["cx"]) && close(strip["x"] + strip["width"], points[2]["cx"]), "{strip:?}");
    assert!(close(strip["y"], points[2]["cy"]) && strip["height"] > 300.0, "the plot's height: {strip:?}");
    assert!(close(rect["x"], points[0]["cx"]) && close(rect["x"] + rect["width"], points[1]["cx"]), "{rect:?}");
    assert!(close(rect["y"], points[1]["cy"]) && close(rect["y"] + rect["height"], points[0]["cy"]), "{rect:?}");

    let option = json!({"xAxis": {"type": "time"}, "yAxis": {},
        "series": [{"name": "Weight", "type": "line", "data": [["2026-03-01", 70], ["2026-03-03", 71], ["2026-03-11", 70.5]],
                    "markArea": {"data": [[{"xAxis": "2026-03-01"}, {"xAxis": "2026-03-03T00:00:00Z"}], [{"xAxis": "2026-04-01"}, {}]]}}]});
    let drawing = svg(&option, None).unwrap();
    let points = marks(&drawing.svg, "circle", "line-point");
    let areas = marks(&drawing.svg, "rect", "mark-area");
    assert_eq!(areas.len(), 1, "{}", drawing.svg);
    assert!(close(areas[0]["x"], points[0]["cx"]) && close(areas[0]["x"] + areas[0]["width"], points[1]["cx"]));
    assert_eq!(
        drawing.ignored,
        ["series[0].markArea.data[1]: wholly outside the base axis's range; ECharts hides it too"]
    );
}

#[test]
fn a_horizontal_chart_shades_across_from_its_value_axis() {
    let option = json!({"yAxis": {"type": "category", "data": ["Glucose", "LDL", "HDL"]}, "xAxis": {"type": "value"},
        "series": [{"name": "Value", "type": "bar", "data": [100, 50, 25],
                    "markArea": {"data": [[{"xAxis": 25}, {"xAxis": 50, "name": "Typical"}], [{"yAxis": 25}, {"yAxis": 50}]]}}]});
    let drawing = svg(&option, None).unwrap();
    let bars = marks(&drawing.svg, "rect", "bar");
    let areas = marks(&drawing.svg, "rect", "mark-area");
    assert_eq!(areas.len(), 1, "{}", drawing.svg);
    let area = &areas[0];
    assert!(close(area["x"], bars[2]["x"] + bars[2]["width"]), "from 25: {area:?} {bars:?}");
    assert!(close(area["x"] + area["width"], bars[1]["x"] + bars[1]["width"]), "to 50: {area:?} {bars:?}");
    assert!(area["y"] < bars[2]["y"] && area["y"] + area["height"] > bars[0]["y"] + bars[0]["height"], "{area:?}");
    assert!(area["height"] > area["width"], "upright");
    assert_eq!(texts(&drawing.svg, "mark-area-label"), ["Typical"], "the second end's name when the first has none");
    // In a horizontal chart `yAxis` names categories: 25 is none of them.
    assert_eq!(drawing.ignored, ["series[0].markArea.data[1]: '25' is not a category on the axis"]);
}

#[test]
fn an_area_on_a_second_value_axis_follows_its_scale() {
    let option = json!({"xAxis": {"type": "category", "data": ["Mon", "Tue", "Wed"]},
        "yAxis": [{"type": "value"}, {"type": "value"}],
        "series": [{"name": "Steps", "type": "bar", "data": [5000, 8000, 6500]},
                   {"name": "Weight", "type": "line", "yAxisIndex": 1, "data": [70.2, 70.8, 71.5],
                    "markArea": {"data": [[{"yAxis": 70.2}, {"yAxis": 71.5}]]}}]});
    let drawing = svg(&option, None).unwrap();
    let points = marks(&drawing.svg, "circle", "line-point");
    let area = &marks(&drawing.svg, "rect", "mark-area")[0];
    assert!(close(area["y"], points[2]["cy"]) && close(area["y"] + area["height"], points[0]["cy"]), "{area:?}");
    assert!(
        drawing.svg.contains(r##"class="mark-area" x="70.0" y="##)
            && drawing.svg.contains(r##"fill="#91cc75" fill-opacity"##)
    );
}

#[test]
fn areas_past_the_bound_are_named() {
    let pairs: Vec<serde_json::Value> = (0..model::MAX_AREAS + 5)
        .map(|k| json!([{"yAxis": k as f64 * 0.1}, {"yAxis": k as f64 * 0.1 + 0.05}]))
        .collect();
    let drawing = with_areas([0.0, 1.0, 3.0], json!({"data": pairs}));
    assert_eq!(marks(&drawing.svg, "rect", "mark-area").len(), model::MAX_AREAS);
    assert_eq!(
        drawing.ignored,
        [format!(
            "series[0].markArea: the 5 areas after the first {0} (the image shades at most {0} per series)",
            model::MAX_AREAS
        )]
    );
}

#[test]
fn a_malformed_mark_area_draws_nothing_and_says_why() {
    for (mark_area, why) in [
        (json!(5), "series[0].markArea: not an object whose 'data' is an array of [from, to] pairs"),
        (
            json!({"data": {"yAxis": 3}}),
            "series[0].markArea: not an object whose 'data' is an array of [from, to] pairs",
        ),
        (json!({"data": [[1, 2]]}), "series[0].markArea.data[0]: not a pair of objects [from, to]"),
        (json!({"data": [{"yAxis": 3}]}), "series[0].markArea.data[0]: not a pair of objects [from, to]"),
        (json!({"data": [[{"yAxis": 3}]]}), "series[0].markArea.data[0]: not a pair of objects [from, to]"),
        (
            json!({"data": [[{"yAxis": "NaN", "name": "N"}, {"yAxis": 5}]]}),
            "series[0].markArea.data[0] ('N'): 'NaN' is not a number",
        ),
        (json!({"data": [[{"yAxis": 2}, {"yAxis": "inf"}]]}), "series[0].markArea.data[0]: 'inf' is not a number"),
        (json!({"data": [[{"xAxis": "z"}, {}]]}), "series[0].markArea.data[0]: 'z' is not a category on the axis"),
        (
            json!({"data": [[{}, {"name": "all"}]]}),
            "series[0].markArea.data[0] ('all'): it gives no place on either axis (xAxis, yAxis or coord)",
        ),
        (
            json!({"data": [[{"x": 10, "y": 10}, {"x": "90%", "y": "10%"}]]}),
            "series[0].markArea.data[0]: a place in pixels (x, y) is not drawn, only one in data (xAxis, yAxis, coord)",
        ),
        (
            json!({"data": [[{"type": "min"}, {"type": "max"}]]}),
            "series[0].markArea.data[0]: an end at a data point ('type') is not drawn, only one in data (xAxis, yAxis, coord)",
        ),
        (json!({"data": [[{"coord": 5}, {"yAxis": 4}]]}), "series[0].markArea.data[0]: 'coord' is not an array [x, y]"),
    ] {
        let drawing = with_areas([3.0, 6.0, 9.0], mark_area.clone());
        assert!(marks(&drawing.svg, "rect", "mark-area").is_empty(), "{mark_area}: {}", drawing.svg);
        assert_eq!(drawing.ignored, [why], "{mark_area}");
        assert!(!drawing.drawn.contains("shaded"), "{}", drawing.drawn);
        assert_eq!(&png(&drawing.svg).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    }
    // No areas at all: nothing to say.
    for mark_area in [json!(null), json!({}), json!({"data": []}), json!({"itemStyle": {"opacity": 0.5}})] {
        let drawing = with_areas([3.0, 6.0, 9.0], mark_area);
        assert!(drawing.ignored.is_empty() && !drawing.svg.contains("mark-area"), "{:?}", drawing.ignored);
    }
}
