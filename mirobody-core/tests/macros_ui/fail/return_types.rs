use mirobody_core::tool;

struct NotSerialize;

struct NotDisplay;

/// A return value that cannot be serialized.
#[tool]
fn unserializable() -> NotSerialize {
    NotSerialize
}

/// An error that cannot be displayed.
#[tool]
fn undisplayable() -> Result<String, NotDisplay> {
    Err(NotDisplay)
}

fn main() {}
