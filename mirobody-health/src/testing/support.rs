//! What the contract families share: ids no other run uses, a store call's result or a panic
//! that names the call, and the FHIR resources they store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use mirobody_core::backend::BackendResult;
use serde_json::{Value, json};

/// An id no other call makes, in this process or another: `prefix`, the process id, the time
/// and a counter. For user ids, file keys and anything else a test names, so that tests
/// sharing one database never meet.
///
/// ```
/// let (a, b) = (mirobody_health::testing::unique_id("alice"), mirobody_health::testing::unique_id("alice"));
/// assert!(a.starts_with("alice-") && a != b);
/// ```
pub fn unique_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos:x}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The value of a store call, or a panic naming the contract family and the call: a store
/// error is never what a contract expects.
pub(crate) fn ok<T>(family: &str, call: &str, result: BackendResult<T>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("store contract `{family}`: {call} failed: {e}"),
    }
}

/// A FHIR Observation with a source id, a LOINC code, a quantity and a time.
pub(crate) fn observation(id: &str, code: &str, value: f64, unit: &str, time: &str) -> Value {
    json!({"resourceType": "Observation", "id": id, "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": format!("Indicator {code}")}]},
        "effectiveDateTime": time, "valueQuantity": {"value": value, "unit": unit}})
}

/// A FHIR Condition with a source id and a name.
pub(crate) fn condition(id: &str, name: &str) -> Value {
    json!({"resourceType": "Condition", "id": id, "code": {"text": name},
        "clinicalStatus": {"coding": [{"code": "active"}]}, "onsetDateTime": "2025-05-01T00:00:00Z"})
}

/// A `batch` Bundle of `resources`.
pub(crate) fn batch(resources: Vec<Value>) -> Value {
    let entries: Vec<Value> = resources.into_iter().map(|resource| json!({"resource": resource})).collect();
    json!({"resourceType": "Bundle", "type": "batch", "entry": entries})
}
