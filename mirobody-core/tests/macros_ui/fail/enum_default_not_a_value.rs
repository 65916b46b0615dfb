use mirobody_core::{tool, ToolEnum};

#[derive(ToolEnum)]
#[tool_enum(rename_all = "lowercase")]
enum Period {
    Daily,
    Weekly,
}

/// Summarise a period.
///
/// Args:
///     period: Which period.
#[tool]
fn summarise(#[arg(default = "monthly")] period: Period) -> &'static str {
    match period {
        Period::Daily => "day",
        Period::Weekly => "week",
    }
}

fn main() {}
