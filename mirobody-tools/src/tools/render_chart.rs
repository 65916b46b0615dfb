//! `render_chart`: shows the user a chart from an Apache ECharts option.
//!
//! The option is validated (a series of a known type, the axes a cartesian chart needs, data
//! that is an array, a bounded size) and returned as structured content, for clients with a
//! chart widget to draw exactly. Beside it comes a PNG image of the chart (line, bar, scatter
//! and pie), drawn on the server: every MCP client that shows images shows it, and so does the
//! model, which can check the chart it made. A `ui://` widget would be interactive but shown
//! only by hosts that run MCP Apps, and would load ECharts from the network; an image works
//! everywhere, so it is the fallback that serves most users.

use base64::Engine;
use mirobody_core::{
    Annotations, Args, Content, Param, TaskSupport, Tool, ToolContext, ToolError, ToolResult, Type, UserInfo,
    register_tool,
};
use serde_json::{Value, json};

use crate::chart;

/// The largest option accepted, serialized.
pub const MAX_OPTION_BYTES: usize = 256 * 1024;
/// The most characters in a title.
pub const MAX_TITLE_CHARS: usize = 200;

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

/// The declaration of `render_chart`.
pub fn tool() -> Tool {
    Tool::new(
        "render_chart",
        "Show the user a chart in the chat, from a complete Apache ECharts option. Rules: no color keys \
         (the app sets colors); name every series, and add a legend when there are two or more; use one \
         value axis. Line, bar, scatter and pie charts are also returned as an image.",
    )
    .param(Param::required(
        "option",
        Type::Object,
        "A complete Apache ECharts option: series (each with a type and data), plus xAxis and yAxis for \
         line, bar and scatter charts.",
    ))
    .param(Param::optional("title", Type::String, "A title shown above the chart."))
    .annotations(Annotations::read_only().idempotent(true))
    // Drawing a large chart, or extracting a long PDF, may take a while: a task then.
    .task_support(TaskSupport::Optional)
    // Hosts that render MCP Apps views show it live; the result stays what every client reads.
    .view(crate::views::CHART_VIEW)
    .handler(render_chart)
}

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
    let has_dataset = option.get("dataset").is_some();
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

async fn render_chart(args: Args, _user: &UserInfo, _ctx: &ToolContext<'_>) -> Result<ToolResult, ToolError> {
    let option = args.get("option").cloned().unwrap_or(Value::Null);
    validate(&option)?;
    let title = args.str("title").map(str::trim).filter(|t| !t.is_empty());
    if title.is_some_and(|t| t.chars().count() > MAX_TITLE_CHARS) {
        return Err(ToolError::new(format!("'title' is too long: at most {MAX_TITLE_CHARS} characters.")));
    }
    let image = chart::svg(&option, title).and_then(|svg| chart::png(&svg));
    let mut out = json!({"status": "ok", "message": "Chart rendered to the user.", "option": option});
    if let Some(title) = title {
        out["title"] = json!(title);
    }
    match image {
        Ok(png) => {
            out["image"] = json!("image/png");
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

register_tool!(tool);

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
}
