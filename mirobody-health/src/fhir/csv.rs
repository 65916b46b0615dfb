//! A wearable's CSV export read as a batch of Observations: a header row naming the columns
//! `time`, `indicator`, `value` and optionally `unit` (any case, any order, other columns
//! ignored), then one measurement per row.
//!
//! Each row becomes a FHIR Observation synthesized here (LOINC-coded when the indicator
//! catalog knows the name), read the same way an imported one is. Its source id is a hash of
//! the row's fields, so importing the same file again stores nothing twice.

use ::csv::{ReaderBuilder, StringRecord, Trim};
use serde_json::{Value, json};

use super::{EntryInput, ImportItem, ImportRequest, MAX_ENTRIES, RequestKind, observation, sha256_hex};
use crate::indicators;
use crate::text::{cap_chars, parse_time_ms};

/// Where each needed column is.
struct Columns {
    /// The `time` column.
    time: usize,
    /// The `indicator` column.
    indicator: usize,
    /// The `value` column.
    value: usize,
    /// The `unit` column, if there is one.
    unit: Option<usize>,
}

/// Reads a CSV export into a [`RequestKind::Batch`] of Observations, one entry per row (a bad
/// row is [`EntryInput::Invalid`] with `line N: ` and the reason, N counting the header as
/// line 1). `Err` when the header lacks a needed column, there are more than [`MAX_ENTRIES`]
/// rows, or the text is not CSV.
pub fn parse_csv(text: &str) -> Result<ImportRequest, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = ReaderBuilder::new()
        .delimiter(delimiter(text))
        .flexible(true)
        .trim(Trim::All)
        .has_headers(true)
        .from_reader(text.as_bytes());
    let header = reader.headers().map_err(|e| format!("The CSV header cannot be read: {e}"))?.clone();
    let columns = columns(&header)?;
    let mut entries = Vec::new();
    // Lines counted from byte offsets: the reader's own count leaves out the blank lines it
    // skips, and its offset is where it started reading, before them.
    let (mut counted_to, mut line) = (0, 1);
    for record in reader.records() {
        let record = record.map_err(|e| format!("The CSV cannot be read: {e}"))?;
        if entries.len() == MAX_ENTRIES {
            return Err(format!("The CSV has more than {MAX_ENTRIES} rows; send it in parts."));
        }
        let start = record.position().map_or(counted_to, |p| usize::try_from(p.byte()).unwrap_or(usize::MAX));
        let mut start = start.clamp(counted_to, text.len());
        while matches!(text.as_bytes().get(start), Some(b'\r' | b'\n')) {
            start += 1;
        }
        line += text.as_bytes()[counted_to..start].iter().filter(|b| **b == b'\n').count();
        counted_to = start;
        entries.push(row(&record, &columns, line));
    }
    Ok(ImportRequest { kind: RequestKind::Batch, entries })
}

/// Whether the first line of `text` that is not blank is a header naming the columns `time`,
/// `indicator` and `value`, as [`parse_csv`] needs (how uploads tell a CSV of measurements
/// from any other).
pub(crate) fn names_measurements(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader =
        ReaderBuilder::new().delimiter(delimiter(text)).flexible(true).trim(Trim::All).from_reader(text.as_bytes());
    reader.headers().is_ok_and(|header| columns(header).is_ok())
}

/// The delimiter the header row uses most of: comma, semicolon (spreadsheets where the comma
/// is the decimal mark) or tab.
fn delimiter(text: &str) -> u8 {
    let header = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let count = |d: char| header.matches(d).count();
    [b';', b'\t'].into_iter().fold(b',', |best, d| if count(d as char) > count(best as char) { d } else { best })
}

/// Finds the columns by name, case-insensitively.
fn columns(header: &StringRecord) -> Result<Columns, String> {
    let names: Vec<String> = header.iter().map(|h| h.trim().to_lowercase()).collect();
    let find = |wanted: &str| -> Result<Option<usize>, String> {
        let mut at = names.iter().enumerate().filter(|(_, n)| *n == wanted).map(|(i, _)| i);
        match (at.next(), at.next()) {
            (Some(_), Some(_)) => Err(format!("The CSV header names the column \"{wanted}\" twice.")),
            (found, _) => Ok(found),
        }
    };
    let needed = |wanted: &str| -> Result<usize, String> {
        find(wanted)?.ok_or_else(|| {
            let had = header.iter().map(|h| cap_chars(h, 40).0).collect::<Vec<_>>().join(", ");
            format!(
                "The CSV header must name the columns time, indicator and value (unit is optional); \
                 it has no \"{wanted}\" column (columns: {had})."
            )
        })
    };
    Ok(Columns { time: needed("time")?, indicator: needed("indicator")?, value: needed("value")?, unit: find("unit")? })
}

/// One row, found at `line` of the file.
fn row(record: &StringRecord, columns: &Columns, line: usize) -> EntryInput {
    let get = |i: usize| record.get(i).unwrap_or_default();
    let (time, indicator, value) = (get(columns.time), get(columns.indicator), get(columns.value));
    let unit = columns.unit.map(get).unwrap_or_default();
    let invalid = |reason: String| EntryInput::Invalid(format!("line {line}: {reason}"));
    if time.is_empty() {
        return invalid("the time is empty".to_owned());
    }
    let Some(effective) = fhir_time(time) else {
        return invalid(format!(
            "the time {:?} is not an RFC 3339 time (2026-01-02T08:00:00Z, or with an offset) or a date (2026-01-02)",
            cap_chars(time, 40).0
        ));
    };
    if indicator.is_empty() {
        return invalid("the indicator is empty".to_owned());
    }
    if value.is_empty() {
        return invalid("the value is empty".to_owned());
    }
    let resource = synthesize(&effective, indicator, value, unit);
    let Some(object) = resource.as_object() else { return invalid("the row cannot be read".to_owned()) };
    match observation::parse(&resource, object) {
        EntryInput::Item(ImportItem::Observation(mut o)) => {
            o.source_id = format!("csv#sha256:{}", sha256_hex(format!("{time}|{indicator}|{value}|{unit}").as_bytes()));
            EntryInput::Item(ImportItem::Observation(o))
        }
        EntryInput::Invalid(reason) => invalid(reason),
        other => other,
    }
}

/// `time` as a FHIR dateTime, if it is one; a space between date and time (as spreadsheets
/// write it) is replaced by the `T` FHIR requires. A time without an offset is refused: which zone it meant
/// cannot be known.
fn fhir_time(time: &str) -> Option<String> {
    // Byte 10 is ASCII here, so both slices fall on character boundaries.
    let time = match time.as_bytes().get(10) {
        Some(b' ') => format!("{}T{}", &time[..10], &time[11..]),
        _ => time.to_owned(),
    };
    parse_time_ms(&time).map(|_| time)
}

/// The Observation a row stands for: LOINC-coded when the catalog knows the indicator, a
/// `valueQuantity` when the value is a number, else a `valueString`.
fn synthesize(time: &str, indicator: &str, value: &str, unit: &str) -> Value {
    let code = match indicators::lookup_name(indicator) {
        Some(known) => json!({
            "coding": [{"system": "http://loinc.org", "code": known.code, "display": known.display}],
            "text": indicator,
        }),
        None => json!({"text": indicator}),
    };
    let mut resource =
        json!({"resourceType": "Observation", "status": "final", "code": code, "effectiveDateTime": time});
    // "NaN" and "inf" parse as f64 but are not JSON numbers.
    match value.parse::<f64>().ok().filter(|n| n.is_finite()) {
        Some(number) if unit.is_empty() => resource["valueQuantity"] = json!({"value": number}),
        Some(number) => resource["valueQuantity"] = json!({"value": number, "unit": unit}),
        None => resource["valueString"] = json!(value),
    }
    resource
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fhir::NewObservation;

    fn observation(entry: &EntryInput) -> &NewObservation {
        match entry {
            EntryInput::Item(ImportItem::Observation(o)) => o,
            other => panic!("not an observation: {other:?}"),
        }
    }

    #[test]
    fn columns_may_come_in_any_order_and_case() {
        let text = "\u{feff}Device,Unit,VALUE,Indicator,Time\n\
                    watch,bpm,72,heart rate,2026-01-02T08:00:00Z\n\
                    watch,,7,Mood,2026-01-02\n\
                    watch,%,97,SpO2,2026-01-02 08:00:00+01:00\n\
                    watch,,light,sleep stage,2026-01-02T01:00:00Z\n";
        let request = parse_csv(text).unwrap();
        assert_eq!((request.kind, request.entries.len()), (RequestKind::Batch, 4));
        let hr = observation(&request.entries[0]);
        assert_eq!((hr.code.as_str(), hr.time_ms), ("8867-4", parse_time_ms("2026-01-02T08:00:00Z").unwrap()));
        assert_eq!((hr.points[0].value, hr.points[0].unit.as_deref()), (Some(72.0), Some("bpm")));
        assert_eq!(hr.points[0].display, "Heart rate");
        assert_eq!(hr.resource["code"]["coding"][0]["system"], "http://loinc.org");
        assert_eq!(hr.resource["valueQuantity"], json!({"value": 72.0, "unit": "bpm"}));
        assert_eq!(hr.resource["status"], "final");
        assert!(hr.source_id.starts_with("csv#sha256:"));
        let expected = sha256_hex(b"2026-01-02T08:00:00Z|heart rate|72|bpm");
        assert_eq!(hr.source_id, format!("csv#sha256:{expected}"));

        let mood = observation(&request.entries[1]);
        assert_eq!(
            (mood.code.as_str(), mood.points[0].value, mood.points[0].unit.clone()),
            ("text:mood", Some(7.0), None)
        );
        assert_eq!(mood.resource["code"], json!({"text": "Mood"}));

        let spo2 = observation(&request.entries[2]);
        assert_eq!((spo2.code.as_str(), spo2.time_ms), ("59408-5", parse_time_ms("2026-01-02T07:00:00Z").unwrap()));
        assert_eq!(spo2.resource["effectiveDateTime"], "2026-01-02T08:00:00+01:00");

        let stage = observation(&request.entries[3]);
        assert_eq!((stage.points[0].value, stage.points[0].value_text.as_deref()), (None, Some("light")));
        assert_eq!(stage.resource["valueString"], "light");
    }

    #[test]
    fn bad_rows_are_invalid_by_line() {
        let text = "time,indicator,value\n\
                    2026-01-02T08:00:00Z,glucose,96\n\
                    yesterday,glucose,97\n\
                    2026-01-02T09:00:00Z,,98\n\
                    \n\
                    2026-01-02T10:00:00Z,glucose,\n\
                    2026-01-02T10:00:00,glucose,99\n\
                    2026-01-02T11:00:00Z\n";
        let entries = parse_csv(text).unwrap().entries;
        assert_eq!(observation(&entries[0]).code, "2339-0");
        let reasons: Vec<&str> = entries[1..]
            .iter()
            .map(|e| match e {
                EntryInput::Invalid(reason) => reason.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        let bad_time = |line: u32, time: &str| {
            format!(
                "line {line}: the time \"{time}\" is not an RFC 3339 time (2026-01-02T08:00:00Z, or with an offset) \
                 or a date (2026-01-02)"
            )
        };
        assert_eq!(
            reasons,
            [
                bad_time(3, "yesterday").as_str(),
                "line 4: the indicator is empty",
                "line 6: the value is empty",
                bad_time(7, "2026-01-02T10:00:00").as_str(),
                "line 8: the indicator is empty",
            ]
        );
    }

    #[test]
    fn chinese_indicator_names_are_coded() {
        let text = "time,indicator,value,unit\n\
                    2026-01-02T08:00:00Z,血糖,5.6,mmol/L\n\
                    2026-01-02T08:00:00Z,收缩压,128,mmHg\n";
        let entries = parse_csv(text).unwrap().entries;
        let codes: Vec<&str> = entries.iter().map(|e| observation(e).code.as_str()).collect();
        assert_eq!(codes, ["2339-0", "8480-6"]);
    }

    #[test]
    fn lines_are_counted_with_crlf_and_blank_lines() {
        let text = "time,indicator,value\r\n\r\n2026-01-02,glucose,\r\n2026-01-02,,5\r\n";
        let entries = parse_csv(text).unwrap().entries;
        assert_eq!(
            entries,
            [
                EntryInput::Invalid("line 3: the value is empty".into()),
                EntryInput::Invalid("line 4: the indicator is empty".into())
            ]
        );
    }

    #[test]
    fn the_same_row_twice_has_the_same_source_id() {
        let text =
            "time;indicator;value;unit\n2026-01-02;steps;8000;\n2026-01-02;steps;8000;\n2026-01-03;steps;8000;\n";
        let entries = parse_csv(text).unwrap().entries;
        let ids: Vec<&str> = entries.iter().map(|e| observation(e).source_id.as_str()).collect();
        assert_eq!(ids[0], ids[1]);
        assert_ne!(ids[0], ids[2]);
        assert_eq!(
            ids,
            parse_csv(text).unwrap().entries.iter().map(|e| observation(e).source_id.as_str()).collect::<Vec<_>>()
        );
        assert_eq!(observation(&entries[0]).code, "55423-8");
    }

    #[test]
    fn headers_without_the_needed_columns_are_refused() {
        let err = parse_csv("when,what,value\n2026,glucose,5\n").unwrap_err();
        assert!(err.contains("no \"time\" column") && err.contains("columns: when, what, value"), "{err}");
        assert!(parse_csv("").unwrap_err().contains("no \"time\" column"));
        assert!(parse_csv("time,indicator,value,Value\n").unwrap_err().contains("\"value\" twice"));
        let empty = parse_csv("time,indicator,value\n").unwrap();
        assert!(empty.entries.is_empty());
    }

    #[test]
    fn at_most_max_entries_rows_are_taken() {
        let mut text = String::from("time,indicator,value\n");
        for _ in 0..MAX_ENTRIES {
            text.push_str("2026-01-02,steps,1\n");
        }
        assert_eq!(parse_csv(&text).unwrap().entries.len(), MAX_ENTRIES);
        text.push_str("2026-01-02,steps,1\n");
        assert!(parse_csv(&text).unwrap_err().contains("more than 10000 rows"));
    }

    #[test]
    fn tabs_and_semicolons_are_delimiters_too() {
        assert_eq!(delimiter("time\tindicator\tvalue\n"), b'\t');
        assert_eq!(delimiter("time;indicator;value\n1,5;a;b"), b';');
        assert_eq!(delimiter("time,indicator,value"), b',');
        let entries =
            parse_csv("time\tindicator\tvalue\tunit\n2026-01-02T08:00:00Z\tweight\t70.5\tkg\n").unwrap().entries;
        let o = observation(&entries[0]);
        assert_eq!(
            (o.code.as_str(), o.points[0].value, o.points[0].unit.as_deref()),
            ("29463-7", Some(70.5), Some("kg"))
        );
    }

    #[test]
    fn non_finite_numbers_are_text() {
        let entries = parse_csv("time,indicator,value\n2026-01-02,glucose,NaN\n").unwrap().entries;
        assert_eq!(observation(&entries[0]).points[0].value_text.as_deref(), Some("NaN"));
    }
}
