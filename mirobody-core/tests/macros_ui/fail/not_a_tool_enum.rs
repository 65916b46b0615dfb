use mirobody_core::tool;

pub struct NaiveDate {
    pub days: i32,
}

/// Readings on a date.
///
/// Args:
///     date: The date.
#[tool]
fn readings_on(date: NaiveDate) -> i32 {
    date.days
}

fn main() {}
