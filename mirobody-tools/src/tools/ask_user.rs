//! `ask_user`: one multiple-choice question to the user, mid-turn.
//!
//! It asks through MCP elicitation (`elicitation/create`) when the client declared that
//! capability, on the stream of this very call: the question belongs to this call and this
//! session, so no other caller can answer or cancel it (upstream kept one process-wide slot,
//! which two questions in one round, or one stopped turn, could spoil for everyone). A client
//! without elicitation gets the "not answered, take the most reasonable default" guidance at
//! once instead of a five-minute stall.

use mirobody_core::{PeerError, ToolContext, ToolError, ToolResult, tool};
use serde_json::{Map, Value, json};

use super::required_text;

/// The most characters in a question.
pub(crate) const MAX_QUESTION_CHARS: usize = 1000;
/// The most characters in one option.
pub(crate) const MAX_OPTION_CHARS: usize = 200;
/// The fewest and most options.
pub(crate) const OPTIONS: std::ops::RangeInclusive<usize> = 2..=4;
/// The most characters kept of a free-text answer.
pub(crate) const MAX_OTHER_CHARS: usize = 1000;

const GUIDANCE: &str = "Continue with the most reasonable default and say which one you took, so they can correct it.";

fn not_answered(reason: &str) -> ToolResult {
    ToolResult::ok(json!({"answered": false, "reason": reason, "guidance": GUIDANCE}))
}

/// The validated options: 2 to 4 distinct, non-empty labels.
fn options(given: &[String]) -> Result<Vec<String>, ToolError> {
    let options: Vec<String> = given.iter().map(|o| o.trim().to_owned()).collect();
    if !OPTIONS.contains(&options.len()) || options.iter().any(String::is_empty) {
        return Err(ToolError::new(format!(
            "ask_user requires an 'options' array of {} to {} non-empty choices, e.g. [\"Morning\", \"Evening\"].",
            OPTIONS.start(),
            OPTIONS.end()
        )));
    }
    if options.iter().any(|o| o.chars().count() > MAX_OPTION_CHARS) {
        return Err(ToolError::new(format!("Each option must be at most {MAX_OPTION_CHARS} characters.")));
    }
    for (i, option) in options.iter().enumerate() {
        if options[..i].contains(option) {
            return Err(ToolError::new(format!("The option '{option}' is listed twice; give distinct choices.")));
        }
    }
    Ok(options)
}

/// The elicitation schema: one choice (or several), or an answer in the user's own words.
fn requested_schema(options: &[String], multi: bool) -> Value {
    let choice = if multi {
        json!({"type": "array", "title": "Your choices", "items": {"type": "string", "enum": options}})
    } else {
        json!({"type": "string", "title": "Your choice", "enum": options})
    };
    json!({
        "type": "object",
        "properties": {
            "choice": choice,
            "other": {"type": "string", "title": "Something else", "description": "An answer in your own words, if no choice fits.", "maxLength": MAX_OTHER_CHARS},
        },
    })
}

/// The answer from an accepted elicitation: the chosen options (only those offered) and any
/// free text. `None` when the user accepted without answering anything.
fn answer(content: &Value, options: &[String]) -> Option<Value> {
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
        return None;
    }
    let mut out = Map::new();
    out.insert("selected".into(), json!(selected));
    if let Some(other) = other {
        out.insert("other".into(), json!(mirobody_health::text::cap_chars(other, MAX_OTHER_CHARS).0));
    }
    Some(Value::Object(out))
}

/// Ask the user one multiple-choice question in the middle of a turn, and wait for the answer.
/// Use it only when the answer changes what you do next (a choice between real alternatives),
/// never for confirmation or small talk. If the user does not answer, continue with the most
/// reasonable default and say which one you took.
///
/// Args:
///     question: The question, short and specific.
///     options: 2-4 choices, each a short label.
///     multi_select: Whether the user may pick more than one choice.
#[tool(annotations(read_only, title = "Ask the user"))]
async fn ask_user(
    ctx: &ToolContext<'_>,
    question: &str,
    options: Vec<String>,
    #[arg(default = false)] multi_select: bool,
) -> Result<ToolResult, ToolError> {
    let question = required_text(question, "question", MAX_QUESTION_CHARS, "the question to ask the user")?;
    let options = self::options(&options)?;
    let multi = multi_select;
    let Some(client) = ctx.client().filter(|c| c.supports("elicitation")) else {
        return Ok(not_answered("This client cannot show questions to the user."));
    };
    let params = json!({"message": question, "requestedSchema": requested_schema(&options, multi)});
    let reply = match client.request("elicitation/create", params).await {
        Ok(reply) => reply,
        Err(PeerError::Unsupported(_)) => return Ok(not_answered("This client cannot show questions to the user.")),
        Err(e) => {
            tracing::debug!(error = %e, "ask_user got no answer");
            return Ok(not_answered("The user did not answer."));
        }
    };
    Ok(match reply["action"].as_str() {
        Some("accept") => match answer(&reply["content"], &options) {
            Some(answer) => ToolResult::ok(json!({"answered": true, "answer": answer})),
            None => not_answered("The user did not pick a choice."),
        },
        Some("decline") => not_answered("The user declined to answer."),
        _ => not_answered("The user dismissed the question."),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use futures::executor::block_on;
    use mirobody_core::{ClientPeer, PeerError, Registry, ToolContext, ToolResult, UserInfo};
    use serde_json::{Value, json};

    /// A client that answers every question with a fixed reply and remembers what it was asked.
    struct Client {
        elicitation: bool,
        reply: Result<Value, PeerError>,
        asked: Mutex<Vec<Value>>,
    }

    #[async_trait]
    impl ClientPeer for Client {
        async fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
        async fn log(&self, _: &str, _: Value) {}
        async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
            assert_eq!(method, "elicitation/create");
            self.asked.lock().unwrap().push(params);
            self.reply.clone()
        }
        fn supports(&self, capability: &str) -> bool {
            capability == "elicitation" && self.elicitation
        }
    }

    fn client(elicitation: bool, reply: Result<Value, PeerError>) -> Client {
        Client { elicitation, reply, asked: Mutex::default() }
    }

    fn ask(client: Option<&Client>, args: Value) -> ToolResult {
        let registry = Registry::builder().tool(super::ask_user_tool()).build().unwrap();
        let mut ctx = ToolContext::new();
        if let Some(client) = client {
            ctx = ctx.with_client(client);
        }
        block_on(registry.run("ask_user", args, &UserInfo::anonymous(), &ctx))
    }

    fn question() -> Value {
        json!({"question": "When do you exercise?", "options": ["Morning", "Evening"]})
    }

    #[test]
    fn an_answer_comes_back_as_the_selected_options() {
        let c = client(true, Ok(json!({"action": "accept", "content": {"choice": "Evening"}})));
        let result = ask(Some(&c), question());
        assert_eq!(result.structured_content().unwrap()["answer"], json!({"selected": ["Evening"]}));
        let asked = &c.asked.lock().unwrap()[0];
        assert_eq!(asked["message"], "When do you exercise?");
        assert_eq!(asked["requestedSchema"]["properties"]["choice"]["enum"], json!(["Morning", "Evening"]));
    }

    #[test]
    fn multi_select_keeps_only_offered_choices() {
        let c = client(
            true,
            Ok(
                json!({"action": "accept", "content": {"choice": ["Evening", "Never", "Evening"], "other": " weekends "}}),
            ),
        );
        let mut args = question();
        args["multi_select"] = json!(true);
        let result = ask(Some(&c), args);
        assert_eq!(
            result.structured_content().unwrap()["answer"],
            json!({"selected": ["Evening"], "other": "weekends"})
        );
        assert_eq!(c.asked.lock().unwrap()[0]["requestedSchema"]["properties"]["choice"]["type"], "array");
    }

    #[test]
    fn without_elicitation_the_guidance_comes_at_once() {
        for c in [None, Some(client(false, Ok(json!({}))))] {
            let result = ask(c.as_ref(), question());
            let out = result.structured_content().unwrap();
            assert_eq!(out["answered"], false);
            assert!(out["guidance"].as_str().unwrap().contains("most reasonable default"));
            if let Some(c) = &c {
                assert!(c.asked.lock().unwrap().is_empty(), "a client without the capability is never asked");
            }
        }
    }

    #[test]
    fn declines_timeouts_and_empty_answers_are_not_answers() {
        for (reply, reason) in [
            (Ok(json!({"action": "decline"})), "declined"),
            (Ok(json!({"action": "cancel"})), "dismissed"),
            (Ok(json!({"action": "accept", "content": {"choice": "Never"}})), "did not pick"),
            (Err(PeerError::NoAnswer), "did not answer"),
        ] {
            let result = ask(Some(&client(true, reply)), question());
            let out = result.structured_content().unwrap();
            assert_eq!(out["answered"], false);
            assert!(out["reason"].as_str().unwrap().contains(reason), "{out:?}");
        }
    }

    #[test]
    fn bad_questions_are_refused_before_asking() {
        let c = client(true, Ok(json!({"action": "accept", "content": {"choice": "A"}})));
        for (args, message) in [
            (json!({"question": " ", "options": ["A", "B"]}), "'question' is required"),
            (json!({"question": "Q", "options": ["A"]}), "2 to 4"),
            (json!({"question": "Q", "options": ["A", "B", "C", "D", "E"]}), "2 to 4"),
            (json!({"question": "Q", "options": ["A", ""]}), "2 to 4"),
            (json!({"question": "Q", "options": ["A", "A"]}), "twice"),
            (json!({"question": "x".repeat(1001), "options": ["A", "B"]}), "too long"),
            (json!({"question": "Q", "options": ["A", "b".repeat(201)]}), "at most 200"),
            (json!({"question": "Q", "options": "A,B"}), "must be an array"),
            (json!({"question": "Q", "options": ["A", 2]}), "must be a string"),
        ] {
            let result = ask(Some(&c), args);
            assert!(result.is_error());
            assert!(result.first_text().unwrap().contains(message), "{:?} lacks {message}", result.first_text());
        }
        assert!(c.asked.lock().unwrap().is_empty());
    }
}
