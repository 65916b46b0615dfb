//! The `#[tool]`, `#[tool_service]` and `#[derive(ToolEnum)]` macros of mirobody.
//!
#![doc = include_str!("../README.md")]

// Layout, after serde_derive: this file holds the entry points, three lines each. `attr` and
// `doc` parse the options and the doc comment, `ty` reads types, `ast` builds the model of one
// tool, `check` checks it across its parts, and `expand` generates the code; `tool_fn`,
// `service` and `tool_enum` drive each macro. Errors are collected in a `ctxt::Ctxt`, so a
// build reports every mistake at once.

mod ast;
mod attr;
mod check;
mod ctxt;
mod doc;
mod expand;
mod service;
mod tool_enum;
mod tool_fn;
mod ty;

use proc_macro::TokenStream;
use syn::parse_macro_input;

/// Makes a tool of a function: generates `<fn>_tool() -> Tool` and registers it. See the
/// [crate docs](crate) for what it reads and the options it takes.
///
/// ```
/// use mirobody_core::{tool, ToolEnum, UserInfo};
///
/// #[derive(ToolEnum)]
/// #[tool_enum(rename_all = "lowercase")]
/// enum Period { Day, Week }
///
/// /// Count the caller's readings of an indicator at or above a goal.
/// ///
/// /// Args:
/// ///     indicator: The exact indicator name, e.g. "steps".
/// ///     goal: The value a reading must reach, in the indicator's unit.
/// ///     period: How far back to look.
/// #[tool(annotations(read_only))]
/// async fn count_above(user: &UserInfo, indicator: &str, goal: f64, #[arg(default = "week")] period: Period) -> Result<u32, String> {
///     let _ = (user, indicator, goal, period);
///     Ok(0)
/// }
///
/// let tool = count_above_tool();
/// assert!(tool.is_auth());
/// assert_eq!(tool.spec().input_schema()["required"], serde_json::json!(["indicator", "goal"]));
/// assert_eq!(tool.spec().input_schema()["properties"]["period"]["enum"], serde_json::json!(["day", "week"]));
/// ```
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut item = parse_macro_input!(item as syn::Item);
    tool_fn::expand(attr.into(), &mut item).unwrap_or_else(|errors| tool_fn::dummy(&item, errors)).into()
}

/// Makes a tool of each public method of an impl block, as the Python engine did for a
/// `...Service` class. Private methods are helpers; `#[tool(skip)]` leaves out a public one,
/// and `#[tool(...)]` on a method gives its options. A method takes no receiver or `&self`;
/// `&self` methods share one instance of the type, made with `Default` on first use.
///
/// Generates `Type::<method>_tool()` for each tool and `Type::tools()` for all of them, and
/// registers each (`#[tool_service(register = false)]` does not). `#[tool_service(enabled =
/// path)]` gives every tool the same `enabled` check, like the Python `_enabled()`.
///
/// ```
/// use mirobody_core::{tool_service, UserInfo};
///
/// #[derive(Default)]
/// struct GreetService;
///
/// #[tool_service(register = false)]
/// impl GreetService {
///     /// Greet the caller.
///     pub fn greet(&self, user: &UserInfo) -> String {
///         format!("Hello, {}!", user.user_id().unwrap_or_default())
///     }
///
///     fn helper() {}
/// }
///
/// let names: Vec<String> = GreetService::tools().iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(names, ["greet"]);
/// ```
#[proc_macro_attribute]
pub fn tool_service(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut item = parse_macro_input!(item as syn::Item);
    service::expand(attr.into(), &mut item).unwrap_or_else(|errors| service::dummy(&item, errors)).into()
}

/// Lets an enum of unit variants be a tool parameter: a string restricted to its values.
///
/// The values are the variant names as written, renamed by `#[serde(rename_all = "..")]` and
/// `#[serde(rename = "..")]` when present (so they match the enum's `Deserialize`), or by
/// `#[tool_enum(rename_all = "..")]` and `#[tool_enum(rename = "..")]`, which win. Variants
/// with `#[serde(skip)]` are left out.
///
/// ```
/// use mirobody_core::{tool, ToolEnum};
///
/// #[derive(ToolEnum)]
/// #[tool_enum(rename_all = "snake_case")]
/// enum Kind { Fact, Preference, #[tool_enum(rename = "event")] Episode }
///
/// /// Store a memory.
/// #[tool(register = false)]
/// fn remember(kind: Kind) -> &'static str {
///     match kind { Kind::Fact => "fact", Kind::Preference => "preference", Kind::Episode => "event" }
/// }
///
/// let schema = remember_tool().spec().input_schema();
/// assert_eq!(schema["properties"]["kind"]["enum"], serde_json::json!(["fact", "preference", "event"]));
/// ```
#[proc_macro_derive(ToolEnum, attributes(tool_enum))]
pub fn derive_tool_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as syn::DeriveInput);
    tool_enum::expand(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}
