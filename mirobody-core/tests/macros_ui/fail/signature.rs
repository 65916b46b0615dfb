use mirobody_core::tool;

/// Generic.
#[tool]
fn generic<T: Into<String>>(text: T) -> String {
    text.into()
}

/// Destructured.
#[tool]
fn destructured((a, b): (i64, i64)) -> i64 {
    a + b
}

/// Unsafe.
#[tool]
unsafe fn dangerous() {}

struct Thing;

impl Thing {
    /// A method needs #[tool_service] on the impl.
    #[tool]
    fn method(&self) {}
}

/// Not a function.
#[tool]
struct NotAFunction;

fn main() {}
