//! The module tree of one crate, read from its source files: `src/lib.rs`, then every `mod x;`
//! to `x.rs` or `x/mod.rs` (or its `#[path]`), and every inline `mod x { ... }`.
//!
//! Modules under `#[cfg(test)]` are not read at all, nor, for the public API listing, those
//! under `#[doc(hidden)]` (the import graph reads them: they are compiled).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::{Attribute, Item, Meta};

/// One module of the crate.
pub(crate) struct Module {
    /// The module's path, the crate's name first: `["mirobody_core", "registry"]`.
    pub(crate) path: Vec<String>,
    /// The file the module is written in (for an inline `mod x { ... }`, its enclosing file).
    pub(crate) file: PathBuf,
    /// The enclosing module's index in the tree; `None` for the crate root.
    pub(crate) parent: Option<usize>,
    /// Declared `pub mod` (plain `pub`, not `pub(crate)` or `pub(super)`).
    pub(crate) declared_pub: bool,
    /// The module's items, its child modules taken out (they are in `children`).
    pub(crate) items: Vec<Item>,
    /// Child modules by name.
    pub(crate) children: BTreeMap<String, usize>,
}

impl Module {
    /// The module path as written in a listing line: `mirobody_core::registry`.
    pub(crate) fn display_path(&self) -> String {
        self.path.join("::")
    }
}

/// Every module of a crate; index 0 is the crate root, and a module always comes after its parent.
pub(crate) struct ModuleTree {
    pub(crate) modules: Vec<Module>,
    /// Which items (modules included) the tree and its resolution leave out, by their attributes.
    skip: fn(&[Attribute]) -> bool,
}

impl ModuleTree {
    /// Reads the crate whose root file is `lib_rs`, naming its root module `crate_name`, as
    /// the public API listing sees it: without `#[cfg(test)]` and `#[doc(hidden)]` items.
    pub(crate) fn load(crate_name: &str, lib_rs: &Path) -> Result<ModuleTree, String> {
        Self::load_with(crate_name, lib_rs, is_skipped)
    }

    /// Reads the crate as it is compiled outside tests: without `#[cfg(test)]` items only.
    pub(crate) fn load_compiled(crate_name: &str, lib_rs: &Path) -> Result<ModuleTree, String> {
        Self::load_with(crate_name, lib_rs, is_test_only)
    }

    fn load_with(crate_name: &str, lib_rs: &Path, skip: fn(&[Attribute]) -> bool) -> Result<ModuleTree, String> {
        let mut tree = ModuleTree { modules: Vec::new(), skip };
        let file = parse_file(lib_rs)?;
        let dir = parent_dir(lib_rs);
        let place = Place { file: lib_rs.to_path_buf(), child_dir: dir.clone(), path_dir: dir };
        tree.add(vec![crate_name.to_owned()], None, true, file.items, &place)?;
        Ok(tree)
    }

    /// Whether an item with these attributes is left out of this tree.
    pub(crate) fn skips(&self, attrs: &[Attribute]) -> bool {
        (self.skip)(attrs)
    }

    /// Adds a module, written where `place` says, and, recursively, the modules it declares.
    fn add(
        &mut self,
        path: Vec<String>,
        parent: Option<usize>,
        declared_pub: bool,
        items: Vec<Item>,
        place: &Place,
    ) -> Result<usize, String> {
        let Place { file, child_dir, path_dir } = place;
        let index = self.modules.len();
        self.modules.push(Module {
            path: path.clone(),
            file: file.clone(),
            parent,
            declared_pub,
            items: Vec::new(),
            children: BTreeMap::new(),
        });
        let mut kept = Vec::new();
        for item in items {
            let Item::Mod(module) = item else {
                kept.push(item);
                continue;
            };
            if self.skips(&module.attrs) {
                continue;
            }
            let name = module.ident.to_string();
            let is_pub = matches!(module.vis, syn::Visibility::Public(_));
            let mut child_path = path.clone();
            child_path.push(name.clone());
            let child = match module.content {
                Some((_, inline_items)) => {
                    let dir = child_dir.join(&name);
                    let inline = Place { file: file.clone(), child_dir: dir.clone(), path_dir: dir };
                    self.add(child_path, Some(index), is_pub, inline_items, &inline)?
                }
                None => {
                    let (file, grandchild_dir) = match path_attr(&module.attrs) {
                        // A file named by `#[path]` keeps its own children beside it, as `mod.rs` does.
                        Some(relative) => {
                            let file = path_dir.join(relative);
                            let dir = parent_dir(&file);
                            (file, dir)
                        }
                        None => {
                            let flat = child_dir.join(format!("{name}.rs"));
                            let nested = child_dir.join(&name).join("mod.rs");
                            if flat.is_file() {
                                (flat, child_dir.join(&name))
                            } else if nested.is_file() {
                                (nested, child_dir.join(&name))
                            } else {
                                return Err(format!(
                                    "module `{}::{name}`: neither {} nor {} exists",
                                    path.join("::"),
                                    flat.display(),
                                    nested.display()
                                ));
                            }
                        }
                    };
                    let parsed = parse_file(&file)?;
                    let path_dir = parent_dir(&file);
                    let place = Place { file, child_dir: grandchild_dir, path_dir };
                    self.add(child_path, Some(index), is_pub, parsed.items, &place)?
                }
            };
            self.modules[index].children.insert(name, child);
        }
        self.modules[index].items = kept;
        Ok(index)
    }
}

/// Where a module is written: its file, the folder of its `mod x;` files, and the folder a
/// `#[path]` on such a declaration is relative to.
struct Place {
    file: PathBuf,
    child_dir: PathBuf,
    path_dir: PathBuf,
}

fn parse_file(path: &Path) -> Result<syn::File, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    syn::parse_file(&text).map_err(|e| format!("cannot parse {}: {e}", path.display()))
}

fn parent_dir(file: &Path) -> PathBuf {
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The value of a `#[path = "..."]` attribute.
fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Whether an item is left out of the listing: compiled for tests only, or `#[doc(hidden)]`.
pub(crate) fn is_skipped(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| is_test_cfg(attr) || is_doc_hidden(attr))
}

/// Whether an item is compiled for tests only (`#[cfg(test)]` or the like).
pub(crate) fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(is_test_cfg)
}

fn is_doc_hidden(attr: &Attribute) -> bool {
    match &attr.meta {
        Meta::List(list) if list.path.is_ident("doc") => list
            .tokens
            .clone()
            .into_iter()
            .any(|token| matches!(token, proc_macro2::TokenTree::Ident(ident) if ident == "hidden")),
        _ => false,
    }
}

fn is_test_cfg(attr: &Attribute) -> bool {
    match &attr.meta {
        Meta::List(list) if list.path.is_ident("cfg") => {
            syn::parse2::<Meta>(list.tokens.clone()).is_ok_and(|predicate| only_under_test(&predicate))
        }
        _ => false,
    }
}

/// Whether a cfg predicate can hold only when `test` does: `test`, `all(test, ..)`, or
/// `any(..)` of such predicates.
fn only_under_test(predicate: &Meta) -> bool {
    match predicate {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) => {
            let Ok(inner) = list.parse_args_with(syn::punctuated::Punctuated::<Meta, syn::Token![,]>::parse_terminated)
            else {
                return false;
            };
            if list.path.is_ident("all") {
                inner.iter().any(only_under_test)
            } else if list.path.is_ident("any") {
                !inner.is_empty() && inner.iter().all(only_under_test)
            } else {
                false
            }
        }
        Meta::NameValue(_) => false,
    }
}

/// The item's `#[cfg(...)]` attributes other than test-only ones, each as written
/// (`#[cfg(feature = "macros")]`), for the front of its listing line.
pub(crate) fn cfg_attrs(attrs: &[Attribute]) -> Vec<&Attribute> {
    attrs.iter().filter(|attr| attr.path().is_ident("cfg") && !is_test_cfg(attr)).collect()
}

/// Whether the attributes include `#[non_exhaustive]`.
pub(crate) fn is_non_exhaustive(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| attr.path().is_ident("non_exhaustive"))
}

/// Whether the attributes include `#[macro_export]`.
pub(crate) fn is_macro_export(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| attr.path().is_ident("macro_export"))
}
