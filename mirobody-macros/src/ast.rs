//! The model of one tool, read from a function's signature, attributes and doc comment.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, Signature, Type};

use crate::attr::{ArgOptions, ToolOptions};
use crate::ctxt::Ctxt;
use crate::doc::{self, Doc};
use crate::ty::{self, ParamType, Return};

/// A tool: the function, what the model sees of it, and how to call it.
pub(crate) struct Tool {
    /// The function's name.
    pub(crate) ident: Ident,
    pub(crate) is_async: bool,
    /// `&self` on a `#[tool_service]` method.
    pub(crate) takes_self: bool,
    /// The tool's name: the function's, or `#[tool(name = ..)]`.
    pub(crate) name: String,
    pub(crate) name_span: Span,
    pub(crate) doc: Doc,
    pub(crate) params: Vec<Param>,
    pub(crate) ret: Return,
    pub(crate) ret_span: Span,
    pub(crate) opts: ToolOptions,
}

/// One parameter of the function.
pub(crate) struct Param {
    /// The name as written, without `r#`.
    pub(crate) ident: String,
    pub(crate) ty: Type,
    /// `None` when the type could not be read (already reported).
    pub(crate) kind: Option<ParamType>,
    /// The argument's name in the schema: the parameter's, or `#[arg(name = ..)]`.
    pub(crate) name: String,
    pub(crate) span: Span,
    pub(crate) opts: ArgOptions,
    /// From the doc comment's parameter section.
    pub(crate) description: String,
}

impl Param {
    pub(crate) fn is_arg(&self) -> bool {
        matches!(self.kind, Some(ParamType::Arg(_)))
    }
}

fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

/// Reads a tool from a function. `#[arg]` attributes are removed from `sig` (they are not real
/// attributes); errors go to `cx`. `in_service` allows a `&self` receiver.
pub(crate) fn read(
    sig: &mut Signature,
    attrs: &[syn::Attribute],
    opts: ToolOptions,
    in_service: bool,
    cx: &Ctxt,
) -> Tool {
    check_signature(sig, cx);
    let raw = opts.input_schema.is_some();
    let mut takes_self = false;
    let mut params = Vec::new();
    for input in &mut sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                if !in_service {
                    cx.error_spanned_by(
                        &*receiver,
                        "#[tool] makes a tool of a free function; for methods put #[tool_service] on the \
                         impl block (each public method becomes a tool)",
                    );
                } else if receiver.reference.is_none()
                    || receiver.mutability.is_some()
                    || receiver.colon_token.is_some()
                {
                    cx.error_spanned_by(
                        &*receiver,
                        "a tool method takes `&self` (one shared instance made with Default) or no receiver; \
                         tools run concurrently, so `self` and `&mut self` are not possible",
                    );
                } else {
                    takes_self = true;
                }
            }
            FnArg::Typed(pat_type) => {
                let opts = crate::attr::take_arg_options(&mut pat_type.attrs, cx);
                let ident = match &*pat_type.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => unraw(&p.ident),
                    Pat::Wild(_) => "_".to_owned(),
                    other => {
                        cx.error_spanned_by(
                            other,
                            "a tool's parameter must be a plain name (`days: i64`): its name is the argument's name",
                        );
                        continue;
                    }
                };
                let ty = (*pat_type.ty).clone();
                let kind = match ty::classify(&ty, raw) {
                    Ok(kind) => Some(kind),
                    Err(e) => {
                        cx.error_spanned_by(
                            e.tokens,
                            format!(
                                "parameter `{ident}` has type `{}`, which #[tool] cannot use: {}",
                                ty::display(&ty),
                                e.reason
                            ),
                        );
                        None
                    }
                };
                let (name, span) = match &opts.name {
                    Some(lit) => (lit.value(), lit.span()),
                    None => (ident.clone(), pat_type.pat.span()),
                };
                params.push(Param { ident, ty, kind, name, span, opts, description: String::new() });
            }
        }
    }
    let lines = doc::lines(attrs, cx);
    let doc = doc::parse(&lines, cx);
    let (ret, ret_span) = ty::classify_return(&sig.output);
    let (name, name_span) = match &opts.name {
        Some(lit) => (lit.value(), lit.span()),
        None => (unraw(&sig.ident), sig.ident.span()),
    };
    Tool {
        ident: sig.ident.clone(),
        is_async: sig.asyncness.is_some(),
        takes_self,
        name,
        name_span,
        doc,
        params,
        ret,
        ret_span,
        opts,
    }
}

fn check_signature(sig: &Signature, cx: &Ctxt) {
    for param in &sig.generics.params {
        if !matches!(param, syn::GenericParam::Lifetime(_)) {
            cx.error_spanned_by(
                param,
                "a tool cannot be generic: the schema is fixed when the tool is declared; name concrete types",
            );
        }
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(unsafety, "a tool cannot be `unsafe fn`: the model calls it with any arguments");
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "a tool cannot be `extern`: write a plain Rust function");
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool cannot be variadic");
    }
}
