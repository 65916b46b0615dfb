use mirobody_core::tool;

/// Read a user's records.
///
/// Args:
///     user_id: Whose records.
#[tool]
fn records(user_id: String) -> String {
    user_id
}

fn main() {}
