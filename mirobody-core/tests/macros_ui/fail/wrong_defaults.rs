#![allow(unused)]

use mirobody_core::tool;

/// Defaults that do not fit their parameters.
#[tool]
fn defaults(
    #[arg(default = "30")] days: i64,
    #[arg(default = 1.5)] count: u32,
    #[arg(default = 300)] small: u8,
    #[arg(default = -1)] unsigned: usize,
    #[arg(default = 5)] label: String,
    #[arg(default = [1, "two"])] numbers: Vec<i64>,
    #[arg(default = 3)] maybe: Option<i64>,
    #[arg(one_of = ["a", 2])] kind: String,
) {
}

fn main() {}
