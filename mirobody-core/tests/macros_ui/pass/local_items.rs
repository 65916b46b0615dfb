//! Tools and enums declared inside a function body.

use mirobody_core::{tool, Registry, ToolEnum};

fn main() {
    #[derive(ToolEnum, Debug)]
    enum Shade {
        Light,
        Dark,
    }

    /// Describe a shade.
    ///
    /// Args:
    ///     shade: The shade.
    #[tool]
    fn describe(shade: Shade) -> String {
        format!("{shade:?}")
    }

    let tool = describe_tool();
    assert_eq!(tool.spec().input_schema()["properties"]["shade"]["enum"], serde_json::json!(["Light", "Dark"]));
    assert!(Registry::from_registered().unwrap().get("describe").is_some());
}
