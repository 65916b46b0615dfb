//! Change announcements: what `subscriptions/listen` streams (MCP 2026-07-28) carry. A
//! [`ChangeNotifier`] fans each change out to every open stream; a stream forwards only the
//! kinds its client asked for, tagged with its subscription id.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, watch};

use crate::jsonrpc::{self, Id, RpcError};

/// How many changes a stream may fall behind before it is ended (its client listens again and
/// refetches: streams have no replay).
const BACKLOG: usize = 256;

/// A change a listening client may be told about.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The tool list changed (`notifications/tools/list_changed`).
    ToolsListChanged,
    /// The prompt list changed (`notifications/prompts/list_changed`).
    PromptsListChanged,
    /// The resource list changed (`notifications/resources/list_changed`).
    ResourcesListChanged,
    /// A resource's contents changed (`notifications/resources/updated`).
    ResourceUpdated(String),
    /// A task's status changed (`notifications/tasks`): told only to its owner's streams.
    TaskStatus {
        /// Whose task it is (the owner key of its record).
        owner: String,
        /// The task as `tasks/get` gives it (id, status, times; the result or error once it
        /// has ended; the questions while input is required).
        task: Map<String, Value>,
    },
}

/// Announces changes to every open `subscriptions/listen` stream. Cheap to clone; clones
/// announce to the same streams.
///
/// ```
/// use mirobody_mcp::changes::{Change, ChangeNotifier};
///
/// let changes = ChangeNotifier::new();
/// let mut stream = changes.subscribe();
/// changes.tools_changed();
/// assert_eq!(stream.try_recv().unwrap(), Change::ToolsListChanged);
/// ```
#[derive(Clone)]
pub struct ChangeNotifier {
    tx: broadcast::Sender<Change>,
    ending: Arc<watch::Sender<bool>>,
    // Where changes announced here go on to other instances, once an endpoint shares sessions.
    relay: Arc<std::sync::OnceLock<tokio::sync::mpsc::Sender<Change>>>,
}

/// How many changes may wait to be passed to other instances; beyond, they are dropped with a
/// warning rather than held without bound.
const RELAY_BACKLOG: usize = 1024;

impl Default for ChangeNotifier {
    fn default() -> Self {
        ChangeNotifier::new()
    }
}

impl std::fmt::Debug for ChangeNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeNotifier").field("listeners", &self.listeners()).finish()
    }
}

impl ChangeNotifier {
    /// A notifier nobody listens to yet.
    pub fn new() -> Self {
        ChangeNotifier {
            tx: broadcast::channel(BACKLOG).0,
            ending: Arc::new(watch::channel(false).0),
            relay: Arc::default(),
        }
    }

    /// Ends every listen stream gracefully (each gets its final `subscriptions/listen` result),
    /// now and from now on: call it when the server begins to shut down, so open streams do
    /// not hold the shutdown up.
    pub fn end_streams(&self) {
        self.ending.send_replace(true);
    }

    /// Resolves once [`ChangeNotifier::end_streams`] has been called.
    pub async fn ended(&self) {
        let mut ending = self.ending.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = ending.wait_for(|ended| *ended).await;
    }

    /// Announces a change; streams that did not ask for its kind ignore it. With sessions
    /// shared, the streams of the other instances are told too.
    pub fn notify(&self, change: Change) {
        if let Some(relay) = self.relay.get()
            && relay.try_send(change.clone()).is_err()
        {
            tracing::warn!("a change could not be passed to the other instances: too many waiting");
        }
        self.notify_here(change);
    }

    /// Announces a change to this instance's streams only: one another instance announced.
    pub(crate) fn notify_here(&self, change: Change) {
        // An error only means no stream is open: nobody to tell.
        let _ = self.tx.send(change);
    }

    /// The changes announced here from now on, to pass to other instances; `None` when
    /// something takes them already.
    pub(crate) fn relay(&self) -> Option<tokio::sync::mpsc::Receiver<Change>> {
        let (tx, rx) = tokio::sync::mpsc::channel(RELAY_BACKLOG);
        self.relay.set(tx).ok().map(|()| rx)
    }

    /// Announces that the tool list changed.
    pub fn tools_changed(&self) {
        self.notify(Change::ToolsListChanged);
    }

    /// Announces that the prompt list changed.
    pub fn prompts_changed(&self) {
        self.notify(Change::PromptsListChanged);
    }

    /// Announces that the resource list changed.
    pub fn resources_changed(&self) {
        self.notify(Change::ResourcesListChanged);
    }

    /// Announces that the contents of the resource at `uri` changed.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.notify(Change::ResourceUpdated(uri.into()));
    }

    /// Every change announced from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.tx.subscribe()
    }

    /// How many streams are listening.
    pub fn listeners(&self) -> usize {
        self.tx.receiver_count()
    }
}

impl Change {
    /// The change as JSON, to pass between instances.
    pub(crate) fn to_wire(&self) -> Value {
        match self {
            Change::ToolsListChanged => json!({"kind": "tools"}),
            Change::PromptsListChanged => json!({"kind": "prompts"}),
            Change::ResourcesListChanged => json!({"kind": "resources"}),
            Change::ResourceUpdated(uri) => json!({"kind": "resource", "uri": uri}),
            Change::TaskStatus { owner, task } => json!({"kind": "task", "owner": owner, "task": task}),
        }
    }

    /// A change from [`Change::to_wire`]'s JSON; `None` for anything else.
    pub(crate) fn from_wire(wire: &Value) -> Option<Change> {
        let text = |key: &str| wire.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(match wire.get("kind")?.as_str()? {
            "tools" => Change::ToolsListChanged,
            "prompts" => Change::PromptsListChanged,
            "resources" => Change::ResourcesListChanged,
            "resource" => Change::ResourceUpdated(text("uri")?),
            "task" => Change::TaskStatus { owner: text("owner")?, task: wire.get("task")?.as_object()?.clone() },
            _ => return None,
        })
    }
}

/// What one `subscriptions/listen` request asked for (its `notifications` filter). Every kind is
/// opt-in: a stream never carries a kind its client did not ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SubscriptionFilter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: HashSet<String>,
    // The requested URIs in request order, for the acknowledgement.
    uri_list: Vec<String>,
    // Whose task status changes the stream carries: its caller's, when its request negotiated
    // the tasks extension.
    tasks_of: Option<String>,
}

impl SubscriptionFilter {
    /// Reads the `notifications` member of `subscriptions/listen` params.
    pub(crate) fn parse(notifications: Option<&Value>) -> Result<SubscriptionFilter, RpcError> {
        let Some(Value::Object(map)) = notifications else {
            return Err(RpcError::invalid_params(
                "Invalid params for subscriptions/listen: \"notifications\" must be an object",
            ));
        };
        let flag = |key: &str| match map.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(RpcError::invalid_params(format!(
                "Invalid params for subscriptions/listen: \"notifications.{key}\" must be a boolean"
            ))),
        };
        let mut filter = SubscriptionFilter {
            tools: flag("toolsListChanged")?,
            prompts: flag("promptsListChanged")?,
            resources: flag("resourcesListChanged")?,
            ..SubscriptionFilter::default()
        };
        match map.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(uris)) => {
                for uri in uris {
                    let Some(uri) = uri.as_str() else {
                        return Err(RpcError::invalid_params(
                            "Invalid params for subscriptions/listen: \"notifications.resourceSubscriptions\" must \
                             be an array of URIs",
                        ));
                    };
                    if filter.uris.insert(uri.to_owned()) {
                        filter.uri_list.push(uri.to_owned());
                    }
                }
            }
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params for subscriptions/listen: \"notifications.resourceSubscriptions\" must be an array",
                ));
            }
        }
        Ok(filter)
    }

    /// The same filter, carrying the status changes of `owner`'s tasks too.
    pub(crate) fn with_tasks_of(mut self, owner: impl Into<String>) -> Self {
        self.tasks_of = Some(owner.into());
        self
    }

    /// Whether a stream with this filter carries `change`.
    pub(crate) fn wants(&self, change: &Change) -> bool {
        match change {
            Change::ToolsListChanged => self.tools,
            Change::PromptsListChanged => self.prompts,
            Change::ResourcesListChanged => self.resources,
            Change::ResourceUpdated(uri) => self.uris.contains(uri),
            Change::TaskStatus { owner, .. } => self.tasks_of.as_ref() == Some(owner),
        }
    }

    /// The kinds honoured, as the acknowledgement states them (false flags and an empty URI
    /// list are left out).
    pub(crate) fn honored(&self) -> Value {
        let mut honored = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                honored.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.uri_list.is_empty() {
            honored.insert("resourceSubscriptions".into(), json!(self.uri_list));
        }
        Value::Object(honored)
    }
}

/// The `_meta` key that tags a listen stream's notifications with the stream's request id.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The first message of a listen stream: `notifications/subscriptions/acknowledged`.
pub(crate) fn acknowledgement(filter: &SubscriptionFilter, subscription: &Id) -> Vec<u8> {
    let params = json!({"notifications": filter.honored(), "_meta": {SUBSCRIPTION_ID_KEY: subscription}});
    jsonrpc::notification_bytes("notifications/subscriptions/acknowledged", &params)
}

/// The notification telling a listen stream about `change`.
pub(crate) fn change_notification(change: &Change, subscription: &Id) -> Vec<u8> {
    let meta = json!({SUBSCRIPTION_ID_KEY: subscription});
    let (method, params) = match change {
        Change::ToolsListChanged => ("notifications/tools/list_changed", json!({"_meta": meta})),
        Change::PromptsListChanged => ("notifications/prompts/list_changed", json!({"_meta": meta})),
        Change::ResourcesListChanged => ("notifications/resources/list_changed", json!({"_meta": meta})),
        Change::ResourceUpdated(uri) => ("notifications/resources/updated", json!({"uri": uri, "_meta": meta})),
        Change::TaskStatus { task, .. } => {
            let mut params = task.clone();
            params.insert("_meta".into(), meta);
            ("notifications/tasks", Value::Object(params))
        }
    };
    jsonrpc::notification_bytes(method, &params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_carries_only_what_was_asked_for() {
        let filter =
            SubscriptionFilter::parse(Some(&json!({"promptsListChanged": true, "resourceSubscriptions": ["a://x"]})))
                .unwrap();
        assert!(filter.wants(&Change::PromptsListChanged));
        assert!(!filter.wants(&Change::ToolsListChanged));
        assert!(filter.wants(&Change::ResourceUpdated("a://x".into())));
        assert!(!filter.wants(&Change::ResourceUpdated("a://y".into())));
        let task = |owner: &str| Change::TaskStatus { owner: owner.into(), task: Map::new() };
        assert!(!filter.wants(&task("user:ada")), "task changes only when asked for");
        let filter = filter.with_tasks_of("user:ada");
        assert!(filter.wants(&task("user:ada")) && !filter.wants(&task("user:bob")), "and only the caller's");
        assert_eq!(filter.honored(), json!({"promptsListChanged": true, "resourceSubscriptions": ["a://x"]}));
    }

    #[test]
    fn a_filter_must_be_an_object_of_the_right_types() {
        assert!(SubscriptionFilter::parse(None).is_err());
        assert!(SubscriptionFilter::parse(Some(&json!([]))).is_err());
        assert!(SubscriptionFilter::parse(Some(&json!({"toolsListChanged": "yes"}))).is_err());
        assert!(SubscriptionFilter::parse(Some(&json!({"resourceSubscriptions": [1]}))).is_err());
        assert_eq!(SubscriptionFilter::parse(Some(&json!({}))).unwrap().honored(), json!({}));
    }

    #[test]
    fn notifications_are_tagged_with_the_subscription() {
        let id = Id::Number(7.into());
        let message: Value = serde_json::from_slice(&change_notification(&Change::ToolsListChanged, &id)).unwrap();
        assert_eq!(message["method"], "notifications/tools/list_changed");
        assert_eq!(message["params"]["_meta"][SUBSCRIPTION_ID_KEY], 7);
        let filter = SubscriptionFilter::parse(Some(&json!({"toolsListChanged": true}))).unwrap();
        let ack: Value = serde_json::from_slice(&acknowledgement(&filter, &id)).unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}));
        assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID_KEY], 7);
    }
}
