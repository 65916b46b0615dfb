//! What a language model sees of a tool, and how to check what it sends back.
//!
//! A tool is declared once as a [`ToolSpec`]: a name, a description, a table of [`Param`]s (or a
//! verbatim JSON Schema for nested arguments), and [`Annotations`] that say what the tool does.
//! This crate turns that declaration into every shape a model provider reads ([`Format`]: the MCP
//! `tools/list` entry, OpenAI Chat Completions and Responses, Gemini `functionDeclarations`,
//! Anthropic tools) and checks a call's arguments against it with a [`Validator`].
//!
//! It knows nothing of handlers, identity or transports: that is `mirobody-core`, which re-exports
//! everything here. The crate is split out so that renderers and validation can be used (and
//! tested) without any runtime, and so that vendor formats live in one place.
//!
//! ```
//! use mirobody_schema::{Format, Param, ToolSpec, Type};
//!
//! let spec = ToolSpec::new("weather", "Current weather for a city.")
//!     .param(Param::required("city", Type::String, "City name, e.g. \"Boston\""));
//!
//! let openai = spec.render(Format::OpenAi);
//! assert_eq!(openai["function"]["parameters"]["required"][0], "city");
//!
//! let validator = spec.validator().unwrap();
//! let mut args = serde_json::json!({}).as_object().unwrap().clone();
//! let err = validator.validate(&mut args).unwrap_err();
//! assert!(err.to_string().contains("missing required argument 'city'"));
//! ```

mod gemini;
mod param;
mod render;
mod spec;
mod validate;

pub use param::{Param, Type};
pub use render::{Format, UnknownFormat};
pub use spec::{Annotations, MAX_NAME_LEN, SpecError, TaskSupport, ToolSpec};
pub use validate::{ArgProblem, InvalidArguments, Validator};
