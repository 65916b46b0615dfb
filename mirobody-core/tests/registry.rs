//! mirobody-core: dispatch through `Registry::call`/`run` (handlers, auth, scopes, argument
//! validation, panics), building a registry (duplicates, overrides, invalid tools, disabled tools
//! and their log lines, order, self-registration), the rendered listings, `ToolContext`,
//! `ToolResult` and its MCP serialization, `IntoToolResult`, and `Args`.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mirobody_core::{
    Args, CallError, Content, Format, Handler, IntoToolResult, Json, Param, Registry, RegistryError, Tool, ToolContext,
    ToolError, ToolResult, Type, UserInfo, register_tool,
};
use serde_json::{Map, Value, json};

// =============================================================================================
// Shared helpers and handlers
// =============================================================================================

/// Builds a registry that must be valid.
fn registry(tools: impl IntoIterator<Item = Tool>) -> Registry {
    tools.into_iter().fold(Registry::builder(), |b, t| b.tool(t)).build().unwrap()
}

fn anonymous() -> UserInfo {
    UserInfo::anonymous()
}

fn alice() -> UserInfo {
    UserInfo::authenticated("alice-42").with_session("chat-7")
}

/// A tool whose synchronous handler counts its runs and echoes its arguments.
fn counting_tool(name: &'static str, runs: &Arc<AtomicUsize>) -> Tool {
    let runs = Arc::clone(runs);
    Tool::new(name, "Counts its runs.").sync_handler(move |args: Args, _: &UserInfo, _: &ToolContext<'_>| {
        runs.fetch_add(1, Ordering::SeqCst);
        ToolResult::ok(Value::Object(args.into_inner()))
    })
}

async fn echo(args: Args, _user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
    futures::future::ready(()).await;
    ToolResult::ok(json!({"echo": args.str("text")}))
}

fn echo_tool() -> Tool {
    Tool::new("echo", "Echo text back.")
        .param(Param::required("text", Type::String, "What to echo."))
        .read_only()
        .handler(echo)
}

async fn whoami(_args: Args, user: &UserInfo, _ctx: &ToolContext<'_>) -> ToolResult {
    ToolResult::ok(json!({"user_id": user.user_id(), "session_id": user.session_id(), "authed": user.authed()}))
}

/// The structured content of a result that must have succeeded.
fn structured(result: &ToolResult) -> Value {
    assert!(!result.is_error(), "unexpected error result: {:?}", result.first_text());
    Value::Object(result.structured_content().expect("structured content").clone())
}

/// Log output captured from everything `f` does on this thread.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn capture_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    let buffer = LogBuffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, || {
        // Other tests hit the same callsites with no subscriber at the same time; recompute
        // their cached interest now that this one is installed.
        tracing::callsite::rebuild_interest_cache();
        f()
    });
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    (out, text)
}

// =============================================================================================
// Dispatch
// =============================================================================================

mod dispatch {
    use super::*;

    #[tokio::test]
    async fn async_fn_handler_is_dispatched() {
        let reg = registry([echo_tool()]);
        let result = reg.call("echo", json!({"text": "hi"}), &anonymous(), &ToolContext::new()).await.unwrap();
        assert_eq!(structured(&result), json!({"echo": "hi"}));
    }

    #[test]
    fn sync_handler_is_dispatched() {
        let reg = registry([Tool::new("shout", "Shout.")
            .param(Param::required("text", Type::String, ""))
            .sync_handler(|args: Args, _: &UserInfo, _: &ToolContext<'_>| args.str_or("text", "").to_uppercase())]);
        let result =
            futures::executor::block_on(reg.call("shout", json!({"text": "hi"}), &anonymous(), &ToolContext::new()))
                .unwrap();
        assert!(!result.is_error());
        assert_eq!(result.first_text(), Some("HI"));
        assert!(result.structured_content().is_none());
    }

    struct Counter(AtomicUsize);

    impl Handler for Counter {
        fn call<'a>(
            &'a self,
            _args: Args,
            _user: &'a UserInfo,
            _ctx: &'a ToolContext<'a>,
        ) -> BoxFuture<'a, ToolResult> {
            let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            Box::pin(async move { ToolResult::ok(json!({"n": n})) })
        }
    }

    #[tokio::test]
    async fn handler_object_keeps_its_state_across_calls() {
        let reg = registry([Tool::new("tick", "Count calls.").handler_object(Counter(AtomicUsize::new(0)))]);
        let ctx = ToolContext::new();
        for expected in 1..=3 {
            let result = reg.call("tick", Value::Null, &anonymous(), &ctx).await.unwrap();
            assert_eq!(structured(&result)["n"], expected);
        }
    }

    #[tokio::test]
    async fn unknown_tool_is_an_error() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = registry([counting_tool("known", &runs)]);
        let err = reg.call("unknown", json!({}), &alice(), &ToolContext::new()).await.unwrap_err();
        assert!(matches!(&err, CallError::UnknownTool { name } if name == "unknown"), "{err:?}");
        assert!(err.to_string().contains("Unknown tool: 'unknown'"), "{err}");
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_session_tool_is_refused_without_a_session_before_the_handler_runs() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = registry([counting_tool("title", &runs).session_required(true)]);
        assert!(reg.get("title").unwrap().is_session_required());
        for user in [UserInfo::anonymous(), UserInfo::authenticated("alice-42")] {
            let err = reg.call("title", json!({}), &user, &ToolContext::new()).await.unwrap_err();
            assert!(matches!(&err, CallError::NoSession { tool } if tool == "title"), "{err:?}");
            assert!(err.to_string().contains("works only inside a session"), "{err}");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler ran without a session");
        reg.call("title", json!({}), &alice(), &ToolContext::new()).await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn null_arguments_mean_no_arguments() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = registry([counting_tool("count", &runs)]);
        let result = reg.call("count", Value::Null, &anonymous(), &ToolContext::new()).await.unwrap();
        assert_eq!(structured(&result), json!({}));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

// =============================================================================================
// Authentication and scopes
// =============================================================================================

mod auth {
    use super::*;

    #[tokio::test]
    async fn auth_tool_refuses_an_anonymous_caller_before_the_handler_runs() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = registry([counting_tool("private", &runs).auth(true)]);
        for user in [UserInfo::anonymous(), UserInfo::authenticated("")] {
            let err = reg.call("private", json!({}), &user, &ToolContext::new()).await.unwrap_err();
            assert!(matches!(&err, CallError::Unauthenticated { tool } if tool == "private"), "{err:?}");
            assert!(err.to_string().contains("Authentication required: tool 'private'"), "{err}");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler ran for an anonymous caller");
    }

    #[tokio::test]
    async fn auth_tool_runs_for_an_authenticated_caller_and_sees_the_user() {
        let reg = registry([Tool::new("whoami", "Who is calling.").auth(true).handler(whoami)]);
        let result = reg.call("whoami", json!({}), &alice(), &ToolContext::new()).await.unwrap();
        assert_eq!(structured(&result), json!({"user_id": "alice-42", "session_id": "chat-7", "authed": true}));
    }

    /// The C++ engine never showed a non-auth tool who was signed in; here every tool sees the
    /// verified caller.
    #[tokio::test]
    async fn non_auth_tool_also_sees_a_signed_in_caller() {
        let reg = registry([Tool::new("whoami", "Who is calling.").handler(whoami)]);
        let ctx = ToolContext::new();
        let signed_in = reg.call("whoami", json!({}), &alice(), &ctx).await.unwrap();
        assert_eq!(structured(&signed_in)["user_id"], "alice-42");
        let anon = reg.call("whoami", json!({}), &anonymous(), &ctx).await.unwrap();
        assert_eq!(structured(&anon), json!({"user_id": null, "session_id": null, "authed": false}));
    }

    fn scoped_registry(runs: &Arc<AtomicUsize>) -> Registry {
        registry([counting_tool("scoped", runs).require_scopes(["mcp:read", "mcp:write", "health:read"])])
    }

    #[tokio::test]
    async fn missing_scopes_are_listed_and_the_handler_does_not_run() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = scoped_registry(&runs);
        let user = UserInfo::authenticated("u1").with_scopes(["mcp:read"]);
        let err = reg.call("scoped", json!({}), &user, &ToolContext::new()).await.unwrap_err();
        let CallError::InsufficientScope { tool, missing } = &err else { panic!("{err:?}") };
        assert_eq!(tool, "scoped");
        assert_eq!(missing, &["mcp:write", "health:read"]);
        assert_eq!(err.to_string(), "Insufficient scope for tool 'scoped': the token lacks mcp:write, health:read.");
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn scopes_imply_auth() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = scoped_registry(&runs);
        assert!(reg.get("scoped").unwrap().is_auth());
        let err = reg.call("scoped", json!({}), &anonymous(), &ToolContext::new()).await.unwrap_err();
        assert!(matches!(err, CallError::Unauthenticated { .. }), "{err:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn all_scopes_granted_runs_the_handler() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = scoped_registry(&runs);
        let user = UserInfo::authenticated("u1").with_scopes(["health:read", "mcp:write", "mcp:read", "extra"]);
        let result = reg.call("scoped", json!({}), &user, &ToolContext::new()).await.unwrap();
        assert!(!result.is_error());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

// =============================================================================================
// Arguments: validation before the handler, defaults into the handler
// =============================================================================================

mod arguments {
    use super::*;

    fn strict_tool(runs: &Arc<AtomicUsize>) -> Tool {
        counting_tool("store", runs).params([
            Param::required("text", Type::String, "The fact, in one sentence."),
            Param::optional("kind", Type::String, "What kind of memory.")
                .one_of(["fact", "preference"])
                .default("fact"),
            Param::optional("limit", Type::Integer, "How many.").default(20),
            Param::optional("pinned", Type::Boolean, "Keep forever.").default(false),
        ])
    }

    #[tokio::test]
    async fn invalid_arguments_are_refused_before_the_handler_runs() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = registry([strict_tool(&runs)]);
        let cases = [
            (json!({}), "missing required argument 'text' (string): The fact, in one sentence."),
            (json!({"text": 5}), "argument 'text' must be a string, not integer"),
            (
                json!({"text": "x", "kind": "rumour"}),
                r#"argument 'kind' is "rumour", but must be one of "fact", "preference""#,
            ),
            (json!({"text": "x", "limit": "20"}), "argument 'limit' must be an integer, not string"),
            (json!({"text": "x", "user_id": "42"}), "unknown argument 'user_id'"),
            (json!("{\"text\": \"x\"}"), "arguments must be a JSON object of named arguments, not string"),
            (json!([1]), "arguments must be a JSON object of named arguments, not array"),
        ];
        for (arguments, expected) in cases {
            let err = reg.call("store", arguments.clone(), &alice(), &ToolContext::new()).await.unwrap_err();
            let CallError::InvalidArguments { tool, error } = &err else { panic!("{arguments}: {err:?}") };
            assert_eq!(tool, "store");
            assert_eq!(error.problems.len(), 1, "{arguments}: {error}");
            let message = err.to_string();
            assert!(message.contains(expected), "{arguments}: {message}");
            assert!(message.ends_with("Fix the arguments and call the tool again."), "{message}");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler ran with invalid arguments");
    }

    #[tokio::test]
    async fn defaults_reach_the_handler() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = registry([strict_tool(&runs)]);
        let result =
            reg.call("store", json!({"text": "likes tea", "limit": null}), &alice(), &ToolContext::new()).await;
        assert_eq!(
            structured(&result.unwrap()),
            json!({"text": "likes tea", "kind": "fact", "limit": 20, "pinned": false})
        );
    }

    #[tokio::test]
    async fn handler_sees_a_whole_float_as_an_integer() {
        let seen = Arc::new(Mutex::new(None));
        let sink = Arc::clone(&seen);
        let reg = registry([Tool::new("limit", "Reads an integer.")
            .param(Param::required("n", Type::Integer, ""))
            .sync_handler(move |args: Args, _: &UserInfo, _: &ToolContext<'_>| {
                *sink.lock().unwrap() = Some(args.integer("n", -1));
                ToolResult::text("ok")
            })]);
        reg.call("limit", json!({"n": 7.0}), &anonymous(), &ToolContext::new()).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), Some(7));
    }

    #[tokio::test]
    async fn raw_schema_tool_validates_nested_arguments() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = registry([counting_tool("nested", &runs).raw_input_schema(json!({
            "type": "object",
            "properties": {"window": {"type": "object", "properties": {"days": {"type": "integer", "minimum": 1}}}}
        }))]);
        let err = reg.call("nested", json!({"window": {"days": 0}}), &anonymous(), &ToolContext::new()).await;
        let message = err.unwrap_err().to_string();
        assert!(message.contains("at /window/days: "), "{message}");
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        reg.call("nested", json!({"window": {"days": 3}}), &anonymous(), &ToolContext::new()).await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

// =============================================================================================
// Panicking handlers
// =============================================================================================

mod panics {
    use super::*;

    const SECRET: &str = "secret-internal-detail";

    // Both tests reach the same `tracing::error!` callsite. Run alone, so the one with no
    // subscriber cannot settle the callsite's interest while the other installs its own
    // (tracing caches interest per callsite).
    static PANIC_CALLSITE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    async fn async_panic_str(_: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
        futures::future::ready(()).await;
        std::panic::panic_any("secret-internal-detail (&str)")
    }

    async fn async_panic_string(_: Args, _: &UserInfo, _: &ToolContext<'_>) -> ToolResult {
        futures::future::ready(()).await;
        std::panic::panic_any(format!("{SECRET} (String)"))
    }

    fn panicking_registry() -> Registry {
        registry([
            Tool::new("sync_str", "Panics.").sync_handler(|_: Args, _: &UserInfo, _: &ToolContext<'_>| -> ToolResult {
                std::panic::panic_any("secret-internal-detail (&str)")
            }),
            Tool::new("sync_string", "Panics.").sync_handler(
                |_: Args, _: &UserInfo, _: &ToolContext<'_>| -> ToolResult {
                    std::panic::panic_any(format!("{SECRET} (String)"))
                },
            ),
            Tool::new("async_str", "Panics.").handler(async_panic_str),
            Tool::new("async_string", "Panics.").handler(async_panic_string),
            echo_tool(),
        ])
    }

    #[test]
    fn a_panicking_handler_gives_an_error_result_without_the_panic_text() {
        let _alone = PANIC_CALLSITE.lock().unwrap_or_else(|p| p.into_inner());
        futures::executor::block_on(a_panicking_handler_gives_an_error_result_without_the_panic_text_inner());
    }

    async fn a_panicking_handler_gives_an_error_result_without_the_panic_text_inner() {
        let reg = panicking_registry();
        let ctx = ToolContext::new();
        for name in ["sync_str", "sync_string", "async_str", "async_string"] {
            let result = reg.call(name, json!({}), &alice(), &ctx).await.expect("a panic is a result, not a CallError");
            assert!(result.is_error(), "{name}");
            let text = result.first_text().unwrap();
            assert!(!text.contains(SECRET), "{name}: panic text leaked to the model: {text}");
            assert!(text.contains(&format!("Tool '{name}' failed with an internal error")), "{name}: {text}");
            // The registry keeps working.
            let next = reg.call("echo", json!({"text": "still here"}), &alice(), &ctx).await.unwrap();
            assert_eq!(structured(&next)["echo"], "still here");
        }
    }

    #[test]
    fn the_panic_message_is_logged_for_operators() {
        let _alone = PANIC_CALLSITE.lock().unwrap_or_else(|p| p.into_inner());
        let reg = panicking_registry();
        for name in ["sync_str", "sync_string", "async_str", "async_string"] {
            let (result, logs) = capture_logs(|| {
                futures::executor::block_on(reg.run(name, json!({}), &anonymous(), &ToolContext::new()))
            });
            assert!(result.is_error());
            assert!(logs.contains("tool handler panicked") && logs.contains(SECRET), "{name}: {logs}");
        }
    }
}

// =============================================================================================
// Registry::run and CallError::into_tool_result
// =============================================================================================

mod run {
    use super::*;

    #[tokio::test]
    async fn run_folds_call_errors_into_error_results() {
        let runs = Arc::new(AtomicUsize::new(0));
        let reg = registry([echo_tool(), counting_tool("private", &runs).auth(true)]);
        let ctx = ToolContext::new();
        for (name, arguments) in [("nope", json!({})), ("private", json!({})), ("echo", json!({})), ("echo", json!(7))]
        {
            let expected = reg.call(name, arguments.clone(), &anonymous(), &ctx).await.unwrap_err().to_string();
            let result = reg.run(name, arguments, &anonymous(), &ctx).await;
            assert!(result.is_error(), "{name}");
            assert_eq!(result.first_text(), Some(expected.as_str()));
            assert!(result.structured_content().is_none());
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        let ok = reg.run("echo", json!({"text": "a"}), &anonymous(), &ctx).await;
        assert_eq!(structured(&ok)["echo"], "a");
    }

    #[test]
    fn call_error_into_tool_result_carries_the_message() {
        let err = CallError::UnknownTool { name: "x".into() };
        let message = err.to_string();
        let result = err.into_tool_result();
        assert!(result.is_error());
        assert_eq!(result.first_text(), Some(message.as_str()));
    }
}

// =============================================================================================
// Building a registry
// =============================================================================================

mod building {
    use super::*;

    fn named(name: &'static str, answer: &'static str) -> Tool {
        Tool::new(name, "A tool.").sync_handler(move |_: Args, _: &UserInfo, _: &ToolContext<'_>| answer)
    }

    fn answer(reg: &Registry, name: &str) -> String {
        let result = futures::executor::block_on(reg.run(name, json!({}), &anonymous(), &ToolContext::new()));
        result.first_text().unwrap().to_owned()
    }

    #[test]
    fn duplicate_names_are_an_error_naming_both_origins() {
        let err = Registry::builder().tool(named("dup", "first")).tool(named("dup", "second")).build().unwrap_err();
        let RegistryError::Duplicate { name, first, second } = &err else { panic!("{err:?}") };
        assert_eq!(name, "dup");
        assert!(first.contains("registry.rs") && second.contains("registry.rs"), "{first} / {second}");
        assert_ne!(first, second);
        let message = err.to_string();
        assert!(message.contains("duplicate tool name 'dup'") && message.contains("override_tool"), "{message}");
    }

    #[test]
    fn override_tool_replaces_and_is_logged() {
        let (reg, logs) = capture_logs(|| {
            // The override is added first: overrides apply after plain additions regardless.
            Registry::builder().override_tool(named("weather", "override")).tool(named("weather", "built-in")).build()
        });
        let reg = reg.unwrap();
        assert_eq!(reg.len(), 1);
        assert_eq!(answer(&reg, "weather"), "override");
        assert!(logs.contains("Overriding tool: weather"), "{logs}");
    }

    #[test]
    fn override_tool_without_an_original_just_adds() {
        let reg = Registry::builder().override_tool(named("solo", "me")).build().unwrap();
        assert_eq!(answer(&reg, "solo"), "me");
    }

    #[test]
    fn user_id_param_is_an_invalid_tool() {
        let err = Registry::builder()
            .tool(named("leaky", "x").param(Param::required("user_id", Type::String, "")))
            .build()
            .unwrap_err();
        let RegistryError::InvalidTool { error, origin } = &err else { panic!("{err:?}") };
        assert_eq!(*error, mirobody_core::schema::SpecError::ReservedUserId { tool: "leaky".into() });
        assert!(origin.contains("registry.rs"), "{origin}");
        let message = err.to_string();
        assert!(message.contains("UserInfo") && message.contains("registered at"), "{message}");
    }

    #[test]
    fn invalid_declaration_is_an_invalid_tool() {
        let err = Registry::builder().tool(named("bad name", "x")).build().unwrap_err();
        assert!(matches!(err, RegistryError::InvalidTool { .. }), "{err:?}");
    }

    #[test]
    fn a_tool_without_handler_is_refused() {
        let err = Registry::builder().tool(Tool::new("empty", "No handler.")).build().unwrap_err();
        let RegistryError::NoHandler { name, origin } = &err else { panic!("{err:?}") };
        assert_eq!(name, "empty");
        assert!(origin.contains("registry.rs"), "{origin}");
        assert!(err.to_string().contains("set one with Tool::handler"), "{err}");
    }

    fn never() -> bool {
        false
    }

    fn always() -> bool {
        true
    }

    fn broken() -> bool {
        panic!("enabled check exploded")
    }

    #[test]
    fn disabled_tools_are_skipped_and_logged_and_loaded_ones_logged() {
        let (reg, logs) = capture_logs(|| {
            Registry::builder()
                .tool(named("off", "x").enabled_if(never))
                .tool(named("exploding", "x").enabled_if(broken))
                .tool(named("on", "x").enabled_if(always))
                .tool(named("plain", "x"))
                .build()
        });
        let reg = reg.unwrap();
        assert_eq!(reg.names().collect::<Vec<_>>(), ["on", "plain"]);
        assert!(reg.get("off").is_none() && reg.get("exploding").is_none());
        assert!(logs.contains("Skipping disabled tool: off"), "{logs}");
        assert!(logs.contains("Skipping disabled tool: exploding"), "{logs}");
        assert!(logs.contains("Loaded tool: on"), "{logs}");
        assert!(logs.contains("Loaded tool: plain"), "{logs}");
        assert!(!logs.contains("Loaded tool: off") && !logs.contains("Loaded tool: exploding"), "{logs}");
    }

    #[test]
    fn a_disabled_tool_does_not_clash_with_an_enabled_one_of_the_same_name() {
        let reg = Registry::builder()
            .tool(named("variant", "disabled").enabled_if(never))
            .tool(named("variant", "enabled"))
            .build()
            .unwrap();
        assert_eq!(answer(&reg, "variant"), "enabled");
    }

    #[test]
    fn names_are_in_order_regardless_of_insertion_order() {
        let names = ["delta", "alpha", "charlie", "bravo", "Zulu", "_x"];
        let forward = names.iter().fold(Registry::builder(), |b, n| b.tool(named(n, "x"))).build().unwrap();
        let backward = names.iter().rev().fold(Registry::builder(), |b, n| b.tool(named(n, "x"))).build().unwrap();
        let mut sorted = names.to_vec();
        sorted.sort_unstable();
        assert_eq!(forward.names().collect::<Vec<_>>(), sorted);
        assert_eq!(backward.names().collect::<Vec<_>>(), sorted);
        assert_eq!(forward.tools().map(Tool::name).collect::<Vec<_>>(), sorted);
        assert_eq!(forward.mcp_tools_json(true), backward.mcp_tools_json(true));
        for format in Format::ALL {
            assert_eq!(forward.functions_json(format), backward.functions_json(format), "{format}");
        }
    }

    #[test]
    fn lookup_and_size() {
        let empty = Registry::builder().build().unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.len(), 0);
        assert_eq!(empty.mcp_tools_json(true), "[]");
        let reg = registry([named("a", "x"), named("b", "y")]);
        assert!(!reg.is_empty());
        assert_eq!(reg.len(), 2);
        assert_eq!(reg.get("b").unwrap().name(), "b");
        assert!(reg.get("c").is_none());
    }
}

// =============================================================================================
// Rendered listings
// =============================================================================================

mod listings {
    use super::*;

    fn mixed() -> Registry {
        let runs = Arc::new(AtomicUsize::new(0));
        registry([
            echo_tool(),
            counting_tool("private", &runs).auth(true),
            counting_tool("scoped", &runs).require_scopes(["mcp:write"]),
            counting_tool("public", &runs).title("Public"),
        ])
    }

    fn names_of(list: &Value) -> Vec<&str> {
        list.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
    }

    #[test]
    fn mcp_tools_json_parses_and_public_listing_excludes_auth_tools() {
        let reg = mixed();
        let all: Value = serde_json::from_str(reg.mcp_tools_json(true)).unwrap();
        let public: Value = serde_json::from_str(reg.mcp_tools_json(false)).unwrap();
        assert_eq!(names_of(&all), ["echo", "private", "public", "scoped"]);
        assert_eq!(names_of(&public), ["echo", "public"]);
        let expected: Vec<Value> = reg.tools().map(|t| t.spec().render(Format::Mcp)).collect();
        assert_eq!(all, Value::Array(expected));
        assert_eq!(public[1]["title"], "Public");
    }

    #[test]
    fn mcp_entries_match_the_listing() {
        let reg = mixed();
        let entries: Vec<Value> = reg.mcp_entries().map(|(_, json)| serde_json::from_str(json).unwrap()).collect();
        let all: Value = serde_json::from_str(reg.mcp_tools_json(true)).unwrap();
        assert_eq!(Value::Array(entries), all);
        for (tool, json) in reg.mcp_entries() {
            assert!(json.contains(&format!("\"name\":\"{}\"", tool.name())), "{json}");
        }
    }

    #[test]
    fn functions_have_one_element_per_tool_in_every_format() {
        let reg = mixed();
        for format in Format::ALL {
            let functions = reg.functions(format);
            let items = functions.as_array().unwrap();
            assert_eq!(items.len(), reg.len(), "{format}");
            for (item, tool) in items.iter().zip(reg.tools()) {
                assert_eq!(*item, tool.spec().render(format), "{format}");
            }
            let parsed: Value = serde_json::from_str(reg.functions_json(format)).unwrap();
            assert_eq!(&parsed, functions, "{format}");
        }
        assert_eq!(reg.functions(Format::OpenAi)[0]["function"]["name"], "echo");
        assert_eq!(reg.functions(Format::Responses)[0]["strict"], false);
        assert_eq!(reg.functions(Format::Anthropic)[0]["input_schema"]["required"], json!(["text"]));
    }

    #[test]
    fn each_format_is_rendered_once_on_first_use_and_shared_between_threads() {
        let reg = mixed();
        for format in Format::ALL {
            // Threads racing for the first use all get the one rendering.
            let seen: Vec<(usize, usize)> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(|| {
                            (
                                reg.functions_json(format).as_ptr().addr(),
                                std::ptr::from_ref(reg.functions(format)).addr(),
                            )
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(seen.windows(2).all(|pair| pair[0] == pair[1]), "{format}: {seen:?}");
            assert_eq!(reg.functions_json(format).as_ptr().addr(), seen[0].0, "{format}");
        }
    }
}

// =============================================================================================
// Self-registration
// =============================================================================================

mod self_registration {
    use super::*;

    // Only this test binary registers tools, so `from_registered` sees exactly these.
    fn registered_greeting() -> Tool {
        Tool::new("registered_greeting", "Greets.")
            .param(Param::optional("name", Type::String, "Who to greet.").default("you"))
            .sync_handler(|args: Args, _: &UserInfo, _: &ToolContext<'_>| {
                format!("Hello, {}!", args.str_or("name", "?"))
            })
    }
    const GREETING_LINE: u32 = line!() + 1;
    register_tool!(registered_greeting);

    fn registered_private() -> Tool {
        Tool::new("registered_private", "Auth only.").auth(true).handler(whoami)
    }
    register_tool!(registered_private);

    #[tokio::test]
    async fn from_registered_finds_tools_registered_in_this_file() {
        let reg = Registry::from_registered().unwrap();
        assert_eq!(reg.names().collect::<Vec<_>>(), ["registered_greeting", "registered_private"]);
        let result = reg.call("registered_greeting", json!({}), &anonymous(), &ToolContext::new()).await.unwrap();
        assert_eq!(result.first_text(), Some("Hello, you!"));
        assert!(reg.get("registered_private").unwrap().is_auth());
    }

    #[test]
    fn registered_tools_mix_with_explicit_ones_and_can_be_overridden() {
        let reg = Registry::builder()
            .registered()
            .tool(echo_tool())
            .override_tool(
                Tool::new("registered_greeting", "Replaced.")
                    .sync_handler(|_: Args, _: &UserInfo, _: &ToolContext<'_>| "replaced"),
            )
            .build()
            .unwrap();
        assert_eq!(reg.len(), 3);
        let result =
            futures::executor::block_on(reg.run("registered_greeting", json!({}), &anonymous(), &ToolContext::new()));
        assert_eq!(result.first_text(), Some("replaced"));
    }

    #[test]
    fn a_registered_tool_clashing_with_an_explicit_one_names_the_registration_site() {
        let err = Registry::builder().registered().tool(registered_greeting()).build().unwrap_err();
        let RegistryError::Duplicate { name, first, second } = &err else { panic!("{err:?}") };
        assert_eq!(name, "registered_greeting");
        let site = format!("{}:{GREETING_LINE}", file!());
        assert!(*first == site || *second == site, "{site} not in {first} / {second}");
    }
}

// =============================================================================================
// ToolContext
// =============================================================================================

#[path = "registry/context.rs"]
mod context;

// =============================================================================================
// ToolResult and its MCP serialization
// =============================================================================================

#[path = "registry/results.rs"]
mod results;

// =============================================================================================
// Args
// =============================================================================================

#[path = "registry/args.rs"]
mod args;
