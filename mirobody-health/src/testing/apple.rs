//! The `apple_health` family of the store contract suite: generated Apple Health exports
//! imported through [`apple`](crate::apple) and read back.

use std::io::{BufReader, Cursor};

use crate::apple::generate::{self, DUPLICATES_PER_DAY, RECORDS_PER_DAY, SAMPLES_STORED_PER_DAY};
use crate::apple::{import_apple_health, import_apple_health_zip};
use crate::import::{ImportResponse, TypeCounts};
use crate::store::{HealthData, RecordStore};
use crate::text::parse_time_ms;

use super::support::{ok, unique_id};

const FAMILY: &str = "apple_health";
const STEPS: &str = "HKQuantityTypeIdentifierStepCount";

/// Apple Health imports: a generated export of 1,000 records (20 days) stores the right
/// values per type (daily totals of one source, nights merged, blood-pressure correlations
/// split and their top-level copies once, each day from its sample's own offset), a second
/// import stores nothing, and an export cut short, malformed, or a zip without `export.xml`
/// is reported.
///
/// Panics, naming the family and the promise, at the first one the store breaks.
pub async fn apple_health(store: &dyn HealthData) {
    a_generated_export_is_stored_once(store).await;
    broken_exports_are_reported(store).await;
}

fn counts<'a>(response: &'a ImportResponse, name: &str) -> &'a TypeCounts {
    response
        .summary
        .by_type
        .get(name)
        .unwrap_or_else(|| panic!("store contract `{FAMILY}`: no counts for {name}: {}", response.body))
}

/// (records, created, folded, other source, duplicates, skipped) of one type.
fn row(c: &TypeCounts) -> (u64, u64, u64, u64, u64, u64) {
    (c.records, c.created, c.folded, c.other_source, c.duplicates, c.skipped)
}

/// Checks an import of a generated export of `days` days, as its first import (`again`
/// false) or a repeat; public for the large run, [`apple_health_at_scale`].
fn check_counts(response: &ImportResponse, days: u64, again: bool) {
    let body = &response.body;
    assert_eq!(response.status, 200, "store contract `{FAMILY}`: a generated export imports: {body}");
    let stored = |n: u64| if again { (0, n) } else { (n, 0) };
    let nights = days; // The night of day d ends on day d + 1.
    let workouts = days.div_ceil(2);
    let values = SAMPLES_STORED_PER_DAY * days + 3 * days + 2 * nights + workouts;
    assert_eq!(
        (response.summary.created as u64, response.summary.unchanged as u64),
        stored(values),
        "store contract `{FAMILY}`: values stored: {body}"
    );
    let (new, _) = stored(1);
    let expect = |name: &str, records: u64, values: u64, folded: u64, other: u64, duplicates: u64, skipped: u64| {
        let c = counts(response, name);
        assert_eq!(
            row(c),
            (records, values * new, folded, other, duplicates, skipped),
            "store contract `{FAMILY}`: {name}: {c:?}"
        );
        assert_eq!(c.unchanged, values * (1 - new), "store contract `{FAMILY}`: {name} again: {c:?}");
    };
    let hk = |t: &str| format!("HKQuantityTypeIdentifier{t}");
    expect(&hk("StepCount"), 12 * days, days, 12 * days, 6 * days, 0, 0);
    expect(&hk("DistanceWalkingRunning"), 6 * days, days, 6 * days, 3 * days, 0, 0);
    expect(&hk("ActiveEnergyBurned"), 4 * days, days, 4 * days, 0, 0, 0);
    expect(&hk("HeartRate"), 5 * days, 5 * days, 0, 0, 0, 0);
    expect(&hk("BloodPressureSystolic"), 2 * days, days, 0, 0, days, 0);
    expect(&hk("BloodPressureDiastolic"), 2 * days, days, 0, 0, days, 0);
    expect(&hk("OxygenSaturation"), days, days, 0, 0, 0, 0);
    expect(&hk("BloodGlucose"), days, days, 0, 0, 0, 0);
    expect(&hk("EnvironmentalAudioExposure"), days, 0, 0, 0, 0, days);
    expect("HKCategoryTypeIdentifierSleepAnalysis", 7 * days, 2 * nights, 7 * days, 0, 0, 0);
    expect("Workout", workouts, workouts, 0, 0, 0, 0);
    expect("ActivitySummary", days, 0, 0, 0, 0, days);
    let records: u64 =
        response.summary.by_type.iter().filter(|(k, _)| k.starts_with("HK")).map(|(_, c)| c.records).sum();
    assert_eq!(records, RECORDS_PER_DAY * days, "store contract `{FAMILY}`: every Record counted");
    let duplicates: u64 = response.summary.by_type.values().map(|c| c.duplicates).sum();
    assert_eq!(duplicates, DUPLICATES_PER_DAY * days);
    assert!(response.summary.invalid.is_empty(), "store contract `{FAMILY}`: {:?}", response.summary.invalid);
}

async fn a_generated_export_is_stored_once(store: &dyn HealthData) {
    let days = 20;
    let mut zip = Cursor::new(Vec::new());
    let generated = generate::write_zip(days, &mut zip).expect("the generator writes to memory");
    assert_eq!(generated.records, 1_000);
    let subject = unique_id("apple-subject");
    let records: &dyn RecordStore = store;
    let first = import_apple_health_zip(records, &subject, Cursor::new(zip.get_ref().clone())).await;
    check_counts(&first, days, false);

    // Steps: one value a day, the larger source's, on the day of each sample's own offset
    // (a 07:30 +0800 sample is the day before in UTC, a 23:30 -0500 one the day after).
    let series = store.series(&subject, &subject, "41950-7", i64::MIN / 2, i64::MAX / 2, 1000).await;
    let series = ok(FAMILY, "series", series).expect("one's own series");
    let got: Vec<(i64, Option<f64>, Option<&str>)> =
        series.points.iter().map(|p| (parse_time_ms(&p.time).unwrap_or(0), p.value, p.unit.as_deref())).collect();
    let want: Vec<(i64, Option<f64>, Option<&str>)> = (0..days)
        .map(|d| {
            let midnight = parse_time_ms(&generate::date_of(d)).unwrap_or(0);
            (midnight, Some(generate::expected_steps(d) as f64), Some("count"))
        })
        .collect();
    assert_eq!(got, want, "store contract `{FAMILY}`: daily steps are one source's, on the sample's local day");

    let series = store.series(&subject, &subject, "93832-4", i64::MIN / 2, i64::MAX / 2, 1000).await;
    let series = ok(FAMILY, "series", series).expect("one's own series");
    assert_eq!(series.points.len() as u64, days, "store contract `{FAMILY}`: one sleep value a night");
    // 22:50 to 06:40 from one source covers the watch's stages: 7 h 50 min, counted once.
    assert!(series.points.iter().all(|p| p.value == Some(7.833)), "{:?}", series.points.first());

    let mut indicators = ok(FAMILY, "indicators", store.indicators(&subject, &subject).await).expect("own");
    indicators.retain(|i| ["2339-0", "15074-8", "59408-5", "8480-6"].contains(&i.code.as_str()));
    indicators.sort_by(|a, b| a.code.cmp(&b.code));
    let units: Vec<(&str, Option<&str>, u64)> =
        indicators.iter().map(|i| (i.code.as_str(), i.unit.as_deref(), i.count)).collect();
    assert_eq!(
        units,
        [
            ("15074-8", Some("mmol/L"), days / 2),
            ("2339-0", Some("mg/dL"), days / 2),
            ("59408-5", Some("%"), days),
            ("8480-6", Some("mmHg"), days)
        ],
        "store contract `{FAMILY}`: glucose by its unit, SpO2 as a percentage, blood pressure once"
    );

    let again = import_apple_health_zip(records, &subject, Cursor::new(zip.into_inner())).await;
    check_counts(&again, days, true);
    let page = ok(FAMILY, "observations", store.observations(&subject, &subject, 1).await).expect("own");
    let per_export = SAMPLES_STORED_PER_DAY * days + 3 * days + 2 * days + days / 2;
    assert_eq!(page.total, per_export, "store contract `{FAMILY}`: a re-import stores nothing");
}

async fn broken_exports_are_reported(store: &dyn HealthData) {
    let records: &dyn RecordStore = store;
    let mut xml = Vec::new();
    generate::write_xml(4, &mut xml).expect("the generator writes to memory");

    // Cut short: what came before is kept and said so; no daily total (it would be short).
    let subject = unique_id("apple-cut");
    let cut = &xml[..xml.len() / 2];
    let response = import_apple_health(records, &subject, BufReader::new(cut)).await;
    assert_eq!(response.status, 400, "store contract `{FAMILY}`: a cut export is refused: {}", response.body);
    let reason = response.summary.invalid.first().cloned().unwrap_or_default();
    assert!(reason.contains("at byte") && reason.contains("are kept"), "{reason}");
    assert_eq!(response.body["complete"], false);
    assert!(counts(&response, "HKQuantityTypeIdentifierHeartRate").created > 0);
    assert_eq!(counts(&response, STEPS).created, 0, "no daily total from part of a day");
    let series = store.series(&subject, &subject, "41950-7", i64::MIN / 2, i64::MAX / 2, 10).await;
    assert!(ok(FAMILY, "series", series).expect("own").points.is_empty());

    // Malformed in the middle.
    let text = String::from_utf8(xml.clone()).expect("the generator writes UTF-8");
    let at = text.find("</HeartRateVariabilityMetadataList>").expect("HRV has beats");
    let broken = format!("{}</HeartRateVariabilityMetadataLis>{}", &text[..at], &text[at + 35..]);
    let response = import_apple_health(records, &unique_id("apple-bad"), broken.as_bytes()).await;
    assert_eq!(response.status, 400);
    assert!(response.summary.invalid[0].contains("not well-formed"), "{:?}", response.summary.invalid);

    // Not an export at all.
    let response = import_apple_health(records, &unique_id("apple-cda"), &b"<ClinicalDocument/>"[..]).await;
    assert!(response.summary.invalid[0].contains("not <HealthData>"), "{:?}", response.summary.invalid);

    // A zip without the export's XML.
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    zip.start_file("apple_health_export/export_cda.xml", zip::write::SimpleFileOptions::default())
        .expect("a zip in memory");
    std::io::Write::write_all(&mut zip, b"<ClinicalDocument/>").expect("a zip in memory");
    let bytes = zip.finish().expect("a zip in memory").into_inner();
    let response = import_apple_health_zip(records, &unique_id("apple-zip"), Cursor::new(bytes)).await;
    assert_eq!(response.status, 400);
    assert!(
        response.summary.invalid[0].contains("no apple_health_export/export.xml"),
        "{:?}",
        response.summary.invalid
    );
    // A zip whose export.xml is damaged in the middle: refused, never taken as whole.
    let mut zip = Cursor::new(Vec::new());
    generate::write_zip(4, &mut zip).expect("the generator writes to memory");
    let mut bytes = zip.into_inner();
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 64] {
        *b ^= 0x5a;
    }
    let response = import_apple_health_zip(records, &unique_id("apple-damaged"), Cursor::new(bytes)).await;
    assert_eq!(response.status, 400, "store contract `{FAMILY}`: a damaged zip is refused: {}", response.body);
    assert_eq!(response.body["complete"], false);
    let response =
        import_apple_health_zip(records, &unique_id("apple-zip"), Cursor::new(b"PK\x03\x04 no".to_vec())).await;
    assert!(response.summary.invalid[0].contains("not a zip"), "{:?}", response.summary.invalid);
}

/// The same counts on an export of `days` days (50 records each: 20,000 days is a million),
/// written to a temporary file and streamed from it; slow, so not part of
/// [`check_all`](super::check_all): a store's tests run it on their own (ignored by default).
pub async fn apple_health_at_scale(store: &dyn HealthData, days: u64) {
    let path = std::env::temp_dir().join(format!("{}.xml", unique_id("apple-export")));
    let file = std::fs::File::create(&path).expect("a temporary file");
    let generated = generate::write_xml(days, file).expect("the export is written");
    assert_eq!(generated.records, RECORDS_PER_DAY * days);
    let subject = unique_id("apple-large");
    let records: &dyn RecordStore = store;
    let file = std::fs::File::open(&path).expect("the export reads back");
    let response = import_apple_health(records, &subject, BufReader::with_capacity(1 << 16, file)).await;
    let _ = std::fs::remove_file(&path);
    check_counts(&response, days, false);
}
