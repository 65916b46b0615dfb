use mirobody_core::tool;

/// Unknown and repeated options are all reported.
#[tool(nmae = "x", title = "A", title = "B", annotations(readonly, read_only, destructive), description = "no")]
fn options(#[arg(defualt = 1)] days: i64, #[arg(description = "no")] other: i64) -> i64 {
    days + other
}

/// A bad name.
#[tool(name = "my tool")]
fn renamed() {}

/// `auth = false` says nothing.
#[tool(auth = false, skip)]
fn unauthenticated() {}

/// A task support that is not one.
#[tool(task_support = "sometimes")]
fn sometimes() {}

/// A view that is not a ui:// resource.
#[tool(view = "https://example.com/chart.html")]
fn web_view() {}

fn main() {}
