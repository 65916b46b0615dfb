//! `#[tool_service]` on an impl block: each public method is a tool, as in the Python engine's
//! `...Service` classes. Private methods are helpers, and `#[tool(skip)]` leaves out a public one.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{ImplItem, ImplItemFn, Item, ItemImpl, Visibility};

use crate::ctxt::Ctxt;
use crate::expand::{self, Inherited, Target};
use crate::{ast, attr, check};

fn is_tool_attr(attr: &syn::Attribute) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == "tool")
}

/// Removes `#[tool]`/`#[tool(..)]` from a method and parses it.
fn take_tool_options(method: &mut ImplItemFn, cx: &Ctxt) -> (attr::ToolOptions, bool) {
    let mut opts = None;
    let mut marked = false;
    method.attrs.retain(|a| {
        if !is_tool_attr(a) {
            return true;
        }
        if marked {
            cx.error_spanned_by(a, "one #[tool(...)] per method: put every option in the first");
        }
        marked = true;
        let tokens = match &a.meta {
            syn::Meta::List(list) => list.tokens.clone(),
            _ => TokenStream::new(),
        };
        opts.get_or_insert_with(|| attr::tool_options(tokens, cx, true));
        false
    });
    (opts.unwrap_or_default(), marked)
}

/// Which methods are tools: public ones, unless skipped.
fn is_tool(method: &ImplItemFn, opts: &attr::ToolOptions) -> bool {
    !matches!(method.vis, Visibility::Inherited) && opts.skip.is_none()
}

fn check_impl(item: &ItemImpl, cx: &Ctxt) {
    if let Some((_, path, _)) = &item.trait_ {
        cx.error_spanned_by(
            path,
            "#[tool_service] applies to an inherent impl (`impl MyService { .. }`), not a trait impl",
        );
    }
    if !item.generics.params.is_empty() {
        cx.error_spanned_by(&item.generics, "a tool service cannot be generic: tools are declared once, for one type");
    }
}

/// The impl as written (minus the helper attributes), a second impl with each tool's builder
/// and `tools()`, and the registrations.
pub(crate) fn expand(attr: TokenStream, item: &mut Item) -> syn::Result<TokenStream> {
    let Item::Impl(item) = item else {
        return Err(syn::Error::new_spanned(
            &*item,
            "#[tool_service] applies to an impl block; on a function use #[tool]",
        ));
    };
    let cx = Ctxt::new();
    let service = attr::service_options(attr, &cx);
    check_impl(item, &cx);
    let inherited = Inherited { enabled: service.enabled.as_ref(), krate: service.krate.as_ref() };
    let self_ty = item.self_ty.clone();
    let mut tools = Vec::new();
    for impl_item in &mut item.items {
        let ImplItem::Fn(method) = impl_item else { continue };
        let (opts, marked) = take_tool_options(method, &cx);
        if !is_tool(method, &opts) {
            // Still strip `#[arg]`, which is not a real attribute.
            for input in &mut method.sig.inputs {
                if let syn::FnArg::Typed(pat_type) = input {
                    let arg_opts = attr::take_arg_options(&mut pat_type.attrs, &cx);
                    if let Some(span) = arg_opts.span.filter(|_| opts.skip.is_none()) {
                        cx.error_at(span, "#[arg] on a private method, which is not a tool: make the method `pub`");
                    }
                }
            }
            if marked && opts.skip.is_none() {
                cx.error_spanned_by(
                    &method.sig.ident,
                    format!(
                        "`{}` is private, so it is not a tool: make it `pub` to expose it, or remove #[tool]",
                        method.sig.ident
                    ),
                );
            }
            continue;
        }
        let mut tool = ast::read(&mut method.sig, &method.attrs, opts, true, &cx);
        check::check(&mut tool, &cx);
        tools.push((tool, method.vis.clone(), method.sig.inputs.first().cloned()));
    }
    cx.check()?;

    let krate = expand::krate(service.krate.as_ref());
    let p = quote!(#krate::__private);
    let builders =
        tools.iter().map(|(tool, vis, _)| expand::builder(tool, vis, Target::Method { self_ty: &self_ty }, &inherited));
    let builder_idents: Vec<_> = tools.iter().map(|(tool, _, _)| expand::builder_ident(&tool.ident)).collect();
    let instance = tools.iter().find(|(tool, _, _)| tool.takes_self).map(|(_, _, receiver)| {
        let span = receiver.as_ref().map_or_else(proc_macro2::Span::call_site, syn::spanned::Spanned::span);
        let default = quote_spanned!(span=> <#self_ty as ::core::default::Default>::default);
        quote! {
            /// The one instance of the service that its `&self` tools share, made with `Default`.
            #[doc(hidden)]
            fn __mirobody_service() -> &'static #self_ty {
                static SERVICE: ::std::sync::OnceLock<#self_ty> = ::std::sync::OnceLock::new();
                SERVICE.get_or_init(#default)
            }
        }
    });
    let registrations = tools.iter().filter(|(tool, _, _)| tool.opts.register.or(service.register) != Some(false)).map(
        |(tool, _, _)| {
            let builder = expand::builder_ident(&tool.ident);
            expand::registration(&expand::tool_krate(tool, &inherited), quote!(<#self_ty>::#builder))
        },
    );
    Ok(quote! {
        #item
        impl #self_ty {
            #(#builders)*

            /// Every tool of this service, in declaration order. Generated by `#[tool_service]`.
            #[must_use]
            pub fn tools() -> ::std::vec::Vec<#p::Tool> {
                ::std::vec![#(Self::#builder_idents()),*]
            }

            #instance
        }
        const _: () = {
            #(#registrations)*
        };
    })
}

/// On errors: the impl (so callers of its methods still compile), stub builders, and the errors.
pub(crate) fn dummy(item: &Item, errors: syn::Error) -> TokenStream {
    let errors = errors.into_compile_error();
    let Item::Impl(imp) = item else {
        return quote!(#item #errors);
    };
    if imp.trait_.is_some() {
        return quote!(#item #errors);
    }
    let self_ty = &imp.self_ty;
    let stubs = imp.items.iter().filter_map(|i| match i {
        ImplItem::Fn(m) if !matches!(m.vis, Visibility::Inherited) => {
            let vis = &m.vis;
            let builder = expand::builder_ident(&m.sig.ident);
            Some(quote! {
                #vis fn #builder() -> ::mirobody_core::__private::Tool { ::core::unreachable!() }
            })
        }
        _ => None,
    });
    quote! {
        #item
        #[allow(dead_code, unreachable_code, missing_docs)]
        impl #self_ty {
            #(#stubs)*
            pub fn tools() -> ::std::vec::Vec<::mirobody_core::__private::Tool> { ::core::unreachable!() }
        }
        #errors
    }
}
