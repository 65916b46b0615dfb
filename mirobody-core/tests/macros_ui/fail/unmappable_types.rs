#![allow(unused)]

use mirobody_core::tool;

/// Every one of these parameters is reported at once.
#[tool]
fn unmappable(
    boxed: Box<str>,
    pair: (i64, i64),
    grid: Vec<Vec<i64>>,
    maybe_maybe: Option<Option<i64>>,
    fixed: [u8; 4],
    items: Vec<Option<String>>,
    text: &mut String,
) {
}

fn main() {}
