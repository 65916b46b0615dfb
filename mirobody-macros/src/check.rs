//! Checks across the parts of a tool: names, hidden parameters, defaults against types, and
//! the doc comment's parameters against the signature. Fills each parameter's description.

use std::collections::HashSet;

use syn::{Expr, Lit, UnOp};

use crate::ast::{Param, Tool};
use crate::ctxt::Ctxt;
use crate::ty::{self, Json, Leaf, ParamType, Shape};

/// The longest tool or parameter name (mirobody-schema's `MAX_NAME_LEN`).
const MAX_NAME_LEN: usize = 64;

const USER_ID: &str = "a tool parameter may not be named `user_id`: the model fills every parameter, so any \
                       caller could name another user and read their data. Take `user: &UserInfo` and read \
                       `user.user_id()` instead: the server fills it from verified credentials, the tool then \
                       requires an authenticated caller, and it never appears in the schema";

pub(crate) fn check(tool: &mut Tool, cx: &Ctxt) {
    check_name(tool, cx);
    check_description(tool, cx);
    check_params(tool, cx);
    if tool.opts.input_schema.is_none() {
        apply_doc(tool, cx);
    }
}

fn check_name(tool: &Tool, cx: &Ctxt) {
    let name = &tool.name;
    let mut chars = name.chars();
    let valid = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= MAX_NAME_LEN
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid {
        cx.error_at(
            tool.name_span,
            format!(
                "invalid tool name `{name}`: use 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 _ -, starting with a letter \
                 or _ (some model providers reject anything else); rename it with #[tool(name = \"...\")]"
            ),
        );
    }
}

fn check_description(tool: &Tool, cx: &Ctxt) {
    if tool.doc.description.is_empty() {
        cx.error_at(
            tool.name_span,
            format!(
                "`{}` has no description: add a doc comment. Its lines up to the first section header (such as \
                 `Args:`) are what the model reads to decide when and how to call the tool",
                tool.name
            ),
        );
    }
}

fn check_params(tool: &Tool, cx: &Ctxt) {
    let raw = tool.opts.input_schema.is_some();
    let mut names = HashSet::new();
    let (mut users, mut contexts) = (0, 0);
    for param in &tool.params {
        if param.ident == "user_id" || param.name == "user_id" {
            cx.error_at(param.span, USER_ID);
            continue;
        }
        let hidden = match &param.kind {
            Some(ParamType::User { .. }) => {
                users += 1;
                if users == 2 {
                    cx.error_spanned_by(&param.ty, "the caller's `&UserInfo` is taken twice: take it once");
                }
                true
            }
            Some(ParamType::Context { .. }) => {
                contexts += 1;
                if contexts == 2 {
                    cx.error_spanned_by(&param.ty, "the `ToolContext` is taken twice: take it once");
                }
                true
            }
            Some(ParamType::Arg(_)) => false,
            None => continue,
        };
        if param.ident == "user_info" && !matches!(param.kind, Some(ParamType::User { .. })) {
            cx.error_at(
                param.span,
                "a parameter named `user_info` would be filled by the model, not the server: take \
                 `user_info: &UserInfo` to receive the verified caller",
            );
            continue;
        }
        if hidden {
            if let Some(span) = param.opts.span {
                cx.error_at(
                    span,
                    format!(
                        "`{}` is filled by the server and is not in the schema: #[arg] does not apply to it",
                        param.ident
                    ),
                );
            }
            continue;
        }
        if param.ident == "_" && param.opts.name.is_none() {
            cx.error_at(param.span, "name this parameter: its name is the argument's name in the schema");
            continue;
        }
        let name = &param.name;
        if name.is_empty()
            || name.len() > MAX_NAME_LEN
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            cx.error_at(
                param.span,
                format!(
                    "invalid parameter name `{name}`: use 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 _ . - (rename it with \
                     #[arg(name = \"...\")])"
                ),
            );
        }
        if !names.insert(name.clone()) {
            cx.error_at(param.span, format!("two parameters are named `{name}` in the schema: rename one"));
        }
        check_arg_options(param, raw, cx);
    }
}

fn check_arg_options(param: &Param, raw: bool, cx: &Ctxt) {
    let Some(ParamType::Arg(arg)) = &param.kind else { return };
    let name = &param.name;
    if let Some(default) = &param.opts.default {
        if arg.optional {
            cx.error_spanned_by(
                default,
                format!(
                    "parameter `{name}` has a default, so it is never absent: take `{}` instead of `Option<..>`",
                    ty::display(&arg.owned)
                ),
            );
        } else if !raw && let Err(problem) = fits(default, &arg.shape, &arg.owned) {
            cx.error_spanned_by(default, format!("the default of parameter `{name}` {problem}"));
        }
    }
    if let Some((values, span)) = &param.opts.one_of {
        let problem = match &arg.shape {
            _ if raw => Some("a verbatim input schema is used as written: put the `enum` in the schema".to_owned()),
            Shape::Leaf(Leaf::Enum(t)) | Shape::Array(Leaf::Enum(t)) => {
                Some(format!("its values come from the enum `{}`: remove `one_of`", ty::display(t)))
            }
            Shape::Leaf(Leaf::Json(Json::Object)) | Shape::Array(Leaf::Json(Json::Object)) => {
                Some("an object cannot be restricted to a list of values".to_owned())
            }
            _ if values.is_empty() => Some("the list of values is empty".to_owned()),
            _ => None,
        };
        if let Some(problem) = problem {
            cx.error_at(*span, format!("`one_of` on parameter `{name}`: {problem}"));
            return;
        }
        let element = match &arg.shape {
            Shape::Array(leaf) => Shape::Leaf(leaf.clone()),
            other => other.clone(),
        };
        for value in values {
            if let Err(problem) = fits(value, &element, &arg.owned) {
                cx.error_spanned_by(value, format!("this value of parameter `{name}` {problem}"));
            }
        }
    }
}

/// The kind of a literal written in an attribute, when it is one.
enum Literal<'a> {
    Str,
    Int { negative: bool, lit: &'a syn::LitInt },
    Float,
    Bool,
    Array(Vec<&'a Expr>),
}

fn literal(expr: &Expr) -> Option<Literal<'_>> {
    match expr {
        Expr::Lit(lit) => match &lit.lit {
            Lit::Str(_) => Some(Literal::Str),
            Lit::Int(i) => Some(Literal::Int { negative: false, lit: i }),
            Lit::Float(_) => Some(Literal::Float),
            Lit::Bool(_) => Some(Literal::Bool),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match literal(&u.expr)? {
            Literal::Int { lit, .. } => Some(Literal::Int { negative: true, lit }),
            Literal::Float => Some(Literal::Float),
            _ => None,
        },
        Expr::Array(a) => Some(Literal::Array(a.elems.iter().collect())),
        Expr::Paren(p) => literal(&p.expr),
        Expr::Group(g) => literal(&g.expr),
        _ => None,
    }
}

fn describe(literal: &Literal<'_>) -> &'static str {
    match literal {
        Literal::Str => "a string",
        Literal::Int { .. } => "an integer",
        Literal::Float => "a float",
        Literal::Bool => "a boolean",
        Literal::Array(_) => "an array",
    }
}

/// The range of an integer type, by name.
fn int_range(owned: &syn::Type) -> Option<(i128, i128)> {
    let name = ty::last_segment(owned)?.ident.to_string();
    Some(match name.as_str() {
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" | "u128" | "usize" => (0, i128::MAX),
        _ => return None,
    })
}

/// Whether a literal written in an attribute has the parameter's type. Expressions that are not
/// literals are not checked here (the registry checks them when it is built).
fn fits(expr: &Expr, shape: &Shape, owned: &syn::Type) -> Result<(), String> {
    let Some(literal) = literal(expr) else { return Ok(()) };
    let expected = match shape {
        Shape::Array(leaf) => {
            let Literal::Array(items) = literal else {
                return Err(format!("is {}, but the parameter is an array: write `[...]`", describe(&literal)));
            };
            let item_shape = Shape::Leaf(leaf.clone());
            let item_ty = array_item_type(owned).unwrap_or(owned);
            for item in items {
                fits(item, &item_shape, item_ty).map_err(|problem| {
                    format!(
                        "has an element that {}",
                        problem.replace("but the parameter is", "but each element must be")
                    )
                })?;
            }
            return Ok(());
        }
        Shape::Leaf(Leaf::Any) => return Ok(()),
        Shape::Leaf(Leaf::Enum(t)) => {
            return match literal {
                Literal::Str => Ok(()),
                other => Err(format!(
                    "is {}, but the parameter is the enum `{}`: write one of its values as a string",
                    describe(&other),
                    ty::display(t)
                )),
            };
        }
        Shape::Leaf(Leaf::Json(json)) => *json,
    };
    let ok = match (&literal, expected) {
        (Literal::Str, Json::String) | (Literal::Bool, Json::Boolean) | (Literal::Float, Json::Number) => true,
        (Literal::Int { .. }, Json::Number) => true,
        (Literal::Int { negative, lit }, Json::Integer) => {
            if let (Some((min, max)), Ok(value)) = (int_range(owned), lit.base10_parse::<i128>()) {
                let value = if *negative { -value } else { value };
                if value < min || value > max {
                    return Err(format!("is {value}, which does not fit in `{}`", ty::display(owned)));
                }
            }
            true
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("is {}, but the parameter is {} {}", describe(&literal), article(expected), expected.name()))
    }
}

fn article(json: Json) -> &'static str {
    match json {
        Json::Integer | Json::Object => "an",
        _ => "a",
    }
}

fn array_item_type(owned: &syn::Type) -> Option<&syn::Type> {
    let segment = ty::last_segment(owned)?;
    match &segment.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// Matches the doc comment's parameters to the signature and fills the descriptions.
fn apply_doc(tool: &mut Tool, cx: &Ctxt) {
    let mut seen = HashSet::new();
    let args = std::mem::take(&mut tool.doc.args);
    for described in &args {
        let found = tool.params.iter_mut().find(|p| p.ident == described.name || p.name == described.name);
        let Some(param) = found else {
            let known: Vec<String> =
                tool.params.iter().filter(|p| p.is_arg()).map(|p| format!("`{}`", p.ident)).collect();
            let known = if known.is_empty() {
                "it takes no arguments".to_owned()
            } else {
                format!("its parameters are {}", known.join(", "))
            };
            cx.error_at(
                described.span,
                format!(
                    "the doc comment describes `{}`, but `{}` has no such parameter ({known}): fix the name or \
                     remove the line",
                    described.name, tool.ident
                ),
            );
            continue;
        };
        if !seen.insert(param.ident.clone()) {
            cx.error_at(described.span, format!("parameter `{}` is described twice in the doc comment", param.ident));
            continue;
        }
        match param.kind {
            Some(ParamType::User { .. }) | Some(ParamType::Context { .. }) => cx.error_at(
                described.span,
                format!(
                    "`{}` is filled by the server, not sent by the model, and is not in the schema: remove its \
                     line from the doc comment's parameters",
                    param.ident
                ),
            ),
            _ => param.description = described.description.clone(),
        }
    }
    tool.doc.args = args;
}
