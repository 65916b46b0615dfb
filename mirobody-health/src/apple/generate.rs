//! Exports in Apple's format, of any size, for tests and benchmarks: the DTD's internal subset,
//! localised source names, an iPhone and a Watch counting the same steps, blood pressure in
//! `Correlation`s and again at the top level, sleep stages from two sources, workouts with
//! `WorkoutStatistics`, offsets that change from day to day, and in the zip an
//! `export_cda.xml` beside `export.xml`.
//!
//! Every day of the export is the same recipe ([`RECORDS_PER_DAY`] `Record` elements), so what
//! an import must store is known from the number of days: see the constants.

use std::cell::Cell;
use std::io::{self, Seek, Write};

use super::kinds::{civil_from_days, days_from_civil};

/// `Record` elements per day (top level and in correlations).
pub const RECORDS_PER_DAY: u64 = 50;
/// Values stored one per sample each day: heart rate 5, resting heart rate, HRV, body mass,
/// BMI, height, body fat, oxygen saturation, respiratory rate, body temperature, VO2 max,
/// glucose, systolic and diastolic once each.
pub const SAMPLES_STORED_PER_DAY: u64 = 18;
/// Top-level copies of blood-pressure correlation members each day (stored once).
pub const DUPLICATES_PER_DAY: u64 = 2;
/// `Record`s each day of a type not imported (environmental audio exposure).
pub const SKIPPED_RECORDS_PER_DAY: u64 = 1;

/// The sources, named as in a German, a Portuguese and an English-language Health app.
const IPHONE: &str = "iPhone von Jörg";
const WATCH: &str = "Apple Watch de Ana";
const SCALE: &str = "Balança &amp; Co";
const CUFF: &str = "Omron Connect";
const SLEEP_APP: &str = "AutoSleep";
const WATCH_DEVICE: &str = "&lt;&lt;HKDevice: 0x28372a0&gt;, name:Apple Watch, manufacturer:Apple Inc., \
                            model:Watch, hardware:Watch6,1, software:10.1&gt;";

/// What was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Generated {
    /// Days of data.
    pub days: u64,
    /// `Record` elements, top level and in correlations.
    pub records: u64,
    /// `Workout` elements (one every other day).
    pub workouts: u64,
    /// Bytes of `export.xml`.
    pub xml_bytes: u64,
}

/// The day number (since 1970-01-01) of day `d` of an export.
fn day_number(d: u64) -> i64 {
    days_from_civil(2020, 1, 1) + d as i64
}

/// Day `d`'s offset: the person travels between Shanghai, New York and Berlin.
fn offset(d: u64) -> &'static str {
    ["+0800", "-0500", "+0100"][(d % 3) as usize]
}

/// Apple's date of day `d` (plus `extra_days`) at `hh:mm` local.
fn date(d: u64, extra_days: i64, hh: u32, mm: u32) -> String {
    let (y, m, day) = civil_from_days(day_number(d) + extra_days);
    format!("{y:04}-{m:02}-{day:02} {hh:02}:{mm:02}:00 {}", offset(d))
}

/// The steps each source counts per sample on day `d`: the Watch more on even days, the
/// iPhone on odd ones.
pub fn steps_per_sample(d: u64) -> (u64, u64) {
    (400 + (d % 5) * 10, if d.is_multiple_of(2) { 450 } else { 350 })
}

/// The daily step total an import must store for day `d`: the larger source's, not the sum.
pub fn expected_steps(d: u64) -> u64 {
    let (iphone, watch) = steps_per_sample(d);
    6 * iphone.max(watch)
}

/// The date (`YYYY-MM-DD`) of day `d`, local.
pub fn date_of(d: u64) -> String {
    let (y, m, day) = civil_from_days(day_number(d));
    format!("{y:04}-{m:02}-{day:02}")
}

/// Writes `export.xml` with `days` days of data.
pub fn write_xml<W: Write>(days: u64, out: W) -> io::Result<Generated> {
    let mut out = Counting { inner: io::BufWriter::with_capacity(1 << 16, out), bytes: 0 };
    let mut generated = Generated { days, ..Generated::default() };
    out.write_all(HEAD.as_bytes())?;
    writeln!(out, " <ExportDate value=\"{}\"/>", date(days, 1, 13, 0))?;
    writeln!(
        out,
        " <Me HKCharacteristicTypeIdentifierDateOfBirth=\"1980-04-02\" HKCharacteristicTypeIdentifierBiologicalSex=\"HKBiologicalSexFemale\" HKCharacteristicTypeIdentifierBloodType=\"HKBloodTypeNotSet\"/>"
    )?;
    let records = Cell::new(0u64);
    let record = |out: &mut Counting<_>, hk: &str, source: &str, unit: &str, start: &str, end: &str, value: &str| {
        records.set(records.get() + 1);
        writeln!(
            out,
            " <Record type=\"HKQuantityTypeIdentifier{hk}\" sourceName=\"{source}\" sourceVersion=\"10.1\" device=\"{WATCH_DEVICE}\" unit=\"{unit}\" creationDate=\"{end}\" startDate=\"{start}\" endDate=\"{end}\" value=\"{value}\"/>"
        )
    };
    // Records grouped by type, as Apple writes them.
    let hours = [(7, 30), (10, 0), (12, 0), (15, 0), (18, 0), (23, 30)];
    for d in 0..days {
        let (iphone, watch) = steps_per_sample(d);
        for (source, each) in [(IPHONE, iphone), (WATCH, watch)] {
            for (h, m) in hours {
                let (start, end) = (date(d, 0, h, m), date(d, 0, h, m + 20));
                record(&mut out, "StepCount", source, "count", &start, &end, &each.to_string())?;
            }
        }
    }
    for d in 0..days {
        for (source, each) in [(IPHONE, "0.8"), (WATCH, "0.9")] {
            for h in [8, 12, 17] {
                record(&mut out, "DistanceWalkingRunning", source, "km", &date(d, 0, h, 0), &date(d, 0, h, 30), each)?;
            }
        }
    }
    for d in 0..days {
        for h in [9, 11, 13, 19] {
            record(&mut out, "ActiveEnergyBurned", WATCH, "kcal", &date(d, 0, h, 0), &date(d, 0, h, 45), "50")?;
        }
    }
    for d in 0..days {
        for (i, h) in [6, 9, 12, 15, 21].into_iter().enumerate() {
            let t = date(d, 0, h, 5);
            record(&mut out, "HeartRate", WATCH, "count/min", &t, &t, &(60 + (d + i as u64) % 40).to_string())?;
        }
    }
    let singles: [(&str, &str, &str, &str); 10] = [
        ("RestingHeartRate", WATCH, "count/min", "58"),
        ("BodyMass", SCALE, "kg", "71.4"),
        ("BodyMassIndex", SCALE, "count", "23.1"),
        ("Height", IPHONE, "cm", "176"),
        ("BodyFatPercentage", SCALE, "%", "0.214"),
        ("OxygenSaturation", WATCH, "%", "0.97"),
        ("RespiratoryRate", WATCH, "count/min", "14.5"),
        ("BodyTemperature", IPHONE, "degC", "36.7"),
        ("VO2Max", WATCH, "mL/min·kg", "41.3"),
        ("EnvironmentalAudioExposure", WATCH, "dBASPL", "62"),
    ];
    for (hk, source, unit, value) in singles {
        for d in 0..days {
            let t = date(d, 0, 7, 0);
            record(&mut out, hk, source, unit, &t, &t, value)?;
        }
    }
    for d in 0..days {
        let t = date(d, 0, 7, 10);
        records.set(records.get() + 1);
        writeln!(
            out,
            " <Record type=\"HKQuantityTypeIdentifierHeartRateVariabilitySDNN\" sourceName=\"{WATCH}\" device=\"{WATCH_DEVICE}\" unit=\"ms\" creationDate=\"{t}\" startDate=\"{t}\" endDate=\"{t}\" value=\"48.2\">\n  <HeartRateVariabilityMetadataList>\n   <InstantaneousBeatsPerMinute bpm=\"62\" time=\"7:10:01.53 AM\"/>\n   <InstantaneousBeatsPerMinute bpm=\"64\" time=\"7:10:02.49 AM\"/>\n  </HeartRateVariabilityMetadataList>\n </Record>"
        )?;
    }
    for d in 0..days {
        let t = date(d, 0, 7, 20);
        let (unit, value) =
            if d.is_multiple_of(2) { ("mg/dL", "97") } else { ("mmol&lt;180.15588000005408&gt;/L", "5.4") };
        record(&mut out, "BloodGlucose", IPHONE, unit, &t, &t, value)?;
    }
    for (hk, value) in [("BloodPressureSystolic", "121"), ("BloodPressureDiastolic", "79")] {
        for d in 0..days {
            let t = date(d, 0, 8, 0);
            record(&mut out, hk, CUFF, "mmHg", &t, &t, value)?;
        }
    }
    for d in 0..days {
        let stages = [
            (WATCH, "AsleepCore", (0, 23, 0), (1, 1, 0)),
            (WATCH, "AsleepDeep", (1, 1, 0), (1, 2, 0)),
            (WATCH, "AsleepREM", (1, 2, 0), (1, 3, 0)),
            (WATCH, "Awake", (1, 3, 0), (1, 3, 10)),
            (WATCH, "AsleepCore", (1, 3, 10), (1, 6, 30)),
            (IPHONE, "InBed", (0, 22, 45), (1, 6, 45)),
            (SLEEP_APP, "AsleepUnspecified", (0, 22, 50), (1, 6, 40)),
        ];
        for (source, stage, (sd, sh, sm), (ed, eh, em)) in stages {
            records.set(records.get() + 1);
            let (start, end) = (date(d, sd, sh, sm), date(d, ed, eh, em));
            writeln!(
                out,
                " <Record type=\"HKCategoryTypeIdentifierSleepAnalysis\" sourceName=\"{source}\" sourceVersion=\"10.1\" creationDate=\"{end}\" startDate=\"{start}\" endDate=\"{end}\" value=\"HKCategoryValueSleepAnalysis{stage}\"/>"
            )?;
        }
    }
    for d in 0..days {
        let t = date(d, 0, 8, 0);
        records.set(records.get() + 2);
        writeln!(
            out,
            " <Correlation type=\"HKCorrelationTypeIdentifierBloodPressure\" sourceName=\"{CUFF}\" sourceVersion=\"3.2\" creationDate=\"{t}\" startDate=\"{t}\" endDate=\"{t}\">\n  <MetadataEntry key=\"HKWasUserEntered\" value=\"0\"/>\n  <Record type=\"HKQuantityTypeIdentifierBloodPressureDiastolic\" sourceName=\"{CUFF}\" sourceVersion=\"3.2\" unit=\"mmHg\" creationDate=\"{t}\" startDate=\"{t}\" endDate=\"{t}\" value=\"79\"/>\n  <Record type=\"HKQuantityTypeIdentifierBloodPressureSystolic\" sourceName=\"{CUFF}\" sourceVersion=\"3.2\" unit=\"mmHg\" creationDate=\"{t}\" startDate=\"{t}\" endDate=\"{t}\" value=\"121\"/>\n </Correlation>"
        )?;
    }
    for d in (0..days).step_by(2) {
        generated.workouts += 1;
        let (start, end) = (date(d, 0, 17, 0), date(d, 0, 17, 42));
        writeln!(
            out,
            " <Workout workoutActivityType=\"HKWorkoutActivityTypeRunning\" duration=\"42\" durationUnit=\"min\" sourceName=\"{WATCH}\" sourceVersion=\"10.1\" device=\"{WATCH_DEVICE}\" creationDate=\"{end}\" startDate=\"{start}\" endDate=\"{end}\">\n  <MetadataEntry key=\"HKIndoorWorkout\" value=\"0\"/>\n  <WorkoutEvent type=\"HKWorkoutEventTypeSegment\" date=\"{start}\" duration=\"10\" durationUnit=\"min\"/>\n  <WorkoutStatistics type=\"HKQuantityTypeIdentifierActiveEnergyBurned\" startDate=\"{start}\" endDate=\"{end}\" sum=\"402.5\" unit=\"kcal\"/>\n  <WorkoutStatistics type=\"HKQuantityTypeIdentifierDistanceWalkingRunning\" startDate=\"{start}\" endDate=\"{end}\" sum=\"6.8\" unit=\"km\"/>\n  <WorkoutRoute sourceName=\"{WATCH}\" sourceVersion=\"10.1\" creationDate=\"{end}\" startDate=\"{start}\" endDate=\"{end}\">\n   <FileReference path=\"/workout-routes/route_{d}.gpx\"/>\n  </WorkoutRoute>\n </Workout>"
        )?;
    }
    for d in 0..days {
        writeln!(
            out,
            " <ActivitySummary dateComponents=\"{}\" activeEnergyBurned=\"200\" activeEnergyBurnedGoal=\"500\" activeEnergyBurnedUnit=\"kcal\" appleExerciseTime=\"42\" appleExerciseTimeGoal=\"30\" appleStandHours=\"10\" appleStandHoursGoal=\"12\"/>",
            date_of(d)
        )?;
    }
    out.write_all(b"</HealthData>\n")?;
    out.flush()?;
    generated.records = records.get();
    generated.xml_bytes = out.bytes;
    Ok(generated)
}

/// Writes `export.zip`: `apple_health_export/export.xml` with `days` days, and
/// `export_cda.xml` beside it (a small HL7 CDA document, which is not imported).
pub fn write_zip<W: Write + Seek>(days: u64, out: W) -> io::Result<Generated> {
    let mut zip = zip::ZipWriter::new(out);
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).large_file(true);
    zip.start_file("apple_health_export/export_cda.xml", options).map_err(io::Error::other)?;
    zip.write_all(CDA.as_bytes())?;
    zip.start_file("apple_health_export/export.xml", options).map_err(io::Error::other)?;
    let generated = write_xml(days, &mut zip)?;
    zip.start_file("apple_health_export/electrocardiograms/ecg_2020-01-01.csv", options).map_err(io::Error::other)?;
    zip.write_all(b"Name,Ana\nDate of Birth,1980-04-02\n")?;
    zip.finish().map_err(io::Error::other)?;
    Ok(generated)
}

/// A writer that counts what passes.
struct Counting<W: Write> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The start of `export.xml` as Apple writes it: the declaration, the DTD's internal subset
/// (abridged), the root.
const HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 14 -->
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
<!ATTLIST HealthData
  locale CDATA #REQUIRED
>
<!ELEMENT ExportDate EMPTY>
<!ATTLIST ExportDate
  value CDATA #REQUIRED
>
<!ELEMENT Me EMPTY>
<!ATTLIST Me
  HKCharacteristicTypeIdentifierDateOfBirth                   CDATA #REQUIRED
  HKCharacteristicTypeIdentifierBiologicalSex                 CDATA #REQUIRED
  HKCharacteristicTypeIdentifierBloodType                     CDATA #REQUIRED
>
<!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
<!ATTLIST Record
  type          CDATA #REQUIRED
  unit          CDATA #IMPLIED
  value         CDATA #IMPLIED
  sourceName    CDATA #REQUIRED
  sourceVersion CDATA #IMPLIED
  device        CDATA #IMPLIED
  creationDate  CDATA #IMPLIED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!-- Note: Any Records that appear as children of a correlation also appear as top-level records in this document. -->
<!ELEMENT Correlation ((MetadataEntry|Record)*)>
<!ATTLIST Correlation
  type          CDATA #REQUIRED
  sourceName    CDATA #REQUIRED
  sourceVersion CDATA #IMPLIED
  device        CDATA #IMPLIED
  creationDate  CDATA #IMPLIED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!ELEMENT Workout ((MetadataEntry|WorkoutEvent|WorkoutRoute|WorkoutStatistics)*)>
<!ATTLIST Workout
  workoutActivityType   CDATA #REQUIRED
  duration              CDATA #IMPLIED
  durationUnit          CDATA #IMPLIED
  sourceName            CDATA #REQUIRED
  sourceVersion         CDATA #IMPLIED
  device                CDATA #IMPLIED
  creationDate          CDATA #IMPLIED
  startDate             CDATA #REQUIRED
  endDate               CDATA #REQUIRED
>
<!ELEMENT ActivitySummary EMPTY>
<!ATTLIST ActivitySummary
  dateComponents           CDATA #IMPLIED
  activeEnergyBurned       CDATA #IMPLIED
>
]>
<HealthData locale="de_DE">
"#;

/// The HL7 CDA document Apple puts beside the export, abridged.
const CDA: &str = r#"<?xml version="1.0"?>
<ClinicalDocument xmlns="urn:hl7-org:v3"><realmCode code="US"/><title>Health Data</title></ClinicalDocument>
"#;
