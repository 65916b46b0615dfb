use mirobody_core::{tool, UserInfo};

/// Who is calling.
///
/// Args:
///     user: The caller; the server fills it, so it is not the model's to describe.
#[tool]
fn whoami(user: &UserInfo) -> String {
    user.user_id().unwrap_or_default().to_owned()
}

fn main() {}
