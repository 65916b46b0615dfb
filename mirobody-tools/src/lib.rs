//! The built-in tools of mirobody.
//!
//! Each tool is one file under `src/tools/`: its declaration, its handler and its tests together,
//! registered with one [`register_tool!`](mirobody_core::register_tool) line. Linking this crate
//! is enough for [`Registry::from_registered`](mirobody_core::Registry::from_registered) to find
//! them; [`builtin_registry`] also names the crate so the linker keeps it.
//!
//! To add a tool, copy [`tools::echo`] (`src/tools/echo.rs`): it is written to be copied.

pub mod tools;

use mirobody_core::{Registry, RegistryError};

/// A registry of every self-registered tool in the program, which includes the built-ins.
///
/// ```
/// let registry = mirobody_tools::builtin_registry().unwrap();
/// assert!(registry.get("echo").is_some());
/// ```
pub fn builtin_registry() -> Result<Registry, RegistryError> {
    Registry::from_registered()
}
