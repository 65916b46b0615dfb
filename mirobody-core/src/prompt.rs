//! Prompts: message templates a client offers its user.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::context::ToolContext;
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

/// Why a prompt could not be rendered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// A required argument was not given.
    #[error("Missing required argument '{argument}' for prompt '{prompt}'")]
    MissingArgument {
        /// The prompt's name.
        prompt: String,
        /// The argument's name.
        argument: String,
    },
    /// The prompt's own function refused; its message is for the client.
    #[error("{message}")]
    Render {
        /// The prompt's name.
        prompt: String,
        /// What the function said.
        message: String,
    },
}

/// Renders a prompt from its arguments.
pub type PromptFn =
    Arc<dyn Fn(HashMap<String, String>) -> BoxFuture<'static, Result<Vec<PromptMessage>, String>> + Send + Sync>;

/// Renders a prompt from its arguments and the call's context: for a prompt that asks the
/// client something (through [`ToolContext::request`]) or reads a backend.
pub type ContextPromptFn = Arc<
    dyn for<'a> Fn(HashMap<String, String>, &'a ToolContext<'a>) -> BoxFuture<'a, Result<Vec<PromptMessage>, String>>
        + Send
        + Sync,
>;

#[derive(Clone)]
enum Render {
    Plain(PromptFn),
    WithContext(ContextPromptFn),
}

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
    render: Render,
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
            render: Render::Plain(Arc::new(move |args| Box::pin(std::future::ready(render(args))))),
        }
    }

    /// A prompt rendered by an async function that also gets the call's [`ToolContext`], so it
    /// can ask the client (an elicitation, say) the way a tool does: on MCP 2026-07-28 the
    /// question becomes an `input_required` result of `prompts/get`, and the function runs
    /// again with the answer, so it must ask deterministically.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mirobody_core::{Content, ContextPromptFn, Prompt, PromptMessage, ToolContext};
    /// use serde_json::json;
    ///
    /// let render: ContextPromptFn = Arc::new(|_args, ctx| {
    ///     Box::pin(async move {
    ///         let topic = match ctx.request("elicitation/create", json!({"message": "Topic?"})).await {
    ///             Ok(answer) => answer["content"]["topic"].as_str().unwrap_or("anything").to_owned(),
    ///             Err(_) => "anything".to_owned(),
    ///         };
    ///         Ok(vec![PromptMessage::user(Content::text(format!("Tell me about {topic}.")))])
    ///     })
    /// });
    /// let prompt = Prompt::with_context("chat", "Asks for a topic first.", render);
    /// let messages = futures::executor::block_on(prompt.get_with(Default::default(), &ToolContext::new())).unwrap();
    /// assert_eq!(messages[0].content, Content::text("Tell me about anything."));
    /// ```
    pub fn with_context(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        render: ContextPromptFn,
    ) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            render: Render::WithContext(render),
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

    /// Renders the prompt; a missing required argument is an error naming it. A prompt made
    /// with [`Prompt::with_context`] gets a context with no backends and no client.
    pub async fn get(&self, args: HashMap<String, String>) -> Result<Vec<PromptMessage>, PromptError> {
        self.get_with(args, &ToolContext::new()).await
    }

    /// Renders the prompt with the call's context (used by prompts made with
    /// [`Prompt::with_context`]; others ignore it); a missing required argument is an error
    /// naming it.
    pub async fn get_with(
        &self,
        args: HashMap<String, String>,
        ctx: &ToolContext<'_>,
    ) -> Result<Vec<PromptMessage>, PromptError> {
        if let Some(missing) = self.arguments.iter().find(|a| a.required && !args.contains_key(a.name.as_ref())) {
            return Err(PromptError::MissingArgument {
                prompt: self.name.to_string(),
                argument: missing.name.to_string(),
            });
        }
        let rendered = match &self.render {
            Render::Plain(render) => render(args).await,
            Render::WithContext(render) => {
                // The context's lifetime parameter is shortened to the borrow's, which the
                // function's higher-ranked signature accepts.
                let ctx: &ToolContext<'_> = ctx;
                render(args, ctx).await
            }
        };
        rendered.map_err(|message| PromptError::Render { prompt: self.name.to_string(), message })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn greet() -> Prompt {
        Prompt::new("greet", "Greets someone.", |args| match args.get("name") {
            Some(name) if name.is_empty() => Err("The name is empty.".to_owned()),
            name => Ok(vec![PromptMessage::user(Content::text(format!("Hello, {}.", name.unwrap())))]),
        })
        .argument("name", "Who to greet.", true)
    }

    #[tokio::test]
    async fn a_missing_argument_is_named_and_says_what_it_said_before() {
        let err = greet().get(HashMap::new()).await.unwrap_err();
        let PromptError::MissingArgument { prompt, argument } = &err else { panic!("{err:?}") };
        assert_eq!((prompt.as_str(), argument.as_str()), ("greet", "name"));
        assert_eq!(err.to_string(), "Missing required argument 'name' for prompt 'greet'");
    }

    #[tokio::test]
    async fn the_functions_own_refusal_keeps_its_message() {
        let args = HashMap::from([("name".to_owned(), String::new())]);
        let err = greet().get(args).await.unwrap_err();
        assert_eq!(err, PromptError::Render { prompt: "greet".into(), message: "The name is empty.".into() });
        assert_eq!(err.to_string(), "The name is empty.");
        let args = HashMap::from([("name".to_owned(), "Ada".to_owned())]);
        assert_eq!(greet().get(args).await.unwrap()[0].content, Content::text("Hello, Ada."));
    }
}
