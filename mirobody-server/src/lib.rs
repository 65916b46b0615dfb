//! The mirobody server, the application: the program itself ([`Application`], which an
//! operator's own binary runs with its own tools), configuration ([`config`]), the command line
//! ([`cli`]), the wiring of the built-in tools, backends and auth ([`app`]), Prometheus
//! metrics ([`metrics`]), the routes for
//! uploads, FHIR imports and the care circle (`routes/`), the start-up memory handling of the
//! binary ([`startup_pages`]) and its bounded end ([`shutdown`]), traces over OTLP
//! (`telemetry.rs`), over the embeddable MCP server in [`mirobody_mcp`].
//!
//! An application that wants only the MCP endpoint depends on `mirobody-mcp`, not on this
//! crate, and compiles none of the databases, object stores and CLI this one brings.

mod account_data;
pub mod app;
mod application;
pub mod cli;
pub mod config;
mod export_entry;
pub mod metrics;
mod personal;
mod request_id;
mod routes;
pub mod shutdown;
pub mod startup_pages;
mod telemetry;

pub use application::Application;
