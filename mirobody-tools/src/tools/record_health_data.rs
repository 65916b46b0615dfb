//! `record_health_data`: the model records values it read in one of the person's documents
//! (through `read_file`) or that the person told it, so that a lab report's values become
//! indicator data `fetch_health_data` reads, flags and charts.
//!
//! Every value is checked against the catalog (`recorded_value.rs`) before anything is
//! written; one wrong value refuses the whole call, each wrong one named with why, and nothing
//! is stored. The values are one import of the caller's (`mirobody_health::recording`) whose
//! source is the file they were read from, so deleting the file deletes them, and each has an
//! identifier made from its source and content, so recording the same values again stores
//! nothing new.

use mirobody_core::clock::now_ms;
use mirobody_core::{ToolContext, ToolError, ToolResult, UserInfo, tool};
use mirobody_health::fhir::{self, EntryInput, ImportItem};
use mirobody_health::recording::record_items;
use mirobody_health::{ImportKind, ImportSource, ItemOutcome, health_store};
use serde_json::{Value, json};

use super::recorded_value::{self, CheckedValue, MAX_VALUES, ValueInput};
use super::{caller, fail};
use crate::erasure::personal_data;

/// The longest file key accepted.
const MAX_KEY_CHARS: usize = super::read_file::MAX_KEY_LEN;

/// Record health values the user's document shows (read it with read_file first; pass its file_key) or that the user told you (no file_key), such as each result of a lab report: each value is checked (a known indicator or its LOINC code, a unit it is measured in, a plausible value, a past date), all are refused if one is wrong, and values already recorded are not stored twice. Deleting the file deletes the values recorded from it.
#[tool(
    annotations(additive, idempotent, title = "Record health data"),
    output_schema = crate::tools::output_schemas::record_health_data(),
    input_schema = {
        "type": "object",
        "properties": {
            "values": {
                "type": "array",
                "minItems": 1,
                "maxItems": 50,
                "description": "The values, one per indicator and time, as the document or the user gives them.",
                "items": {
                    "type": "object",
                    "properties": {
                        "indicator": {"type": "string", "maxLength": 200, "description": "What was measured, as named (e.g. \"Glucose\", \"Hemoglobin\", \"Platelets\")."},
                        "value": {"type": "number", "description": "The number measured."},
                        "unit": {"type": "string", "maxLength": 32, "description": "Its unit as written (e.g. mmol/L, g/dL, 10^9/L); required for lab and body measurements."},
                        "time": {"type": "string", "maxLength": 40, "description": "When it was measured or collected: a date (2026-01-15) or an RFC 3339 time."},
                        "code": {"type": "string", "maxLength": 16, "description": "Its LOINC code (e.g. 2345-7), when the document gives one or the indicator is not a common one."},
                        "reference_low": {"type": "number", "description": "The low end of the reference range printed beside it, in its unit."},
                        "reference_high": {"type": "number", "description": "The high end of the reference range printed beside it, in its unit."}
                    },
                    "required": ["indicator", "value", "time"],
                    "additionalProperties": false
                }
            },
            "file_key": {"type": "string", "maxLength": 512, "description": "The file_key (from list_files) of the document the values were read from; leave it out when the user told you the values."}
        },
        "required": ["values"],
        "additionalProperties": false
    }
)]
async fn record_health_data(
    user: &UserInfo,
    ctx: &ToolContext<'_>,
    values: Vec<ValueInput>,
    file_key: Option<String>,
) -> Result<ToolResult, ToolError> {
    let owner = caller(user)?;
    record(ctx, owner, &values, file_key.as_deref(), now_ms()).await
}

/// The tool's work, with the clock as an argument for tests.
async fn record(
    ctx: &ToolContext<'_>,
    owner: &str,
    values: &[ValueInput],
    file_key: Option<&str>,
    now_ms: i64,
) -> Result<ToolResult, ToolError> {
    if values.is_empty() {
        return Err(ToolError::new("'values' is empty: give at least one value to record."));
    }
    if values.len() > MAX_VALUES {
        return Err(ToolError::new(format!(
            "Nothing was recorded: {} values is more than {MAX_VALUES} in one call. Record them in calls of at most \
             {MAX_VALUES}.",
            values.len()
        )));
    }
    let checked = check_all(values, now_ms)?;
    let file_key = match file_key.map(str::trim) {
        None => None,
        Some("") => return Err(ToolError::new("'file_key' is empty: give the file's key, or leave it out.")),
        Some(key) if key.chars().count() > MAX_KEY_CHARS => {
            return Err(ToolError::new(format!("'file_key' is longer than {MAX_KEY_CHARS} characters.")));
        }
        Some(key) => Some(key),
    };
    let db = health_store(ctx).map_err(fail)?;
    let store = personal_data(ctx).ok_or_else(|| ToolError::new("This server cannot record health data."))?;
    if let Some(key) = file_key {
        // Only the caller's own file: another person's is "not found", as a key that is no file.
        if db.file(owner, key).await.map_err(fail)?.is_none() {
            return Err(ToolError::new(format!(
                "Nothing was recorded: the user has no file '{}' (list_files gives their files).",
                mirobody_health::text::cap_chars(key, 60).0
            )));
        }
    }
    let items = observations(&checked, file_key)?;
    let refs: Vec<&ImportItem> = items.iter().map(|(item, _)| item).collect();
    let source = ImportSource::new(ImportKind::Tool).with_file(file_key).via("record_health_data");
    let recorded = match record_items(store, owner, &source, &refs).await.map_err(fail)? {
        Ok(recorded) => recorded,
        Err(quota) => return Err(ToolError::new(format!("Nothing was recorded: {quota}"))),
    };
    let mut new = 0;
    let listed: Vec<Value> = checked
        .iter()
        .zip(&items)
        .zip(&recorded.outcomes)
        .map(|((value, (_, id)), outcome)| {
            let stored = match outcome {
                ItemOutcome::Created | ItemOutcome::Updated => {
                    new += 1;
                    "new"
                }
                _ => "already recorded",
            };
            let mut entry = json!({
                "id": id,
                "indicator": value.display,
                "code": value.code,
                "value": value.value,
                "time": mirobody_health::text::rfc3339(value.time_ms),
                "stored": stored,
            });
            if let Some(unit) = value.unit {
                entry["unit"] = unit.into();
            }
            if let Some(flag) = value.flag() {
                entry["flag"] = flag.into();
            }
            entry
        })
        .collect();
    tracing::info!(owner, new, from_file = file_key.is_some(), "health values recorded");
    let mut answer = json!({
        "recorded": new,
        "already_recorded": checked.len() - new,
        "source": match file_key {
            Some(key) => json!({"file_key": key}),
            None => json!("told by the user"),
        },
        "values": listed,
    });
    if let Some(import_id) = recorded.import_id {
        answer["import_id"] = import_id.into();
    }
    Ok(ToolResult::ok(answer))
}

/// Every value checked; all the wrong ones named, with why, when any is.
fn check_all(values: &[ValueInput], now_ms: i64) -> Result<Vec<CheckedValue>, ToolError> {
    let mut checked = Vec::with_capacity(values.len());
    let mut wrong = Vec::new();
    for (i, input) in values.iter().enumerate() {
        match recorded_value::check(input, now_ms) {
            Ok(value) => checked.push(value),
            Err(why) => {
                let name = mirobody_health::text::cap_chars(input.indicator.trim(), 60).0;
                wrong.push(format!("values[{i}] ({name}): {why}"));
            }
        }
    }
    if wrong.is_empty() {
        return Ok(checked);
    }
    Err(ToolError::new(format!(
        "Nothing was recorded: {} of {} values {} wrong. {} Fix {} and call again with all the values.",
        wrong.len(),
        values.len(),
        if wrong.len() == 1 { "is" } else { "are" },
        wrong.join(" "),
        if wrong.len() == 1 { "it" } else { "them" },
    )))
}

/// Each value as the Observation the importer stores, with the id it is stored under.
fn observations(values: &[CheckedValue], file_key: Option<&str>) -> Result<Vec<(ImportItem, String)>, ToolError> {
    values
        .iter()
        .map(|value| match fhir::parse_observation(&value.observation(file_key)) {
            Ok(mut request) => match request.entries.pop() {
                Some(EntryInput::Item(ImportItem::Observation(observation))) => {
                    let id = observation.source_id.clone();
                    Ok((ImportItem::Observation(observation), id))
                }
                Some(EntryInput::Invalid(why)) => Err(ToolError::new(format!("Nothing was recorded: {why}"))),
                _ => Err(ToolError::new("Nothing was recorded: a value could not be made an observation.")),
            },
            Err(why) => Err(ToolError::new(format!("Nothing was recorded: {why}"))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::recorded_value::{MAX_CODE_CHARS, MAX_NAME_CHARS, MAX_TIME_CHARS, MAX_UNIT_CHARS};

    #[test]
    fn the_schema_states_the_bounds_the_handler_keeps() {
        let tool = record_health_data_tool();
        let schema = tool.spec().input_schema();
        let values = &schema["properties"]["values"];
        assert_eq!(values["maxItems"], MAX_VALUES);
        let fields = &values["items"]["properties"];
        for (field, max) in [
            ("indicator", MAX_NAME_CHARS),
            ("unit", MAX_UNIT_CHARS),
            ("time", MAX_TIME_CHARS),
            ("code", MAX_CODE_CHARS),
        ] {
            assert_eq!(fields[field]["maxLength"], max, "{field}");
        }
        assert_eq!(schema["properties"]["file_key"]["maxLength"], MAX_KEY_CHARS);
        assert_eq!(values["items"]["additionalProperties"], false);
    }

    #[test]
    fn every_wrong_value_is_named_and_the_right_ones_are_not() {
        let value = |indicator: &str, unit: &str| ValueInput {
            indicator: indicator.into(),
            value: 5.4,
            unit: Some(unit.into()),
            time: "2026-01-15".into(),
            ..ValueInput::default()
        };
        let now = mirobody_health::text::parse_time_ms("2026-06-01").unwrap();
        let fine = check_all(&[value("Glucose", "mmol/L"), value("Cholesterol", "mmol/L")], now).unwrap();
        assert_eq!(fine.len(), 2);
        let error = check_all(&[value("Glucose", "kg"), value("Glucose", "mmol/L"), value("Nonsense", "mmol/L")], now)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("Nothing was recorded: 2 of 3 values are wrong."), "{error}");
        assert!(error.contains("values[0] (Glucose): unit 'kg'") && error.contains("values[2] (Nonsense)"), "{error}");
        assert!(!error.contains("values[1]"), "{error}");
        let one = check_all(&[value("Glucose", "kg")], now).unwrap_err().to_string();
        assert!(
            one.starts_with("Nothing was recorded: 1 of 1 values is wrong.")
                && one.ends_with("Fix it and call again with all the values."),
            "{one}"
        );
    }
}
