//! Repository checks of the mirobody workspace, run as the tests of this crate
//! (`tests/tidy.rs`, `tests/public_api.rs`); this library is the public API lister they use,
//! and the import graph of a crate's files ([`imports`], [`mutual_imports`]; see
//! `import_graph.rs` for what counts as an import).
//!
//! [`public_api`] reads a library crate's source with `syn`, from `src/lib.rs` through every
//! `mod` declaration, and lists what a dependent can name, one sorted line per item:
//!
//! ```text
//! mirobody_core: pub use registry::Registry;
//! mirobody_core::registry: pub struct Registry /* private fields */
//! mirobody_core::registry::Registry: impl Registry { pub fn get(&self, name: &str) -> Option<&Tool> }
//! ```
//!
//! Each line starts with the path of the module that defines the item (for a trait's items, an
//! enum's variants, a struct's fields and an inherent impl's functions, that path and the type's
//! name). What is listed:
//!
//! - `pub mod`s and `pub use`s (one line per imported name) of public modules;
//! - `pub` functions (signature), structs (then each `pub` field), unions, enums (then each
//!   variant), traits (then each item, `{ .. }` marking a provided one), consts and statics
//!   (type), type aliases (definition), and `#[macro_export]` macros (name, at the crate root);
//! - of each public type, the `pub fn`s and `pub const`s of its inherent `impl` blocks.
//!
//! An item is public if its module is reachable from the crate root through `pub mod`s, or if
//! a `pub use` in such a module re-exports it (then it is listed where it is defined, and the
//! `pub use` line says where it is named). `pub(crate)` and other restricted items, and
//! everything under `#[cfg(test)]` or `#[doc(hidden)]`, are left out. Non-test `#[cfg]`s on an
//! item are written at the front of its line.
//!
//! Limits: this is the source as written, not as compiled. Items made by macros (derives,
//! attribute macros, `macro_rules!` invocations) are not seen, nor are trait implementations;
//! types are printed as the source spells them, not by their full path; a `pub use` of
//! another crate is listed but not followed.

mod import_graph;
mod modules;
mod render;
mod resolve;

pub use crate::import_graph::{Imports, imports, mutual_imports};

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use quote::quote;
use syn::{Fields, ImplItem, Item, TraitItem, Type, Visibility};

use crate::modules::{ModuleTree, cfg_attrs, is_macro_export, is_non_exhaustive, is_skipped};
use crate::render::tokens;
use crate::resolve::{Resolver, Target, item_attrs, item_name, use_leaves};

/// The workspace's root folder (this crate's parent), for the repository tests.
pub fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// The public API of the library crate `crate_name` (a package name such as `mirobody-core`)
/// whose package directory is `crate_dir`, as sorted, deduplicated lines.
///
/// Fails if a source file cannot be read or parsed, or a declared module has no file.
pub fn public_api(crate_name: &str, crate_dir: &Path) -> Result<Vec<String>, String> {
    let lib_name = crate_name.replace('-', "_");
    let tree = ModuleTree::load(&lib_name, &crate_dir.join("src").join("lib.rs"))?;
    let resolver = Resolver::new(&tree);
    let mut lister = Lister::new(&resolver);
    for index in 0..tree.modules.len() {
        lister.module(index);
    }
    let lines: BTreeSet<String> = lister.lines.into_iter().collect();
    Ok(lines.into_iter().collect())
}

struct Lister<'a> {
    tree: &'a ModuleTree,
    resolver: &'a Resolver<'a>,
    public_modules: Vec<bool>,
    exported: BTreeSet<(usize, String)>,
    lines: Vec<String>,
}

impl<'a> Lister<'a> {
    fn new(resolver: &'a Resolver<'a>) -> Self {
        let (public_modules, exported) = resolver.public_parts();
        Lister { tree: resolver.tree, resolver, public_modules, exported, lines: Vec::new() }
    }

    /// Whether the item `name` of module `module` (declared `pub`) can be named from outside.
    fn is_public(&self, module: usize, name: &str) -> bool {
        self.public_modules[module] || self.exported.contains(&(module, name.to_owned()))
    }

    fn push(&mut self, prefix: &str, attrs: &[syn::Attribute], body: String) {
        let mut line = format!("{prefix}: ");
        for attr in cfg_attrs(attrs) {
            line.push_str(&tokens(attr));
            line.push(' ');
        }
        line.push_str(&body);
        self.lines.push(line);
    }

    fn module(&mut self, index: usize) {
        let module = &self.tree.modules[index];
        let path = module.display_path();
        let crate_root = self.tree.modules[0].display_path();
        if self.public_modules[index] {
            for (name, &child) in &module.children {
                if self.tree.modules[child].declared_pub {
                    self.lines.push(format!("{path}: pub mod {name}"));
                }
            }
        }
        for item in &module.items {
            let attrs = item_attrs(item);
            if is_skipped(attrs) {
                continue;
            }
            match item {
                Item::Impl(imp) => self.inherent_impl(index, imp),
                Item::Macro(mac) if is_macro_export(attrs) => {
                    if let Some(name) = &mac.ident {
                        self.push(&crate_root, attrs, format!("macro_rules! {name}"));
                    }
                }
                // A `pub use` in a private module shows only where a public one names its items.
                Item::Use(use_item) if matches!(use_item.vis, Visibility::Public(_)) && self.public_modules[index] => {
                    for leaf in use_leaves(use_item) {
                        self.push(&path, attrs, format!("pub use {};", leaf.render()));
                    }
                }
                _ if resolve::is_pub(item) => {
                    if let Some(name) = item_name(item)
                        && self.is_public(index, &name)
                    {
                        self.item(&path, item);
                    }
                }
                _ => {}
            }
        }
    }

    /// The lines of one public item defined in the module at `path`.
    fn item(&mut self, path: &str, item: &Item) {
        let attrs = item_attrs(item);
        let non_exhaustive = if is_non_exhaustive(attrs) { "#[non_exhaustive] " } else { "" };
        match item {
            Item::Fn(f) => {
                let vis = &f.vis;
                let sig = signature(&f.sig);
                self.push(path, attrs, tokens(&quote!(#vis #sig)));
            }
            Item::Const(c) => {
                let (vis, ident, ty) = (&c.vis, &c.ident, &c.ty);
                self.push(path, attrs, tokens(&quote!(#vis const #ident: #ty)));
            }
            Item::Static(s) => {
                let (vis, mutability, ident, ty) = (&s.vis, &s.mutability, &s.ident, &s.ty);
                self.push(path, attrs, tokens(&quote!(#vis static #mutability #ident: #ty)));
            }
            Item::Type(t) => {
                let (vis, ident, generics, ty) = (&t.vis, &t.ident, &t.generics, &t.ty);
                let where_clause = &generics.where_clause;
                self.push(path, attrs, tokens(&quote!(#vis type #ident #generics #where_clause = #ty)));
            }
            Item::TraitAlias(t) => {
                let (vis, ident, generics, bounds) = (&t.vis, &t.ident, &t.generics, &t.bounds);
                self.push(path, attrs, tokens(&quote!(#vis trait #ident #generics = #bounds)));
            }
            Item::Struct(s) => {
                let (vis, ident, generics) = (&s.vis, &s.ident, &s.generics);
                let where_clause = &generics.where_clause;
                let header = tokens(&quote!(#vis struct #ident #generics #where_clause));
                let shape = match &s.fields {
                    Fields::Named(_) => "",
                    Fields::Unnamed(_) => "(..)",
                    Fields::Unit => ";",
                };
                let private = s.fields.iter().any(|f| !matches!(f.vis, Visibility::Public(_)));
                let note = if private { " /* private fields */" } else { "" };
                self.push(path, attrs, format!("{non_exhaustive}{header}{shape}{note}"));
                self.fields(&format!("{path}::{ident}"), &s.fields);
            }
            Item::Union(u) => {
                let (vis, ident, generics) = (&u.vis, &u.ident, &u.generics);
                let where_clause = &generics.where_clause;
                let header = tokens(&quote!(#vis union #ident #generics #where_clause));
                self.push(path, attrs, format!("{non_exhaustive}{header}"));
                let fields = Fields::Named(u.fields.clone());
                self.fields(&format!("{path}::{ident}"), &fields);
            }
            Item::Enum(e) => {
                let (vis, ident, generics) = (&e.vis, &e.ident, &e.generics);
                let where_clause = &generics.where_clause;
                let header = tokens(&quote!(#vis enum #ident #generics #where_clause));
                self.push(path, attrs, format!("{non_exhaustive}{header}"));
                let prefix = format!("{path}::{ident}");
                for variant in e.variants.iter().filter(|v| !is_skipped(&v.attrs)) {
                    let marker = if is_non_exhaustive(&variant.attrs) { "#[non_exhaustive] " } else { "" };
                    let mut bare = variant.clone();
                    bare.attrs.clear();
                    bare.fields.iter_mut().for_each(|f| f.attrs.clear());
                    self.push(&prefix, &variant.attrs, format!("{marker}{}", tokens(&bare)));
                }
            }
            Item::Trait(t) => self.trait_item(path, t),
            _ => {}
        }
    }

    /// One line per `pub` field, named `pub name: Type` or, in a tuple struct, `pub 0: Type`.
    fn fields(&mut self, prefix: &str, fields: &Fields) {
        for (position, field) in fields.iter().enumerate() {
            if !matches!(field.vis, Visibility::Public(_)) || is_skipped(&field.attrs) {
                continue;
            }
            let name = field.ident.as_ref().map_or_else(|| position.to_string(), ToString::to_string);
            self.push(prefix, &field.attrs, format!("pub {name}: {}", tokens(&field.ty)));
        }
    }

    fn trait_item(&mut self, path: &str, t: &syn::ItemTrait) {
        let (vis, unsafety, auto, ident, generics) = (&t.vis, &t.unsafety, &t.auto_token, &t.ident, &t.generics);
        let (colon, supertraits, where_clause) = (&t.colon_token, &t.supertraits, &generics.where_clause);
        let header = quote!(#vis #unsafety #auto trait #ident #generics #colon #supertraits #where_clause);
        self.push(path, &t.attrs, tokens(&header));
        let prefix = format!("{path}::{ident}");
        for member in &t.items {
            let (attrs, body) = match member {
                TraitItem::Fn(f) => {
                    let sig = signature(&f.sig);
                    let end = if f.default.is_some() { " { .. }" } else { ";" };
                    (&f.attrs, format!("{}{end}", tokens(&sig)))
                }
                TraitItem::Type(ty) => {
                    let (ident, generics, colon, bounds) = (&ty.ident, &ty.generics, &ty.colon_token, &ty.bounds);
                    let default = ty.default.as_ref().map(|(_, d)| format!(" = {}", tokens(d))).unwrap_or_default();
                    (&ty.attrs, format!("{}{default};", tokens(&quote!(type #ident #generics #colon #bounds))))
                }
                TraitItem::Const(c) => {
                    let (ident, ty) = (&c.ident, &c.ty);
                    let default = if c.default.is_some() { " = .." } else { "" };
                    (&c.attrs, format!("{}{default};", tokens(&quote!(const #ident: #ty))))
                }
                _ => continue,
            };
            if !is_skipped(attrs) {
                self.push(&prefix, attrs, body);
            }
        }
    }

    /// The `pub fn`s and `pub const`s of an inherent impl in module `module`, if its type is public.
    fn inherent_impl(&mut self, module: usize, imp: &syn::ItemImpl) {
        if imp.trait_.is_some() {
            return;
        }
        let Some((owner, name)) = self.impl_owner(module, &imp.self_ty) else { return };
        if !self.is_public(owner, &name) {
            return;
        }
        let prefix = format!("{}::{name}", self.tree.modules[owner].display_path());
        let (generics, self_ty) = (&imp.generics, &imp.self_ty);
        let where_clause = &generics.where_clause;
        let header = tokens(&quote!(impl #generics #self_ty #where_clause));
        for member in &imp.items {
            let (attrs, body) = match member {
                ImplItem::Fn(f) if matches!(f.vis, Visibility::Public(_)) => {
                    let (vis, sig) = (&f.vis, signature(&f.sig));
                    (&f.attrs, tokens(&quote!(#vis #sig)))
                }
                ImplItem::Const(c) if matches!(c.vis, Visibility::Public(_)) => {
                    let (vis, ident, ty) = (&c.vis, &c.ident, &c.ty);
                    (&c.attrs, tokens(&quote!(#vis const #ident: #ty)))
                }
                _ => continue,
            };
            if is_skipped(attrs) {
                continue;
            }
            let mut all_attrs = imp.attrs.clone();
            all_attrs.extend(attrs.iter().cloned());
            self.push(&prefix, &all_attrs, format!("{header} {{ {body} }}"));
        }
    }

    /// The module and name of the type an inherent impl is for: a type of that name defined or
    /// imported in the impl's module, else the crate's only type of that name.
    fn impl_owner(&self, module: usize, self_ty: &Type) -> Option<(usize, String)> {
        let Type::Path(type_path) = self_ty else { return None };
        if type_path.qself.is_some() {
            return None;
        }
        let segments: Vec<String> = type_path.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let (last, init) = segments.split_last()?;
        let scopes = if init.is_empty() {
            vec![module]
        } else {
            self.resolver.resolve_module_path(module, init, type_path.path.leading_colon.is_some())
        };
        let found: Vec<(usize, String)> = scopes
            .into_iter()
            .flat_map(|scope| self.resolver.lookup(scope, last))
            .filter_map(|target| match target {
                Target::Item(m, name) if self.defines_type(m, &name) => Some((m, name)),
                _ => None,
            })
            .collect();
        if let [one] = found.as_slice() {
            return Some(one.clone());
        }
        if !found.is_empty() || !init.is_empty() {
            return None;
        }
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        for (index, m) in self.tree.modules.iter().enumerate() {
            for item in &m.items {
                if let Some(name) = item_name(item)
                    && name == *last
                    && is_type(item)
                {
                    by_name.entry(last.as_str()).or_default().push(index);
                }
            }
        }
        match by_name.get(last.as_str()).map(Vec::as_slice) {
            Some([one]) => Some((*one, last.clone())),
            _ => None,
        }
    }

    fn defines_type(&self, module: usize, name: &str) -> bool {
        self.tree.modules[module].items.iter().any(|item| is_type(item) && item_name(item).as_deref() == Some(name))
    }
}

fn is_type(item: &Item) -> bool {
    matches!(item, Item::Struct(_) | Item::Enum(_) | Item::Union(_) | Item::Type(_))
}

/// A signature without what is not part of the API: attributes on parameters, and `mut` on
/// a parameter's binding.
fn signature(sig: &syn::Signature) -> syn::Signature {
    let mut sig = sig.clone();
    for input in &mut sig.inputs {
        match input {
            syn::FnArg::Receiver(receiver) => {
                receiver.attrs.clear();
                // `mut self` (but not the `mut` of `&mut self`).
                if receiver.reference.is_none() {
                    receiver.mutability = None;
                }
            }
            syn::FnArg::Typed(typed) => {
                typed.attrs.clear();
                if let syn::Pat::Ident(ident) = typed.pat.as_mut() {
                    ident.mutability = None;
                    ident.by_ref = None;
                }
            }
        }
    }
    sig
}
