//! Run with `cargo run -p example-embed-registry`.
//!
//! An application with its own agent loop embeds the registry: it registers its own tool,
//! hands the OpenAI function list to its model, and calls the tool the model picks, in-process.
//! The model is played here by a fixed tool call, so the example runs offline.

use mirobody_core::{Args, Format, Param, Registry, Tool, ToolContext, ToolResult, Type, UserInfo, register_tool};
use serde_json::json;

/// The application's own tool: body-mass index from weight and height.
fn bmi_tool() -> Tool {
    Tool::new(
        "body_mass_index",
        "Compute the body-mass index from weight and height. Call it when the user gives both.",
    )
    .param(Param::required("weight_kg", Type::Number, "Body weight in kilograms, e.g. 70.5"))
    .param(Param::required("height_cm", Type::Number, "Height in centimetres, e.g. 175"))
    .read_only()
    .handler(bmi)
}

async fn bmi(args: Args, _user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
    let weight = args.number("weight_kg", 0.0);
    let height_m = args.number("height_cm", 0.0) / 100.0;
    if weight <= 0.0 || height_m <= 0.0 {
        return ToolResult::error("weight_kg and height_cm must both be positive numbers.");
    }
    let bmi = weight / (height_m * height_m);
    ToolResult::ok(json!({"bmi": (bmi * 10.0).round() / 10.0}))
}

register_tool!(bmi_tool);

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::from_registered().expect("the tools register");

    // 1. What the model is told.
    let functions = registry.functions(Format::OpenAi);
    println!("functions: {}", serde_json::to_string(functions).expect("json"));

    // 2. What the model answers: a call by name with JSON arguments.
    let (name, arguments) = ("body_mass_index", json!({"weight_kg": 70, "height_cm": 175}));

    // 3. The call, as the user the application signed in.
    let user = UserInfo::authenticated("user-1");
    let result = registry.run(name, arguments, &user, &ToolContext::new()).await;
    println!("result: {}", result.first_text().unwrap_or_default());

    // 4. A bad call comes back as an error the model can read and fix.
    let bad = registry.run(name, json!({"weight_kg": "heavy"}), &user, &ToolContext::new()).await;
    println!("error: {}", bad.first_text().unwrap_or_default());
}
