//! Benches live in `benches/`; this crate has no library code.
