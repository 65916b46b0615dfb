//! Small helpers the health domain, its stores and its tools share: capping text on a
//! character boundary, telling text-like MIME types from binary ones, times as RFC 3339.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The first `max_chars` characters of `text`, and whether anything was cut. Never splits a
/// character (upstream cut at a byte count and could leave invalid UTF-8).
pub fn cap_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character
/// boundary, and whether anything was cut.
pub fn cap_bytes(text: &str, max_bytes: usize) -> (&str, bool) {
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
pub fn is_text_like(mime: &str) -> bool {
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

/// The one wall clock (core's), under the name the health crates import it by.
pub use mirobody_core::clock::now_ms;

/// A time in milliseconds since the epoch as RFC 3339 UTC (`2026-01-02T03:04:05.678Z`, the
/// fraction without trailing zeros, none for a whole second), as the `time` crate writes it.
///
/// Written out by hand for the years 0 to 9999: a series formats one time per value, and the
/// `time` crate's general formatter cost more per value than reading it from the database.
pub fn rfc3339(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return rfc3339_general(ms);
    }
    let secs = ms_of_day / 1000;
    // `YYYY-MM-DDTHH:MM:SS.mmmZ`, digits filled in place.
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: i64| {
        for i in (at..at + width).rev() {
            text[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, secs / 3600);
    put(14, 2, secs / 60 % 60);
    put(17, 2, secs % 60);
    put(20, 3, ms_of_day % 1000);
    let fraction = &text[20..23];
    let digits = 3 - fraction.iter().rev().take_while(|&&d| d == b'0').count();
    let mut out = String::with_capacity(24);
    out.push_str(std::str::from_utf8(&text[..19]).unwrap_or_default());
    if digits > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(&text[20..20 + digits]).unwrap_or_default());
    }
    out.push('Z');
    out
}

/// The proleptic Gregorian (year, month, day) of a count of days since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The general path of [`rfc3339`], through the `time` crate.
fn rfc3339_general(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

/// Milliseconds since the epoch of an RFC 3339 time, or of a FHIR date (`2026-01-02`,
/// `2026-01`, `2026`), taken as UTC midnight.
pub fn parse_time_ms(text: &str) -> Option<i64> {
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

    proptest::proptest! {
        #[test]
        fn the_hand_written_rfc3339_is_the_time_crates(ms in -70_000_000_000_000i64..260_000_000_000_000i64) {
            proptest::prop_assert_eq!(rfc3339(ms), rfc3339_general(ms));
        }
    }

    #[test]
    fn whole_seconds_and_trailing_zeros() {
        for ms in [0, 500, 1_000, 1_010, 1_777_777_777_123, -1, 253_402_300_799_999, 253_402_300_800_000] {
            assert_eq!(rfc3339(ms), rfc3339_general(ms), "{ms}");
        }
        assert_eq!(rfc3339(1_500), "1970-01-01T00:00:01.5Z");
    }
}
