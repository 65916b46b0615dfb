use mirobody_core::tool;

/// Google style: the first line of the section must name a parameter.
///
/// Args:
///     The text to echo.
#[tool]
fn first(text: String) -> String {
    text
}

/// A dedented line after the parameters would bleed into `text`.
///
/// Args:
///     text: The text to echo.
/// This sentence is not part of any parameter.
#[tool]
fn second(text: String) -> String {
    text
}

/// Rustdoc style.
///
/// # Arguments
///
/// Intro prose instead of a list.
#[tool]
fn third(text: String) -> String {
    text
}

fn main() {}
