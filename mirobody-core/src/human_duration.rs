//! Durations as people write them in configuration: `30s`, `15m`, `1h 30m`, `200ms`, or a bare
//! number of seconds (`30`), which is what the option structs of mirobody-mcp and mirobody-auth
//! read. Here because it is the one crate all of them depend on.
//!
//! ```
//! use std::time::Duration;
//!
//! #[derive(serde::Deserialize)]
//! struct Options {
//!     #[serde(deserialize_with = "mirobody_core::human_duration::deserialize")]
//!     grace: Duration,
//!     #[serde(deserialize_with = "mirobody_core::human_duration::deserialize")]
//!     timeout: Duration,
//! }
//!
//! let options: Options = serde_json::from_str(r#"{"grace": "1m 30s", "timeout": 5}"#).unwrap();
//! assert_eq!(options.grace, Duration::from_secs(90));
//! assert_eq!(options.timeout, Duration::from_secs(5));
//! ```

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};

/// A duration read from `30s`, `15m`, `1h`, `200ms` (see [`parse`]) or a number of seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct HumanDuration(pub Duration);

impl<'de> de::Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(HumanDurationVisitor).map(HumanDuration)
    }
}

struct HumanDurationVisitor;

impl Visitor<'_> for HumanDurationVisitor {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as 30s, 15m, 1h or 200ms, or a number of seconds")
    }

    fn visit_u64<E: de::Error>(self, secs: u64) -> Result<Duration, E> {
        Ok(Duration::from_secs(secs))
    }

    fn visit_i64<E: de::Error>(self, secs: i64) -> Result<Duration, E> {
        u64::try_from(secs)
            .map(Duration::from_secs)
            .map_err(|_| E::custom(format!("{secs} is not a duration: it is negative")))
    }

    fn visit_f64<E: de::Error>(self, secs: f64) -> Result<Duration, E> {
        Duration::try_from_secs_f64(secs).map_err(|_| E::custom(format!("{secs} is not a duration in seconds")))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
        // A number in quotes (an environment variable read as text) is seconds too.
        if let Ok(secs) = text.trim().parse::<u64>() {
            return Ok(Duration::from_secs(secs));
        }
        parse(text).ok_or_else(|| {
            E::custom(format!("'{text}' is not a duration: write it as 30s, 15m, 1h 30m, 200ms or a number of seconds"))
        })
    }
}

/// Reads `1h 30m`, `15m`, `200ms`: one or more numbers, each with its unit (`ms`, `s`, `m`,
/// `h`, `d`, or spelt out: `sec`, `min`, `hours`, ...), spaces between them optional.
/// `None` for anything else, or a sum past what a [`Duration`] holds.
pub fn parse(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let number: u64 = rest[..digits].parse().ok()?;
        rest = rest[digits..].trim_start();
        let letters = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let millis_per_unit: u64 = match &rest[..letters] {
            "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 1,
            "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000,
            "d" | "day" | "days" => 86_400_000,
            _ => return None,
        };
        total = total.checked_add(Duration::from_millis(number.checked_mul(millis_per_unit)?))?;
        rest = rest[letters..].trim_start();
    }
    Some(total)
}

/// Reads a [`Duration`] field: `#[serde(deserialize_with = "mirobody_core::human_duration::deserialize")]`.
///
/// # Errors
///
/// A value that is neither a number of seconds nor a duration [`parse`] reads.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    de::Deserialize::deserialize(deserializer).map(|HumanDuration(duration)| duration)
}

/// Reads an `Option<Duration>` field where `null` and zero both mean none (no limit).
///
/// # Errors
///
/// A value that is neither null, a number of seconds nor a duration [`parse`] reads.
pub fn deserialize_zero_as_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    let read: Option<HumanDuration> = de::Deserialize::deserialize(deserializer)?;
    Ok(read.map(|HumanDuration(duration)| duration).filter(|duration| !duration.is_zero()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Duration, String> {
        serde_json::from_str::<HumanDuration>(json).map(|d| d.0).map_err(|e| e.to_string())
    }

    #[test]
    fn units_and_bare_seconds_are_read() {
        assert_eq!(read(r#""30s""#), Ok(Duration::from_secs(30)));
        assert_eq!(read(r#""15m""#), Ok(Duration::from_secs(900)));
        assert_eq!(read(r#""1h 30m""#), Ok(Duration::from_secs(5400)));
        assert_eq!(read(r#""200ms""#), Ok(Duration::from_millis(200)));
        assert_eq!(read("45"), Ok(Duration::from_secs(45)));
        assert_eq!(read(r#""45""#), Ok(Duration::from_secs(45)));
        assert_eq!(read("0.5"), Ok(Duration::from_millis(500)));
    }

    #[test]
    fn what_is_not_a_duration_is_refused_with_the_text() {
        let err = read(r#""soon""#).unwrap_err();
        assert!(err.contains("'soon' is not a duration"), "{err}");
        assert!(read("-1").unwrap_err().contains("negative"));
        for bad in ["", "s", "5 parsecs", "1h30", "1.5h", "99999999999999999999d"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(parse("1d 2h3m 4s 5ms"), Some(Duration::from_millis(93_784_005)));
        assert!(read("true").is_err());
    }

    #[test]
    fn zero_and_null_are_no_limit() {
        #[derive(serde::Deserialize)]
        struct Limit {
            #[serde(deserialize_with = "deserialize_zero_as_none")]
            limit: Option<Duration>,
        }
        let limit = |json: &str| serde_json::from_str::<Limit>(json).unwrap().limit;
        assert_eq!(limit(r#"{"limit": "2m"}"#), Some(Duration::from_secs(120)));
        assert_eq!(limit(r#"{"limit": 0}"#), None);
        assert_eq!(limit(r#"{"limit": null}"#), None);
    }
}
