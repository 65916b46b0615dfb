//! The rest of a person's chart read into [`NewRecord`]s: MedicationStatements and
//! MedicationRequests (whichever way they name the drug), Immunizations, Procedures and
//! DiagnosticReports (their results linked to the Observations' source ids, their
//! `presentedForm` attachments described). Each keeps its status, its time and the resource as
//! received; what else a reader is shown goes in [`NewRecord::detail`].

use serde_json::{Map, Value, json};

use super::{
    Concept, EntryInput, ImportItem, NewRecord, RecordKind, Refs, Target, array_field, field, first_time, object_field,
    observation, revision, source_id, text_field,
};
use crate::text::cap_chars;

/// The most dosage lines kept of one medication.
const MAX_DOSAGES: usize = 5;
/// The most characters kept of one text shown (a dosage, a conclusion).
const MAX_TEXT_CHARS: usize = 500;
/// The most results of one report linked.
const MAX_RESULTS: usize = 100;
/// The most ingredients that name a Medication without a code.
const MAX_INGREDIENTS: usize = 20;
/// The most attachments of one report described.
const MAX_ATTACHMENTS: usize = 10;
/// The largest attachment taken, decoded: a larger one is refused rather than half kept.
const MAX_ATTACHMENT_BYTES: usize = 10 * 1024 * 1024;

/// Reads a MedicationStatement or a MedicationRequest (`base`).
pub(super) fn medication(base: &str, resource: &Value, object: &Map<String, Value>, refs: &Refs<'_>) -> EntryInput {
    read_medication(base, resource, object, refs).unwrap_or_else(EntryInput::Invalid)
}

/// Reads an Immunization.
pub(super) fn immunization(resource: &Value, object: &Map<String, Value>) -> EntryInput {
    let base = "Immunization";
    let read = || {
        let display = named(object, "vaccineCode", base)?;
        let time_ms = first_time(object, base, &["occurrenceDateTime", "recorded"])?;
        let when = text_field(object, "occurrenceString", base)?.map(|w| json!({"when": cap_chars(w, 100).0}));
        record(RecordKind::Immunization, base, resource, object, display, time_ms, when)
    };
    read().unwrap_or_else(EntryInput::Invalid)
}

/// Reads a Procedure.
pub(super) fn procedure(resource: &Value, object: &Map<String, Value>) -> EntryInput {
    let base = "Procedure";
    let read = || {
        let display = named(object, "code", base)?;
        let time_ms = first_time(object, base, &["performedDateTime", "performedPeriod.start"])?;
        record(RecordKind::Procedure, base, resource, object, display, time_ms, None)
    };
    read().unwrap_or_else(EntryInput::Invalid)
}

/// Reads a DiagnosticReport, linking each `result` to the Observation it names.
pub(super) fn report(resource: &Value, object: &Map<String, Value>, refs: &Refs<'_>) -> EntryInput {
    let base = "DiagnosticReport";
    let read = || {
        let display = named(object, "code", base)?;
        let time_ms = first_time(object, base, &["effectiveDateTime", "effectivePeriod.start", "issued"])?;
        let mut detail = Map::new();
        let results = results(object, refs, base, time_ms)?;
        if !results.is_empty() {
            detail.insert("results".into(), Value::Array(results));
        }
        let attachments = attachments(object, base, &display)?;
        if !attachments.is_empty() {
            detail.insert("attachments".into(), Value::Array(attachments));
        }
        if let Some(conclusion) = text_field(object, "conclusion", base)? {
            detail.insert("conclusion".into(), json!(cap_chars(conclusion, MAX_TEXT_CHARS).0));
        }
        let detail = (!detail.is_empty()).then_some(Value::Object(detail));
        record(RecordKind::Report, base, resource, object, display, time_ms, detail)
    };
    read().unwrap_or_else(EntryInput::Invalid)
}

/// [`medication`], with `?` for the first problem found.
fn read_medication(
    base: &str,
    resource: &Value,
    object: &Map<String, Value>,
    refs: &Refs<'_>,
) -> Result<EntryInput, String> {
    let concept = Concept::read_field(object, "medicationCodeableConcept", base)?;
    let mut display = concept.as_ref().and_then(Concept::label).map(str::to_owned);
    if display.is_none()
        && let Some(reference) = object_field(object, "medicationReference", base)?
    {
        let path = format!("{base}.medicationReference");
        // The Medication it points at (contained, or elsewhere in the Bundle) names the drug;
        // else the reference's own display does.
        let named = match text_field(reference, "reference", &path)?.and_then(|r| refs.resolve(r, object)) {
            Some(medication) => medication_name(medication)?,
            None => None,
        };
        display = named.or(text_field(reference, "display", &path)?.map(str::to_owned));
    }
    let display = display.ok_or_else(|| {
        format!(
            "{base} names no medication: medicationCodeableConcept has no text, coding display or code, and \
             medicationReference neither points at a Medication in the request nor has a display"
        )
    })?;
    let times: &[&str] = if base == "MedicationRequest" {
        &["authoredOn", "dispenseRequest.validityPeriod.start"]
    } else {
        &["effectiveDateTime", "effectivePeriod.start", "dateAsserted"]
    };
    let time_ms = first_time(object, base, times)?;
    let dosage_key = if base == "MedicationRequest" { "dosageInstruction" } else { "dosage" };
    let mut dosage = Vec::new();
    for (i, d) in array_field(object, dosage_key, base)?.into_iter().flatten().enumerate().take(MAX_DOSAGES) {
        let path = format!("{base}.{dosage_key}[{i}]");
        let d = d.as_object().ok_or_else(|| format!("{path} must be an object"))?;
        if let Some(text) = text_field(d, "text", &path)? {
            dosage.push(cap_chars(text, MAX_TEXT_CHARS).0.to_owned());
        }
    }
    let detail = (!dosage.is_empty()).then(|| json!({"dosage": dosage.join("; ")}));
    record(RecordKind::Medication, base, resource, object, display, time_ms, detail)
}

/// What a `Medication` resource calls its drug: its code's label, else its ingredients'
/// (`itemCodeableConcept`) joined with ` + `, as a compounded drug (HL7's TPN example) names
/// only those.
fn medication_name(medication: &Value) -> Result<Option<String>, String> {
    const BASE: &str = "Medication";
    let Some(object) = medication.as_object() else { return Ok(None) };
    if object.get("resourceType").and_then(Value::as_str) != Some(BASE) {
        return Ok(None);
    }
    if let Some(label) = Concept::read_field(object, "code", BASE)?.as_ref().and_then(Concept::label) {
        return Ok(Some(label.to_owned()));
    }
    let mut names = Vec::new();
    for (i, ingredient) in
        array_field(object, "ingredient", BASE)?.into_iter().flatten().enumerate().take(MAX_INGREDIENTS)
    {
        let path = format!("{BASE}.ingredient[{i}]");
        let ingredient = ingredient.as_object().ok_or_else(|| format!("{path} must be an object"))?;
        if let Some(label) =
            Concept::read_field(ingredient, "itemCodeableConcept", &path)?.as_ref().and_then(Concept::label)
        {
            names.push(label);
        }
    }
    let joined = names.join(" + ");
    Ok((!joined.is_empty()).then(|| cap_chars(&joined, MAX_TEXT_CHARS).0.to_owned()))
}

/// The label of the `CodeableConcept` `key` that names the record.
fn named(object: &Map<String, Value>, key: &str, base: &str) -> Result<String, String> {
    let concept = Concept::read_field(object, key, base)?;
    concept
        .as_ref()
        .and_then(Concept::label)
        .map(str::to_owned)
        .ok_or_else(|| format!("{base}.{key} is missing or has no text, coding display or code: it names the record"))
}

/// The record read, or its removal when its `status` is `entered-in-error`.
fn record(
    kind: RecordKind,
    base: &str,
    resource: &Value,
    object: &Map<String, Value>,
    display: String,
    time_ms: Option<i64>,
    detail: Option<Value>,
) -> Result<EntryInput, String> {
    let status = text_field(object, "status", base)?;
    if status == Some("entered-in-error") {
        return revision::entered_in_error(Target::Record(kind), base, resource, object);
    }
    Ok(EntryInput::Item(ImportItem::Record(NewRecord {
        kind,
        source_id: source_id(base, resource, object)?,
        display,
        status: status.map(str::to_owned),
        time_ms,
        detail,
        resource: resource.clone(),
    })))
}

/// A report's `result`s: each the source id its Observation is stored under, with its name and
/// value when the Observation is in the same request; a reference to one elsewhere keeps the
/// source id it would be stored under (`Observation/{id}`).
fn results(
    object: &Map<String, Value>,
    refs: &Refs<'_>,
    base: &str,
    time_ms: Option<i64>,
) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (i, result) in array_field(object, "result", base)?.into_iter().flatten().enumerate().take(MAX_RESULTS) {
        let path = format!("{base}.result[{i}]");
        let result = result.as_object().ok_or_else(|| format!("{path} must be an object"))?;
        let Some(reference) = text_field(result, "reference", &path)? else { continue };
        let found = refs.resolve(reference, object).and_then(|r| Some((r, r.as_object()?)));
        // A result without a time of its own takes the report's, as it does when imported.
        let linked = match found.map(|(r, o)| observation::parse_with(r, o, time_ms)) {
            Some(EntryInput::Item(ImportItem::Observation(o))) => {
                let point = o.points.first();
                let value = point.map(|p| match (p.value, &p.value_text, &p.unit) {
                    (Some(v), _, Some(unit)) => format!("{v} {unit}"),
                    (Some(v), _, None) => v.to_string(),
                    (None, Some(text), _) => text.clone(),
                    (None, None, _) => String::new(),
                });
                let name = point.map_or(o.code.as_str(), |p| p.display.as_str());
                json!({"source_id": o.source_id, "name": name, "value": value})
            }
            // Not in this request (or not an Observation that imports): the id it has or
            // would have.
            _ => json!({"source_id": cap_chars(reference, 256).0, "name": text_field(result, "display", &path)?}),
        };
        out.push(linked);
    }
    Ok(out)
}

/// A report's `presentedForm` attachments described: content type, title, size and whether
/// the bytes came inline. One whose inline data decodes past [`MAX_ATTACHMENT_BYTES`] is an
/// error.
fn attachments(object: &Map<String, Value>, base: &str, display: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let forms = array_field(object, "presentedForm", base)?.into_iter().flatten();
    for (i, form) in forms.enumerate().take(MAX_ATTACHMENTS) {
        let path = format!("{base}.presentedForm[{i}]");
        let form = form.as_object().ok_or_else(|| format!("{path} must be an object"))?;
        let data = text_field(form, "data", &path)?;
        // Base64: three bytes per four characters, less the padding.
        let decoded =
            data.map(|d| ((d.len() / 4) * 3).saturating_sub(d.bytes().rev().take_while(|b| *b == b'=').count()));
        if decoded.is_some_and(|n| n > MAX_ATTACHMENT_BYTES) {
            return Err(format!("{path}.data is larger than {} MiB", MAX_ATTACHMENT_BYTES / (1024 * 1024)));
        }
        let size = decoded.or_else(|| field(form, "size").and_then(Value::as_u64).map(|n| n as usize));
        let content_type = text_field(form, "contentType", &path)?;
        let title = text_field(form, "title", &path)?.map(|t| cap_chars(t, 200).0);
        // The name its file is stored under, so the report and `list_files` agree.
        let filename = data.map(|_| match title {
            Some(title) => title.to_owned(),
            None => format!("{}{}", cap_chars(display, 120).0, extension(content_type)),
        });
        let mut described = json!({
            "content_type": content_type,
            "title": title,
            "filename": filename,
            "size": size,
            "inline": data.is_some(),
            "url": text_field(form, "url", &path)?.map(|u| cap_chars(u, 500).0),
        });
        if let Value::Object(members) = &mut described {
            members.retain(|_, v| !v.is_null());
        }
        out.push(described);
    }
    Ok(out)
}

/// The extension a file of `content_type` is named with.
fn extension(content_type: Option<&str>) -> &'static str {
    match content_type.map(|t| t.split(';').next().unwrap_or(t).trim()) {
        Some("application/pdf") => ".pdf",
        Some("text/html") => ".html",
        Some("text/plain") => ".txt",
        Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document") => ".docx",
        _ => "",
    }
}

/// A report's document sent inline (`presentedForm` with `data`), to be stored as the person's
/// file once the report is new to them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReportForm {
    /// The report's source id.
    pub report: String,
    /// The name it is stored under (as its record's `attachments` say).
    pub filename: String,
    /// The type the resource declares; the stored type is read from the content.
    pub content_type: Option<String>,
    /// The bytes, base64 as received.
    pub data_base64: String,
}

/// The inline documents of a report as read into `record` (none for another kind).
pub(crate) fn report_forms(record: &NewRecord) -> Vec<ReportForm> {
    let (RecordKind::Report, Some(detail)) = (record.kind, &record.detail) else { return Vec::new() };
    let forms = record.resource.get("presentedForm").and_then(Value::as_array);
    let described = detail.get("attachments").and_then(Value::as_array);
    let (Some(forms), Some(described)) = (forms, described) else { return Vec::new() };
    forms
        .iter()
        .zip(described)
        .filter_map(|(form, described)| {
            Some(ReportForm {
                report: record.source_id.clone(),
                filename: described.get("filename")?.as_str()?.to_owned(),
                content_type: described.get("content_type").and_then(Value::as_str).map(str::to_owned),
                data_base64: form.get("data")?.as_str()?.trim().to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "chart_tests.rs"]
mod tests;
