//! `render_chart`: shows the user a chart from an Apache ECharts option.
//!
//! The option is validated (a series of a known type, the axes a cartesian chart needs, data
//! that is an array, a bounded size and series count) and returned as structured content, for
//! clients with a chart widget to draw exactly. Beside it comes a PNG image of the chart (line,
//! bar, scatter and pie; stacks, a second value axis, time axes, horizontal bars, `dataset`,
//! `markArea` bands such as a reference range), drawn on the server: every MCP client that shows images shows it, and so does the model,
//! which can check the chart it made. The result says what the image shows and what it leaves
//! out, with why, so the model never takes a partial drawing for the whole. A `ui://` widget would be interactive but shown
//! only by hosts that run MCP Apps, and would load ECharts from the network; an image works
//! everywhere, so it is the fallback that serves most users.
//!
//! Drawing is CPU work (about 0.3 s at 20,000 points): it runs on the bounded blocking pool
//! ([`crate::cpu`]), never on the async workers, so other callers are answered meanwhile and a
//! long drawing becomes a task for clients that negotiated tasks.

use std::time::Duration;

use base64::Engine;
use mirobody_core::{Content, ToolError, ToolResult, UserInfo, tool};
use serde_json::{Value, json};

use crate::chart;

/// The largest option accepted, serialized.
pub(crate) const MAX_OPTION_BYTES: usize = 256 * 1024;
/// The most series in one option.
pub(crate) const MAX_SERIES: usize = 64;
/// The most rows in a dataset's `source`.
pub(crate) const MAX_DATASET_ROWS: usize = chart::MAX_POINTS;
/// The most characters in a title.
pub(crate) const MAX_TITLE_CHARS: usize = 200;
/// How long one drawing may take before the call answers that it took too long.
pub(crate) const TIME_LIMIT: Duration = Duration::from_secs(30);

/// Every ECharts series type.
const SERIES_TYPES: [&str; 22] = [
    "line",
    "bar",
    "pie",
    "scatter",
    "effectScatter",
    "radar",
    "tree",
    "treemap",
    "sunburst",
    "boxplot",
    "candlestick",
    "heatmap",
    "map",
    "parallel",
    "lines",
    "graph",
    "sankey",
    "funnel",
    "gauge",
    "pictorialBar",
    "themeRiver",
    "custom",
];
/// Series types drawn on x and y axes by default.
const CARTESIAN: [&str; 7] = ["line", "bar", "scatter", "effectScatter", "candlestick", "boxplot", "pictorialBar"];

const EXAMPLE: &str = r#"{"xAxis":{"type":"category","data":["Mon","Tue"]},"yAxis":{"type":"value"},"series":[{"name":"Steps","type":"bar","data":[5200,8100]}]}"#;

fn invalid(problem: &str) -> ToolError {
    ToolError::new(format!("render_chart needs a valid Apache ECharts option: {problem}. For example: {EXAMPLE}"))
}

/// Checks what ECharts needs to draw the option at all.
fn validate(option: &Value) -> Result<(), ToolError> {
    let size = serde_json::to_vec(option).map(|v| v.len()).unwrap_or(usize::MAX);
    if size > MAX_OPTION_BYTES {
        return Err(invalid(&format!(
            "the option is {size} bytes, over the {MAX_OPTION_BYTES}-byte limit; aggregate the data first"
        )));
    }
    let series: Vec<&Value> = match &option["series"] {
        Value::Array(items) if !items.is_empty() => items.iter().collect(),
        one @ Value::Object(_) => vec![one],
        Value::Null => return Err(invalid("'series' is missing")),
        _ => return Err(invalid("'series' must be a non-empty array of series objects")),
    };
    if series.len() > MAX_SERIES {
        return Err(invalid(&format!(
            "{} series is over the limit of {MAX_SERIES}; show fewer, or aggregate them",
            series.len()
        )));
    }
    let datasets: Vec<&Value> = match &option["dataset"] {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    };
    for (i, dataset) in datasets.iter().enumerate() {
        match &dataset["source"] {
            Value::Array(rows) if rows.len() > MAX_DATASET_ROWS => {
                return Err(invalid(&format!(
                    "dataset {i} has {} rows, over the limit of {MAX_DATASET_ROWS}; aggregate the data first",
                    rows.len()
                )));
            }
            Value::Array(_) | Value::Null => {}
            _ => return Err(invalid(&format!("dataset {i}'s 'source' must be an array of rows"))),
        }
    }
    let has_dataset = !datasets.is_empty();
    for (i, s) in series.iter().enumerate() {
        let Some(kind) = s["type"].as_str() else {
            return Err(invalid(&format!("series[{i}] needs a 'type' such as \"line\", \"bar\" or \"pie\"")));
        };
        if !SERIES_TYPES.contains(&kind) {
            return Err(invalid(&format!("series[{i}] has unknown type '{kind}'")));
        }
        match s.get("data") {
            Some(Value::Array(_)) => {}
            Some(_) => return Err(invalid(&format!("series[{i}].data must be an array"))),
            None if !has_dataset && !matches!(kind, "map" | "custom") => {
                return Err(invalid(&format!("series[{i}] has no 'data' (and the option has no 'dataset')")));
            }
            None => {}
        }
        let coordinates = s["coordinateSystem"].as_str().unwrap_or("cartesian2d");
        if CARTESIAN.contains(&kind) && coordinates == "cartesian2d" {
            for axis in ["xAxis", "yAxis"] {
                if !matches!(option.get(axis), Some(Value::Object(_) | Value::Array(_))) {
                    return Err(invalid(&format!("a {kind} chart needs '{axis}' (an object)")));
                }
            }
        }
    }
    Ok(())
}

/// Show the user a chart in the chat, from a complete Apache ECharts option. Rules: no color keys
/// (the app sets colors); name every series, and add a legend when there are two or more; add a
/// second value axis only for a series in other units. Line, bar (stacked or horizontal too),
/// scatter and pie charts, on category, value or time axes, from data or a dataset, with their
/// markArea bands (a reference range, say), are also returned as an image; the result says what
/// the image leaves out.
///
/// Args:
///     option: A complete Apache ECharts option: series (each with a type, and data or a dataset), plus
///         xAxis and yAxis for line, bar and scatter charts.
///     title: A title shown above the chart.
// Drawing a large chart may take a while: a task then. Hosts that render MCP Apps views show it
// live; the result stays what every client reads. Anonymous callers may draw, on the pool's
// anonymous share.
#[tool(
    annotations(read_only, idempotent),
    task_support = "optional",
    time_limit = TIME_LIMIT,
    view = crate::views::CHART_VIEW
)]
async fn render_chart(user: Option<&UserInfo>, option: Value, title: Option<&str>) -> Result<ToolResult, ToolError> {
    let anonymous = UserInfo::anonymous();
    let user = user.unwrap_or(&anonymous);
    validate(&option)?;
    let title = title.map(str::trim).filter(|t| !t.is_empty());
    if title.is_some_and(|t| t.chars().count() > MAX_TITLE_CHARS) {
        return Err(ToolError::new(format!("'title' is too long: at most {MAX_TITLE_CHARS} characters.")));
    }
    // The option goes to the drawing thread and comes back with the image.
    let owned_title = title.map(str::to_owned);
    let (option, image) = crate::cpu::run(user, move || {
        let image = chart::svg(&option, owned_title.as_deref()).and_then(|d| chart::png(&d.svg).map(|png| (d, png)));
        (option, image)
    })
    .await?;
    let mut out = json!({"status": "ok", "message": "Chart rendered to the user.", "option": option});
    if let Some(title) = title {
        out["title"] = json!(title);
    }
    match image {
        Ok((drawing, png)) => {
            // What the picture shows, and what it leaves out: the widget draws the whole option,
            // the image (what most clients and the model see) only this.
            let mut message = format!("Chart rendered to the user. The image shows {}.", drawing.drawn);
            if !drawing.ignored.is_empty() {
                message.push_str(&format!(" It leaves out: {}.", drawing.ignored.join("; ")));
            }
            out["message"] = json!(message);
            out["image"] = json!("image/png");
            out["drawn"] = json!(drawing.drawn);
            out["ignored"] = json!(drawing.ignored);
            let data = base64::engine::general_purpose::STANDARD.encode(png);
            Ok(ToolResult::ok(out).with(Content::image(data, "image/png")))
        }
        Err(chart::NoPreview(why)) => {
            out["image"] = Value::Null;
            out["note"] = json!(format!("No image of this chart: {why}. Clients with a chart widget still show it."));
            Ok(ToolResult::ok(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_problem() {
        for (option, problem) in [
            (json!({}), "'series' is missing"),
            (json!({"series": []}), "non-empty array"),
            (json!({"series": [{"data": [1]}]}), "needs a 'type'"),
            (json!({"series": [{"type": "bars", "data": [1]}]}), "unknown type 'bars'"),
            (json!({"series": [{"type": "pie", "data": 5}]}), "must be an array"),
            (json!({"series": [{"type": "pie"}]}), "has no 'data'"),
            (json!({"series": [{"type": "line", "data": [1]}]}), "needs 'xAxis'"),
            (json!({"xAxis": {}, "series": [{"type": "bar", "data": [1]}]}), "needs 'yAxis'"),
            (json!({"series": [{"type": "pie", "data": ["x".repeat(MAX_OPTION_BYTES)]}]}), "byte limit"),
        ] {
            let err = validate(&option).unwrap_err().to_string();
            assert!(err.contains(problem), "{err} lacks {problem}");
            assert!(err.contains("For example"), "{err}");
        }
        assert!(
            validate(&json!({"dataset": {"source": [[1, 2]]}, "xAxis": {}, "yAxis": {}, "series": [{"type": "line"}]}))
                .is_ok()
        );
        assert!(validate(&json!({"polar": {}, "angleAxis": {}, "radiusAxis": {}, "series": [{"type": "bar", "coordinateSystem": "polar", "data": [1]}]})).is_ok());
    }

    // An option of `points` values on one line.
    fn large(points: usize) -> Value {
        let data: Vec<f64> = (0..points).map(|i| ((i as f64) / 50.0).sin() * 40.0 + 60.0).collect();
        json!({"xAxis": {"type": "category"}, "yAxis": {"type": "value"}, "series": [{"name": "HR", "type": "line", "data": data}]})
    }

    #[test]
    fn a_drawing_leaves_the_async_thread_free() {
        // One thread for every async task: were the drawing on it, the timer could fire only
        // once the drawing was over.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let registry = mirobody_core::Registry::builder().tool(render_chart_tool()).build().unwrap();
            let drawn = std::sync::atomic::AtomicBool::new(false);
            let user = UserInfo::anonymous();
            let ctx = mirobody_core::ToolContext::new();
            let render = async {
                let result = registry.call("render_chart", json!({"option": large(5_000)}), &user, &ctx).await;
                drawn.store(true, std::sync::atomic::Ordering::SeqCst);
                result
            };
            let timer = async {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                drawn.load(std::sync::atomic::Ordering::SeqCst)
            };
            let (result, drawn_when_the_timer_fired) = tokio::join!(render, timer);
            assert!(!drawn_when_the_timer_fired, "the timer waited for the drawing: it ran on the async thread");
            let result = result.unwrap();
            assert!(!result.is_error(), "{result:?}");
            assert!(result.content().iter().any(|c| matches!(c, Content::Image { .. })), "the image is there");
        });
    }

    #[test]
    fn series_and_dataset_rows_are_bounded() {
        let series = |n: usize| {
            let one = json!({"type": "pie", "data": [1]});
            json!({"series": vec![one; n]})
        };
        assert!(validate(&series(MAX_SERIES)).is_ok());
        let err = validate(&series(MAX_SERIES + 1)).unwrap_err().to_string();
        assert!(err.contains(&format!("over the limit of {MAX_SERIES}")), "{err}");
        let rows = |n: usize| json!({"dataset": {"source": vec![json!([1, 2]); n]}, "xAxis": {}, "yAxis": {}, "series": [{"type": "line"}]});
        assert!(validate(&rows(MAX_DATASET_ROWS)).is_ok());
        let err = validate(&rows(MAX_DATASET_ROWS + 1)).unwrap_err().to_string();
        assert!(err.contains(&format!("over the limit of {MAX_DATASET_ROWS}")), "{err}");
        let err = validate(&json!({"dataset": {"source": 5}, "series": [{"type": "pie"}]})).unwrap_err().to_string();
        assert!(err.contains("array of rows"), "{err}");
    }

    #[tokio::test]
    async fn the_result_says_what_the_image_shows_and_leaves_out() {
        let registry = mirobody_core::Registry::builder().tool(render_chart_tool()).build().unwrap();
        let option = json!({"xAxis": {"type": "time"}, "yAxis": [{}, {}],
            "series": [{"name": "Weight", "type": "line", "data": [["2026-03-01", 70], ["2026-03-02", 71]]},
                       {"name": "Steps", "type": "bar", "yAxisIndex": 1, "data": [["2026-03-01", 5000], ["2026-03-02", 8000]]},
                       {"name": "Mood", "type": "radar", "data": [{"value": [1, 2]}]}]});
        let user = UserInfo::anonymous();
        let ctx = mirobody_core::ToolContext::new();
        let result = registry.call("render_chart", json!({"option": option}), &user, &ctx).await.unwrap();
        let out = result.structured_content().expect("structured content");
        assert_eq!(out["drawn"], "a line/bar chart of 2 series on a time axis, with a second value axis");
        assert_eq!(out["ignored"][0], "series[2] ('radar'): the image draws line, bar, scatter and pie series");
        let message = out["message"].as_str().unwrap();
        assert!(
            message.contains("The image shows a line/bar chart") && message.contains("It leaves out: series[2]"),
            "{message}"
        );
        assert!(result.content().iter().any(|c| matches!(c, Content::Image { .. })));
    }

    #[test]
    fn it_declares_a_time_limit() {
        assert_eq!(render_chart_tool().declared_time_limit(), Some(TIME_LIMIT));
    }
}
