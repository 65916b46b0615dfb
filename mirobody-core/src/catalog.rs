//! Registries of resources and prompts, gathered like tools: self-registered or added, kept in a
//! fixed order, duplicates refused.

use std::collections::HashMap;

use crate::prompt::Prompt;
use crate::resource::{Resource, ResourceTemplate};

#[doc(hidden)]
pub enum CatalogItem {
    Resource(fn() -> Resource),
    Template(fn() -> ResourceTemplate),
    Prompt(fn() -> Prompt),
}

#[doc(hidden)]
pub struct CatalogRegistration(pub CatalogItem);

inventory::collect!(CatalogRegistration);

/// A resource URI, template or prompt name registered twice.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("duplicate {kind} '{name}'")]
pub struct DuplicateEntry {
    /// `resource`, `resource template` or `prompt`.
    pub kind: &'static str,
    /// The URI or name.
    pub name: String,
}

/// The resources and resource templates a server offers, in URI order.
#[derive(Clone, Default)]
pub struct ResourceRegistry {
    resources: Vec<Resource>,
    by_uri: HashMap<String, usize>,
    templates: Vec<ResourceTemplate>,
}

impl ResourceRegistry {
    /// Every resource and template registered with `register_resource!` /
    /// `register_resource_template!` in the program, plus `extra`.
    pub fn from_registered(
        extra: Vec<Resource>,
        extra_templates: Vec<ResourceTemplate>,
    ) -> Result<Self, DuplicateEntry> {
        let mut resources = extra;
        let mut templates = extra_templates;
        for registration in inventory::iter::<CatalogRegistration> {
            match registration.0 {
                CatalogItem::Resource(build) => resources.push(build()),
                CatalogItem::Template(build) => templates.push(build()),
                CatalogItem::Prompt(_) => {}
            }
        }
        ResourceRegistry::new(resources, templates)
    }

    /// A registry of exactly these.
    pub fn new(mut resources: Vec<Resource>, mut templates: Vec<ResourceTemplate>) -> Result<Self, DuplicateEntry> {
        resources.sort_by(|a, b| a.info().uri.cmp(&b.info().uri));
        templates.sort_by(|a, b| a.uri_template().cmp(b.uri_template()));
        if let Some(w) = resources.windows(2).find(|w| w[0].info().uri == w[1].info().uri) {
            return Err(DuplicateEntry { kind: "resource", name: w[0].info().uri.to_string() });
        }
        if let Some(w) = templates.windows(2).find(|w| w[0].uri_template() == w[1].uri_template()) {
            return Err(DuplicateEntry { kind: "resource template", name: w[0].uri_template().to_owned() });
        }
        let by_uri = resources.iter().enumerate().map(|(i, r)| (r.info().uri.to_string(), i)).collect();
        Ok(ResourceRegistry { resources, by_uri, templates })
    }

    /// The resources, in URI order.
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// The templates, in order.
    pub fn templates(&self) -> &[ResourceTemplate] {
        &self.templates
    }

    /// The resource with this exact URI.
    pub fn get(&self, uri: &str) -> Option<&Resource> {
        self.by_uri.get(uri).map(|&i| &self.resources[i])
    }

    /// The first template that matches `uri`.
    pub fn template_for(&self, uri: &str) -> Option<&ResourceTemplate> {
        self.templates.iter().find(|t| t.matches(uri).is_some())
    }
}

/// The prompts a server offers, in name order.
#[derive(Clone, Default)]
pub struct PromptRegistry {
    prompts: Vec<Prompt>,
    by_name: HashMap<String, usize>,
}

impl PromptRegistry {
    /// Every prompt registered with `register_prompt!` in the program, plus `extra`.
    pub fn from_registered(extra: Vec<Prompt>) -> Result<Self, DuplicateEntry> {
        let mut prompts = extra;
        for registration in inventory::iter::<CatalogRegistration> {
            if let CatalogItem::Prompt(build) = registration.0 {
                prompts.push(build());
            }
        }
        PromptRegistry::new(prompts)
    }

    /// A registry of exactly these.
    pub fn new(mut prompts: Vec<Prompt>) -> Result<Self, DuplicateEntry> {
        prompts.sort_by(|a, b| a.name().cmp(b.name()));
        if let Some(w) = prompts.windows(2).find(|w| w[0].name() == w[1].name()) {
            return Err(DuplicateEntry { kind: "prompt", name: w[0].name().to_owned() });
        }
        let by_name = prompts.iter().enumerate().map(|(i, p)| (p.name().to_owned(), i)).collect();
        Ok(PromptRegistry { prompts, by_name })
    }

    /// The prompts, in name order.
    pub fn prompts(&self) -> &[Prompt] {
        &self.prompts
    }

    /// A prompt by name.
    pub fn get(&self, name: &str) -> Option<&Prompt> {
        self.by_name.get(name).map(|&i| &self.prompts[i])
    }
}

/// Registers a resource from a `fn() -> Resource` at file scope.
#[macro_export]
macro_rules! register_resource {
    ($build:path) => {
        $crate::__private::inventory::submit! {
            $crate::__private::CatalogRegistration($crate::__private::CatalogItem::Resource($build))
        }
    };
}

/// Registers a resource template from a `fn() -> ResourceTemplate` at file scope.
#[macro_export]
macro_rules! register_resource_template {
    ($build:path) => {
        $crate::__private::inventory::submit! {
            $crate::__private::CatalogRegistration($crate::__private::CatalogItem::Template($build))
        }
    };
}

/// Registers a prompt from a `fn() -> Prompt` at file scope.
#[macro_export]
macro_rules! register_prompt {
    ($build:path) => {
        $crate::__private::inventory::submit! {
            $crate::__private::CatalogRegistration($crate::__private::CatalogItem::Prompt($build))
        }
    };
}
