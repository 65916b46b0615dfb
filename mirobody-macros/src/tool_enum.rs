//! `#[derive(ToolEnum)]`: an enum of unit variants as a string parameter restricted to its
//! values.
//!
//! The values are the variant names, renamed as serde would: `#[serde(rename_all = "..")]` on
//! the enum and `#[serde(rename = "..")]` on a variant are honoured (so the values match what
//! the enum's `Deserialize` accepts), `#[serde(skip)]` and `#[serde(skip_deserializing)]` leave
//! a variant out, and `#[tool_enum(rename_all = "..")]` / `#[tool_enum(rename = "..")]` do the
//! same for an enum that does not derive serde's traits (they win over `serde`'s).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::{Data, DeriveInput, Fields, LitStr};

use crate::ctxt::Ctxt;

const RULES: &str = "\"lowercase\", \"UPPERCASE\", \"PascalCase\", \"camelCase\", \"snake_case\", \"SCREAMING_SNAKE_CASE\", \
     \"kebab-case\", \"SCREAMING-KEBAB-CASE\"";

/// serde's rename rules for variants (which are written in PascalCase).
fn apply_rule(rule: &str, variant: &str) -> Option<String> {
    let snake = || {
        let mut out = String::new();
        for (i, ch) in variant.char_indices() {
            if i > 0 && ch.is_uppercase() {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        }
        out
    };
    Some(match rule {
        "lowercase" => variant.to_ascii_lowercase(),
        "UPPERCASE" => variant.to_ascii_uppercase(),
        "PascalCase" => variant.to_owned(),
        "camelCase" => {
            let mut chars = variant.chars();
            chars.next().map(|c| c.to_ascii_lowercase().to_string() + chars.as_str()).unwrap_or_default()
        }
        "snake_case" => snake(),
        "SCREAMING_SNAKE_CASE" => snake().to_ascii_uppercase(),
        "kebab-case" => snake().replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => snake().to_ascii_uppercase().replace('_', "-"),
        _ => return None,
    })
}

#[derive(Default)]
struct Renames {
    /// From `#[serde(..)]`.
    serde: Option<LitStr>,
    /// From `#[tool_enum(..)]`.
    own: Option<LitStr>,
    skip: bool,
}

impl Renames {
    fn chosen(&self) -> Option<&LitStr> {
        self.own.as_ref().or(self.serde.as_ref())
    }
}

/// Reads `key = "..."` or serde's `key(deserialize = "...")` form.
fn rename_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut found = None;
    meta.parse_nested_meta(|inner| {
        let value: LitStr = inner.value()?.parse()?;
        if inner.path.is_ident("deserialize") {
            found = Some(value);
        }
        Ok(())
    })?;
    Ok(found)
}

/// Skips the value of a serde option this derive does not read.
fn ignore(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::TokenTree>()?;
    }
    Ok(())
}

fn read_attrs(attrs: &[syn::Attribute], key: &str, cx: &Ctxt) -> Renames {
    let mut renames = Renames::default();
    for attr in attrs {
        let own = attr.path().is_ident("tool_enum");
        if !own && !attr.path().is_ident("serde") {
            continue;
        }
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(key) {
                let value = rename_value(&meta)?;
                if own {
                    renames.own = value;
                } else if value.is_some() {
                    renames.serde = value;
                }
            } else if !own
                && key == "rename"
                && (meta.path.is_ident("skip") || meta.path.is_ident("skip_deserializing"))
            {
                renames.skip = true;
            } else if own {
                cx.error_spanned_by(&meta.path, format!("unknown #[tool_enum] option here; the option is `{key}`"));
                ignore(&meta)?;
            } else {
                ignore(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = result {
            // serde's own attributes are serde's business; only report errors in ours.
            if own {
                cx.syn_error(e);
            }
        }
    }
    renames
}

/// `impl Enum { const __MIROBODY_TOOL_ENUM; fn __mirobody_tool_enum_parse }`.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let ident = &input.ident;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            ident,
            "ToolEnum applies to an enum of unit variants (`enum Period { Daily, Weekly }`): a parameter of \
             another type is a string, number, array or object",
        ));
    };
    let cx = Ctxt::new();
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(&input.generics, "a ToolEnum cannot be generic");
    }
    let rule = read_attrs(&input.attrs, "rename_all", &cx);
    let rule = rule.chosen().and_then(|lit| {
        let value = lit.value();
        if apply_rule(&value, "Probe").is_none() {
            cx.error_spanned_by(lit, format!("unknown rename rule \"{value}\"; the rules are {RULES}"));
            return None;
        }
        Some(value)
    });
    if data.variants.is_empty() {
        cx.error_spanned_by(ident, "a ToolEnum needs at least one variant: the model must be able to send something");
    }
    let mut values: Vec<(String, Span)> = Vec::new();
    let mut variants = Vec::new();
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) {
            cx.error_spanned_by(
                &variant.ident,
                format!(
                    "variant `{}` carries data; a ToolEnum's variants are plain names (a string in the schema)",
                    variant.ident
                ),
            );
            continue;
        }
        let renames = read_attrs(&variant.attrs, "rename", &cx);
        if renames.skip && renames.own.is_none() {
            continue;
        }
        let name = variant.ident.to_string();
        let name = name.strip_prefix("r#").unwrap_or(&name);
        let value = match (renames.chosen(), &rule) {
            (Some(lit), _) => lit.value(),
            (None, Some(rule)) => apply_rule(rule, name).unwrap_or_else(|| name.to_owned()),
            (None, None) => name.to_owned(),
        };
        if let Some((_, first)) = values.iter().find(|(v, _)| *v == value) {
            let mut error = syn::Error::new_spanned(&variant.ident, format!("two variants have the value \"{value}\""));
            error.combine(syn::Error::new(*first, "the first is here"));
            cx.syn_error(error);
        }
        values.push((value, variant.ident.span()));
        variants.push(&variant.ident);
    }
    cx.check()?;
    let values: Vec<&String> = values.iter().map(|(v, _)| v).collect();
    Ok(quote! {
        const _: () = {
            #[automatically_derived]
            impl #ident {
                #[doc(hidden)]
                pub const __MIROBODY_TOOL_ENUM: ::core::option::Option<&'static [&'static str]> =
                    ::core::option::Option::Some(&[#(#values),*]);

                #[doc(hidden)]
                pub fn __mirobody_tool_enum_parse(value: &str) -> ::core::option::Option<Self> {
                    match value {
                        #(#values => ::core::option::Option::Some(Self::#variants),)*
                        _ => ::core::option::Option::None,
                    }
                }
            }
        };
    })
}

#[cfg(test)]
mod tests {
    use super::apply_rule;

    #[test]
    fn rename_rules_match_serde() {
        let cases = [
            ("lowercase", "outcome"),
            ("UPPERCASE", "OUTCOME"),
            ("PascalCase", "OutCome"),
            ("camelCase", "outCome"),
            ("snake_case", "out_come"),
            ("SCREAMING_SNAKE_CASE", "OUT_COME"),
            ("kebab-case", "out-come"),
            ("SCREAMING-KEBAB-CASE", "OUT-COME"),
        ];
        for (rule, expected) in cases {
            assert_eq!(apply_rule(rule, "OutCome").as_deref(), Some(expected), "{rule}");
        }
        assert_eq!(apply_rule("Title Case", "OutCome"), None);
    }
}
