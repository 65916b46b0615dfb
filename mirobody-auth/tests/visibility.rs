//! Per-agent tool lists: the semantics table, flat keys, and the predicate on real tools.

use mirobody_auth::{AuthConfig, ToolFilter, ToolList, ToolListKind, flat_tool_list_key, visibility};
use mirobody_core::{Tool, ToolResult, UserInfo};
use serde_json::json;

fn config(allowed: &[&str], disallowed: &[&str]) -> AuthConfig {
    let mut config = AuthConfig::default();
    let list = |names: &[&str]| ToolList(names.iter().map(|n| n.to_string()).collect());
    if !allowed.is_empty() {
        config.allowed_tools.insert("baseline".into(), list(allowed));
    }
    if !disallowed.is_empty() {
        config.disallowed_tools.insert("BASELINE".into(), list(disallowed));
    }
    config
}

#[test]
fn semantics_table() {
    // (allowed, disallowed, agent, tool, visible)
    type Row<'a> = (&'a [&'a str], &'a [&'a str], Option<&'a str>, &'a str, bool);
    let table: &[Row<'_>] = &[
        // No lists: everything, for every agent (upstream Python showed nothing here).
        (&[], &[], Some("baseline"), "echo", true),
        // Only an allow list: exactly those.
        (&["echo"], &[], Some("baseline"), "echo", true),
        (&["echo"], &[], Some("baseline"), "remember", false),
        // Only a deny list: all but those.
        (&[], &["remember"], Some("baseline"), "echo", true),
        (&[], &["remember"], Some("baseline"), "remember", false),
        // Both: allowed minus denied; deny wins over allow.
        (&["echo", "remember"], &["remember"], Some("baseline"), "echo", true),
        (&["echo", "remember"], &["remember"], Some("baseline"), "remember", false),
        // An allow list that matches nothing hides everything (upstream fell back to all).
        (&["no_such_tool"], &["remember"], Some("baseline"), "echo", false),
        // Agent names match case-insensitively, with surrounding spaces ignored.
        (&["echo"], &[], Some("BaseLine "), "remember", false),
        // Another agent, or no agent: no filtering.
        (&["echo"], &["echo"], Some("deep"), "remember", true),
        (&["echo"], &["echo"], None, "remember", true),
        // Tool names are exact.
        (&["echo"], &[], Some("baseline"), "Echo", false),
    ];
    for (allowed, disallowed, agent, tool, visible) in table {
        let filter = ToolFilter::from_config(&config(allowed, disallowed));
        assert_eq!(
            filter.allows(*agent, tool),
            *visible,
            "allowed {allowed:?}, disallowed {disallowed:?}, agent {agent:?}, tool {tool}"
        );
    }
}

#[test]
fn the_predicate_reads_the_callers_agent() {
    let tool = |name: &'static str| Tool::new(name, "A tool.").sync_handler(|_, _, _| ToolResult::text("ok"));
    let (echo, remember) = (tool("echo"), tool("remember"));
    let visible = visibility(&config(&[], &["remember"])).expect("lists configured");
    let agent = UserInfo::authenticated("1").with_agent("baseline");
    assert!(visible(&agent, &echo));
    assert!(!visible(&agent, &remember));
    assert!(visible(&UserInfo::authenticated("1"), &remember), "no agent, no filtering");
    assert!(visible(&UserInfo::anonymous(), &remember));
    // Nothing configured: no predicate at all, so the server keeps its fast path.
    assert!(visibility(&AuthConfig::default()).is_none());
    // Lists that are all empty count as nothing configured.
    let mut empty = AuthConfig::default();
    empty.allowed_tools.insert("baseline".into(), ToolList::default());
    assert!(visibility(&empty).is_none());
}

#[test]
fn flat_keys_become_lists() {
    assert_eq!(flat_tool_list_key("ALLOWED_TOOLS_DEEP"), Some((ToolListKind::Allowed, "DEEP".into())));
    assert_eq!(flat_tool_list_key("mirobody_disallowed_tools_rtc"), Some((ToolListKind::Disallowed, "RTC".into())));
    assert_eq!(flat_tool_list_key("ALLOWED_TOOLS_"), None);
    assert_eq!(flat_tool_list_key("ALLOWED_TOOL_DEEP"), None);

    let mut config = AuthConfig::default();
    config.allowed_tools.insert("deep".into(), ToolList(vec!["old".into()]));
    let used = config.apply_flat_tool_lists([
        ("ALLOWED_TOOLS_DEEP", "[echo, \"whoami\"]"),
        ("DISALLOWED_TOOLS_BASELINE", "remember recall_memory"),
        ("MIROBODY_BIND", "0.0.0.0:1"),
    ]);
    assert_eq!(used, ["ALLOWED_TOOLS_DEEP", "DISALLOWED_TOOLS_BASELINE"]);
    assert_eq!(config.allowed_tools.len(), 1, "the flat key replaced the lower-case entry");
    assert_eq!(config.allowed_tools["DEEP"].0, ["echo", "whoami"]);
    assert_eq!(config.disallowed_tools["BASELINE"].0, ["remember", "recall_memory"]);
    let filter = ToolFilter::from_config(&config);
    assert!(filter.allows(Some("deep"), "whoami") && !filter.allows(Some("deep"), "old"));
    assert_eq!(filter.unknown_tools(["echo", "remember", "recall_memory"]), ["whoami"]);
}

#[test]
fn tool_lists_deserialize_from_lists_strings_and_null() {
    let config: AuthConfig = serde_json::from_value(json!({
        "allowed_tools": {"a": ["echo", "whoami"], "b": "echo, whoami", "c": null},
    }))
    .unwrap();
    assert_eq!(config.allowed_tools["a"], config.allowed_tools["b"]);
    assert!(config.allowed_tools["c"].0.is_empty());
}
