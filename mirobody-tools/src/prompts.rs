//! The built-in prompts a person picks from their client's menu: a weekly health summary,
//! preparing for a doctor's visit, explaining a lab report.
//!
//! Each self-registers, so a server that builds its prompts with
//! `PromptRegistry::from_registered` serves them (mirobody-server does); [`builtin_prompts`]
//! gives them for a registry built by hand. A prompt renders one user message that names the
//! built-in tools to call and says what to produce; the model answers in the person's language.
//! Arguments are checked here: an unknown name, a value too long or with control characters is
//! refused with a message (a JSON-RPC invalid-params error on the wire), never passed on.

use std::collections::HashMap;

use mirobody_core::{Content, Prompt, PromptMessage, register_prompt};

/// The most characters in a free-text argument (a visit's reason, a member's name).
pub const MAX_ARGUMENT_CHARS: usize = 200;
/// The most characters in `explain_lab_report`'s `file` (a file_key is at most 512 bytes).
pub const MAX_FILE_CHARS: usize = 512;

const DAY_MS: i64 = 86_400_000;

// Closes every prompt: the person's language, and no diagnosis.
const CLOSING: &str = "Answer in the language I use with you (if unsure, the language of my data and files). \
                       Use plain words, say what data is missing instead of guessing, and do not diagnose: \
                       point out what to ask a doctor.";

/// The prompts below, in name order.
pub fn builtin_prompts() -> Vec<Prompt> {
    vec![explain_lab_report(), prepare_doctor_visit(), weekly_health_summary()]
}

/// Reads the arguments a prompt takes: unknown names are refused, values are trimmed, an empty
/// one counts as not given, and each is at most `max` characters without control characters.
fn arguments(
    prompt: &str,
    args: HashMap<String, String>,
    known: &[(&str, usize)],
) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for (name, value) in args {
        let Some(&(_, max)) = known.iter().find(|(k, _)| *k == name) else {
            let names: Vec<&str> = known.iter().map(|(k, _)| *k).collect();
            let takes = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
            return Err(format!("Unknown argument '{}' for prompt '{prompt}'; it takes: {takes}", short(&name)));
        };
        let value = value.trim();
        if value.chars().count() > max {
            return Err(format!("The argument '{name}' is too long: at most {max} characters"));
        }
        if value.chars().any(char::is_control) {
            return Err(format!("The argument '{name}' must be one line of text"));
        }
        if !value.is_empty() {
            out.insert(name, value.to_owned());
        }
    }
    Ok(out)
}

// A name echoed in an error, cut short.
fn short(text: &str) -> String {
    text.chars().take(40).collect()
}

// A step that draws with render_chart, said only where the tool is built in.
fn chart_step(text: &str) -> &str {
    if cfg!(feature = "charts") { text } else { "" }
}

fn one_message(text: String) -> Vec<PromptMessage> {
    vec![PromptMessage::user(Content::text(text))]
}

/// `weekly_health_summary`: the last seven days of the person's (or a care-circle member's)
/// data, with the dates filled in.
pub fn weekly_health_summary() -> Prompt {
    const NAME: &str = "weekly_health_summary";
    Prompt::new(NAME, "Summarize the last seven days of health data: trends, changes, what stands out.", |args| {
        let args = arguments(NAME, args, &[("member", MAX_ARGUMENT_CHARS)])?;
        let now = mirobody_core::clock::now_ms();
        let day = |ms: i64| mirobody_health::text::rfc3339(ms)[..10].to_owned();
        let (start, end, before) = (day(now - 7 * DAY_MS), day(now), day(now - 35 * DAY_MS));
        let whose = match args.get("member") {
            Some(member) => {
                format!("the health data of my care-circle member \"{member}\" (pass member=\"{member}\" to each tool)")
            }
            None => "my health data".to_owned(),
        };
        Ok(one_message(format!(
            "Give me a weekly summary of {whose} from {start} to {end}.\n\
             1. Call get_user_health_profile to see which indicators there are and the dates the data covers.\n\
             2. Call fetch_health_data with those indicators and start_time \"{before}\", so this week can be \
             compared with the four weeks before.\n{}\
             Write: two or three sentences on the week; what changed against the weeks before, with values and \
             dates; values outside their usual range; one or two practical suggestions. Keep it short. {CLOSING}",
            chart_step("3. Draw the most telling trend with render_chart (a line chart, dates on a time x axis).\n")
        )))
    })
    .title("Weekly health summary")
    .argument("member", "Whose week: leave empty for yours, or a care-circle member's name.", false)
}

/// `prepare_doctor_visit`: a one-page brief for a visit, focused on its reason when given.
pub fn prepare_doctor_visit() -> Prompt {
    const NAME: &str = "prepare_doctor_visit";
    Prompt::new(NAME, "Prepare a one-page brief and questions for an upcoming doctor's visit.", |args| {
        let args = arguments(NAME, args, &[("reason", MAX_ARGUMENT_CHARS)])?;
        let focus = match args.get("reason") {
            Some(reason) => format!("The visit is about: \"{reason}\". Focus on what matters for it."),
            None => {
                "I have not said what the visit is about: cover my general health, and ask me if it matters.".to_owned()
            }
        };
        Ok(one_message(format!(
            "Help me prepare for a doctor's visit. {focus}\n\
             1. Call get_user_health_profile for my conditions, medications, allergies and latest values.\n\
             2. Call search_health_indicators to find the indicators relevant to the visit, then fetch_health_data \
             for their history{}.\n\
             3. Call list_files for recent reports (read_file for the relevant ones) and recall_memory for \
             symptoms or concerns I mentioned before.\n\
             Produce one page I can show the doctor: a short summary; the relevant values with dates and \
             trends; current medications and allergies; and three to six questions to ask. {CLOSING}",
            chart_step("; draw a trend that matters with render_chart")
        )))
    })
    .title("Prepare for a doctor's visit")
    .argument("reason", "What the visit is for or the doctor's specialty, e.g. \"cardiology\" (optional).", false)
}

/// `explain_lab_report`: one uploaded report explained result by result.
pub fn explain_lab_report() -> Prompt {
    const NAME: &str = "explain_lab_report";
    Prompt::new(NAME, "Explain an uploaded lab report in plain words, result by result.", |args| {
        let args = arguments(NAME, args, &[("file", MAX_FILE_CHARS)])?;
        let file = args.get("file").ok_or_else(|| format!("The argument 'file' of prompt '{NAME}' is empty"))?;
        let find = if mirobody_health::valid_key(file) {
            format!("Call read_file with file_key \"{file}\" (if it is not found, call list_files and pick the report by name).")
        } else {
            format!("Call list_files, find the report named like \"{file}\", then read it with read_file.")
        };
        Ok(one_message(format!(
            "Explain my lab report. {find} Read every page (next_offset) before answering.\n\
             For each result: what it measures, my value with its unit, the reference range, and whether it is in \
             range. Then, for results out of range, call fetch_health_data to compare with my earlier values and \
             say whether they are getting better or worse. End with what to ask my doctor. {CLOSING}"
        )))
    })
    .title("Explain a lab report")
    .argument("file", "The report: its file_key from list_files, or its file name.", true)
}

register_prompt!(weekly_health_summary);
register_prompt!(prepare_doctor_visit);
register_prompt!(explain_lab_report);

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn arguments_are_trimmed_bounded_and_known() {
        let known = [("reason", 10)];
        assert_eq!(arguments("p", args(&[("reason", "  eyes ")]), &known).unwrap(), args(&[("reason", "eyes")]));
        assert!(arguments("p", args(&[("reason", "   ")]), &known).unwrap().is_empty(), "blank is not given");
        let err = arguments("p", args(&[("reason", &"x".repeat(11))]), &known).unwrap_err();
        assert!(err.contains("at most 10"), "{err}");
        assert!(arguments("p", args(&[("reason", &"x".repeat(10))]), &known).is_ok(), "the bound itself is fine");
        let err = arguments("p", args(&[("reason", "a\nb")]), &known).unwrap_err();
        assert!(err.contains("one line"), "{err}");
        let err = arguments("p", args(&[("topic", "x")]), &known).unwrap_err();
        assert_eq!(err, "Unknown argument 'topic' for prompt 'p'; it takes: reason");
    }

    #[test]
    fn the_prompts_are_in_name_order_and_unique() {
        let names: Vec<String> = builtin_prompts().iter().map(|p| p.name().to_owned()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names, sorted);
    }
}
