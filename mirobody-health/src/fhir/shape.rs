//! A structural pre-scan of a JSON import body: its shape measured in one pass that builds
//! nothing, so a body whose tree would be many times its size (a 32 MiB Bundle of ten million
//! empty entries, an Observation with 300,000 components) is refused before it is parsed.
//!
//! Written by hand over serde's visitor: no crate bounds the shape of a JSON document while it
//! streams, and `serde_json::Value` builds first and leaves the counting to the caller.

use std::fmt;

use serde::Deserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::MAX_ENTRIES;

/// The most values (objects, arrays, strings, numbers, ...) in one import body.
pub const MAX_VALUES: usize = 2_000_000;
/// The longest array other than a Bundle's `entry` (which may have [`MAX_ENTRIES`]): a
/// resource's components, codings, contained resources.
pub const MAX_NESTED_ARRAY: usize = 1_000;
/// The longest string, in bytes (an attachment's base64 data included).
pub const MAX_STRING_BYTES: usize = 4 << 20;
/// The deepest nesting of objects and arrays.
pub const MAX_DEPTH: usize = 64;

/// Checks that `bytes` are one JSON value within the bounds above, and counts its values;
/// `Err` says which bound it passes, with 413, or that it is not JSON, with 400. Allocates
/// nothing for the values it reads.
pub fn check(bytes: &[u8]) -> Result<usize, (u16, String)> {
    let mut counter = Counter { values: 0 };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let walked = Walk { counter: &mut counter, depth: 0, entries: false }.deserialize(&mut deserializer);
    match walked.and_then(|()| deserializer.end()) {
        Ok(()) => Ok(counter.values),
        Err(e) if e.is_data() => Err((413, e.to_string().split(" at line ").next().unwrap_or_default().to_owned())),
        Err(e) => Err((400, format!("The body is not JSON: {e}."))),
    }
}

struct Counter {
    values: usize,
}

struct Walk<'a> {
    counter: &'a mut Counter,
    depth: usize,
    // Whether this value is the top-level object's `entry`.
    entries: bool,
}

impl Walk<'_> {
    fn count<E: serde::de::Error>(&mut self) -> Result<(), E> {
        self.counter.values += 1;
        if self.counter.values > MAX_VALUES {
            return Err(E::custom(format!("The body holds more than {MAX_VALUES} JSON values; send it in parts.")));
        }
        Ok(())
    }

    fn nested(&mut self, entries: bool) -> Walk<'_> {
        Walk { counter: self.counter, depth: self.depth + 1, entries }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(mut self, _: bool) -> Result<(), E> {
        self.count()
    }

    fn visit_i64<E: serde::de::Error>(mut self, _: i64) -> Result<(), E> {
        self.count()
    }

    fn visit_u64<E: serde::de::Error>(mut self, _: u64) -> Result<(), E> {
        self.count()
    }

    fn visit_f64<E: serde::de::Error>(mut self, _: f64) -> Result<(), E> {
        self.count()
    }

    fn visit_unit<E: serde::de::Error>(mut self) -> Result<(), E> {
        self.count()
    }

    fn visit_str<E: serde::de::Error>(mut self, text: &str) -> Result<(), E> {
        self.count()?;
        if text.len() > MAX_STRING_BYTES {
            return Err(E::custom(format!(
                "The body has a string of {} bytes; at most {} MiB are taken.",
                text.len(),
                MAX_STRING_BYTES >> 20
            )));
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.count()?;
        self.deeper::<A::Error>()?;
        let max = if self.entries { MAX_ENTRIES } else { MAX_NESTED_ARRAY };
        let mut len = 0usize;
        while seq.next_element_seed(self.nested(false))?.is_some() {
            len += 1;
            if len > max {
                return Err(serde::de::Error::custom(format!(
                    "The body has an array of more than {max} items; send it in parts."
                )));
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.count()?;
        self.deeper::<A::Error>()?;
        let top = self.depth == 0;
        while let Some(is_entry) = map.next_key_seed(EntryKey)? {
            map.next_value_seed(self.nested(top && is_entry))?;
        }
        Ok(())
    }
}

/// Reads an object's key as whether it is `entry`, without keeping it.
struct EntryKey;

impl<'de> DeserializeSeed<'de> for EntryKey {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for EntryKey {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == "entry")
    }
}

impl Walk<'_> {
    fn deeper<E: serde::de::Error>(&self) -> Result<(), E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format!("The body nests more than {MAX_DEPTH} levels deep.")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordinary_bundle_passes() {
        let bundle = serde_json::json!({"resourceType": "Bundle", "type": "batch", "entry": [
            {"resource": {"resourceType": "Observation", "status": "final",
                "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0"}]},
                "valueQuantity": {"value": 5.4, "unit": "mmol/L"}, "effectiveDateTime": "2026-01-01T08:00:00Z"}}
        ]});
        // The Bundle and its 3 members; the entry and its resource (2); the resource's 4 members;
        // the coding array, its one coding and the coding's 2 members; the quantity's 2.
        assert_eq!(check(bundle.to_string().as_bytes()).unwrap(), 17);
    }

    #[test]
    fn too_many_entries_are_refused_without_building_them() {
        let body = format!(
            r#"{{"resourceType":"Bundle","type":"batch","entry":[{}]}}"#,
            vec!["{}"; MAX_ENTRIES + 1].join(",")
        );
        let why = check(body.as_bytes()).unwrap_err().1;
        assert!(why.contains(&MAX_ENTRIES.to_string()), "{why}");
        let at_limit = format!(r#"{{"entry":[{}]}}"#, vec!["{}"; MAX_ENTRIES].join(","));
        check(at_limit.as_bytes()).unwrap();
    }

    #[test]
    fn an_observation_with_too_many_components_is_refused() {
        let component = r#"{"code":{"text":"x"},"valueQuantity":{"value":1}}"#;
        let body = format!(
            r#"{{"resourceType":"Observation","component":[{}]}}"#,
            vec![component; MAX_NESTED_ARRAY + 1].join(",")
        );
        let why = check(body.as_bytes()).unwrap_err().1;
        assert!(why.contains("array of more than 1000"), "{why}");
        // In a Bundle's entry too: the limit holds below the top level.
        let body = format!(r#"{{"entry":[{{"resource":{body}}}]}}"#);
        assert!(check(body.as_bytes()).is_err());
    }

    #[test]
    fn long_strings_deep_nesting_and_broken_json_are_refused() {
        let long = format!(r#"{{"data":"{}"}}"#, "A".repeat(MAX_STRING_BYTES + 1));
        assert!(check(long.as_bytes()).unwrap_err().1.contains("string of"));
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(check(deep.as_bytes()).unwrap_err().1.contains("levels deep"));
        assert_eq!(check(b"{\"a\": ").unwrap_err().0, 400);
        assert_eq!(check(b"{} {}").unwrap_err().0, 400);
        assert_eq!(check(deep.as_bytes()).unwrap_err().0, 413);
    }

    #[test]
    fn too_many_values_are_refused() {
        // Wide objects, so that no array passes its bound first.
        let row = format!("{{{}}}", (0..999).map(|i| format!(r#""k{i}":1"#)).collect::<Vec<_>>().join(","));
        let body = format!(r#"{{"entry":[{}]}}"#, vec![row.as_str(); 2_100].join(","));
        assert!(check(body.as_bytes()).unwrap_err().1.contains("JSON values"));
    }
}
