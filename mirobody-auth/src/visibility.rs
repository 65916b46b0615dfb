//! Per-agent tool lists: which tools a caller coming through an agent may see and call.

use std::collections::HashSet;
use std::sync::Arc;

use mirobody_core::{Tool, UserInfo};

use crate::config::{AuthConfig, normalize_agent};

/// A tool visibility predicate, of the shape `mirobody_mcp::ToolVisibility` takes: pass
/// `move |user, tool| predicate(user, tool)` to `McpEngineBuilder::visibility`, which hides a
/// tool from `tools/list` and answers `tools/call` for it as an unknown tool.
pub type ToolVisibilityFn = Arc<dyn Fn(&UserInfo, &Tool) -> bool + Send + Sync>;

/// The per-agent allow and deny lists.
///
/// - A caller with no agent sees every tool.
/// - An agent's empty (or absent) allow list allows every tool; a non-empty one allows only
///   the tools it names.
/// - The deny list wins over the allow list.
/// - Agent names match case-insensitively (`baseline` is `ALLOWED_TOOLS_BASELINE`'s agent).
///
/// ```
/// use mirobody_auth::{AuthConfig, ToolFilter, ToolList};
///
/// let mut config = AuthConfig::default();
/// config.allowed_tools.insert("BASELINE".into(), ToolList(vec!["echo".into(), "whoami".into()]));
/// config.disallowed_tools.insert("baseline".into(), ToolList(vec!["whoami".into()]));
/// let filter = ToolFilter::from_config(&config);
/// assert!(filter.allows(Some("Baseline"), "echo"));
/// assert!(!filter.allows(Some("baseline"), "whoami")); // deny wins
/// assert!(!filter.allows(Some("baseline"), "remember")); // not on the allow list
/// assert!(filter.allows(None, "remember")); // no agent, no filtering
/// assert!(filter.allows(Some("deep"), "remember")); // an agent with no lists sees all
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolFilter {
    agents: Vec<AgentLists>,
}

#[derive(Clone, Debug)]
struct AgentLists {
    agent: String,
    allowed: HashSet<String>,
    disallowed: HashSet<String>,
}

impl ToolFilter {
    /// The lists of a configuration (`allowed_tools`, `disallowed_tools`, and flat keys applied
    /// with [`AuthConfig::apply_flat_tool_lists`]).
    pub fn from_config(config: &AuthConfig) -> Self {
        let mut filter = ToolFilter::default();
        for (agent, list) in &config.allowed_tools {
            filter.entry(agent).allowed.extend(list.0.iter().map(|n| n.trim().to_owned()));
        }
        for (agent, list) in &config.disallowed_tools {
            filter.entry(agent).disallowed.extend(list.0.iter().map(|n| n.trim().to_owned()));
        }
        filter.agents.retain(|a| !a.allowed.is_empty() || !a.disallowed.is_empty());
        filter
    }

    fn entry(&mut self, agent: &str) -> &mut AgentLists {
        let agent = normalize_agent(agent);
        let index = match self.agents.iter().position(|a| a.agent == agent) {
            Some(i) => i,
            None => {
                self.agents.push(AgentLists { agent, allowed: HashSet::new(), disallowed: HashSet::new() });
                self.agents.len() - 1
            }
        };
        &mut self.agents[index]
    }

    /// Whether no agent has a list (nothing is ever hidden).
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Whether a caller coming through `agent` may see and call `tool`.
    pub fn allows(&self, agent: Option<&str>, tool: &str) -> bool {
        let Some(agent) = agent else { return true };
        let agent = agent.trim();
        let Some(lists) = self.agents.iter().find(|a| a.agent.eq_ignore_ascii_case(agent)) else { return true };
        (lists.allowed.is_empty() || lists.allowed.contains(tool)) && !lists.disallowed.contains(tool)
    }

    /// Names on any list that are not among `known` (typos, or tools not built in), sorted:
    /// for a warning at start.
    pub fn unknown_tools<'a>(&self, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let known: HashSet<&str> = known.into_iter().collect();
        let mut unknown: Vec<String> = self
            .agents
            .iter()
            .flat_map(|a| a.allowed.iter().chain(&a.disallowed))
            .filter(|name| !known.contains(name.as_str()))
            .cloned()
            .collect();
        unknown.sort();
        unknown.dedup();
        unknown
    }

    /// The filter as a visibility predicate over the caller's agent.
    pub fn into_visibility(self) -> ToolVisibilityFn {
        Arc::new(move |user: &UserInfo, tool: &Tool| self.allows(user.agent(), tool.name()))
    }
}

/// The visibility predicate for a configuration's per-agent lists, or `None` when no agent
/// has a list (so the server keeps its pre-rendered `tools/list` fast path).
pub fn visibility(config: &AuthConfig) -> Option<ToolVisibilityFn> {
    let filter = ToolFilter::from_config(config);
    (!filter.is_empty()).then(|| filter.into_visibility())
}
