//! The real binary under attack through the doors people's data comes in by: uploads, imports,
//! the routes beside MCP, the tools that do heavy work, and what instances share. Each test
//! asserts the bound a feature promises (the process alive, its resident memory, a 413 or 429
//! where promised) and that an honest signed-in user is served during the attack.
//!
//! One file per door under `attacks/`; `harness.rs` starts a server and plays the honest user.

mod common;

#[path = "attacks/harness.rs"]
mod harness;

#[path = "attacks/documents.rs"]
mod documents;

#[path = "attacks/permissions.rs"]
mod permissions;

#[path = "attacks/quotas.rs"]
mod quotas;

#[path = "attacks/links.rs"]
mod links;

#[path = "attacks/fair_shares.rs"]
mod fair_shares;

#[path = "attacks/client_addresses.rs"]
mod client_addresses;

#[path = "attacks/shutdown.rs"]
mod shutdown;

#[path = "attacks/render.rs"]
mod render;

#[path = "attacks/backplane.rs"]
mod backplane;
