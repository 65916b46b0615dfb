//! The `tools` settings: how long a tool call may work.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// The `tools` section. A call past its time limit answers an error result saying so; the
/// time it waits for the client's answers does not count.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ToolSettings {
    /// Seconds a call of a tool that declares no time limit of its own may work (0: no
    /// limit).
    pub time_limit_secs: u64,
    /// Seconds by tool name, over the tool's own limit and `time_limit_secs` (0: no limit
    /// for that tool). As environment variables: `MIROBODY_TOOLS__TIME_LIMITS__<TOOL>`.
    pub time_limits: BTreeMap<String, u64>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings { time_limit_secs: 60, time_limits: BTreeMap::new() }
    }
}

impl ToolSettings {
    /// Applies the limits to the MCP service's options.
    pub fn apply(&self, options: &mut mirobody_mcp::McpOptions) {
        options.tool_time_limit = seconds(self.time_limit_secs);
        // A tool's 0 lifts its limit (None).
        options.tool_time_limits = self.time_limits.iter().map(|(name, secs)| (name.clone(), seconds(*secs))).collect();
    }

    /// The tools `time_limits` names that are not among `known`.
    pub fn unknown_tools<'a>(&'a self, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        let known: Vec<&str> = known.into_iter().collect();
        self.time_limits.keys().map(String::as_str).filter(|name| !known.contains(name)).collect()
    }
}

fn seconds(secs: u64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::Config;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn time_limits_reach_the_mcp_options() {
        let defaults = Config::default().mcp_options();
        assert_eq!(defaults.tool_time_limit, Some(Duration::from_secs(60)));
        assert!(defaults.tool_time_limits.is_empty());
        let vars = [
            ("MIROBODY_TOOLS__TIME_LIMIT_SECS", "0"),
            ("MIROBODY_TOOLS__TIME_LIMITS__RENDER_CHART", "5"),
            ("MIROBODY_TOOLS__TIME_LIMITS__READ_FILE", "0"),
        ];
        let config = Config::load(None, env(&vars)).unwrap();
        let options = config.mcp_options();
        assert_eq!(options.tool_time_limit, None, "0: no limit");
        assert_eq!(options.tool_time_limits["render_chart"], Some(Duration::from_secs(5)));
        assert_eq!(options.tool_time_limits["read_file"], None, "0 lifts a tool's own limit");
        assert_eq!(config.tools.unknown_tools(["render_chart"]), ["read_file"]);
        let typo = Config::load(None, env(&[("MIROBODY_TOOLS__TIME_LIMIT", "5")])).unwrap_err().to_string();
        assert!(typo.contains("time_limit"), "{typo}");
    }
}
