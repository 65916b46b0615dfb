//! The resources of a Bundle by what another entry may call them, and the time each result
//! Observation takes from the report or panel that lists it when it has none of its own.

use std::collections::{HashMap, VecDeque, hash_map};

use serde_json::{Map, Value};

use super::{field, first_time, observation};

/// The resources of a Bundle by what another entry may call them: `fullUrl` (a `urn:uuid:`)
/// and `Type/id`; and the time of the report or panel that lists each result Observation.
#[derive(Debug, Default)]
pub(super) struct Refs<'a> {
    /// The resources by name.
    named: HashMap<String, &'a Value>,
    /// An Observation (by its address in the Bundle) to the time of the report or panel of
    /// the Bundle that lists it: HL7's own laboratory examples give the time on those only.
    report_times: HashMap<*const Value, i64>,
}

impl<'a> Refs<'a> {
    /// Indexes the resources of `entries` (an entry that is not an object is skipped here; it
    /// is refused on its own).
    pub(super) fn of_bundle(entries: &'a [Value]) -> Self {
        let mut refs = HashMap::new();
        for entry in entries.iter().filter_map(Value::as_object) {
            let Some(resource) = field(entry, "resource") else { continue };
            if let Some(url) = field(entry, "fullUrl").and_then(Value::as_str) {
                refs.insert(url.to_owned(), resource);
            }
            let kind = resource.get("resourceType").and_then(Value::as_str);
            if let (Some(kind), Some(id)) = (kind, resource.get("id").and_then(Value::as_str)) {
                refs.insert(format!("{kind}/{id}"), resource);
            }
        }
        let mut refs = Refs { named: refs, report_times: HashMap::new() };
        refs.report_times = refs.result_times(entries);
        refs
    }

    /// Each Observation of `entries` that a DiagnosticReport lists in `result`, or a panel
    /// Observation in `hasMember`, with the time of that report or panel (the panel's own,
    /// or the one it took so); the first found wins. A time that does not parse gives none
    /// (its resource is refused on its own). Each Observation is visited once.
    fn result_times(&self, entries: &'a [Value]) -> HashMap<*const Value, i64> {
        const REPORT_TIMES: [&str; 3] = ["effectiveDateTime", "effectivePeriod.start", "issued"];
        let resources = || entries.iter().filter_map(|entry| entry.get("resource")?.as_object());
        let of_type = |resource: &Map<String, Value>, kind: &str| {
            resource.get("resourceType").and_then(Value::as_str) == Some(kind)
        };
        let own_time = |resource: &Map<String, Value>, kind: &str, fields: &[&str]| {
            first_time(resource, kind, fields).ok().flatten()
        };
        // (what lists the members, their time, the member that lists them): reports first,
        // then the panels that have a time of their own.
        let mut queue: VecDeque<(&'a Map<String, Value>, i64, &str)> = resources()
            .filter(|r| of_type(r, "DiagnosticReport"))
            .filter_map(|r| Some((r, own_time(r, "DiagnosticReport", &REPORT_TIMES)?, "result")))
            .chain(
                resources()
                    .filter(|r| of_type(r, "Observation"))
                    .filter_map(|r| Some((r, own_time(r, "Observation", &observation::TIME_FIELDS)?, "hasMember"))),
            )
            .collect();
        let mut times = HashMap::new();
        while let Some((holder, time, member)) = queue.pop_front() {
            let references = holder.get(member).and_then(Value::as_array).into_iter().flatten();
            for reference in references.filter_map(|r| r.get("reference")?.as_str()) {
                // `#id` names a contained resource, not an entry of the Bundle.
                let found = if reference.starts_with('#') { None } else { self.resolve(reference, holder) };
                let Some(found) = found else { continue };
                let Some(observation) = found.as_object().filter(|o| of_type(o, "Observation")) else { continue };
                if let hash_map::Entry::Vacant(slot) = times.entry(std::ptr::from_ref(found)) {
                    slot.insert(time);
                    let passed = own_time(observation, "Observation", &observation::TIME_FIELDS).unwrap_or(time);
                    queue.push_back((observation, passed, "hasMember"));
                }
            }
        }
        times
    }

    /// The time of the report or panel of this Bundle listing `observation` (an entry's
    /// resource), if any.
    pub(super) fn report_time(&self, observation: &Value) -> Option<i64> {
        self.report_times.get(&std::ptr::from_ref(observation)).copied()
    }

    /// The resource `reference` names: `#id` among `contained` of the resource holding it,
    /// else an entry of the Bundle by its `fullUrl` or `Type/id` (a full URL ending so too).
    pub(super) fn resolve<'b>(&self, reference: &str, holder: &'b Map<String, Value>) -> Option<&'b Value>
    where
        'a: 'b,
    {
        if let Some(id) = reference.strip_prefix('#') {
            let contained = holder.get("contained").and_then(Value::as_array)?;
            return contained.iter().find(|c| c.get("id").and_then(Value::as_str) == Some(id));
        }
        if let Some(found) = self.named.get(reference) {
            return Some(found);
        }
        // `https://server/fhir/Medication/1` names `Medication/1`.
        let mut parts = reference.rsplitn(3, '/');
        let (id, kind) = (parts.next()?, parts.next()?);
        self.named.get(&format!("{kind}/{id}")).copied()
    }
}
