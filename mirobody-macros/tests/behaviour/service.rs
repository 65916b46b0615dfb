use std::sync::atomic::{AtomicUsize, Ordering};

use mirobody_core::{UserInfo, tool_service};
use serde_json::json;

use crate::{registry, run, run_as};

#[derive(Default)]
struct GoalService {
    calls: AtomicUsize,
}

#[tool_service(register = false)]
impl GoalService {
    /// Count a call and say how many there were.
    pub(crate) fn tick(&self) -> usize {
        self.bump()
    }

    /// Count a call too, sharing the same instance.
    pub(crate) async fn tock(&self, user: &UserInfo) -> String {
        format!("{} for {}", self.bump(), user.user_id().unwrap_or_default())
    }

    /// Add two numbers.
    ///
    /// Args:
    ///     a: The first.
    ///     b: The second.
    #[tool(name = "add_numbers", annotations(read_only))]
    pub(crate) fn add(a: i64, #[arg(default = 1)] b: i64) -> i64 {
        a + b
    }

    /// Public for Rust callers, but not a tool.
    #[tool(skip)]
    pub(crate) fn new_for_tests() -> Self {
        GoalService::default()
    }

    fn bump(&self) -> usize {
        self.calls.fetch_add(1, Ordering::SeqCst) + 1
    }

    #[allow(dead_code)]
    fn private_helper(_x: i64) {}
}

#[test]
fn public_methods_are_tools_and_private_ones_are_not() {
    let names: Vec<String> = GoalService::tools().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["tick", "tock", "add_numbers"]);
    assert!(GoalService::tock_tool().is_auth());
    assert!(!GoalService::tick_tool().is_auth());
    // The methods are still plain Rust methods.
    assert_eq!(GoalService::add(2, 3), 5);
    assert_eq!(GoalService::new_for_tests().tick(), 1);
}

#[test]
fn self_methods_share_one_instance_and_options_apply_per_method() {
    let registry = registry(GoalService::tools());
    let first: usize =
        run(&registry, "tick", json!({})).structured_content().unwrap()["result"].as_u64().unwrap() as usize;
    let second = run_as(&registry, "tock", json!({}), &UserInfo::authenticated("ada"));
    assert_eq!(second.first_text(), Some(format!("{} for ada", first + 1).as_str()));
    assert_eq!(run(&registry, "add_numbers", json!({"a": 41})).structured_content().unwrap()["result"], 42);
    assert_eq!(registry.get("add_numbers").unwrap().spec().annotation_hints().read_only_hint, Some(true));
}
