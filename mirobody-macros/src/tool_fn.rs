//! `#[tool]` on a free function.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Item, ItemFn};

use crate::ctxt::Ctxt;
use crate::expand::{self, Inherited, Target};
use crate::{ast, attr, check};

/// The function as written (minus `#[arg]`), its `<fn>_tool()` builder, and its registration.
pub(crate) fn expand(attr: TokenStream, item: &mut Item) -> syn::Result<TokenStream> {
    let Item::Fn(func) = item else {
        let message = match item {
            Item::Impl(_) => {
                "#[tool] applies to a function; on an impl block use #[tool_service], which makes each \
                              public method a tool"
            }
            _ => "#[tool] applies to a function",
        };
        return Err(syn::Error::new_spanned(&*item, message));
    };
    let cx = Ctxt::new();
    let opts = attr::tool_options(attr, &cx, false);
    let mut tool = ast::read(&mut func.sig, &func.attrs, opts, false, &cx);
    check::check(&mut tool, &cx);
    cx.check()?;

    let inherited = Inherited::default();
    let builder = expand::builder(&tool, &func.vis, Target::Free, &inherited);
    let registration = (tool.opts.register != Some(false)).then(|| {
        let krate = expand::tool_krate(&tool, &inherited);
        let builder = expand::builder_ident(&tool.ident);
        let submit = expand::registration(&krate, quote!(#builder));
        quote!(const _: () = { #submit };)
    });
    Ok(quote! {
        #func
        #builder
        #registration
    })
}

/// On errors: the function (so its callers still compile), a stub builder, and the errors.
pub(crate) fn dummy(item: &Item, errors: syn::Error) -> TokenStream {
    let errors = errors.into_compile_error();
    let Item::Fn(ItemFn { vis, sig, .. }) = item else {
        return quote!(#item #errors);
    };
    let builder = expand::builder_ident(&sig.ident);
    quote! {
        #item
        #[allow(dead_code, unreachable_code, missing_docs)]
        #vis fn #builder() -> ::mirobody_core::__private::Tool {
            ::core::unreachable!()
        }
        #errors
    }
}
