//! Each built-in tool of `mirobody-tools`, written again with `#[tool]` the way an application
//! would write it: the declarations must be equal, field for field, and so must every rendering
//! and the results of the same calls, made against the same backends. When a built-in changes,
//! its twin here changes with it.
//!
//! A twin is its own function: it reads typed arguments and reaches the backends through
//! `ToolContext` as any macro tool does, and uses nothing of the built-in's but the public
//! backend API (`valid_key`). The calls run against real backends (see [`harness`]).

use std::time::Duration;

use mirobody_core::backend::NewMemory;
use mirobody_core::{Content, PeerError, ToolContext, ToolEnum, UserInfo, tool};
use mirobody_tools::backends::valid_key;
use serde_json::{Value, json};

use crate::{registry, run};

/// The comparison, and the backends and client the calls run against.
mod harness;

use harness::{Backends, ada, anonymous, check};

// ---- echo ----

/// Echo back the provided text.
///
/// Args:
///     text: The text to echo back.
#[tool(name = "echo", annotations(read_only, idempotent), register = false)]
async fn echo(text: String) -> Value {
    json!({ "echo": text })
}

#[test]
fn echo_matches_the_builtin() {
    check(mirobody_tools::tools::echo::tool(), echo_tool(), Backends::None, &[(anonymous(), json!({"text": "héllo"}))]);
}

// ---- whoami ----

/// Confirm the caller is authenticated and return their session identifier.
#[tool(name = "whoami", annotations(read_only, idempotent), register = false)]
async fn whoami(user: &UserInfo) -> Value {
    let mut out = json!({"authenticated": true, "session_id": user.session_id()});
    if user.subject_user_id().is_some() {
        out["acting_for_member"] = json!(true);
    }
    out
}

#[test]
fn whoami_matches_the_builtin() {
    check(
        mirobody_tools::tools::whoami::tool(),
        whoami_tool(),
        Backends::None,
        &[
            (ada(), json!({})),
            (UserInfo::authenticated("ada"), json!({})),
            (UserInfo::authenticated("ada").with_subject("u-mom"), json!({})),
            (anonymous(), json!({})),
            (ada(), json!({"user_id": "eve"})),
        ],
    );
}

// ---- ask_user ----

/// Ask the user one multiple-choice question in the middle of a turn, and wait for the answer.
/// Use it only when the answer changes what you do next (a choice between real alternatives),
/// never for confirmation or small talk. If the user does not answer, continue with the most
/// reasonable default and say which one you took.
///
/// Args:
///     question: The question, short and specific.
///     options: 2-4 choices, each a short label.
///     multi_select: Whether the user may pick more than one choice.
#[tool(name = "ask_user", annotations(read_only, title = "Ask the user"), register = false)]
async fn ask_user(
    ctx: &ToolContext<'_>,
    question: &str,
    options: Vec<String>,
    #[arg(default = false)] multi_select: bool,
) -> Result<Value, String> {
    let question = question.trim();
    if question.is_empty() {
        return Err("'question' is required: the question to ask the user.".into());
    }
    if question.chars().count() > 1000 {
        return Err("'question' is too long: at most 1000 characters. Shorten it and call the tool again.".into());
    }
    let options: Vec<String> = options.iter().map(|o| o.trim().to_owned()).collect();
    if !(2..=4).contains(&options.len()) || options.iter().any(String::is_empty) {
        return Err(
            "ask_user requires an 'options' array of 2 to 4 non-empty choices, e.g. [\"Morning\", \"Evening\"].".into(),
        );
    }
    if options.iter().any(|o| o.chars().count() > 200) {
        return Err("Each option must be at most 200 characters.".into());
    }
    for (i, option) in options.iter().enumerate() {
        if options[..i].contains(option) {
            return Err(format!("The option '{option}' is listed twice; give distinct choices."));
        }
    }
    let not_answered = |reason: &str| {
        json!({
            "answered": false,
            "reason": reason,
            "guidance": "Continue with the most reasonable default and say which one you took, so they can correct it.",
        })
    };
    if !ctx.client_supports("elicitation") {
        return Ok(not_answered("This client cannot show questions to the user."));
    }
    let choice = if multi_select {
        json!({"type": "array", "title": "Your choices", "items": {"type": "string", "enum": options}})
    } else {
        json!({"type": "string", "title": "Your choice", "enum": options})
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "choice": choice,
            "other": {"type": "string", "title": "Something else", "description": "An answer in your own words, if no choice fits.", "maxLength": 1000},
        },
    });
    let reply = match ctx.request("elicitation/create", json!({"message": question, "requestedSchema": schema})).await {
        Ok(reply) => reply,
        Err(PeerError::Unsupported(_)) => return Ok(not_answered("This client cannot show questions to the user.")),
        Err(_) => return Ok(not_answered("The user did not answer.")),
    };
    Ok(match reply["action"].as_str() {
        Some("accept") => {
            let content = &reply["content"];
            let picked: Vec<&Value> = match &content["choice"] {
                Value::Array(items) => items.iter().collect(),
                one @ Value::String(_) => vec![one],
                _ => Vec::new(),
            };
            let mut selected: Vec<&str> = Vec::new();
            for choice in picked.into_iter().filter_map(Value::as_str) {
                if options.iter().any(|o| o == choice) && !selected.contains(&choice) {
                    selected.push(choice);
                }
            }
            let other = content["other"].as_str().map(str::trim).filter(|o| !o.is_empty());
            if selected.is_empty() && other.is_none() {
                not_answered("The user did not pick a choice.")
            } else {
                let mut answer = json!({"selected": selected});
                if let Some(other) = other {
                    answer["other"] = json!(cap_chars(other, 1000).0);
                }
                json!({"answered": true, "answer": answer})
            }
        }
        Some("decline") => not_answered("The user declined to answer."),
        _ => not_answered("The user dismissed the question."),
    })
}

#[test]
fn ask_user_matches_the_builtin() {
    let question = || json!({"question": "When do you exercise?", "options": ["Morning", "Evening"]});
    // With a client that has elicitation, each call that reaches it gets the client's next
    // scripted reply; what it was asked is compared too.
    check(
        mirobody_tools::tools::ask_user::tool(),
        ask_user_tool(),
        Backends::Apart,
        &[
            (anonymous(), question()),
            (
                anonymous(),
                json!({"question": " When? ", "options": [" Morning", "Evening", "Night"], "multi_select": true}),
            ),
            (anonymous(), question()),
            (anonymous(), question()),
            (anonymous(), question()),
            (anonymous(), question()),
            (anonymous(), question()),
            (anonymous(), question()),
            (anonymous(), json!({"question": " ", "options": ["A", "B"]})),
            (anonymous(), json!({"question": "x".repeat(1001), "options": ["A", "B"]})),
            (anonymous(), json!({"question": "Q", "options": ["A"]})),
            (anonymous(), json!({"question": "Q", "options": ["A", "B", "C", "D", "E"]})),
            (anonymous(), json!({"question": "Q", "options": ["A", " "]})),
            (anonymous(), json!({"question": "Q", "options": ["A", "b".repeat(201)]})),
            (anonymous(), json!({"question": "Q", "options": ["A", " A"]})),
            (anonymous(), json!({"question": "Q", "options": "A,B"})),
        ],
    );
    // Without a client, the guidance comes at once.
    check(
        mirobody_tools::tools::ask_user::tool(),
        ask_user_tool(),
        Backends::None,
        &[(anonymous(), question()), (anonymous(), json!({"question": "Q", "options": ["A"]}))],
    );
}

// ---- family_health ----

mod family_health;

// ---- list_files ----

/// List the files the user uploaded, newest first: name, file_key, MIME type, size, upload time,
/// and has_text (text was extracted from it). Pass a file_key to read_file to read one.
#[tool(name = "list_files", annotations(read_only, idempotent), register = false)]
async fn list_files(user: &UserInfo, ctx: &ToolContext<'_>) -> Result<Value, String> {
    const MAX_FILES: usize = 200;
    let owner = user.user_id().ok_or("Authentication required: sign in and call the tool again.")?;
    let files = mirobody_tools::health::health_store(ctx)
        .map_err(|e| e.to_string())?
        .files(owner)
        .await
        .map_err(|e| e.to_string())?;
    let listed: Vec<Value> = files
        .iter()
        .take(MAX_FILES)
        .map(|f| {
            json!({
                "filename": f.filename,
                "file_key": f.file_key,
                "mime": f.mime_type,
                "size": f.size,
                "uploaded_at": f.uploaded_at,
                "has_text": f.text_key.is_some(),
            })
        })
        .collect();
    let mut out = json!({"files": listed});
    if files.len() > MAX_FILES {
        out["total"] = json!(files.len());
    }
    Ok(out)
}

#[test]
fn list_files_matches_the_builtin() {
    check(
        mirobody_tools::tools::list_files::tool(),
        list_files_tool(),
        Backends::Shared,
        &[
            (ada(), json!({})),
            (UserInfo::authenticated("eve"), json!({})),
            (UserInfo::authenticated("many"), json!({})),
            (UserInfo::authenticated("nobody"), json!({})),
            (anonymous(), json!({})),
        ],
    );
}

// ---- read_file ----

/// Read one of the user's uploaded files by its file_key (from list_files). Returns the text
/// extracted from it, or its content when it is text, 50,000 characters at a time (pass the
/// answer's next_offset as offset to read on); for other files, a link that works for an hour.
///
/// Args:
///     file_key: The file_key from list_files.
///     offset: Where to start reading, in characters (next_offset of the last page).
#[tool(name = "read_file", annotations(read_only, idempotent), task_support = "optional", register = false)]
async fn read_file(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    file_key: &str,
    #[arg(default = 0)] offset: i64,
) -> Result<Value, String> {
    const URL_LIFETIME: Duration = Duration::from_secs(3600);
    const PAGE: usize = 50_000;
    let owner = user.user_id().ok_or("Authentication required: sign in and call the tool again.")?;
    let key = file_key.trim();
    if key.is_empty() {
        return Err("read_file requires a 'file_key' (see list_files).".into());
    }
    if !valid_key(key) {
        return Err("That is not a file_key this server uses; call list_files for the keys.".into());
    }
    let offset =
        usize::try_from(offset).map_err(|_| "'offset' must be 0 or more (the next_offset of the last page).")?;
    let db = mirobody_tools::health::health_store(ctx).map_err(|e| e.to_string())?;
    let storage = ctx.storage().map_err(|e| e.to_string())?;
    // A key that names a file's extracted text (`.trans`) or metadata (`.meta`) reads the file.
    let key = key.strip_suffix(".trans").or_else(|| key.strip_suffix(".meta")).unwrap_or(key);
    let file = db
        .file(owner, key)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("File not found. Call list_files for the user's files.")?;
    let text = if let Some(text_key) = &file.text_key {
        Some(String::from_utf8_lossy(&storage.get(text_key).await.map_err(|e| e.to_string())?).into_owned())
    } else if is_text_like(&file.mime_type) {
        String::from_utf8(storage.get(&file.file_key).await.map_err(|e| e.to_string())?).ok()
    } else {
        None
    };
    if let Some(text) = text {
        let total = text.chars().count();
        if offset > total || (offset == total && total > 0) {
            return Err(format!("'offset' {offset} is past the end: the text has {total} characters."));
        }
        let rest: String = text.chars().skip(offset).collect();
        let (content, truncated) = cap_chars(&rest, PAGE);
        let mut out =
            json!({"filename": file.filename, "mime": file.mime_type, "content": content, "total_chars": total});
        if offset > 0 {
            out["offset"] = json!(offset);
        }
        if truncated {
            out["truncated"] = json!(true);
            out["next_offset"] = json!(offset + PAGE);
        }
        return Ok(out);
    }
    let url = storage.signed_url(&file.file_key, URL_LIFETIME).await.map_err(|e| e.to_string())?;
    Ok(json!({
        "filename": file.filename,
        "mime": file.mime_type,
        "url": url,
        "expires_in": URL_LIFETIME.as_secs(),
        "note": "Binary file; not inlined. Fetch it from the url.",
    }))
}

/// Whether a MIME type is text a model can read inline.
fn is_text_like(mime: &str) -> bool {
    let mime = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || [
            "application/json",
            "application/xml",
            "application/javascript",
            "application/x-javascript",
            "application/ecmascript",
            "application/yaml",
            "application/x-yaml",
            "application/toml",
            "application/csv",
            "application/x-ndjson",
            "application/sql",
            "image/svg+xml",
        ]
        .contains(&mime.as_str())
}

#[test]
fn read_file_matches_the_builtin() {
    let key = |k: &str| json!({"file_key": k});
    check(
        mirobody_tools::tools::read_file::tool(),
        read_file_tool(),
        Backends::Shared,
        &[
            (ada(), key("f-notes")),
            (ada(), key(" f-notes ")),
            (ada(), key("f-lab")),
            (ada(), key("f-lab.trans")),
            (ada(), key("f-lab.meta")),
            (ada(), key("f-json")),
            (ada(), key("f-chart")),
            (ada(), key("f-latin1")),
            (ada(), key("f-long")),
            (ada(), json!({"file_key": "f-long", "offset": 50_000})),
            (ada(), json!({"file_key": "f-long", "offset": 10_000_000})),
            (ada(), json!({"file_key": "f-notes", "offset": -1})),
            (ada(), key("f-gone")),
            (ada(), key("f-eve")),
            (ada(), key("nope")),
            (ada(), key(" ")),
            (ada(), key("../etc/passwd")),
            (ada(), key(&"k".repeat(513))),
            (UserInfo::authenticated("eve"), key("f-eve")),
            (UserInfo::authenticated("eve"), key("f-notes")),
            (anonymous(), key("f-notes")),
        ],
    );
}

// ---- recall_memory ----

/// Search the user's long-term memory (facts, preferences and past episodes saved with remember)
/// for what is relevant to a query, best match first. Call it before answering when earlier
/// context about the user could matter.
///
/// Args:
///     query: What to look for, in a few words.
///     top_k: How many memories to return (1-50, default 5).
#[tool(name = "recall_memory", annotations(read_only, idempotent), register = false)]
async fn recall_memory(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    query: &str,
    #[arg(default = 5)] top_k: i64,
) -> Result<Value, String> {
    let owner = user.user_id().ok_or("Authentication required: sign in and call the tool again.")?;
    let memory = ctx.memory().map_err(|e| e.to_string())?;
    let query = query.trim();
    if query.is_empty() {
        return Err("'query' is required: what to look for in the user's memories.".into());
    }
    if query.chars().count() > 1000 {
        return Err("'query' is too long: at most 1000 characters. Shorten it and call the tool again.".into());
    }
    if top_k < 1 {
        return Err("'top_k' must be between 1 and 50.".into());
    }
    let found = memory.recall(owner, query, top_k.min(50) as usize).await.map_err(|e| e.to_string())?;
    let memories: Vec<Value> = found
        .into_iter()
        .map(|m| json!({"id": m.id, "text": m.text, "kind": m.kind, "score": m.score, "created_at": m.created_at}))
        .collect();
    Ok(json!({"memories": memories}))
}

#[test]
fn recall_memory_matches_the_builtin() {
    // Shared: a memory's `created_at` is when the seeding stored it.
    check(
        mirobody_tools::tools::recall_memory::tool(),
        recall_memory_tool(),
        Backends::Shared,
        &[
            (ada(), json!({"query": "allergic"})),
            (ada(), json!({"query": "runs morning", "top_k": 1})),
            (ada(), json!({"query": "units OR running", "top_k": 500})),
            (ada(), json!({"query": "peanuts"})),
            (UserInfo::authenticated("eve"), json!({"query": "allergic"})),
            (ada(), json!({"query": "allergic", "top_k": 0})),
            (ada(), json!({"query": "  "})),
            (ada(), json!({"query": "q".repeat(1001)})),
            (anonymous(), json!({"query": "allergic"})),
        ],
    );
}

// ---- remember ----

/// What a memory is.
#[derive(ToolEnum, Clone, Copy)]
#[tool_enum(rename_all = "lowercase")]
enum Kind {
    Fact,
    Preference,
    Episode,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Fact => "fact",
            Kind::Preference => "preference",
            Kind::Episode => "episode",
        }
    }
}

/// Save something worth knowing about the user in later conversations to their long-term memory:
/// a fact ("allergic to penicillin"), a preference ("prefers metric units") or an episode
/// ("ran a 10k on 2026-03-01"). One self-contained statement per call.
///
/// Args:
///     text: The memory, one self-contained statement.
///     kind: fact | preference | episode (default fact).
#[tool(name = "remember", annotations(additive), register = false)]
async fn remember(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    text: &str,
    #[arg(default = "fact")] kind: Kind,
) -> Result<Value, String> {
    let owner = user.user_id().ok_or("Authentication required: sign in and call the tool again.")?;
    let memory = ctx.memory().map_err(|e| e.to_string())?;
    let text = text.trim();
    if text.is_empty() {
        return Err("'text' is required: the statement to remember.".into());
    }
    if text.chars().count() > 2000 {
        return Err("'text' is too long: at most 2000 characters. Shorten it and call the tool again.".into());
    }
    let new = NewMemory {
        text: text.to_owned(),
        kind: kind.as_str().to_owned(),
        session_id: user.session_id().map(str::to_owned),
    };
    let id = memory.remember(owner, new).await.map_err(|e| e.to_string())?;
    Ok(json!({"id": id, "stored": true}))
}

#[test]
fn remember_matches_the_builtin() {
    // Apart: the ids of new memories must match, and so must what each side stored.
    check(
        mirobody_tools::tools::remember::tool(),
        remember_tool(),
        Backends::Apart,
        &[
            (ada(), json!({"text": " Sleeps badly after late coffee. "})),
            (ada(), json!({"text": "Prefers evening runs", "kind": "preference"})),
            (UserInfo::authenticated("eve"), json!({"text": "Ran a half marathon", "kind": "episode"})),
            (ada(), json!({"text": "x", "kind": "rumour"})),
            (ada(), json!({"text": " "})),
            (ada(), json!({"text": "m".repeat(2001)})),
            (anonymous(), json!({"text": "anything"})),
        ],
    );
}

// ---- render_chart ----

/// Show the user a chart in the chat, from a complete Apache ECharts option. Rules: no color keys
/// (the app sets colors); name every series, and add a legend when there are two or more; use one
/// value axis. Line, bar, scatter and pie charts are also returned as an image.
///
/// Args:
///     option: A complete Apache ECharts option: series (each with a type and data), plus xAxis
///         and yAxis for line, bar and scatter charts.
///     title: A title shown above the chart.
#[tool(
    name = "render_chart",
    annotations(read_only, idempotent),
    task_support = "optional",
    view = "ui://mirobody/chart.html",
    register = false
)]
async fn render_chart(option: Value, title: Option<&str>) -> Result<Value, String> {
    const SERIES_TYPES: [&str; 22] = [
        "line",
        "bar",
        "pie",
        "scatter",
        "effectScatter",
        "radar",
        "tree",
        "treemap",
        "sunburst",
        "boxplot",
        "candlestick",
        "heatmap",
        "map",
        "parallel",
        "lines",
        "graph",
        "sankey",
        "funnel",
        "gauge",
        "pictorialBar",
        "themeRiver",
        "custom",
    ];
    const CARTESIAN: [&str; 7] = ["line", "bar", "scatter", "effectScatter", "candlestick", "boxplot", "pictorialBar"];
    const MAX_OPTION_BYTES: usize = 256 * 1024;
    const EXAMPLE: &str = r#"{"xAxis":{"type":"category","data":["Mon","Tue"]},"yAxis":{"type":"value"},"series":[{"name":"Steps","type":"bar","data":[5200,8100]}]}"#;
    let invalid =
        |problem: &str| format!("render_chart needs a valid Apache ECharts option: {problem}. For example: {EXAMPLE}");
    let size = serde_json::to_vec(&option).map_or(usize::MAX, |v| v.len());
    if size > MAX_OPTION_BYTES {
        return Err(invalid(&format!(
            "the option is {size} bytes, over the {MAX_OPTION_BYTES}-byte limit; aggregate the data first"
        )));
    }
    let series: Vec<&Value> = match &option["series"] {
        Value::Array(items) if !items.is_empty() => items.iter().collect(),
        one @ Value::Object(_) => vec![one],
        Value::Null => return Err(invalid("'series' is missing")),
        _ => return Err(invalid("'series' must be a non-empty array of series objects")),
    };
    let mut kinds = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let Some(kind) = s["type"].as_str() else {
            return Err(invalid(&format!("series[{i}] needs a 'type' such as \"line\", \"bar\" or \"pie\"")));
        };
        if !SERIES_TYPES.contains(&kind) {
            return Err(invalid(&format!("series[{i}] has unknown type '{kind}'")));
        }
        match s.get("data") {
            Some(Value::Array(_)) => {}
            Some(_) => return Err(invalid(&format!("series[{i}].data must be an array"))),
            None if option.get("dataset").is_none() && !matches!(kind, "map" | "custom") => {
                return Err(invalid(&format!("series[{i}] has no 'data' (and the option has no 'dataset')")));
            }
            None => {}
        }
        if CARTESIAN.contains(&kind) && s["coordinateSystem"].as_str().unwrap_or("cartesian2d") == "cartesian2d" {
            for axis in ["xAxis", "yAxis"] {
                if !matches!(option.get(axis), Some(Value::Object(_) | Value::Array(_))) {
                    return Err(invalid(&format!("a {kind} chart needs '{axis}' (an object)")));
                }
            }
        }
        kinds.push(kind);
    }
    let title = title.map(str::trim).filter(|t| !t.is_empty());
    if title.is_some_and(|t| t.chars().count() > 200) {
        return Err("'title' is too long: at most 200 characters.".into());
    }
    let mut out = json!({"status": "ok", "message": "Chart rendered to the user.", "option": option});
    if let Some(title) = title {
        out["title"] = json!(title);
    }
    // This twin draws no picture (the built-in's renderer is private to mirobody-tools).
    out["image"] = Value::Null;
    out["note"] = json!(format!(
        "No image of this chart: no static preview for {} charts. Clients with a chart widget still show it.",
        kinds.join("/")
    ));
    Ok(out)
}

#[test]
fn render_chart_matches_the_builtin() {
    let axes = json!({"xAxis": {"type": "category", "data": ["Mon", "Tue"]}, "yAxis": {"type": "value"}});
    let with = |extra: Value| {
        let mut option = axes.clone();
        option.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"option": option})
    };
    // Every call the built-in answers without drawing: a bad option, a bad title, or a chart
    // it has no static preview of. What it draws is compared below.
    check(
        mirobody_tools::tools::render_chart::tool(),
        render_chart_tool(),
        Backends::None,
        &[
            (anonymous(), json!({"option": {"series": [{"type": "sankey", "data": []}]}, "title": " Flows "})),
            (anonymous(), json!({"option": {"series": {"type": "radar", "data": [[1, 2]]}}})),
            (anonymous(), with(json!({"series": [{"type": "pie", "data": [1]}, {"type": "line", "data": [2]}]}))),
            (anonymous(), json!({"option": {"series": [{"type": "map"}], "title": {"text": "World"}}, "title": " "})),
            (anonymous(), json!({"option": {}})),
            (anonymous(), json!({"option": {"series": []}})),
            (anonymous(), json!({"option": {"series": "bar"}})),
            (anonymous(), json!({"option": {"series": [{"data": [1]}]}})),
            (anonymous(), json!({"option": {"series": [{"type": "bars", "data": [1]}]}})),
            (anonymous(), json!({"option": {"series": [{"type": "pie", "data": 5}]}})),
            (anonymous(), json!({"option": {"series": [{"type": "pie"}]}})),
            (anonymous(), json!({"option": {"series": [{"type": "line", "data": [1]}]}})),
            (anonymous(), json!({"option": {"xAxis": {}, "series": [{"type": "bar", "data": [1]}]}})),
            (anonymous(), json!({"option": {"series": [{"type": "pie", "data": ["x".repeat(256 * 1024)]}]}})),
            (anonymous(), json!({"option": {"series": [{"type": "gauge", "data": [1]}]}, "title": "t".repeat(201)})),
            (anonymous(), json!({"option": "not an object"})),
        ],
    );

    // A chart the built-in draws: the same answer, except that it carries the picture.
    let call = with(json!({"series": [{"name": "Steps", "type": "bar", "data": [5200, 8100]}]}));
    let builtin = run(&registry([mirobody_tools::tools::render_chart::tool()]), "render_chart", call.clone());
    let twin = run(&registry([render_chart_tool()]), "render_chart", call);
    let mut drawn = builtin.structured_content().unwrap().clone();
    let mut undrawn = twin.structured_content().unwrap().clone();
    assert_eq!(drawn.remove("image"), Some(json!("image/png")));
    assert!(undrawn.remove("note").is_some() && undrawn.remove("image") == Some(Value::Null));
    assert_eq!(undrawn, drawn);
    assert!(matches!(&builtin.content()[1], Content::Image { .. }));
}

// ---- summarize_conversation ----

/// Set a short title for the current conversation, shown in the user's chat history.
/// At most 200 characters; longer text is cut.
///
/// Args:
///     summary: The title, a few words (at most 200 characters).
#[tool(name = "summarize_conversation", annotations(destructive, idempotent), register = false)]
async fn summarize_conversation(user: &UserInfo, ctx: &ToolContext<'_>, summary: &str) -> Result<Value, String> {
    let owner = user.user_id().ok_or("Authentication required: sign in and call the tool again.")?;
    let db = mirobody_tools::health::health_store(ctx).map_err(|e| e.to_string())?;
    let summary = summary.trim();
    if summary.is_empty() {
        return Err("'summary' is required: a short title for the conversation.".into());
    }
    if summary.chars().count() > 10_000 {
        return Err("'summary' is far too long; send at most 200 characters.".into());
    }
    let session =
        user.session_id().ok_or("No active conversation to summarize: this call is not part of a session.")?;
    let (summary, truncated) = cap_chars(summary, 200);
    db.set_conversation_summary(owner, session, summary).await.map_err(|e| e.to_string())?;
    let mut out = json!({"updated": true});
    if truncated {
        out["summary"] = json!(summary);
        out["truncated"] = json!(true);
    }
    Ok(out)
}

#[test]
fn summarize_conversation_matches_the_builtin() {
    // Apart: what each side stored is compared too.
    check(
        mirobody_tools::tools::summarize_conversation::tool(),
        summarize_conversation_tool(),
        Backends::Apart,
        &[
            (ada(), json!({"summary": " Planning a 10k "})),
            (UserInfo::authenticated("eve").with_session("chat-eve"), json!({"summary": "é".repeat(250)})),
            (UserInfo::authenticated("ada"), json!({"summary": "No session"})),
            (ada(), json!({"summary": "  "})),
            (ada(), json!({"summary": "s".repeat(10_001)})),
            (anonymous(), json!({"summary": "Anything"})),
        ],
    );
}

// ---- Helpers the twins share ----

/// The first `max` characters of `text`, and whether anything was cut.
fn cap_chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}
