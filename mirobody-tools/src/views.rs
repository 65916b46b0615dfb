//! The built-in tools' views (MCP Apps): a chart drawn live in hosts that render views, beside
//! the picture or the data every other client gets. Self-contained pages, no script from
//! anywhere else and no network, the same bytes for every caller: their data comes only from
//! the tool input and result the host hands them. `render_chart` shows the ECharts option the
//! model passed; `fetch_health_data` and `family_health` a series per indicator over time, with
//! the values the model saw; `upload_link` an upload box whose file goes to the server through
//! the host (`upload_file`).
//!
//! Each page's script opens with the host messaging they share (`assets/views/bridge.js`),
//! put in where the page marks it, so the pages stay one file each on the wire.

use mirobody_core::{Resource, View};

/// The chart view's URI.
pub const CHART_VIEW: &str = "ui://mirobody/chart.html";

/// The upload view's URI.
pub const UPLOAD_VIEW: &str = "ui://mirobody/upload.html";

const BRIDGE_MARK: &str = "/*@view-bridge*/";
const BRIDGE_JS: &str = include_str!("../assets/views/bridge.js");
const CHART_HTML: &str = include_str!("../assets/views/chart.html");
const UPLOAD_HTML: &str = include_str!("../assets/views/upload.html");

// A page as served: its own markup with the shared messaging in.
fn page(html: &str) -> String {
    html.replacen(BRIDGE_MARK, BRIDGE_JS.trim(), 1)
}

/// The views, as resources to serve beside the tools that link to them.
pub fn resources() -> Vec<Resource> {
    let chart = View::new(CHART_VIEW, "chart", page(CHART_HTML))
        .expect("CHART_VIEW is a ui:// URI")
        .description("An interactive chart of a render_chart option or of the health tools' series.")
        .prefers_border(false);
    let upload = View::new(UPLOAD_VIEW, "upload", page(UPLOAD_HTML))
        .expect("UPLOAD_VIEW is a ui:// URI")
        .description("Upload a health document without leaving the conversation.")
        .prefers_border(true);
    vec![chart.into_resource(), upload.into_resource()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_views_need_nothing_from_the_network_and_carry_no_caller() {
        let resources = resources();
        assert_eq!(resources[0].info().uri, CHART_VIEW);
        assert_eq!(resources[1].info().uri, UPLOAD_VIEW);
        assert_eq!(resources[0].info().mime_type.as_deref(), Some(mirobody_core::VIEW_MIME_TYPE));
        // No CSP domains: the host's default policy (no network) applies.
        assert_eq!(resources[0].info().meta.as_ref().unwrap()["ui"], serde_json::json!({"prefersBorder": false}));
        for html in [CHART_HTML, UPLOAD_HTML] {
            let served = page(html);
            assert!(!served.contains(BRIDGE_MARK) && served.contains("const onHost = {};"), "the messaging is in");
            // The SVG namespace is a name, not a place the page goes.
            let served = served.replace("\"http://www.w3.org/2000/svg\"", "");
            for outside in ["http://", "https://", "//cdn", "src=\"http", "fetch(", "XMLHttpRequest", "WebSocket"] {
                assert!(!served.contains(outside), "the page must not reach out: {outside}");
            }
        }
    }
}
