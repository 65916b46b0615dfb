//! Prompts: message templates a client offers its user.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::result::Content;

/// One argument a prompt takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    /// The name.
    pub name: Cow<'static, str>,
    /// What to give.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'static, str>>,
    /// Whether it must be given.
    pub required: bool,
}

/// One message of a rendered prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// The content.
    pub content: Content,
}

impl PromptMessage {
    /// A user message.
    pub fn user(content: Content) -> Self {
        PromptMessage { role: "user", content }
    }

    /// An assistant message.
    pub fn assistant(content: Content) -> Self {
        PromptMessage { role: "assistant", content }
    }
}

/// Renders a prompt from its arguments.
pub type PromptFn =
    Arc<dyn Fn(HashMap<String, String>) -> BoxFuture<'static, Result<Vec<PromptMessage>, String>> + Send + Sync>;

/// A prompt template.
///
/// ```
/// use mirobody_core::{Content, Prompt, PromptMessage};
///
/// let prompt = Prompt::new("greet", "Greets someone.", |args| {
///     let name = args.get("name").cloned().unwrap_or_default();
///     Ok(vec![PromptMessage::user(Content::text(format!("Say hello to {name}.")))])
/// })
/// .argument("name", "Who to greet.", true);
/// assert_eq!(prompt.name(), "greet");
/// ```
#[derive(Clone)]
pub struct Prompt {
    name: Cow<'static, str>,
    title: Option<Cow<'static, str>>,
    description: Cow<'static, str>,
    arguments: Vec<PromptArgument>,
    render: PromptFn,
}

impl Prompt {
    /// A prompt rendered by a synchronous function.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        render: impl Fn(HashMap<String, String>) -> Result<Vec<PromptMessage>, String> + Send + Sync + 'static,
    ) -> Self {
        let render = Arc::new(render);
        Prompt {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            render: Arc::new(move |args| Box::pin(std::future::ready(render(args)))),
        }
    }

    /// Adds an argument.
    pub fn argument(
        mut self,
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        required: bool,
    ) -> Self {
        self.arguments.push(PromptArgument { name: name.into(), description: Some(description.into()), required });
        self
    }

    /// Sets a display title.
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The arguments.
    pub fn arguments(&self) -> &[PromptArgument] {
        &self.arguments
    }

    /// The `prompts/list` entry.
    pub fn to_json(&self) -> serde_json::Value {
        let mut entry = serde_json::Map::new();
        entry.insert("name".into(), self.name.as_ref().into());
        if let Some(t) = &self.title {
            entry.insert("title".into(), t.as_ref().into());
        }
        entry.insert("description".into(), self.description.as_ref().into());
        entry.insert("arguments".into(), serde_json::to_value(&self.arguments).unwrap_or_default());
        serde_json::Value::Object(entry)
    }

    /// Renders the prompt; a missing required argument is an error naming it.
    pub async fn get(&self, args: HashMap<String, String>) -> Result<Vec<PromptMessage>, String> {
        if let Some(missing) = self.arguments.iter().find(|a| a.required && !args.contains_key(a.name.as_ref())) {
            return Err(format!("Missing required argument '{}' for prompt '{}'", missing.name, self.name));
        }
        (self.render)(args).await
    }
}
