//! The MCP `outputSchema` of the health tools: the JSON Schema of each one's
//! `structuredContent`, so a client can check an answer and a program can read it without
//! guessing. Objects stay open (a new member breaks no client); what is there is typed.
//! `tests/builtins/output_schemas.rs` calls each tool and checks every answer against its schema.

use serde_json::{Value, json};

/// A flag a value gets: `mirobody_health::flags::Flag` as words.
fn flag() -> Value {
    json!({"enum": ["critical_low", "low", "normal", "high", "critical_high", "abnormal"]})
}

/// A reference range (`mirobody_health::flags::ReferenceRange`): bounds inclusive, in `unit`.
fn reference_range() -> Value {
    json!({
        "type": "object",
        "properties": {
            "low": {"type": "number"},
            "high": {"type": "number"},
            "critical_low": {"type": "number"},
            "critical_high": {"type": "number"},
            "unit": {"type": ["string", "null"]},
            "text": {"type": "string"},
            "origin": {"enum": ["source", "catalog"]},
        },
        "required": ["unit", "origin"],
    })
}

/// A string or nothing.
fn text_or_null() -> Value {
    json!({"type": ["string", "null"]})
}

/// `message`, and how to add data, when nothing was found.
fn message() -> Value {
    json!({"type": "string"})
}

/// `fetch_health_data`: series by name, each value with its time, flag and range.
pub(crate) fn fetch_health_data() -> Value {
    let point = json!({
        "type": "object",
        "properties": {
            "time": {"type": "string"},
            "value": {"type": ["number", "string", "null"]},
            "unit": {"type": "string"},
            "original": {
                "type": "object",
                "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
                "required": ["value", "unit"],
            },
            "code": {"type": "string"},
            "file_key": {"type": "string"},
            "flag": flag(),
            "interpretation": {"type": "string"},
            "reference_range": reference_range(),
        },
        "required": ["time", "value"],
    });
    let series = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "codes": {"type": "array", "items": {"type": "string"}},
            "unit": text_or_null(),
            "count": {"type": "integer", "minimum": 0},
            "data": {"type": "array", "items": point},
            "truncated": {"type": "boolean"},
            "reference_range": reference_range(),
        },
        "required": ["code", "unit", "count", "data"],
    });
    json!({
        "type": "object",
        "properties": {
            "subject": {"type": "string"},
            "indicators": {"type": "object", "additionalProperties": series},
            "not_found": {"type": "array", "items": {"type": "string"}},
            "not_converted": {"type": "array", "items": {"type": "string"}},
            "message": message(),
        },
        "required": ["subject", "indicators"],
    })
}

/// `get_user_health_profile`: the latest values, the chart's records, counts and dates.
pub(crate) fn get_user_health_profile() -> Value {
    let latest = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "name": {"type": "string"},
            "value": {"type": ["number", "string", "null"]},
            "unit": text_or_null(),
            "time": {"type": "string"},
            "flag": flag(),
            "interpretation": {"type": "string"},
            "reference_range": reference_range(),
        },
        "required": ["code", "name", "value", "unit", "time"],
    });
    // A record's name, status and date, and whatever its kind shows besides (a dosage, results).
    let records = json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "status": text_or_null(), "since": text_or_null()},
            "required": ["name", "status", "since"],
        },
    });
    json!({
        "type": "object",
        "properties": {
            "subject": {"type": "string"},
            "latest": {"type": "array", "items": latest},
            "conditions": records,
            "medications": records,
            "allergies": records,
            "immunizations": records,
            "procedures": records,
            "reports": records,
            "counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
            "covered": {
                "type": "object",
                "properties": {"from": text_or_null(), "to": text_or_null()},
                "required": ["from", "to"],
            },
            "message": message(),
        },
        "required": [
            "subject", "latest", "conditions", "medications", "allergies", "immunizations", "procedures",
            "reports", "counts", "covered",
        ],
    })
}

/// `search_health_indicators`: the indicators found, with counts and dates.
pub(crate) fn search_health_indicators() -> Value {
    let indicator = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "name": {"type": "string"},
            "unit": text_or_null(),
            "count": {"type": "integer", "minimum": 0},
            "first": {"type": "string"},
            "last": {"type": "string"},
            "matched": {"type": "string"},
            "chinese_name": {"type": "string"},
        },
        "required": ["code", "name", "unit", "count", "first", "last", "matched"],
    });
    json!({
        "type": "object",
        "properties": {
            "subject": {"type": "string"},
            "indicators": {"type": "array", "items": indicator},
            "not_found": {"type": "array", "items": {"type": "string"}},
            "message": message(),
        },
        "required": ["subject", "indicators"],
    })
}

/// `family_health`: the newest observations, summarised.
pub(crate) fn family_health() -> Value {
    let observation = json!({
        "type": "object",
        "properties": {"code": {"type": "string"}, "value": text_or_null(), "time": text_or_null()},
        "required": ["code", "value", "time"],
    });
    json!({
        "type": "object",
        "properties": {
            "subject": {"type": "string"},
            "observation_count": {"type": "integer", "minimum": 0},
            "observations": {"type": "array", "items": observation},
        },
        "required": ["subject", "observation_count", "observations"],
    })
}

/// `list_data_access`: who read the caller's data, and the page after.
pub(crate) fn list_data_access() -> Value {
    let read = json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "reader": {"type": "string"},
            "what": {"type": "string"},
            "at": {"type": "string"},
            "outcome": {"type": "string"},
        },
        "required": ["id", "reader", "what", "at", "outcome"],
    });
    json!({
        "type": "object",
        "properties": {
            "reads": {"type": "array", "items": read},
            "next_before": {"type": ["integer", "null"]},
        },
        "required": ["reads", "next_before"],
    })
}

/// `delete_health_data`: deleted, or why not.
pub(crate) fn delete_health_data() -> Value {
    json!({
        "type": "object",
        "properties": {
            "deleted": {"type": "boolean"},
            "kind": {"enum": ["file", "value", "import"]},
            "id": {"type": "string"},
            "reason": {"type": "string"},
        },
        "required": ["deleted"],
        "oneOf": [
            {"properties": {"deleted": {"const": true}}, "required": ["kind", "id"]},
            {"properties": {"deleted": {"const": false}}, "required": ["reason"]},
        ],
    })
}

/// `fetch_health_trends`: series by name, each with its buckets and the summary of change.
pub(crate) fn fetch_health_trends() -> Value {
    let count = json!({"type": "integer", "minimum": 0});
    let bucket = json!({
        "type": "object",
        "properties": {
            "start": {"type": "string"},
            "count": {"type": "integer", "minimum": 1},
            "min": {"type": "number"},
            "max": {"type": "number"},
            "mean": {"type": "number"},
            "last": {"type": "number"},
            "low": count,
            "high": count,
        },
        "required": ["start", "count", "min", "max", "mean", "last"],
    });
    let point = json!({
        "type": "object",
        "properties": {"start": {"type": "string"}, "mean": {"type": "number"}},
        "required": ["start", "mean"],
    });
    let summary = json!({
        "type": "object",
        "properties": {
            "first": point,
            "last": point,
            "change": {"type": "number"},
            "change_percent": {"type": "number"},
            "slope_per_day": {"type": "number"},
            "count": count,
            "low": count,
            "high": count,
            "days_with_values": count,
            "days_out_of_range": count,
        },
        "required": ["first", "last", "change", "count", "low", "high", "days_with_values", "days_out_of_range"],
    });
    let series = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "codes": {"type": "array", "items": {"type": "string"}},
            "unit": text_or_null(),
            "summary": summary,
            "buckets": {"type": "array", "items": bucket},
            "truncated": {"type": "boolean"},
            "reference_range": reference_range(),
        },
        "required": ["code", "unit", "buckets"],
    });
    json!({
        "type": "object",
        "properties": {
            "subject": {"type": "string"},
            "interval": {"enum": ["hour", "day", "week", "month"]},
            "indicators": {"type": "object", "additionalProperties": series},
            "not_found": {"type": "array", "items": {"type": "string"}},
            "not_converted": {"type": "array", "items": {"type": "string"}},
            "message": message(),
        },
        "required": ["subject", "interval", "indicators"],
    })
}

/// `record_health_data`: how many values are new, each value as stored, and where from.
pub(crate) fn record_health_data() -> Value {
    let value = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "indicator": {"type": "string"},
            "code": {"type": "string"},
            "value": {"type": "number"},
            "unit": {"type": "string"},
            "time": {"type": "string"},
            "stored": {"enum": ["new", "already recorded"]},
            "flag": flag(),
        },
        "required": ["id", "indicator", "code", "value", "time", "stored"],
    });
    json!({
        "type": "object",
        "properties": {
            "recorded": {"type": "integer", "minimum": 0},
            "already_recorded": {"type": "integer", "minimum": 0},
            "source": {
                "oneOf": [
                    {"const": "told by the user"},
                    {
                        "type": "object",
                        "properties": {"file_key": {"type": "string"}},
                        "required": ["file_key"],
                    },
                ],
            },
            "values": {"type": "array", "items": value, "minItems": 1},
            "import_id": {"type": "integer"},
        },
        "required": ["recorded", "already_recorded", "source", "values"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_is_an_object_schema_that_compiles() {
        for schema in [
            fetch_health_data(),
            get_user_health_profile(),
            search_health_indicators(),
            family_health(),
            list_data_access(),
            delete_health_data(),
            fetch_health_trends(),
            record_health_data(),
        ] {
            assert_eq!(schema["type"], "object", "MCP asks for an object at the root: {schema}");
            assert!(schema["required"].is_array(), "{schema}");
        }
    }
}
