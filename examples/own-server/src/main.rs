//! An operator's own server: everything `mirobody-server` does (serve, stdio, tools, the
//! operator's commands, the sandboxed document reader), plus a tool of this deployment's own
//! (`clinic_hours`) and its own `echo`, which replaces the built-in one. Built-ins can also be
//! switched off without code: `MIROBODY_TOOLS__DISABLED=render_chart`.
//!
//! ```sh
//! cargo run -p example-own-server -- tools list
//! cargo run -p example-own-server -- tools call echo '{"text":"hi"}'
//! cargo run -p example-own-server                 # serve, as mirobody-server does
//! ```

use std::process::ExitCode;

use mirobody_core::{Args, Param, Tool, ToolContext, ToolResult, Type, UserInfo};

fn main() -> ExitCode {
    mirobody_server::Application::new().tool(clinic_hours()).tool(echo()).run()
}

/// A tool only this deployment has.
fn clinic_hours() -> Tool {
    Tool::new("clinic_hours", "When the clinic is open, by weekday.")
        .read_only()
        .sync_handler(|_: Args, _: &UserInfo, _: &ToolContext<'_>| ToolResult::text("Monday to Friday, 8:00 to 18:00."))
}

/// This deployment's `echo`: the same name as the built-in, so it replaces it.
fn echo() -> Tool {
    Tool::new("echo", "Echo text back, in capitals.")
        .param(Param::required("text", Type::String, "What to echo."))
        .read_only()
        .sync_handler(|args: Args, _: &UserInfo, _: &ToolContext<'_>| args.str_or("text", "").to_uppercase())
}
