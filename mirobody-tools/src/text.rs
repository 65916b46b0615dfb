//! Small helpers shared by the tools and backends: capping text on a character boundary,
//! telling text-like MIME types from binary ones, times as RFC 3339, hex.

use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The first `max_chars` characters of `text`, and whether anything was cut. Never splits a
/// character (upstream cut at a byte count and could leave invalid UTF-8).
pub(crate) fn cap_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character
/// boundary, and whether anything was cut.
pub(crate) fn cap_bytes(text: &str, max_bytes: usize) -> (&str, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// Whether content of this MIME type is text a model can read inline.
pub(crate) fn is_text_like(mime: &str) -> bool {
    let mime = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/csv"
                | "application/x-ndjson"
                | "application/sql"
                | "image/svg+xml"
        )
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// A time in milliseconds since the epoch as RFC 3339 UTC (`2026-01-02T03:04:05.678Z`).
pub(crate) fn rfc3339(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

/// Milliseconds since the epoch of an RFC 3339 time, or of a FHIR date (`2026-01-02`,
/// `2026-01`, `2026`), taken as UTC midnight.
pub(crate) fn parse_time_ms(text: &str) -> Option<i64> {
    if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        return Some((t.unix_timestamp_nanos() / 1_000_000) as i64);
    }
    let mut parts = text.split('-');
    let year: i32 = parts.next()?.parse().ok()?;
    let month: u8 = parts.next().map_or(Some(1), |m| m.parse().ok())?;
    let day: u8 = parts.next().map_or(Some(1), |d| d.parse().ok())?;
    if parts.next().is_some() {
        return None;
    }
    let date = time::Date::from_calendar_date(year, time::Month::try_from(month).ok()?, day).ok()?;
    Some(date.midnight().assume_utc().unix_timestamp() * 1000)
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// The bytes of lower- or upper-case hex, or `None` if it is not hex.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_never_split_a_character() {
        assert_eq!(cap_chars("héllo", 2), ("hé", true));
        assert_eq!(cap_chars("hé", 2), ("hé", false));
        assert_eq!(cap_bytes("hé", 2), ("h", true));
        assert_eq!(cap_bytes("😀😀", 5), ("😀", true));
        assert_eq!(cap_bytes("abc", 3), ("abc", false));
    }

    #[test]
    fn text_like_types() {
        for t in ["text/plain", "text/csv; charset=utf-8", "application/json", "application/fhir+json", "image/svg+xml"]
        {
            assert!(is_text_like(t), "{t}");
        }
        for t in ["application/pdf", "image/png", "application/octet-stream"] {
            assert!(!is_text_like(t), "{t}");
        }
    }

    #[test]
    fn times_round_trip() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        let ms = parse_time_ms("2026-03-04T05:06:07.089Z").unwrap();
        assert_eq!(rfc3339(ms), "2026-03-04T05:06:07.089Z");
        assert_eq!(parse_time_ms("2026-03-04+01:00"), None);
        assert_eq!(parse_time_ms("2026-03-04").map(rfc3339).as_deref(), Some("2026-03-04T00:00:00Z"));
        assert_eq!(parse_time_ms("2026").map(rfc3339).as_deref(), Some("2026-01-01T00:00:00Z"));
        assert_eq!(parse_time_ms("soon"), None);
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(unhex("000fff"), Some(vec![0, 15, 255]));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }
}
