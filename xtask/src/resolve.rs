//! Name resolution, as far as the listing needs it: what a `use` path or a type's name refers
//! to inside the crate, and so which items and modules the crate's `pub use`s make public.
//!
//! A path that leaves the crate (another crate, the prelude) resolves to nothing; its `pub use`
//! line is still listed.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};

use syn::{Item, UseTree, Visibility};

use crate::modules::ModuleTree;

/// One name a `use` item brings in, its groups flattened: `use a::{b, c as d};` gives two.
pub(crate) struct UseLeaf {
    /// The path, the imported name last (for `a::{self}`, `a`; for a glob, the module's path).
    pub(crate) segments: Vec<String>,
    /// The name it is bound to in the importing module (`as` rename, or the last segment);
    /// `None` for a glob.
    pub(crate) binding: Option<String>,
    /// The path started with `::`.
    pub(crate) leading_colon: bool,
    /// The rename, as written (`as d`); kept apart from `binding` to render the line.
    pub(crate) rename: Option<String>,
}

impl UseLeaf {
    /// The leaf as a `use` path: `a::b as c`, `a::*`.
    pub(crate) fn render(&self) -> String {
        let mut out = if self.leading_colon { String::from("::") } else { String::new() };
        out.push_str(&self.segments.join("::"));
        match (&self.binding, &self.rename) {
            (None, _) => out.push_str(if self.segments.is_empty() { "*" } else { "::*" }),
            (Some(_), Some(rename)) => {
                out.push_str(" as ");
                out.push_str(rename);
            }
            (Some(_), None) => {}
        }
        out
    }
}

/// Flattens a `use` tree into its leaves.
pub(crate) fn use_leaves(item: &syn::ItemUse) -> Vec<UseLeaf> {
    let mut leaves = Vec::new();
    flatten(&item.tree, &mut Vec::new(), item.leading_colon.is_some(), &mut leaves);
    leaves
}

fn flatten(tree: &UseTree, prefix: &mut Vec<String>, leading_colon: bool, out: &mut Vec<UseLeaf>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten(&path.tree, prefix, leading_colon, out);
            prefix.pop();
        }
        UseTree::Name(name) => {
            let ident = name.ident.to_string();
            let segments = if ident == "self" { prefix.clone() } else { with(prefix, ident) };
            let binding = segments.last().cloned();
            out.push(UseLeaf { segments, binding, leading_colon, rename: None });
        }
        UseTree::Rename(rename) => {
            let ident = rename.ident.to_string();
            let segments = if ident == "self" { prefix.clone() } else { with(prefix, ident) };
            let alias = rename.rename.to_string();
            out.push(UseLeaf { segments, binding: Some(alias.clone()), leading_colon, rename: Some(alias) });
        }
        UseTree::Glob(_) => out.push(UseLeaf { segments: prefix.clone(), binding: None, leading_colon, rename: None }),
        UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix, leading_colon, out);
            }
        }
    }
}

fn with(prefix: &[String], last: String) -> Vec<String> {
    let mut segments = prefix.to_vec();
    segments.push(last);
    segments
}

/// What a name refers to inside the crate.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Target {
    /// A module, by index.
    Module(usize),
    /// An item named so in the module of this index (any namespace).
    Item(usize, String),
}

/// The name an item declares, if it declares one the listing can refer to.
pub(crate) fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Resolves names over a module tree, remembering what it found: globs (`use super::*` in a
/// child, `pub use child::*` in its parent) make lookups meet again and again.
pub(crate) struct Resolver<'t> {
    pub(crate) tree: &'t ModuleTree,
    found: RefCell<HashMap<(usize, String), Vec<Target>>>,
    /// The lookups under way, so a cycle of `use`s ends instead of recursing.
    active: RefCell<HashSet<(usize, String)>>,
    /// How many lookups a cycle has cut short; a result computed meanwhile may miss what lies
    /// behind the cut, so it is not remembered.
    cuts: Cell<usize>,
}

impl<'t> Resolver<'t> {
    pub(crate) fn new(tree: &'t ModuleTree) -> Self {
        Resolver { tree, found: RefCell::default(), active: RefCell::default(), cuts: Cell::new(0) }
    }

    /// Everything `name` refers to in module `module`: its child modules, its items and what its
    /// `use`s bring in under that name.
    pub(crate) fn lookup(&self, module: usize, name: &str) -> Vec<Target> {
        let key = (module, name.to_owned());
        if let Some(found) = self.found.borrow().get(&key) {
            return found.clone();
        }
        if !self.active.borrow_mut().insert(key.clone()) {
            self.cuts.set(self.cuts.get() + 1);
            return Vec::new();
        }
        let cuts_before = self.cuts.get();
        let found = self.lookup_uncached(module, name);
        self.active.borrow_mut().remove(&key);
        if self.cuts.get() == cuts_before {
            self.found.borrow_mut().insert(key, found.clone());
        }
        found
    }

    fn lookup_uncached(&self, module: usize, name: &str) -> Vec<Target> {
        let m = &self.tree.modules[module];
        let mut found = Vec::new();
        if let Some(&child) = m.children.get(name) {
            found.push(Target::Module(child));
        }
        for item in &m.items {
            if self.tree.skips(item_attrs(item)) {
                continue;
            }
            if let Item::Use(use_item) = item {
                for leaf in use_leaves(use_item) {
                    match &leaf.binding {
                        Some(binding) if binding == name => found.extend(self.resolve(module, &leaf)),
                        None => {
                            for target in self.resolve_module_path(module, &leaf.segments, leaf.leading_colon) {
                                found.extend(self.lookup(target, name));
                            }
                        }
                        Some(_) => {}
                    }
                }
            } else if item_name(item).as_deref() == Some(name) {
                found.push(Target::Item(module, name.to_owned()));
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// What a non-glob `use` leaf imports.
    pub(crate) fn resolve(&self, module: usize, leaf: &UseLeaf) -> Vec<Target> {
        if leaf.leading_colon {
            return Vec::new();
        }
        self.resolve_path(module, &leaf.segments)
    }

    /// What a path (without a leading `::`) written in module `module` names, as a `use` path.
    pub(crate) fn resolve_path(&self, module: usize, segments: &[String]) -> Vec<Target> {
        let Some((last, init)) = segments.split_last() else { return Vec::new() };
        if init.is_empty() {
            return match last.as_str() {
                "crate" => vec![Target::Module(0)],
                "self" => vec![Target::Module(module)],
                "super" => self.tree.modules[module].parent.map(Target::Module).into_iter().collect(),
                // A name in scope here (a child module, say); another crate's name finds nothing.
                name => self.lookup(module, name),
            };
        }
        let mut found = Vec::new();
        for parent in self.resolve_module_path(module, init, false) {
            found.extend(self.lookup(parent, last));
        }
        found
    }

    /// The modules a path of module names leads to from `module`, resolved as a 2018 `use`
    /// path: `crate`, `self`, `super`, or a name in scope in `module`.
    pub(crate) fn resolve_module_path(&self, module: usize, segments: &[String], leading_colon: bool) -> Vec<usize> {
        if leading_colon {
            return Vec::new();
        }
        let Some((first, rest)) = segments.split_first() else { return vec![module] };
        let mut current: Vec<usize> = match first.as_str() {
            "crate" => vec![0],
            "self" => vec![module],
            "super" => self.tree.modules[module].parent.into_iter().collect(),
            name => self.modules_named(module, name),
        };
        for segment in rest {
            current = current
                .into_iter()
                .flat_map(|m| match segment.as_str() {
                    "super" => self.tree.modules[m].parent.into_iter().collect(),
                    name => self.modules_named(m, name),
                })
                .collect();
        }
        current.sort_unstable();
        current.dedup();
        current
    }

    fn modules_named(&self, module: usize, name: &str) -> Vec<usize> {
        self.lookup(module, name)
            .into_iter()
            .filter_map(|target| match target {
                Target::Module(m) => Some(m),
                Target::Item(..) => None,
            })
            .collect()
    }

    /// The modules reachable from outside the crate, and the items of other modules that a
    /// `pub use` in such a module makes public. Re-exporting a module makes it (and its own
    /// `pub mod`s) public, so this runs to a fixed point.
    pub(crate) fn public_parts(&self) -> (Vec<bool>, BTreeSet<(usize, String)>) {
        let modules = &self.tree.modules;
        let mut forced = vec![false; modules.len()];
        forced[0] = true;
        let mut exported = BTreeSet::new();
        loop {
            let public = self.public_modules(&forced);
            let mut changed = false;
            for (index, module) in modules.iter().enumerate().filter(|(i, _)| public[*i]) {
                for item in &module.items {
                    let Item::Use(use_item) = item else { continue };
                    if !matches!(use_item.vis, Visibility::Public(_)) || self.tree.skips(&use_item.attrs) {
                        continue;
                    }
                    for leaf in use_leaves(use_item) {
                        let targets = match leaf.binding {
                            Some(_) => self.resolve(index, &leaf),
                            None => self.glob_targets(index, &leaf),
                        };
                        for target in targets {
                            changed |= match target {
                                Target::Module(m) => !std::mem::replace(&mut forced[m], true),
                                Target::Item(m, name) => exported.insert((m, name)),
                            };
                        }
                    }
                }
            }
            if !changed {
                return (public, exported);
            }
        }
    }

    /// What `pub use path::*` makes public: the public items and modules of the glob's module.
    fn glob_targets(&self, module: usize, leaf: &UseLeaf) -> Vec<Target> {
        let mut found = Vec::new();
        for target in self.resolve_module_path(module, &leaf.segments, leaf.leading_colon) {
            let m = &self.tree.modules[target];
            for item in m.items.iter().filter(|item| is_pub(item) && !self.tree.skips(item_attrs(item))) {
                if let Item::Use(use_item) = item {
                    for inner in use_leaves(use_item).iter().filter(|l| l.binding.is_some()) {
                        found.extend(self.resolve(target, inner));
                    }
                } else if let Some(name) = item_name(item) {
                    found.push(Target::Item(target, name));
                }
            }
            let pub_children = m.children.values().filter(|&&c| self.tree.modules[c].declared_pub);
            found.extend(pub_children.map(|&c| Target::Module(c)));
        }
        found
    }

    /// Which modules are public: the forced ones, and every `pub mod` of a public module.
    fn public_modules(&self, forced: &[bool]) -> Vec<bool> {
        let mut public = vec![false; self.tree.modules.len()];
        for (index, module) in self.tree.modules.iter().enumerate() {
            public[index] = forced[index] || module.parent.is_some_and(|p| public[p] && module.declared_pub);
        }
        public
    }
}

/// Whether an item is declared plain `pub`.
pub(crate) fn is_pub(item: &Item) -> bool {
    let vis = match item {
        Item::Const(i) => &i.vis,
        Item::Enum(i) => &i.vis,
        Item::Fn(i) => &i.vis,
        Item::Static(i) => &i.vis,
        Item::Struct(i) => &i.vis,
        Item::Trait(i) => &i.vis,
        Item::TraitAlias(i) => &i.vis,
        Item::Type(i) => &i.vis,
        Item::Union(i) => &i.vis,
        Item::Use(i) => &i.vis,
        Item::Mod(i) => &i.vis,
        _ => return false,
    };
    matches!(vis, Visibility::Public(_))
}

/// An item's attributes (none for the kinds the listing does not read).
pub(crate) fn item_attrs(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}
