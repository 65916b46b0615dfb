use mirobody_core::tool;

/// Echo back the provided text.
///
/// Args:
///     text: The text to echo back.
///     txt: A typo of a parameter name.
#[tool]
fn echo(text: String) -> String {
    text
}

fn main() {}
