//! Prometheus metrics through the real binary: a scripted MCP session moves the counters and
//! histograms by exactly the calls it made, every metric the server lists is exported, no
//! label carries the caller or a secret, and `/metrics` refuses a scrape without its token on
//! both listeners. The Grafana dashboard and the alert rules query only exported names.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{KillOnDrop, fresh_data_dir, request, server_port};
use serde_json::{Value, json};

const METRICS_TOKEN: &str = "scrape-token-0123456789abcdef";
const USER: &str = "metrics-person-7f3a";

// A scrape: each sample's name and labels (as `name{k="v",...}`, labels sorted) with its value.
type Samples = BTreeMap<String, f64>;

// The samples of a Prometheus text exposition.
fn parse(text: &str) -> Samples {
    let mut samples = Samples::new();
    for line in text.lines().filter(|line| !line.is_empty() && !line.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("a sample line: {line}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("a value: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut pairs = label_pairs(labels);
        pairs.sort();
        let labels: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        samples.insert(format!("{name}{{{}}}", labels.join(",")), value);
    }
    samples
}

// `k="v",k2="v2"` as pairs (values here have no escaped quotes).
fn label_pairs(labels: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut rest = labels;
    while let Some((key, after)) = rest.split_once("=\"") {
        let end = after.find('"').expect("a closing quote");
        pairs.push((key.trim_start_matches(',').to_owned(), after[..end].to_owned()));
        rest = &after[end + 1..];
    }
    pairs
}

fn scrape(port: u16, token: Option<&str>) -> (u16, String) {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = bearer.iter().map(|b| ("authorization", b.as_str())).collect();
    let (status, _, body) = request(port, "GET", "/metrics", &headers, b"");
    (status, String::from_utf8(body).expect("UTF-8"))
}

fn samples(port: u16) -> Samples {
    let (status, body) = scrape(port, Some(METRICS_TOKEN));
    assert_eq!(status, 200, "{body}");
    parse(&body)
}

fn delta(before: &Samples, after: &Samples, series: &str) -> f64 {
    let now = after.get(series).unwrap_or_else(|| panic!("{series} is not exported: {after:#?}"));
    now - before.get(series).copied().unwrap_or(0.0)
}

fn mcp(port: u16, token: &str, session: Option<&str>, body: &Value) -> (u16, String, Value) {
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    let (status, head, body) = request(port, "POST", "/mcp", &headers, body.to_string().as_bytes());
    (status, head, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn call(port: u16, token: &str, session: &str, id: u64, tool: &str, arguments: Value) -> Value {
    let body =
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let (status, _, reply) = mcp(port, token, Some(session), &body);
    assert_eq!(status, 200, "{reply}");
    reply
}

#[test]
fn a_scripted_session_moves_the_metrics_by_exactly_its_calls() {
    let data_dir = fresh_data_dir("metrics");
    let port = server_port();
    let metrics_port = mirobody_testkit::free_port();
    let token = common::token(&data_dir, port, USER);
    let listen = format!("127.0.0.1:{metrics_port}");
    let env = [
        ("MIROBODY_METRICS__LISTEN", listen.as_str()),
        ("MIROBODY_METRICS__TOKEN", METRICS_TOKEN),
        ("MIROBODY_HTTP__MAX_BODY_BYTES", "4096"),
        ("RUST_LOG", "warn"),
    ];
    let (server, log) = common::start_logged(&data_dir, port, &env);
    let _server = KillOnDrop(server);

    // Refused without the token, or with a wrong one, on both listeners: 401 and no metric.
    for scrape_port in [port, metrics_port] {
        for presented in [None, Some("scrape-token-0123456789abcdeX"), Some(token.as_str())] {
            let (status, body) = scrape(scrape_port, presented);
            assert_eq!(status, 401, "{scrape_port} {presented:?}: {body}");
            assert!(!body.contains("mirobody_"), "{body}");
        }
    }

    let before = samples(metrics_port);
    // Every metric the server lists is exported from the start.
    let exported: BTreeSet<&str> = before.keys().map(|series| metric_of(series)).collect();
    for name in mirobody_server::metrics::NAMES {
        assert!(exported.contains(name), "{name} is not exported: {exported:?}");
    }

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "metrics", "version": "1"}}});
    let (status, head, _) = mcp(port, &token, None, &init);
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|line| line.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(|s| s.trim().to_owned()))
        .expect("a session");
    let (status, _, _) =
        mcp(port, &token, Some(&session), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(status, 202);
    let (status, _, tools) =
        mcp(port, &token, Some(&session), &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert_eq!(status, 200);
    assert!(tools["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{tools}");
    for id in 0..3 {
        let reply = call(port, &token, &session, 10 + id, "echo", json!({"text": format!("hello {id}")}));
        assert_eq!(reply["result"]["isError"], false, "{reply}");
    }
    let reply = call(port, &token, &session, 20, "echo", json!({"text": 5}));
    assert!(reply.get("error").is_some() || reply["result"]["isError"] == true, "{reply}");
    let reply = call(port, &token, &session, 19, "list_files", json!({}));
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let reply = call(port, &token, &session, 21, "read_file", json!({"file_key": "no-such-file"}));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let secret_name = format!("tool-named-{METRICS_TOKEN}");
    let reply = call(port, &token, &session, 22, &secret_name, json!({}));
    assert!(reply.get("error").is_some(), "{reply}");
    // Over http.max_body_bytes: 413, before the body is read as a request.
    let oversize = json!({"jsonrpc": "2.0", "id": 23, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x".repeat(8192)}}});
    let (status, _, _) = mcp(port, &token, Some(&session), &oversize);
    assert_eq!(status, 413);

    let after = samples(metrics_port);
    let expected = [
        (r#"mirobody_mcp_requests_total{method="initialize"}"#, 1.0),
        (r#"mirobody_mcp_requests_total{method="tools/list"}"#, 1.0),
        (r#"mirobody_mcp_requests_total{method="tools/call"}"#, 7.0),
        (r#"mirobody_mcp_request_duration_seconds_count{method="tools/call"}"#, 7.0),
        (r#"mirobody_mcp_tool_calls_total{outcome="ok",tool="list_files"}"#, 1.0),
        (r#"mirobody_mcp_request_duration_seconds_count{method="initialize"}"#, 1.0),
        (r#"mirobody_mcp_tool_calls_total{outcome="ok",tool="echo"}"#, 3.0),
        (r#"mirobody_mcp_tool_calls_total{outcome="invalid_arguments",tool="echo"}"#, 1.0),
        (r#"mirobody_mcp_tool_calls_total{outcome="error",tool="read_file"}"#, 1.0),
        (r#"mirobody_mcp_tool_calls_total{outcome="unknown_tool",tool="unknown"}"#, 1.0),
        (r#"mirobody_mcp_tool_calls_total{outcome="ok",tool="read_file"}"#, 0.0),
        (r#"mirobody_mcp_tool_call_duration_seconds_count{tool="echo"}"#, 4.0),
        (r#"mirobody_mcp_tool_call_duration_seconds_count{tool="read_file"}"#, 1.0),
        (r#"mirobody_mcp_tool_call_duration_seconds_count{tool="unknown"}"#, 1.0),
        (r#"mirobody_mcp_refusals_total{code="413"}"#, 1.0),
        (r#"mirobody_mcp_refusals_total{code="429"}"#, 0.0),
    ];
    for (series, moved) in expected {
        assert_eq!(delta(&before, &after, series), moved, "{series}");
    }
    // The histogram's largest bucket holds every call.
    assert_eq!(delta(&before, &after, r#"mirobody_mcp_tool_call_duration_seconds_bucket{le="+Inf",tool="echo"}"#), 4.0);
    // Each request came on a connection of its own (`Connection: close`), the scrapes too.
    assert!(delta(&before, &after, "mirobody_http_connections_total{}") >= 10.0);
    // list_files read the file index: the store timed that operation, named after its method.
    assert!(delta(&before, &after, r#"mirobody_db_operation_duration_seconds_count{operation="files"}"#) >= 1.0);
    assert!(
        after.keys().filter(|series| series.starts_with("mirobody_db_operation_duration_seconds_count")).all(
            |series| {
                series.split('"').nth(1).is_some_and(|operation| {
                    operation.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                })
            }
        ),
        "operations are labelled by store method names"
    );
    assert!(after["process_resident_memory_bytes{}"] > 1_000_000.0);
    assert!(after["process_open_fds{}"] > 0.0);
    assert!(after["mirobody_mcp_sessions{}"] >= 1.0);
    assert!(
        after[r#"mirobody_db_pool_connections{state="idle"}"#] + after[r#"mirobody_db_pool_connections{state="busy"}"#]
            >= 1.0
    );

    // No label names the caller, the token, the metrics token, or the tool name a client made up.
    let (_, text) = scrape(metrics_port, Some(METRICS_TOKEN));
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        for forbidden in [USER, token.as_str(), METRICS_TOKEN, "tool-named-"] {
            assert!(!line.contains(forbidden), "{line} carries {forbidden}");
        }
    }
    // The statements are timed, not logged: the log keeps its own level.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.contains("sqlx::query") && !logged.contains("SELECT"), "{logged}");
    // The main listener serves the same behind the token.
    let (status, body) = scrape(port, Some(METRICS_TOKEN));
    assert_eq!(status, 200);
    assert!(body.contains("mirobody_mcp_tool_calls_total"), "{body}");
}

#[test]
fn without_a_token_metrics_are_not_on_the_main_listener() {
    let data_dir = fresh_data_dir("metrics-listen-only");
    let port = server_port();
    let metrics_port = mirobody_testkit::free_port();
    let listen = format!("127.0.0.1:{metrics_port}");
    let (server, _log) =
        common::start_logged(&data_dir, port, &[("MIROBODY_METRICS__LISTEN", &listen), ("RUST_LOG", "warn")]);
    let _server = KillOnDrop(server);
    let (status, body) = scrape(port, None);
    assert_ne!(status, 200, "{body}");
    assert!(!body.contains("mirobody_"), "{body}");
    // The separate listener, with no token configured, is the operator's to keep private.
    let (status, body) = scrape(metrics_port, None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("mirobody_mcp_requests_total"), "{body}");
}

#[test]
fn a_short_metrics_token_is_refused_at_start() {
    let config =
        mirobody_server::config::Config::load(None, vec![("MIROBODY_METRICS__TOKEN".to_owned(), "short".to_owned())]);
    let error = config.expect_err("a short token").to_string();
    assert!(error.contains("metrics.token") && !error.contains("short\""), "{error}");
}

// The metric a series belongs to: a histogram's `_bucket`, `_sum` and `_count` are its own.
fn metric_of(series: &str) -> &str {
    let name = series.split('{').next().unwrap_or(series);
    ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix).filter(|base| base.ends_with("_seconds")))
        .unwrap_or(name)
}

// Every metric name a PromQL expression reads (identifiers followed by `{`, `[` or standing alone
// as a series), less the functions and keywords.
fn metrics_in(expression: &str) -> Vec<String> {
    const WORDS: [&str; 19] = [
        "sum",
        "rate",
        "irate",
        "increase",
        "histogram_quantile",
        "by",
        "without",
        "max",
        "min",
        "avg",
        "on",
        "le",
        "and",
        "or",
        "unless",
        "bool",
        "min_over_time",
        "max_over_time",
        "absent_over_time",
    ];
    let mut names = Vec::new();
    let mut chars = expression.char_indices().peekable();
    let mut in_braces = false;
    while let Some((start, c)) = chars.next() {
        match c {
            '{' => in_braces = true,
            '}' => in_braces = false,
            '"' => {
                // A string: skipped whole.
                for (_, c) in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                }
            }
            c if (c.is_ascii_alphabetic() || c == '_') && !in_braces => {
                let mut end = start + c.len_utf8();
                while let Some(&(i, c)) = chars.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                        end = i + c.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                let word = &expression[start..end];
                let before = expression[..start].trim_end();
                // A range's unit (`[5m]`) and a number's exponent are not names.
                if !WORDS.contains(&word) && !before.ends_with('[') && word.contains('_') {
                    names.push(word.to_owned());
                }
            }
            _ => {}
        }
    }
    names
}

fn ops_file(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn assert_exported(file: &str, expressions: &[String]) {
    assert!(!expressions.is_empty(), "{file} has no queries");
    let known: BTreeSet<&str> = mirobody_server::metrics::NAMES.into_iter().collect();
    for expression in expressions {
        // Prometheus' own `up` is the one name not the server's.
        for name in metrics_in(expression) {
            assert!(
                known.contains(metric_of(&name)),
                "{file} queries {name}, which the server does not export: {expression}"
            );
        }
    }
}

#[test]
fn the_dashboard_and_the_alerts_query_only_exported_metrics() {
    let dashboard: Value = serde_json::from_str(&ops_file("ops/grafana/mirobody.json")).expect("the dashboard is JSON");
    let mut expressions = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expression = target["expr"].as_str().expect("an expr").to_owned();
            assert!(!metrics_in(&expression).is_empty(), "no metric in {expression}");
            expressions.push(expression);
        }
    }
    assert_exported("ops/grafana/mirobody.json", &expressions);
    // Every exported metric is on the dashboard.
    let shown: BTreeSet<String> =
        expressions.iter().flat_map(|e| metrics_in(e)).map(|n| metric_of(&n).to_owned()).collect();
    for name in mirobody_server::metrics::NAMES {
        assert!(shown.contains(name), "the dashboard shows nothing of {name}");
    }

    let alerts = ops_file("ops/prometheus/alerts.yml");
    let expressions: Vec<String> = alerts
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("expr:"))
        .map(|expr| expr.trim().trim_matches(|c| c == '\'' || c == '"').to_owned())
        .collect();
    assert_exported("ops/prometheus/alerts.yml", &expressions);
}

#[test]
fn the_expression_reader_finds_names_and_skips_functions_labels_and_ranges() {
    let names = metrics_in(
        r#"histogram_quantile(0.99, sum by (le, tool) (rate(mirobody_mcp_tool_call_duration_seconds_bucket{tool=~"a_b"}[5m])))"#,
    );
    assert_eq!(names, ["mirobody_mcp_tool_call_duration_seconds_bucket"]);
    assert_eq!(metric_of("mirobody_mcp_tool_call_duration_seconds_bucket"), "mirobody_mcp_tool_call_duration_seconds");
    assert_eq!(metric_of("mirobody_mcp_requests_total"), "mirobody_mcp_requests_total");
}
