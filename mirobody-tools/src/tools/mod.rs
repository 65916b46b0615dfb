//! One module per built-in tool.

pub mod echo;
