//! The `tools` settings: which built-ins are switched off, and how long a tool call may work.

use std::collections::BTreeMap;
use std::time::Duration;

use mirobody_mcp::human_duration::HumanDuration;
use serde::Deserialize;

/// The `tools` section. A call past its time limit answers an error result saying so; the
/// time it waits for the client's answers does not count. These are the server's policy
/// (with a default the MCP library does not have), applied over the `mcp` section.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ToolSettings {
    /// How long a call of a tool that declares no time limit of its own may work (0: no
    /// limit).
    #[serde(deserialize_with = "mirobody_mcp::human_duration::deserialize")]
    pub time_limit: Duration,
    /// Limits by tool name, over the tool's own limit and `time_limit` (0: no limit for that
    /// tool). As environment variables: `MIROBODY_TOOLS__TIME_LIMITS__<TOOL>=10s`.
    pub time_limits: BTreeMap<String, HumanDuration>,
    /// Tools switched off: not listed and not callable (the HTTP routes for uploads, imports
    /// and the circle are not tools and stay). A YAML list, or in the environment a
    /// comma-separated one: `MIROBODY_TOOLS__DISABLED=render_chart,upload_link`.
    #[serde(deserialize_with = "names")]
    pub disabled: Vec<String>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings { time_limit: Duration::from_secs(60), time_limits: BTreeMap::new(), disabled: Vec::new() }
    }
}

// Tool names as a list, or as one comma-separated text (an environment variable's form).
fn names<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Names {
        List(Vec<String>),
        Text(String),
    }
    let names = match Names::deserialize(deserializer)? {
        Names::List(names) => names,
        Names::Text(text) => text.split(',').map(str::to_owned).collect(),
    };
    Ok(names.into_iter().map(|name| name.trim().to_owned()).filter(|name| !name.is_empty()).collect())
}

impl ToolSettings {
    /// Applies the limits to the MCP engine's options.
    pub fn apply(&self, options: &mut mirobody_mcp::McpOptions) {
        options.tool_time_limit = limit(self.time_limit);
        // A tool's 0 lifts its limit (None).
        options.tool_time_limits =
            self.time_limits.iter().map(|(name, HumanDuration(time))| (name.clone(), limit(*time))).collect();
    }

    /// The tools `disabled` names that are not among `known`.
    pub fn unknown_disabled<'a>(&'a self, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        let known: Vec<&str> = known.into_iter().collect();
        self.disabled.iter().map(String::as_str).filter(|name| !known.contains(name)).collect()
    }

    /// The tools `time_limits` names that are not among `known`.
    pub fn unknown_tools<'a>(&'a self, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        let known: Vec<&str> = known.into_iter().collect();
        self.time_limits.keys().map(String::as_str).filter(|name| !known.contains(name)).collect()
    }
}

fn limit(time: Duration) -> Option<Duration> {
    (!time.is_zero()).then_some(time)
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
            ("MIROBODY_TOOLS__TIME_LIMIT", "0"),
            ("MIROBODY_TOOLS__TIME_LIMITS__RENDER_CHART", "5"),
            ("MIROBODY_TOOLS__TIME_LIMITS__SEARCH", "2m"),
            ("MIROBODY_TOOLS__TIME_LIMITS__READ_FILE", "0"),
        ];
        let config = Config::load(None, env(&vars)).unwrap();
        let options = config.mcp_options();
        assert_eq!(options.tool_time_limit, None, "0: no limit");
        assert_eq!(options.tool_time_limits["render_chart"], Some(Duration::from_secs(5)));
        assert_eq!(options.tool_time_limits["search"], Some(Duration::from_secs(120)));
        assert_eq!(options.tool_time_limits["read_file"], None, "0 lifts a tool's own limit");
        assert_eq!(config.tools.unknown_tools(["render_chart", "search"]), ["read_file"]);
        let old = Config::load(None, env(&[("MIROBODY_TOOLS__TIME_LIMIT_SECS", "5")])).unwrap_err().to_string();
        assert!(old.contains("time_limit_secs"), "{old}");
        let bad = Config::load(None, env(&[("MIROBODY_TOOLS__TIME_LIMITS__SEARCH", "later")])).unwrap_err().to_string();
        assert!(bad.contains("tools.time_limits.search") && bad.contains("'later' is not a duration"), "{bad}");
    }

    #[test]
    fn disabled_tools_from_a_list_or_comma_separated_text() {
        assert!(Config::default().tools.disabled.is_empty());
        let config = Config::load(None, env(&[("MIROBODY_TOOLS__DISABLED", " render_chart, upload_link ,")])).unwrap();
        assert_eq!(config.tools.disabled, ["render_chart", "upload_link"]);
        assert_eq!(config.tools.unknown_disabled(["render_chart", "echo"]), ["upload_link"]);
        let dir = std::env::temp_dir().join(format!("mirobody-tools-disabled-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.yaml");
        std::fs::write(&file, "tools:\n  disabled: [echo, whoami]\n").unwrap();
        let config = Config::load(Some(&file), env(&[])).unwrap();
        assert_eq!(config.tools.disabled, ["echo", "whoami"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
