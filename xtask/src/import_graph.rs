//! The imports between the files of a crate, for the check that no two modules import each
//! other (`tests/tidy.rs`, `no_two_modules_import_each_other`).
//!
//! A file imports from another when, outside what is compiled for tests only (`#[cfg(test)]`
//! items and modules), it names something defined in the other file, or the other file's
//! module, by a path that starts in the crate (`crate::`, `super::`, `self::` or a module in
//! scope):
//!
//! - in a `use`, anywhere in the file, its groups, `self`, renames and globs included;
//! - written in code, types or attributes, if it has two segments or more
//!   (`crate::protocol::scan::read_value(..)`, `super::Limits::new()`, `child::f()`).
//!
//! A name is followed through re-exports to where it is defined: if `a/mod.rs` only re-exports
//! `T` from `a/b.rs`, `use crate::a::T` imports from `a/b.rs`, and the `pub use` itself is an
//! import of `a/mod.rs` from `a/b.rs`. A glob imports from the module it names (`use super::*`
//! from the parent's file). A path naming nothing found (an enum variant, an item a macro
//! makes) imports from the deepest item or module it reaches. Declaring a module (`mod x;`)
//! is no import, nor is `pub(in path)`.
//!
//! Limits: paths inside macro invocations (`format!`, `assert!`, `json!`) are tokens and are
//! not read; a `#[cfg]` other than a test-only one is taken as enabled; a glob counts as an
//! import of its module whether or not the file uses a name it brings; and a `use` takes a
//! name in every namespace, visible from the importer or not (a path in code leaves out a
//! module under its last name).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

use syn::visit::{self, Visit};
use syn::{ImplItem, Item, TraitItem};

use crate::modules::{ModuleTree, is_macro_export, is_test_only};
use crate::resolve::{Resolver, Target, item_attrs, use_leaves};

/// The imports of a crate's files: importing file, then imported file, then the paths (as
/// written) that import from it. Files are named by their path under the crate's `src/`, with
/// `/` between folders: `lib.rs`, `protocol/mod.rs`.
pub type Imports = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The imports between the files of the library crate `crate_name` (a package name such as
/// `mirobody-mcp`) whose package directory is `crate_dir`; a file importing from itself is
/// left out.
///
/// Fails if a source file cannot be read or parsed, or a declared module has no file.
pub fn imports(crate_name: &str, crate_dir: &Path) -> Result<Imports, String> {
    let lib_name = crate_name.replace('-', "_");
    let src = crate_dir.join("src");
    let tree = ModuleTree::load_compiled(&lib_name, &src.join("lib.rs"))?;
    let resolver = Resolver::new(&tree);
    let mut imports = Imports::new();
    for (index, module) in tree.modules.iter().enumerate() {
        let mut finder = Finder { resolver: &resolver, module: index, found: Vec::new() };
        for item in &module.items {
            finder.visit_item(item);
        }
        let from = shown(&src, &module.file);
        for (target, written) in finder.found {
            let (Target::Module(m) | Target::Item(m, _)) = target;
            let to = shown(&src, &tree.modules[m].file);
            if to != from {
                imports.entry(from.clone()).or_default().entry(to).or_default().insert(written);
            }
        }
    }
    Ok(imports)
}

/// The pairs of files that import from each other, each pair once, the smaller name first.
pub fn mutual_imports(imports: &Imports) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for (a, imported) in imports {
        for b in imported.keys() {
            if a < b && imports.get(b).is_some_and(|back| back.contains_key(a)) {
                pairs.push((a.clone(), b.clone()));
            }
        }
    }
    pairs
}

/// A file's path under `src`, with `/` between its parts.
fn shown(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let parts: Vec<String> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    parts.join("/")
}

/// Gathers what the items of one module name, with the path that names it.
struct Finder<'a> {
    resolver: &'a Resolver<'a>,
    module: usize,
    found: Vec<(Target, String)>,
}

impl Finder<'_> {
    /// What a path written in the module names: the item or module it resolves to or, if it
    /// resolves to nothing, to what its longest resolving prefix does. A path in code names no
    /// module by its last segment, so a module found under that name (the names of all
    /// namespaces are looked up together) is left out.
    fn named(&self, segments: &[String], in_code: bool) -> Vec<Target> {
        for len in (1..=segments.len()).rev() {
            let mut found = self.resolver.resolve_path(self.module, &segments[..len]);
            if in_code && len == segments.len() {
                found.retain(|target| matches!(target, Target::Item(..)));
            }
            if found.is_empty() {
                continue;
            }
            // A `#[macro_export]` macro is named at the crate root wherever it is written.
            if found == [Target::Module(0)]
                && let Some(name) = segments.get(len)
                && let Some(m) = self.exported_macro(name)
            {
                return vec![Target::Item(m, name.clone())];
            }
            return found;
        }
        Vec::new()
    }

    /// The module that defines the `#[macro_export]` macro `name`, if one does.
    fn exported_macro(&self, name: &str) -> Option<usize> {
        self.resolver.tree.modules.iter().position(|module| {
            module.items.iter().any(|item| {
                matches!(item, Item::Macro(mac) if is_macro_export(&mac.attrs)
                    && mac.ident.as_ref().is_some_and(|ident| ident == name))
            })
        })
    }

    fn add(&mut self, segments: &[String], written: String, in_code: bool) {
        for target in self.named(segments, in_code) {
            self.found.push((target, written.clone()));
        }
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if !is_test_only(item_attrs(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let attrs = match item {
            ImplItem::Const(i) => &i.attrs,
            ImplItem::Fn(i) => &i.attrs,
            ImplItem::Type(i) => &i.attrs,
            ImplItem::Macro(i) => &i.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast TraitItem) {
        let attrs = match item {
            TraitItem::Const(i) => &i.attrs,
            TraitItem::Fn(i) => &i.attrs,
            TraitItem::Type(i) => &i.attrs,
            TraitItem::Macro(i) => &i.attrs,
            _ => return visit::visit_trait_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if item.leading_colon.is_some() {
            return;
        }
        for leaf in use_leaves(item) {
            self.add(&leaf.segments, leaf.render(), false);
        }
    }

    /// `pub(in crate::a)` says who may name an item; it imports nothing.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if path.leading_colon.is_none()
            && segments.len() >= 2
            && !self.resolver.resolve_module_path(self.module, &segments[..1], false).is_empty()
        {
            self.add(&segments, segments.join("::"), true);
        }
        visit::visit_path(self, path);
    }
}
