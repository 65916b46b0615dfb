//! The fixtures of the tasks extension (`tasks-*` scenarios, `--suite all`): a tool that is
//! never a task, tools that become tasks when they run long or say so, tools that ask the
//! client inside a task or before becoming one, and the two ways a task fails.

use std::time::Duration;

use mirobody_core::{Args, Param, TaskSupport, Tool, ToolContext, ToolResult, Type, UserInfo};
use serde_json::json;

use crate::{content_field, form};

// The longest `slow_compute` sleeps, so a client cannot park the fixture for hours.
const MAX_SECONDS: u64 = 300;

async fn slow_compute(args: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
    let seconds = args.integer("seconds", 1).clamp(0, MAX_SECONDS as i64) as u64;
    let label = args.str_or("label", "job");
    if seconds > 0 {
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    }
    ToolResult::text(format!("Computed {label} in {seconds}s"))
}

async fn failing_job(_: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
    tokio::time::sleep(Duration::from_millis(500)).await;
    ToolResult::error("The job failed: the input could not be processed")
}

async fn protocol_error_job(_: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A handler that panics ends its task as failed, with an internal error.
    panic!("protocol_error_job always fails inside the server");
}

async fn confirm_delete(args: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let filename = args.str_or("filename", "file").to_owned();
    // A task from the start: the question reaches the client through it.
    ctx.become_task();
    let question = form(&format!("Delete {filename}?"), "confirm", "boolean");
    match ctx.request_keyed("confirm_delete", "elicitation/create", question).await {
        Ok(answer) if answer["action"] == "accept" && content_field(&answer, "confirm") == &json!(true) => {
            ToolResult::text(format!("Deleted {filename}"))
        }
        Ok(_) => ToolResult::text(format!("Kept {filename}")),
        Err(e) => ToolResult::error(format!("Confirmation failed: {e}")),
    }
}

async fn multi_input(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    ctx.become_task();
    let (name, confirm) = tokio::join!(
        ctx.request_keyed("name", "elicitation/create", form("What is your name?", "name", "string")),
        ctx.request_keyed("confirm", "elicitation/create", form("Go ahead?", "confirm", "boolean")),
    );
    match (name, confirm) {
        (Ok(name), Ok(confirm)) => ToolResult::text(format!(
            "name={} confirm={}",
            content_field(&name, "name").as_str().unwrap_or("?"),
            content_field(&confirm, "confirm")
        )),
        (Err(e), _) | (_, Err(e)) => ToolResult::error(format!("An input failed: {e}")),
    }
}

// Asks before it is a task (a 2026-07-28 `input_required` round), then goes on as one.
async fn tool_with_task(_: Args, _: &UserInfo, ctx: &ToolContext<'_>) -> ToolResult {
    let answer = match ctx
        .request_keyed("user_name", "elicitation/create", form("What is your name?", "name", "string"))
        .await
    {
        Ok(answer) => answer,
        Err(e) => return ToolResult::error(format!("Elicitation failed: {e}")),
    };
    ctx.become_task();
    tokio::time::sleep(Duration::from_millis(300)).await;
    ToolResult::text(format!("Hello, {}! Your task is done.", content_field(&answer, "name").as_str().unwrap_or("?")))
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        Tool::new("greet", "Greets someone by name; never a task.")
            .param(Param::required("name", Type::String, "Who to greet."))
            .read_only()
            .sync_handler(|args, _, _| ToolResult::text(format!("Hello, {}!", args.str_or("name", "you")))),
        Tool::new("slow_compute", "Sleeps for the seconds given, then answers; a task when it runs long.")
            .param(Param::optional("seconds", Type::Integer, "How long to work, 0 to 300.").default(json!(1)))
            .param(Param::optional("label", Type::String, "A name for the job."))
            .task_support(TaskSupport::Optional)
            .handler(slow_compute),
        Tool::new("failing_job", "Always ends with a tool error; only ever a task.")
            .task_support(TaskSupport::Required)
            .handler(failing_job),
        Tool::new("protocol_error_job", "Always fails inside the server; a task when it runs long.")
            .task_support(TaskSupport::Optional)
            .handler(protocol_error_job),
        Tool::new("confirm_delete", "Asks the user to confirm a deletion, as a task.")
            .param(Param::required("filename", Type::String, "The file to delete."))
            .task_support(TaskSupport::Optional)
            .handler(confirm_delete),
        Tool::new("multi_input", "Asks two questions at once, as a task.")
            .task_support(TaskSupport::Optional)
            .handler(multi_input),
        Tool::new("test_tool_with_task", "Asks the user's name, then finishes as a task.")
            .task_support(TaskSupport::Required)
            .handler(tool_with_task),
    ]
}
