//! A task on the wire: its JSON form and its times in RFC 3339.

use mirobody_ports::{TaskRecord, TaskState};
use serde_json::{Map, Value, json};

use super::TaskOptions;

/// The wire form of a task: its id, status, times, time to live and poll interval, and when
/// `detailed` (a `tasks/get`), its questions, result or error.
pub(crate) fn task_json(record: &TaskRecord, options: &TaskOptions, detailed: bool) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), json!(record.id));
    task.insert("status".into(), json!(record.state.as_str()));
    task.insert("createdAt".into(), json!(rfc3339(record.created_ms)));
    task.insert("lastUpdatedAt".into(), json!(rfc3339(record.updated_ms)));
    task.insert("ttlMs".into(), json!((record.expires_ms - record.created_ms).max(1)));
    task.insert("pollIntervalMs".into(), json!(options.poll_interval.as_millis().max(1) as u64));
    if detailed {
        match record.state {
            TaskState::InputRequired => {
                task.insert("inputRequests".into(), record.input_requests.clone().unwrap_or_else(|| json!({})));
            }
            TaskState::Completed | TaskState::Failed => {
                if let Some(Value::Object(outcome)) = &record.outcome {
                    task.extend(outcome.clone());
                }
            }
            _ => {}
        }
    }
    task
}

// A task's times on the wire: RFC 3339 in UTC with milliseconds (`2026-01-02T03:04:05.678Z`).
fn rfc3339(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms.max(0)) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let (date, clock) = (at.date(), at.time());
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        date.year(),
        u8::from(date.month()),
        date.day(),
        clock.hour(),
        clock.minute(),
        clock.second(),
        clock.millisecond()
    )
}

#[cfg(test)]
#[test]
fn task_times_are_rfc3339_in_utc_with_milliseconds() {
    assert_eq!(rfc3339(1_767_323_045_678), "2026-01-02T03:04:05.678Z");
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(-5), "1970-01-01T00:00:00.000Z", "a time before the epoch reads as the epoch");
}
