//! The FHIR answers to an import: an `OperationOutcome` for one resource or a refused request,
//! a `batch-response` or `transaction-response` Bundle with one `response` per entry.

use serde_json::{Value, json};

use super::{EntryOutcome, RequestKind, SUPPORTED_TYPES};

/// (HTTP status, body) for the outcomes of a request, in entry order.
///
/// One resource: 201 created, 200 updated, removed or already imported, 422 a type that is not imported, 400
/// invalid, each with an `OperationOutcome`. A batch, collection or searchset: 200 and a
/// `batch-response` Bundle. A transaction: 200 and a `transaction-response` Bundle, or, when any
/// entry is invalid (nothing was stored), 400 and an `OperationOutcome` naming each.
pub fn response(kind: RequestKind, outcomes: &[EntryOutcome]) -> (u16, Value) {
    match kind {
        RequestKind::Resource => single(outcomes.first()),
        RequestKind::Transaction => {
            let invalid: Vec<(Option<usize>, String)> = outcomes
                .iter()
                .enumerate()
                .filter_map(|(i, outcome)| match outcome {
                    EntryOutcome::Invalid(reason) => Some((Some(i), reason.clone())),
                    _ => None,
                })
                .collect();
            if invalid.is_empty() {
                (200, bundle("transaction-response", outcomes))
            } else {
                operation_outcome(400, &invalid)
            }
        }
        RequestKind::Batch | RequestKind::Collection | RequestKind::Searchset => {
            (200, bundle("batch-response", outcomes))
        }
    }
}

/// (`status`, OperationOutcome) for a request refused as a whole: one error issue per
/// `(entry index, reason)`, with `expression` `Bundle.entry[i]` when there is an index.
pub fn operation_outcome(status: u16, issues: &[(Option<usize>, String)]) -> (u16, Value) {
    let code = match status {
        413 => "too-costly",
        422 => "not-supported",
        500..=599 => "exception",
        _ => "invalid",
    };
    let mut list: Vec<Value> = issues.iter().map(|(index, reason)| issue("error", code, reason, *index)).collect();
    // An OperationOutcome must have at least one issue.
    if list.is_empty() {
        list.push(issue("error", code, "The request was refused.", None));
    }
    (status, json!({"resourceType": "OperationOutcome", "issue": list}))
}

/// The answer to a request of one resource.
fn single(outcome: Option<&EntryOutcome>) -> (u16, Value) {
    let (status, severity, code, diagnostics) = match outcome {
        Some(EntryOutcome::Created) => (201, "information", "informational", "created".to_owned()),
        Some(EntryOutcome::Updated) => (200, "information", "informational", "updated".to_owned()),
        Some(EntryOutcome::Removed) => (200, "information", "informational", "removed".to_owned()),
        Some(EntryOutcome::Unchanged) => (200, "information", "duplicate", "already imported".to_owned()),
        Some(EntryOutcome::Skipped { resource_type }) => (422, "error", "not-supported", skipped(resource_type)),
        Some(EntryOutcome::Invalid(reason)) => (400, "error", "invalid", reason.clone()),
        None => (400, "error", "invalid", "The request had no resource.".to_owned()),
    };
    (status, outcome_of(issue(severity, code, &diagnostics, None)))
}

/// A response Bundle of `kind` with one `entry[i].response` per outcome.
fn bundle(kind: &str, outcomes: &[EntryOutcome]) -> Value {
    let entries: Vec<Value> = outcomes
        .iter()
        .map(|outcome| {
            let (status, outcome) = match outcome {
                EntryOutcome::Created => ("201 Created", None),
                EntryOutcome::Updated => ("200 OK", Some(issue("information", "informational", "updated", None))),
                EntryOutcome::Removed => ("204 No Content", None),
                EntryOutcome::Unchanged => {
                    ("200 OK", Some(issue("information", "duplicate", "already imported", None)))
                }
                EntryOutcome::Skipped { resource_type } => {
                    ("422 Unprocessable Entity", Some(issue("warning", "not-supported", &skipped(resource_type), None)))
                }
                EntryOutcome::Invalid(reason) => ("400 Bad Request", Some(issue("error", "invalid", reason, None))),
            };
            let mut response = json!({"status": status});
            if let Some(issue) = outcome {
                response["outcome"] = outcome_of(issue);
            }
            json!({"response": response})
        })
        .collect();
    json!({"resourceType": "Bundle", "type": kind, "entry": entries})
}

/// What a skipped resource's issue says.
fn skipped(resource_type: &str) -> String {
    if resource_type == "Medication" {
        return "Medication resources are not stored on their own; their name is read into the \
                MedicationStatements and MedicationRequests that point at them"
            .to_owned();
    }
    format!("{resource_type} resources are not imported; supported: {SUPPORTED_TYPES}")
}

/// One OperationOutcome issue.
fn issue(severity: &str, code: &str, diagnostics: &str, index: Option<usize>) -> Value {
    let mut issue = json!({"severity": severity, "code": code, "diagnostics": diagnostics});
    if let Some(i) = index {
        issue["expression"] = json!([format!("Bundle.entry[{i}]")]);
    }
    issue
}

/// An OperationOutcome of one issue.
fn outcome_of(issue: Value) -> Value {
    json!({"resourceType": "OperationOutcome", "issue": [issue]})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes() -> Vec<EntryOutcome> {
        vec![
            EntryOutcome::Created,
            EntryOutcome::Unchanged,
            EntryOutcome::Skipped { resource_type: "Patient".into() },
            EntryOutcome::Invalid("Observation.valueQuantity.value must be a number".into()),
        ]
    }

    #[test]
    fn one_resource_is_answered_with_an_operation_outcome() {
        let (status, body) = response(RequestKind::Resource, &[EntryOutcome::Created]);
        assert_eq!(status, 201);
        assert_eq!(
            body,
            json!({"resourceType": "OperationOutcome", "issue": [
                {"severity": "information", "code": "informational", "diagnostics": "created"},
            ]})
        );
        let (status, body) = response(RequestKind::Resource, &[EntryOutcome::Unchanged]);
        assert_eq!(
            (status, &body["issue"][0]["code"], &body["issue"][0]["diagnostics"]),
            (200, &json!("duplicate"), &json!("already imported"))
        );
        let (status, body) =
            response(RequestKind::Resource, &[EntryOutcome::Skipped { resource_type: "Patient".into() }]);
        assert_eq!(status, 422);
        assert_eq!(
            body["issue"][0]["diagnostics"],
            "Patient resources are not imported; supported: Observation, Condition, MedicationStatement, \
             MedicationRequest, AllergyIntolerance, Immunization, Procedure, DiagnosticReport"
        );
        assert_eq!(body["issue"][0]["severity"], "error");
        let (status, body) = response(
            RequestKind::Resource,
            &[EntryOutcome::Invalid("Observation.code has no coding code or text".into())],
        );
        assert_eq!((status, &body["issue"][0]["code"]), (400, &json!("invalid")));
        assert_eq!(body["issue"][0]["diagnostics"], "Observation.code has no coding code or text");
        assert_eq!(response(RequestKind::Resource, &[]).0, 400);
    }

    #[test]
    fn a_batch_answers_each_entry_in_order() {
        for kind in [RequestKind::Batch, RequestKind::Collection, RequestKind::Searchset] {
            let (status, body) = response(kind, &outcomes());
            assert_eq!(status, 200);
            assert_eq!((&body["resourceType"], &body["type"]), (&json!("Bundle"), &json!("batch-response")));
            let statuses: Vec<&str> =
                body["entry"].as_array().unwrap().iter().map(|e| e["response"]["status"].as_str().unwrap()).collect();
            assert_eq!(statuses, ["201 Created", "200 OK", "422 Unprocessable Entity", "400 Bad Request"]);
            assert!(body["entry"][0]["response"].get("outcome").is_none());
            assert_eq!(body["entry"][1]["response"]["outcome"]["issue"][0]["diagnostics"], "already imported");
            assert_eq!(body["entry"][2]["response"]["outcome"]["issue"][0]["code"], "not-supported");
            assert_eq!(body["entry"][3]["response"]["outcome"]["resourceType"], "OperationOutcome");
            assert_eq!(
                body["entry"][3]["response"]["outcome"]["issue"][0]["diagnostics"],
                "Observation.valueQuantity.value must be a number"
            );
            assert_eq!(body.as_object().unwrap().len(), 3, "no members FHIR does not define");
        }
    }

    #[test]
    fn a_transaction_is_answered_whole() {
        let ok =
            [EntryOutcome::Created, EntryOutcome::Unchanged, EntryOutcome::Skipped { resource_type: "Patient".into() }];
        let (status, body) = response(RequestKind::Transaction, &ok);
        assert_eq!((status, &body["type"]), (200, &json!("transaction-response")));
        assert_eq!(body["entry"].as_array().unwrap().len(), 3);
        assert_eq!(body["entry"][0]["response"]["status"], "201 Created");

        let (status, body) = response(RequestKind::Transaction, &outcomes());
        assert_eq!(status, 400);
        assert_eq!(
            body,
            json!({"resourceType": "OperationOutcome", "issue": [{
                "severity": "error", "code": "invalid",
                "diagnostics": "Observation.valueQuantity.value must be a number",
                "expression": ["Bundle.entry[3]"],
            }]})
        );
    }

    #[test]
    fn refusals_list_each_entry_by_index() {
        let (status, body) =
            operation_outcome(400, &[(Some(0), "entry has no resource".into()), (Some(5), "bad".into())]);
        assert_eq!(status, 400);
        assert_eq!(body["issue"][0]["expression"], json!(["Bundle.entry[0]"]));
        assert_eq!(body["issue"][1]["expression"], json!(["Bundle.entry[5]"]));
        assert_eq!(body["issue"][1]["diagnostics"], "bad");
        let (status, body) = operation_outcome(400, &[(None, "The body must be a JSON object.".into())]);
        assert_eq!(status, 400);
        assert!(body["issue"][0].get("expression").is_none());
        assert_eq!(operation_outcome(503, &[]).1["issue"][0]["code"], "exception");
    }
}
