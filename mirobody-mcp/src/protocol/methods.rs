//! The one table of MCP request methods: each name read once into a [`Method`], with the
//! revisions that serve it. Both revisions' routers match on it exhaustively, so a method
//! added here is a compile error in each until that revision answers it or says it does not.

use crate::jsonrpc::{RpcError, code};

/// -32601 for a method this server does not know, or that the request's revision does not serve.
pub(crate) fn method_not_found(name: &str) -> RpcError {
    RpcError::new(code::METHOD_NOT_FOUND, format!("Method not found: {name}"))
}

/// An MCP request method this server knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Initialize,
    Ping,
    ToolsList,
    ToolsCall,
    ResourcesList,
    ResourcesTemplatesList,
    ResourcesRead,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    PromptsList,
    PromptsGet,
    LoggingSetLevel,
    CompletionComplete,
    ServerDiscover,
    SubscriptionsListen,
    TasksGet,
    TasksUpdate,
    TasksCancel,
}

impl Method {
    /// Every method, in the order of their discriminants (`Method as usize` indexes it).
    pub(crate) const ALL: [Method; 18] = [
        Method::Initialize,
        Method::Ping,
        Method::ToolsList,
        Method::ToolsCall,
        Method::ResourcesList,
        Method::ResourcesTemplatesList,
        Method::ResourcesRead,
        Method::ResourcesSubscribe,
        Method::ResourcesUnsubscribe,
        Method::PromptsList,
        Method::PromptsGet,
        Method::LoggingSetLevel,
        Method::CompletionComplete,
        Method::ServerDiscover,
        Method::SubscriptionsListen,
        Method::TasksGet,
        Method::TasksUpdate,
        Method::TasksCancel,
    ];

    /// The method a request names; `None` for one this server does not know.
    pub(crate) fn of(name: &str) -> Option<Method> {
        Some(match name {
            "initialize" => Method::Initialize,
            "ping" => Method::Ping,
            "tools/list" => Method::ToolsList,
            "tools/call" => Method::ToolsCall,
            "resources/list" => Method::ResourcesList,
            "resources/templates/list" => Method::ResourcesTemplatesList,
            "resources/read" => Method::ResourcesRead,
            "resources/subscribe" => Method::ResourcesSubscribe,
            "resources/unsubscribe" => Method::ResourcesUnsubscribe,
            "prompts/list" => Method::PromptsList,
            "prompts/get" => Method::PromptsGet,
            "logging/setLevel" => Method::LoggingSetLevel,
            "completion/complete" => Method::CompletionComplete,
            "server/discover" => Method::ServerDiscover,
            "subscriptions/listen" => Method::SubscriptionsListen,
            "tasks/get" => Method::TasksGet,
            "tasks/update" => Method::TasksUpdate,
            "tasks/cancel" => Method::TasksCancel,
            _ => return None,
        })
    }

    /// Its name on the wire.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::ResourcesList => "resources/list",
            Method::ResourcesTemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::ResourcesSubscribe => "resources/subscribe",
            Method::ResourcesUnsubscribe => "resources/unsubscribe",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::LoggingSetLevel => "logging/setLevel",
            Method::CompletionComplete => "completion/complete",
            Method::ServerDiscover => "server/discover",
            Method::SubscriptionsListen => "subscriptions/listen",
            Method::TasksGet => "tasks/get",
            Method::TasksUpdate => "tasks/update",
            Method::TasksCancel => "tasks/cancel",
        }
    }

    /// Whether the session revisions (2025-11-25 and before) serve it: not the stateless
    /// revision's own methods, nor the tasks extension, which this server serves on 2026-07-28.
    pub(crate) fn in_sessions(self) -> bool {
        !matches!(
            self,
            Method::ServerDiscover
                | Method::SubscriptionsListen
                | Method::TasksGet
                | Method::TasksUpdate
                | Method::TasksCancel
        )
    }

    /// Whether 2026-07-28 serves it: the revision removed the handshake, `ping`, the session's
    /// log level and subscriptions (`subscriptions/listen` replaces them).
    pub(crate) fn stateless(self) -> bool {
        !matches!(
            self,
            Method::Initialize
                | Method::Ping
                | Method::LoggingSetLevel
                | Method::ResourcesSubscribe
                | Method::ResourcesUnsubscribe
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_its_method() {
        for method in Method::ALL {
            assert_eq!(Method::of(method.name()), Some(method), "{method:?}");
            // The metrics index their handles by discriminant.
            assert_eq!(Method::ALL[method as usize], method, "ALL is in discriminant order");
        }
        assert_eq!(Method::of("tools/Call"), None, "names are case-sensitive");
        assert_eq!(Method::of("notifications/cancelled"), None, "notifications are not requests");
    }

    #[test]
    fn the_revisions_serve_what_their_specifications_list() {
        let sessions: Vec<&str> = Method::ALL.iter().filter(|m| m.in_sessions()).map(|m| m.name()).collect();
        let stateless: Vec<&str> = Method::ALL.iter().filter(|m| m.stateless()).map(|m| m.name()).collect();
        assert_eq!(sessions.len(), 13);
        assert!(!sessions.contains(&"server/discover") && sessions.contains(&"logging/setLevel"));
        assert_eq!(
            stateless,
            [
                "tools/list",
                "tools/call",
                "resources/list",
                "resources/templates/list",
                "resources/read",
                "prompts/list",
                "prompts/get",
                "completion/complete",
                "server/discover",
                "subscriptions/listen",
                "tasks/get",
                "tasks/update",
                "tasks/cancel"
            ]
        );
    }
}
