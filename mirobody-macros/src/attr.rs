//! Parsing the macros' options: `#[tool(...)]`, `#[arg(...)]` on a parameter, and
//! `#[tool_service(...)]`. Every mistake is recorded; parsing goes on past it.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::meta::ParseNestedMeta;
use syn::parse::{ParseStream, Parser};
use syn::{Expr, LitBool, LitStr, Token};

use crate::ctxt::Ctxt;

/// A JSON value given inline as `{ ... }` (a JSON object literal) or as an expression.
pub(crate) enum JsonArg {
    /// `{ "type": "object", ... }`: the tokens of the object, braces included.
    Object(TokenStream),
    /// Any expression.
    Expr(Expr),
}

/// `#[tool(annotations(...))]`.
#[derive(Default)]
pub(crate) struct AnnotationOptions {
    /// `read_only`, `additive` or `destructive`.
    pub(crate) base: Option<(&'static str, Span)>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
    pub(crate) title: Option<LitStr>,
}

/// The options of `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolOptions {
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) auth: Option<Span>,
    /// `session_required`: the tool works only inside a session.
    pub(crate) session_required: Option<Span>,
    pub(crate) scopes: Vec<LitStr>,
    pub(crate) annotations: Option<AnnotationOptions>,
    pub(crate) meta: Option<JsonArg>,
    pub(crate) input_schema: Option<(JsonArg, Span)>,
    /// `output_schema = { ... }` or `= expr`: the schema of the tool's structured results.
    pub(crate) output_schema: Option<JsonArg>,
    pub(crate) enabled: Option<Expr>,
    pub(crate) register: Option<bool>,
    pub(crate) krate: Option<syn::Path>,
    /// `task_support = "optional"` or `"required"`: the `TaskSupport` variant's name.
    pub(crate) task_support: Option<&'static str>,
    /// `view = "ui://..."` or `view = CONST`: the MCP Apps view the tool links to. A literal
    /// is checked to be a `ui://` URI here; a constant when the tool is declared.
    pub(crate) view: Option<Expr>,
    /// `time_limit = expr`: a `Duration`, the longest one call may run.
    pub(crate) time_limit: Option<Expr>,
    /// Only on a method of a `#[tool_service]` impl: not a tool.
    pub(crate) skip: Option<Span>,
}

/// The options of `#[arg(...)]` on a parameter.
#[derive(Default)]
pub(crate) struct ArgOptions {
    pub(crate) default: Option<Expr>,
    pub(crate) name: Option<LitStr>,
    pub(crate) one_of: Option<(Vec<Expr>, Span)>,
    /// The span of the whole attribute, for errors about it.
    pub(crate) span: Option<Span>,
}

/// The options of `#[tool_service(...)]`, applied to each of its tools.
#[derive(Default)]
pub(crate) struct ServiceOptions {
    pub(crate) enabled: Option<Expr>,
    pub(crate) register: Option<bool>,
    pub(crate) krate: Option<syn::Path>,
}

const TOOL_OPTIONS: &str = "name, title, auth, session_required, scopes, annotations(...), meta, input_schema, output_schema, enabled, register, task_support, view, time_limit, crate";
const SERVICE_OPTIONS: &str = "enabled, register, crate";
const ANNOTATION_OPTIONS: &str = "read_only, additive, destructive, idempotent, open_world, title";
const ARG_OPTIONS: &str = "default, name, one_of";

fn key(meta: &ParseNestedMeta<'_>) -> String {
    meta.path.get_ident().map(ToString::to_string).unwrap_or_else(|| crate::ty::display(&meta.path))
}

/// Consumes whatever follows an unknown or repeated key, so parsing can go on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.input.parse::<Token![=]>()?;
        while !meta.input.is_empty() && !meta.input.peek(Token![,]) {
            meta.input.parse::<TokenTree>()?;
        }
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<TokenTree>()?;
    }
    Ok(())
}

fn once<T>(cx: &Ctxt, slot: &mut Option<T>, value: T, meta: &ParseNestedMeta<'_>, what: &str) {
    if slot.is_some() {
        cx.error_spanned_by(&meta.path, format!("`{}` is given twice in {what}", key(meta)));
    } else {
        *slot = Some(value);
    }
}

fn json_arg(input: ParseStream<'_>) -> syn::Result<JsonArg> {
    if input.peek(syn::token::Brace) {
        let tree: TokenTree = input.parse()?;
        if let TokenTree::Group(group) = &tree
            && group.delimiter() == Delimiter::Brace
        {
            return Ok(JsonArg::Object(tree.into()));
        }
        return Err(syn::Error::new(tree.span(), "expected a JSON object `{ ... }`"));
    }
    Ok(JsonArg::Expr(input.parse()?))
}

/// An optional `= true` / `= false` after a flag; a bare flag is true.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) { Ok(meta.value()?.parse::<LitBool>()?.value) } else { Ok(true) }
}

/// Parses `#[tool(...)]`'s options. `in_service` allows `skip`.
pub(crate) fn tool_options(tokens: TokenStream, cx: &Ctxt, in_service: bool) -> ToolOptions {
    let mut opts = ToolOptions::default();
    let parser = syn::meta::parser(|meta| parse_tool_option(&meta, &mut opts, cx, in_service));
    if let Err(e) = parser.parse2(tokens) {
        cx.syn_error(e);
    }
    opts
}

fn parse_tool_option(
    meta: &ParseNestedMeta<'_>,
    opts: &mut ToolOptions,
    cx: &Ctxt,
    in_service: bool,
) -> syn::Result<()> {
    const WHERE: &str = "#[tool(...)]";
    match key(meta).as_str() {
        "name" => once(cx, &mut opts.name, meta.value()?.parse()?, meta, WHERE),
        "title" => once(cx, &mut opts.title, meta.value()?.parse()?, meta, WHERE),
        "auth" => {
            if !flag(meta)? {
                cx.error_spanned_by(
                    &meta.path,
                    "`auth = false` is the default: leave it out (a tool that takes `&UserInfo` always \
                     requires auth; take `Option<&UserInfo>` to also serve anonymous callers)",
                );
            }
            once(cx, &mut opts.auth, meta.path.span_of(), meta, WHERE);
        }
        "session_required" => {
            if !flag(meta)? {
                cx.error_spanned_by(&meta.path, "`session_required = false` is the default: leave it out");
            }
            once(cx, &mut opts.session_required, meta.path.span_of(), meta, WHERE);
        }
        "scopes" => {
            let array: syn::ExprArray = meta.value()?.parse()?;
            for elem in array.elems {
                match elem {
                    Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => opts.scopes.push(s),
                    other => cx.error_spanned_by(other, "a scope is a string literal, e.g. scopes = [\"mcp:read\"]"),
                }
            }
        }
        "annotations" => {
            let mut annotations = AnnotationOptions::default();
            meta.parse_nested_meta(|inner| parse_annotation(&inner, &mut annotations, cx))?;
            once(cx, &mut opts.annotations, annotations, meta, WHERE);
        }
        "meta" => once(cx, &mut opts.meta, json_arg(meta.value()?)?, meta, WHERE),
        "input_schema" => {
            let span = meta.path.span_of();
            once(cx, &mut opts.input_schema, (json_arg(meta.value()?)?, span), meta, WHERE);
        }
        "output_schema" => once(cx, &mut opts.output_schema, json_arg(meta.value()?)?, meta, WHERE),
        "enabled" => once(cx, &mut opts.enabled, meta.value()?.parse()?, meta, WHERE),
        "register" => once(cx, &mut opts.register, meta.value()?.parse::<LitBool>()?.value, meta, WHERE),
        "crate" => once(cx, &mut opts.krate, meta.value()?.parse()?, meta, WHERE),
        "view" => {
            let uri: Expr = meta.value()?.parse()?;
            if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(literal), .. }) = &uri
                && !literal.value().starts_with("ui://")
            {
                cx.error_spanned_by(literal, "a view's URI starts with ui://");
            }
            once(cx, &mut opts.view, uri, meta, WHERE);
        }
        "time_limit" => once(cx, &mut opts.time_limit, meta.value()?.parse()?, meta, WHERE),
        "task_support" => {
            let value: LitStr = meta.value()?.parse()?;
            let variant = match value.value().as_str() {
                "forbidden" => "Forbidden",
                "optional" => "Optional",
                "required" => "Required",
                other => {
                    cx.error_spanned_by(
                        &value,
                        format!("unknown task_support `{other}`; use \"optional\", \"required\" or \"forbidden\""),
                    );
                    return Ok(());
                }
            };
            once(cx, &mut opts.task_support, variant, meta, WHERE);
        }
        "skip" if in_service => once(cx, &mut opts.skip, meta.path.span_of(), meta, WHERE),
        "skip" => {
            cx.error_spanned_by(
                &meta.path,
                "`skip` applies to a method of a #[tool_service] impl: remove #[tool] instead",
            );
        }
        "description" => {
            cx.error_spanned_by(
                &meta.path,
                "the description is the function's doc comment: write it as `///` lines above the function",
            );
            skip_value(meta)?;
        }
        other => {
            cx.error_spanned_by(
                &meta.path,
                format!("unknown #[tool] option `{other}`; the options are {TOOL_OPTIONS}"),
            );
            skip_value(meta)?;
        }
    }
    Ok(())
}

fn parse_annotation(meta: &ParseNestedMeta<'_>, opts: &mut AnnotationOptions, cx: &Ctxt) -> syn::Result<()> {
    const WHERE: &str = "annotations(...)";
    let name = key(meta);
    match name.as_str() {
        "read_only" | "additive" | "destructive" => {
            let base = match name.as_str() {
                "read_only" => "read_only",
                "additive" => "additive",
                _ => "destructive",
            };
            if let Some((first, _)) = opts.base {
                cx.error_spanned_by(
                    &meta.path,
                    format!("`{first}` and `{base}` contradict each other: a tool is one of read_only, additive or destructive"),
                );
            } else {
                opts.base = Some((base, meta.path.span_of()));
            }
        }
        "idempotent" => once(cx, &mut opts.idempotent, flag(meta)?, meta, WHERE),
        "open_world" => once(cx, &mut opts.open_world, flag(meta)?, meta, WHERE),
        "title" => once(cx, &mut opts.title, meta.value()?.parse()?, meta, WHERE),
        other => {
            cx.error_spanned_by(
                &meta.path,
                format!("unknown annotation `{other}`; the annotations are {ANNOTATION_OPTIONS}"),
            );
            skip_value(meta)?;
        }
    }
    Ok(())
}

/// Reads and removes `#[arg(...)]` attributes from a parameter's attributes.
pub(crate) fn take_arg_options(attrs: &mut Vec<syn::Attribute>, cx: &Ctxt) -> ArgOptions {
    let mut opts = ArgOptions::default();
    attrs.retain(|attr| {
        if !attr.path().is_ident("arg") {
            return true;
        }
        if opts.span.is_some() {
            cx.error_spanned_by(attr, "one #[arg(...)] per parameter: put every option in the first");
        }
        opts.span.get_or_insert(syn::spanned::Spanned::span(attr.path()));
        if let Err(e) = attr.parse_nested_meta(|meta| parse_arg_option(&meta, &mut opts, cx)) {
            cx.syn_error(e);
        }
        false
    });
    opts
}

fn parse_arg_option(meta: &ParseNestedMeta<'_>, opts: &mut ArgOptions, cx: &Ctxt) -> syn::Result<()> {
    const WHERE: &str = "#[arg(...)]";
    match key(meta).as_str() {
        "default" => once(cx, &mut opts.default, meta.value()?.parse()?, meta, WHERE),
        "name" | "rename" => once(cx, &mut opts.name, meta.value()?.parse()?, meta, WHERE),
        "one_of" => {
            let span = meta.path.span_of();
            let array: syn::ExprArray = meta.value()?.parse()?;
            once(cx, &mut opts.one_of, (array.elems.into_iter().collect(), span), meta, WHERE);
        }
        "description" | "desc" => {
            cx.error_spanned_by(
                &meta.path,
                "a parameter's description comes from the doc comment's `Args:` section: add \
                 `name: description` under `Args:` in the function's `///` lines",
            );
            skip_value(meta)?;
        }
        other => {
            cx.error_spanned_by(&meta.path, format!("unknown #[arg] option `{other}`; the options are {ARG_OPTIONS}"));
            skip_value(meta)?;
        }
    }
    Ok(())
}

/// Parses `#[tool_service(...)]`'s options.
pub(crate) fn service_options(tokens: TokenStream, cx: &Ctxt) -> ServiceOptions {
    let mut opts = ServiceOptions::default();
    let parser = syn::meta::parser(|meta| {
        const WHERE: &str = "#[tool_service(...)]";
        match key(&meta).as_str() {
            "enabled" => once(cx, &mut opts.enabled, meta.value()?.parse()?, &meta, WHERE),
            "register" => once(cx, &mut opts.register, meta.value()?.parse::<LitBool>()?.value, &meta, WHERE),
            "crate" => once(cx, &mut opts.krate, meta.value()?.parse()?, &meta, WHERE),
            other => {
                cx.error_spanned_by(
                    &meta.path,
                    format!(
                        "unknown #[tool_service] option `{other}`; the options are {SERVICE_OPTIONS} (put \
                         per-tool options in #[tool(...)] on the method)"
                    ),
                );
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = parser.parse2(tokens) {
        cx.syn_error(e);
    }
    opts
}

/// The span of a path, for flags.
trait SpanOf {
    fn span_of(&self) -> Span;
}

impl SpanOf for syn::Path {
    fn span_of(&self) -> Span {
        syn::spanned::Spanned::span(self)
    }
}
