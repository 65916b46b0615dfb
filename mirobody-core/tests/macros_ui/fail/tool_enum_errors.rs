use mirobody_core::ToolEnum;

#[derive(ToolEnum)]
struct NotAnEnum;

#[derive(ToolEnum)]
#[tool_enum(rename_all = "Title Case")]
enum BadRule {
    A,
}

#[derive(ToolEnum)]
enum WithData {
    Unit,
    Tuple(i64),
    Struct { x: i64 },
}

#[derive(ToolEnum)]
enum Duplicate {
    #[tool_enum(rename = "same")]
    First,
    #[tool_enum(rename = "same")]
    Second,
}

#[derive(ToolEnum)]
enum Empty {}

fn main() {}
