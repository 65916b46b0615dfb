//! Reading types: the JSON Schema type of a parameter, how the generated handler builds a value
//! of it from the arguments, and how a return value becomes a result.
//!
//! A macro sees syntax, not types, so types are recognised by the last segment of their path
//! (`String`, `std::string::String` and `alloc::string::String` all read as a string). A plain
//! path the table does not know (`Period`) is taken to be an enum with `#[derive(ToolEnum)]`;
//! the generated code checks that at compile time and fails with a message naming the
//! parameter when it is not one.

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, PathSegment, ReturnType, Type, TypeParamBound};

/// A JSON Schema type a Rust type maps to directly.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Json {
    String,
    Integer,
    Number,
    Boolean,
    Object,
}

impl Json {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Json::String => "string",
            Json::Integer => "integer",
            Json::Number => "number",
            Json::Boolean => "boolean",
            Json::Object => "object",
        }
    }
}

/// A single value's type.
#[derive(Clone)]
pub(crate) enum Leaf {
    Json(Json),
    /// A unit-variant enum deriving `ToolEnum`: a string restricted to its values.
    Enum(Box<Type>),
    /// Any type serde can read; used only with a verbatim input schema.
    Any,
}

/// A parameter's shape: a single value or an array of them.
#[derive(Clone)]
pub(crate) enum Shape {
    Leaf(Leaf),
    Array(Leaf),
}

/// How the owned value built from the arguments is passed to the function.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// `T`
    Value,
    /// `&T`, `&str`, `&[T]`: a reference to the owned value.
    Ref,
    /// `Option<&T>`: `.as_ref()`.
    OptionRef,
    /// `Option<&str>`, `Option<&[T]>`: `.as_deref()`.
    OptionDeref,
}

/// What a parameter is.
pub(crate) enum ParamType {
    /// `&UserInfo` (the tool requires an authenticated caller), or `Option<&UserInfo>` (it does
    /// not, and sees the caller when there is one).
    User { optional: bool },
    /// `&ToolContext<'_>` or `ToolContext<'_>`.
    Context { by_ref: bool },
    /// An argument the model sends.
    Arg(Box<ArgType>),
}

/// An argument's type.
pub(crate) struct ArgType {
    pub(crate) shape: Shape,
    /// The owned type built from the JSON value (inside the `Option` when optional).
    pub(crate) owned: Type,
    pub(crate) optional: bool,
    pub(crate) pass: Pass,
}

/// Why a type cannot be a parameter: the tokens to point at, and a sentence for the error.
pub(crate) struct Unmappable {
    pub(crate) tokens: proc_macro2::TokenStream,
    pub(crate) reason: String,
}

fn unmappable(ty: &impl ToTokens, reason: impl Into<String>) -> Unmappable {
    Unmappable { tokens: ty.to_token_stream(), reason: reason.into() }
}

const INTEGERS: &[&str] = &["i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize"];
const ARRAYS: &[&str] = &["Vec", "VecDeque", "HashSet", "BTreeSet", "IndexSet"];
const MAPS: &[&str] = &["HashMap", "BTreeMap", "IndexMap", "Map"];
const WRAPPERS: &[&str] = &["Box", "Rc", "Arc", "Cow"];

/// The type as a user would write it, for messages: `Vec<String>`, not `Vec < String >`.
pub(crate) fn display(ty: &impl ToTokens) -> String {
    let mut out = ty.to_token_stream().to_string();
    for (from, to) in [
        (" < ", "<"),
        ("< ", "<"),
        (" <", "<"),
        (" >", ">"),
        (" :: ", "::"),
        (":: ", "::"),
        ("& ", "&"),
        (" ,", ","),
        ("' ", "'"),
    ] {
        out = out.replace(from, to);
    }
    out
}

fn strip(ty: &Type) -> &Type {
    match ty {
        Type::Paren(p) => strip(&p.elem),
        Type::Group(g) => strip(&g.elem),
        other => other,
    }
}

/// The last path segment of a plain path type (no `<T as Trait>::` qualifier).
pub(crate) fn last_segment(ty: &Type) -> Option<&PathSegment> {
    match strip(ty) {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

fn type_args(segment: &PathSegment) -> Vec<&Type> {
    match &segment.arguments {
        PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter_map(|a| match a {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == name)
}

/// Reads a parameter's type. With `raw` (a verbatim input schema), any type serde can read is
/// an argument.
pub(crate) fn classify(ty: &Type, raw: bool) -> Result<ParamType, Unmappable> {
    let ty = strip(ty);
    if let Type::Reference(r) = ty {
        let elem = strip(&r.elem);
        if is_named(elem, "UserInfo") || is_named(elem, "ToolContext") {
            if r.mutability.is_some() {
                return Err(unmappable(ty, "the server lends it read-only: take it by shared reference (`&`)"));
            }
            return Ok(if is_named(elem, "UserInfo") {
                ParamType::User { optional: false }
            } else {
                ParamType::Context { by_ref: true }
            });
        }
        return borrowed(ty, raw, false).map(|arg| ParamType::Arg(Box::new(arg)));
    }
    if is_named(ty, "UserInfo") {
        return Err(unmappable(
            ty,
            "the caller's identity is lent to the tool, not given: take `&UserInfo` (or \
             `Option<&UserInfo>` for a tool that also serves anonymous callers)",
        ));
    }
    if is_named(ty, "ToolContext") {
        return Ok(ParamType::Context { by_ref: false });
    }
    if let Some(segment) = last_segment(ty).filter(|s| s.ident == "Option") {
        let args = type_args(segment);
        let [inner] = args.as_slice() else {
            return Err(unmappable(ty, "`Option` takes one type"));
        };
        let inner = strip(inner);
        if let Type::Reference(r) = inner {
            if is_named(&r.elem, "UserInfo") && r.mutability.is_none() {
                return Ok(ParamType::User { optional: true });
            }
            if is_named(&r.elem, "ToolContext") {
                return Err(unmappable(ty, "the context is always there: take `&ToolContext<'_>`, not an Option"));
            }
            return borrowed(inner, raw, true).map(|arg| ParamType::Arg(Box::new(arg)));
        }
        if is_named(inner, "UserInfo") || is_named(inner, "ToolContext") {
            return Err(unmappable(ty, "take `&UserInfo` or `Option<&UserInfo>`, and `&ToolContext<'_>`"));
        }
        if is_named(inner, "Option") {
            return Err(unmappable(
                ty,
                "`Option<Option<T>>` cannot be told apart from `Option<T>` in a call: use `Option<T>`",
            ));
        }
        let (shape, owned) = value(inner, raw)?;
        return Ok(ParamType::Arg(Box::new(ArgType {
            shape,
            owned: owned.clone(),
            optional: true,
            pass: Pass::Value,
        })));
    }
    let (shape, owned) = value(ty, raw)?;
    Ok(ParamType::Arg(Box::new(ArgType { shape, owned: owned.clone(), optional: false, pass: Pass::Value })))
}

/// `&T`, `&str`, `&[T]` (inside an `Option` when `optional`).
fn borrowed(ty: &Type, raw: bool, optional: bool) -> Result<ArgType, Unmappable> {
    let Type::Reference(r) = ty else { unreachable!("borrowed() is called on references") };
    if r.mutability.is_some() {
        return Err(unmappable(ty, "an argument cannot be borrowed mutably: take it by value or by `&`"));
    }
    let elem = strip(&r.elem);
    let (shape, owned, deref) = match elem {
        Type::Path(p) if p.qself.is_none() && p.path.is_ident("str") => {
            (Shape::Leaf(Leaf::Json(Json::String)), syn::parse_quote!(::std::string::String), true)
        }
        Type::Slice(s) => {
            let item = &*s.elem;
            let shape = if raw { Shape::Leaf(Leaf::Any) } else { Shape::Array(array_item(item)?) };
            (shape, syn::parse_quote!(::std::vec::Vec<#item>), true)
        }
        Type::Reference(_) => return Err(unmappable(ty, "take the argument by value or by a single `&`")),
        other => {
            let (shape, owned) = value(other, raw)?;
            (shape, owned.clone(), false)
        }
    };
    let pass = match (optional, deref) {
        (false, _) => Pass::Ref,
        (true, true) => Pass::OptionDeref,
        (true, false) => Pass::OptionRef,
    };
    Ok(ArgType { shape, owned, optional, pass })
}

/// A value type: a scalar, an enum, an array, or an object.
fn value(ty: &Type, raw: bool) -> Result<(Shape, &Type), Unmappable> {
    if raw {
        return match ty {
            Type::ImplTrait(_) => Err(unmappable(ty, "`impl Trait` cannot be built from arguments: name the type")),
            Type::Reference(_) => Err(unmappable(ty, "take it by value, or by a single `&` at the top")),
            _ => Ok((Shape::Leaf(Leaf::Any), ty)),
        };
    }
    let Some(segment) = last_segment(ty) else {
        return Err(unmappable(ty, unknown_kind(ty)));
    };
    let name = segment.ident.to_string();
    let args = type_args(segment);
    let leaf = |json| Ok((Shape::Leaf(Leaf::Json(json)), ty));
    match name.as_str() {
        "String" | "char" if args.is_empty() => leaf(Json::String),
        "bool" if args.is_empty() => leaf(Json::Boolean),
        "f32" | "f64" if args.is_empty() => leaf(Json::Number),
        n if INTEGERS.contains(&n) && args.is_empty() => leaf(Json::Integer),
        "Value" if args.is_empty() => leaf(Json::Object),
        "str" => Err(unmappable(ty, "`str` cannot be passed by value: take `&str` or `String`")),
        n if ARRAYS.contains(&n) => match args.as_slice() {
            [item] => Ok((Shape::Array(array_item(item)?), ty)),
            _ => Err(unmappable(ty, format!("`{n}` takes one element type"))),
        },
        n if MAPS.contains(&n) && args.len() == 2 => leaf(Json::Object),
        "Option" => Err(unmappable(
            ty,
            "an `Option` inside another type cannot be declared (JSON Schema here has no null): \
             use `Option<T>` only around the whole parameter",
        )),
        "Self" => Err(unmappable(ty, "`Self` cannot be a parameter type: name the type")),
        n if WRAPPERS.contains(&n) => {
            Err(unmappable(ty, format!("`{n}<..>` is not read from arguments: take the value itself (`T` or `&T`)")))
        }
        _ if matches!(segment.arguments, PathArguments::None) => {
            Ok((Shape::Leaf(Leaf::Enum(Box::new(ty.clone()))), ty))
        }
        _ => Err(unmappable(ty, "#[tool] does not know this generic type")),
    }
}

/// An array's element: a scalar, an object or an enum; not an array or an option.
fn array_item(item: &Type) -> Result<Leaf, Unmappable> {
    let item = strip(item);
    if last_segment(item).is_some_and(|s| ARRAYS.contains(&s.ident.to_string().as_str()))
        || matches!(item, Type::Slice(_) | Type::Array(_))
    {
        return Err(unmappable(
            item,
            "arrays of arrays cannot be declared in a parameter table: give the schema with \
             #[tool(input_schema = ...)]",
        ));
    }
    match value(item, false)? {
        (Shape::Leaf(leaf), _) => Ok(leaf),
        (Shape::Array(_), _) => Err(unmappable(item, "arrays of arrays cannot be declared in a parameter table")),
    }
}

fn unknown_kind(ty: &Type) -> &'static str {
    match ty {
        Type::Tuple(t) if t.elems.is_empty() => "`()` carries nothing: remove the parameter",
        Type::Tuple(_) => "a tuple has no JSON Schema form: use one parameter per element",
        Type::Array(_) => "a fixed-size array cannot be declared: use `Vec<T>`",
        Type::ImplTrait(_) => "`impl Trait` cannot be built from arguments: name the type",
        Type::Path(_) => "a qualified path (`<T as Trait>::X`) cannot be read by #[tool]: name the type",
        Type::Slice(_) => "a slice must be borrowed: take `&[T]` or `Vec<T>`",
        _ => "this kind of type cannot be built from JSON arguments",
    }
}

/// What a return type becomes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Return {
    /// Already a result, or text, or JSON (`ToolResult`, `String`, `&'static str`, `Json<T>`,
    /// `serde_json::Value`, `impl IntoToolResult`): core's `IntoToolResult`.
    Into,
    /// Any other `T: Serialize`: structured content.
    Serialize,
    /// `Result<T, E>` with `E: Display`: `Err` is an error result; `Ok` is read as above.
    Result { ok: Okay },
}

/// How the `Ok` of a `Result` is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Okay {
    Into,
    Serialize,
}

const INTO_RESULT: &[&str] = &["ToolResult", "String", "Json", "Value"];

fn is_into(ty: &Type) -> bool {
    match strip(ty) {
        Type::Reference(r) => matches!(strip(&r.elem), Type::Path(p) if p.path.is_ident("str")),
        Type::ImplTrait(t) => t.bounds.iter().any(|b| match b {
            TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == "IntoToolResult"),
            _ => false,
        }),
        other => last_segment(other).is_some_and(|s| INTO_RESULT.contains(&s.ident.to_string().as_str())),
    }
}

/// Reads a return type, and the span to point errors about it at.
pub(crate) fn classify_return(output: &ReturnType) -> (Return, Span) {
    let ty = match output {
        ReturnType::Default => return (Return::Serialize, output.span()),
        ReturnType::Type(_, ty) => &**ty,
    };
    if let Some(segment) = last_segment(ty).filter(|s| s.ident == "Result") {
        let ok = match type_args(segment).first() {
            Some(ok) if is_into(ok) => Okay::Into,
            _ => Okay::Serialize,
        };
        return (Return::Result { ok }, ty.span());
    }
    (if is_into(ty) { Return::Into } else { Return::Serialize }, ty.span())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(src: &str) -> ArgType {
        match classify(&syn::parse_str(src).unwrap(), false) {
            Ok(ParamType::Arg(a)) => *a,
            Ok(_) => panic!("{src} is hidden"),
            Err(e) => panic!("{src}: {}", e.reason),
        }
    }

    fn json(a: &ArgType) -> Option<Json> {
        match &a.shape {
            Shape::Leaf(Leaf::Json(j)) => Some(*j),
            _ => None,
        }
    }

    #[test]
    fn scalars() {
        for (src, expected) in [
            ("String", Json::String),
            ("std::string::String", Json::String),
            ("&str", Json::String),
            ("i64", Json::Integer),
            ("u8", Json::Integer),
            ("f32", Json::Number),
            ("bool", Json::Boolean),
            ("serde_json::Value", Json::Object),
            ("HashMap<String, i64>", Json::Object),
            ("serde_json::Map<String, serde_json::Value>", Json::Object),
        ] {
            let a = arg(src);
            assert_eq!(json(&a), Some(expected), "{src}");
            assert!(!a.optional, "{src}");
        }
    }

    #[test]
    fn options_references_and_arrays() {
        let a = arg("Option<Vec<String>>");
        assert!(a.optional);
        assert!(matches!(a.shape, Shape::Array(Leaf::Json(Json::String))));
        assert!(arg("Option<&str>").pass == Pass::OptionDeref);
        assert!(arg("Option<&Vec<i64>>").pass == Pass::OptionRef);
        assert!(arg("&[f64]").pass == Pass::Ref);
        assert!(matches!(arg("&[f64]").shape, Shape::Array(Leaf::Json(Json::Number))));
        assert!(matches!(arg("Period").shape, Shape::Leaf(Leaf::Enum(_))));
        assert!(matches!(arg("Vec<Period>").shape, Shape::Array(Leaf::Enum(_))));
    }

    #[test]
    fn hidden_and_refused() {
        assert!(matches!(classify(&syn::parse_quote!(&UserInfo), false), Ok(ParamType::User { optional: false })));
        assert!(matches!(
            classify(&syn::parse_quote!(Option<&mirobody_core::UserInfo>), false),
            Ok(ParamType::User { optional: true })
        ));
        assert!(matches!(
            classify(&syn::parse_quote!(&ToolContext<'_>), false),
            Ok(ParamType::Context { by_ref: true })
        ));
        for src in ["UserInfo", "Vec<Vec<i64>>", "Option<Option<i64>>", "(i64, i64)", "Box<str>", "Foo<T>", "[u8; 4]"] {
            assert!(classify(&syn::parse_str(src).unwrap(), false).is_err(), "{src}");
        }
        assert!(classify(&syn::parse_quote!(Nested), true).is_ok());
    }

    #[test]
    fn returns() {
        let read = |src: &str| classify_return(&syn::parse_str(src).unwrap()).0;
        assert_eq!(read("-> ToolResult"), Return::Into);
        assert_eq!(read("-> String"), Return::Into);
        assert_eq!(read("-> Vec<u8>"), Return::Serialize);
        assert_eq!(read("-> impl serde::Serialize"), Return::Serialize);
        assert_eq!(read("-> Result<Counts, String>"), Return::Result { ok: Okay::Serialize });
        assert_eq!(read("-> Result<ToolResult, ToolError>"), Return::Result { ok: Okay::Into });
        assert_eq!(read("-> anyhow::Result<String>"), Return::Result { ok: Okay::Into });
        assert_eq!(read(""), Return::Serialize);
    }
}
