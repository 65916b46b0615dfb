use mirobody_core::{tool, ToolContext, UserInfo};

/// Who is calling.
#[tool]
fn whoami(user: UserInfo, ctx: &mut ToolContext<'_>) -> String {
    let _ = ctx;
    user.user_id().unwrap_or_default().to_owned()
}

/// A forgeable identity.
///
/// Args:
///     user_info: Filled by the model, not the server.
#[tool]
fn forged(user_info: String) -> String {
    user_info
}

fn main() {}
