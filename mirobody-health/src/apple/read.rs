//! The export read as a stream of the elements imported: one event at a time through
//! `quick-xml`, so memory holds one element, never the file.

use std::io::{self, BufRead, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// The longest run of bytes without a `>` read (one tag): Apple's longest are a few KiB.
const MAX_TAG_BYTES: usize = 1 << 20;
/// The deepest nesting read (Apple's is four).
const MAX_DEPTH: usize = 32;

/// A `Record`, its attributes as written (unescaped).
#[derive(Debug, Default)]
pub(super) struct Record {
    /// `type`.
    pub(super) hk: String,
    /// `sourceName`.
    pub(super) source: String,
    /// `unit`.
    pub(super) unit: String,
    /// `value`.
    pub(super) value: String,
    /// `startDate`.
    pub(super) start: String,
    /// `endDate`.
    pub(super) end: String,
    /// Whether it is a member of a `Correlation`.
    pub(super) in_correlation: bool,
}

/// A `Workout` with the totals of its `WorkoutStatistics` (or its own older attributes).
#[derive(Debug, Default)]
pub(super) struct Workout {
    /// `workoutActivityType`.
    pub(super) activity: String,
    /// `sourceName`.
    pub(super) source: String,
    /// `startDate`.
    pub(super) start: String,
    /// `endDate`.
    pub(super) end: String,
    /// `duration` and `durationUnit`.
    pub(super) duration: Option<(String, String)>,
    /// The distance's sum and unit.
    pub(super) distance: Option<(String, String)>,
    /// The active energy's sum and unit.
    pub(super) energy: Option<(String, String)>,
}

/// One element of the export that the import looks at.
#[derive(Debug)]
pub(super) enum Element {
    /// A `Record`, at the top level or in a `Correlation`.
    Record(Record),
    /// A `Workout`.
    Workout(Workout),
    /// Another top-level element not imported (`ActivitySummary`, `ClinicalRecord`...), by name.
    Other(String),
}

/// Why the export could not be read to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ReadError {
    /// What was wrong, a sentence.
    pub(super) message: String,
    /// The byte of the XML it was found at.
    pub(super) offset: u64,
}

/// A streaming reader of `export.xml`.
pub(super) struct ExportReader<R: BufRead> {
    reader: Reader<TagGuard<R>>,
    buf: Vec<u8>,
    /// The names of the open elements.
    open: Vec<Vec<u8>>,
    /// How many `Correlation`s are open.
    correlations: usize,
    /// The workout being read.
    workout: Option<Workout>,
    /// Whether `</HealthData>` was read.
    done: bool,
    /// `ExportDate`, in milliseconds, once read.
    pub(super) export_ms: Option<i64>,
}

impl<R: BufRead> ExportReader<R> {
    /// A reader of the XML in `inner`.
    pub(super) fn new(inner: R) -> Self {
        let mut reader = Reader::from_reader(TagGuard { inner, since_gt: 0, over: false });
        reader.config_mut().trim_text(true);
        ExportReader {
            reader,
            buf: Vec::with_capacity(4096),
            open: Vec::new(),
            correlations: 0,
            workout: None,
            done: false,
            export_ms: None,
        }
    }

    /// The bytes read so far.
    pub(super) fn offset(&self) -> u64 {
        self.reader.buffer_position()
    }

    fn fail(&self, message: impl Into<String>) -> ReadError {
        ReadError { message: message.into(), offset: self.offset() }
    }

    /// The next element imported, `None` after `</HealthData>`; an error for anything not a
    /// whole, well-formed export (its root not `HealthData`, cut short, malformed).
    pub(super) fn next_element(&mut self) -> Result<Option<Element>, ReadError> {
        if self.done {
            return Ok(None);
        }
        loop {
            // The buffer is taken out while an event borrows it, so `self` stays free.
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            let step = self.step(&mut buf);
            self.buf = buf;
            if let Some(done) = step? {
                return Ok(done);
            }
            if self.done {
                return Ok(None);
            }
        }
    }

    /// Reads one event: `Some` when it decides what [`next_element`](Self::next_element)
    /// answers, `None` to read on.
    fn step(&mut self, buf: &mut Vec<u8>) -> Result<Option<Option<Element>>, ReadError> {
        let event = match self.reader.read_event_into(buf) {
            Ok(event) => event,
            Err(quick_xml::Error::Io(e)) => {
                return Err(self.fail(format!("the export cannot be read (a damaged zip, or a bound): {e}")));
            }
            Err(e) => {
                let offset = self.reader.error_position();
                return Err(ReadError { message: format!("the export is not well-formed XML: {e}"), offset });
            }
        };
        match event {
            Event::Start(e) => {
                if self.open.len() >= MAX_DEPTH {
                    return Err(self.fail(format!("elements are nested more than {MAX_DEPTH} deep")));
                }
                let found = self.opened(&e, false)?;
                self.open.push(e.name().as_ref().to_vec());
                Ok(found.map(Some))
            }
            Event::Empty(e) => Ok(self.opened(&e, true)?.map(Some)),
            Event::End(e) => {
                self.open.pop();
                match e.name().as_ref() {
                    b"Correlation" => self.correlations = self.correlations.saturating_sub(1),
                    b"Workout" if self.open.len() == 1 => {
                        if let Some(workout) = self.workout.take() {
                            return Ok(Some(Some(Element::Workout(workout))));
                        }
                    }
                    _ => {}
                }
                if self.open.is_empty() {
                    self.done = true;
                    return Ok(Some(None));
                }
                Ok(None)
            }
            Event::Eof => {
                let what = if self.open.is_empty() { "has no HealthData element" } else { "is cut short" };
                Err(self.fail(format!("the export {what}: it ends at byte {} before </HealthData>", self.offset())))
            }
            // The declaration, the DTD's internal subset, comments and text are not data.
            _ => Ok(None),
        }
    }

    /// An element opened (`empty`: it has no children): what it is, if imported.
    fn opened(&mut self, e: &BytesStart<'_>, empty: bool) -> Result<Option<Element>, ReadError> {
        let depth = self.open.len();
        let name = e.name();
        let name = name.as_ref();
        if depth == 0 {
            if name != b"HealthData" {
                let shown = String::from_utf8_lossy(&name[..name.len().min(40)]).into_owned();
                return Err(
                    self.fail(format!("the root element is <{shown}>, not <HealthData>: not an Apple Health export"))
                );
            }
            if empty {
                self.done = true;
            }
            return Ok(None);
        }
        match name {
            b"Record"
                if depth == 1 || (self.correlations > 0 && self.open.last().is_some_and(|p| p == b"Correlation")) =>
            {
                let mut record = Record { in_correlation: depth > 1, ..Record::default() };
                self.attributes(e, |key, value| {
                    let field = match key {
                        b"type" => &mut record.hk,
                        b"sourceName" => &mut record.source,
                        b"unit" => &mut record.unit,
                        b"value" => &mut record.value,
                        b"startDate" => &mut record.start,
                        b"endDate" => &mut record.end,
                        _ => return false,
                    };
                    *field = value.to_owned();
                    true
                })?;
                Ok(Some(Element::Record(record)))
            }
            b"Correlation" if depth == 1 => {
                if !empty {
                    self.correlations += 1;
                }
                Ok(None)
            }
            b"Workout" if depth == 1 => {
                let mut workout = Workout::default();
                let (mut duration, mut duration_unit) = (None, String::new());
                let (mut distance, mut distance_unit, mut energy, mut energy_unit) =
                    (None, String::new(), None, String::new());
                self.attributes(e, |key, value| {
                    match key {
                        b"workoutActivityType" => workout.activity = value.to_owned(),
                        b"sourceName" => workout.source = value.to_owned(),
                        b"startDate" => workout.start = value.to_owned(),
                        b"endDate" => workout.end = value.to_owned(),
                        b"duration" => duration = Some(value.to_owned()),
                        b"durationUnit" => duration_unit = value.to_owned(),
                        b"totalDistance" => distance = Some(value.to_owned()),
                        b"totalDistanceUnit" => distance_unit = value.to_owned(),
                        b"totalEnergyBurned" => energy = Some(value.to_owned()),
                        b"totalEnergyBurnedUnit" => energy_unit = value.to_owned(),
                        _ => return false,
                    }
                    true
                })?;
                workout.duration = duration.map(|d| (d, duration_unit));
                workout.distance = distance.map(|d| (d, distance_unit));
                workout.energy = energy.map(|d| (d, energy_unit));
                if empty {
                    return Ok(Some(Element::Workout(workout)));
                }
                self.workout = Some(workout);
                Ok(None)
            }
            b"WorkoutStatistics" if depth == 2 && self.workout.is_some() => {
                let (mut kind, mut sum, mut unit) = (String::new(), None, String::new());
                self.attributes(e, |key, value| {
                    match key {
                        b"type" => kind = value.to_owned(),
                        b"sum" => sum = Some(value.to_owned()),
                        b"unit" => unit = value.to_owned(),
                        _ => return false,
                    }
                    true
                })?;
                if let (Some(workout), Some(sum)) = (self.workout.as_mut(), sum) {
                    if kind.starts_with("HKQuantityTypeIdentifierDistance") {
                        workout.distance = Some((sum, unit));
                    } else if kind == "HKQuantityTypeIdentifierActiveEnergyBurned" {
                        workout.energy = Some((sum, unit));
                    }
                }
                Ok(None)
            }
            b"ExportDate" if depth == 1 => {
                let mut value = String::new();
                self.attributes(e, |key, v| {
                    if key == b"value" {
                        value = v.to_owned();
                    }
                    key == b"value"
                })?;
                self.export_ms = super::kinds::parse_date(&value).map(|(ms, _)| ms);
                Ok(None)
            }
            b"Me" if depth == 1 => Ok(None),
            _ if depth == 1 => {
                Ok(Some(Element::Other(String::from_utf8_lossy(&name[..name.len().min(60)]).into_owned())))
            }
            _ => Ok(None),
        }
    }

    /// Calls `take(key, value)` with each attribute's name and unescaped value; `take` says
    /// whether it wanted it (the others are not unescaped).
    fn attributes(&self, e: &BytesStart<'_>, mut take: impl FnMut(&[u8], &str) -> bool) -> Result<(), ReadError> {
        for attribute in e.attributes() {
            let attribute = attribute.map_err(|err| self.fail(format!("an attribute cannot be read: {err}")))?;
            let key = attribute.key.as_ref();
            if !matches!(
                key,
                b"type"
                    | b"sourceName"
                    | b"unit"
                    | b"value"
                    | b"startDate"
                    | b"endDate"
                    | b"workoutActivityType"
                    | b"duration"
                    | b"durationUnit"
                    | b"totalDistance"
                    | b"totalDistanceUnit"
                    | b"totalEnergyBurned"
                    | b"totalEnergyBurnedUnit"
                    | b"sum"
            ) {
                continue;
            }
            let value =
                attribute.unescape_value().map_err(|err| self.fail(format!("an attribute cannot be read: {err}")))?;
            take(key, &value);
        }
        Ok(())
    }
}

/// A `BufRead` that refuses a tag longer than [`MAX_TAG_BYTES`] (bytes without a `>`), so one
/// hostile element cannot grow the reader's buffer without bound.
struct TagGuard<R> {
    inner: R,
    since_gt: usize,
    /// A tag went past the bound: every later read fails.
    over: bool,
}

impl<R: BufRead> Read for TagGuard<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for TagGuard<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.over {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a tag is longer than {MAX_TAG_BYTES} bytes"),
            ));
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        // The bytes consumed are still the front of the inner buffer: no read happens here.
        if let Ok(buf) = self.inner.fill_buf() {
            let seen = &buf[..amt.min(buf.len())];
            let before_first = memchr::memchr(b'>', seen).unwrap_or(seen.len());
            self.over |= self.since_gt.saturating_add(before_first) > MAX_TAG_BYTES;
            self.since_gt = match memchr::memrchr(b'>', seen) {
                Some(at) => seen.len() - at - 1,
                None => self.since_gt.saturating_add(seen.len()),
            };
        }
        self.inner.consume(amt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements(xml: &str) -> Result<Vec<Element>, ReadError> {
        let mut reader = ExportReader::new(xml.as_bytes());
        let mut out = Vec::new();
        while let Some(element) = reader.next_element()? {
            out.push(element);
        }
        Ok(out)
    }

    #[test]
    fn records_correlations_and_workouts_are_read() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE HealthData [
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary)*)>
<!ATTLIST HealthData locale CDATA #REQUIRED>
]>
<HealthData locale="de_DE">
 <ExportDate value="2026-01-03 10:00:00 +0100"/>
 <Me HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale"/>
 <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Apple Watch von J&#246;rg" device="&lt;&lt;HKDevice&gt;&gt;" unit="count/min" startDate="2026-01-02 08:00:00 +0100" endDate="2026-01-02 08:00:00 +0100" value="61">
  <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="0"/>
 </Record>
 <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Omron" startDate="2026-01-02 08:00:00 +0100" endDate="2026-01-02 08:00:00 +0100">
  <Record type="HKQuantityTypeIdentifierBloodPressureSystolic" sourceName="Omron" unit="mmHg" startDate="2026-01-02 08:00:00 +0100" endDate="2026-01-02 08:00:00 +0100" value="120"/>
 </Correlation>
 <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="30" durationUnit="min" sourceName="Watch" startDate="2026-01-02 09:00:00 +0100" endDate="2026-01-02 09:30:00 +0100">
  <WorkoutStatistics type="HKQuantityTypeIdentifierDistanceWalkingRunning" startDate="x" endDate="x" sum="5.1" unit="km"/>
  <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" startDate="x" endDate="x" sum="310" unit="kcal"/>
 </Workout>
 <ActivitySummary dateComponents="2026-01-02" activeEnergyBurned="400"/>
</HealthData>
"#;
        let found = elements(xml).unwrap();
        assert_eq!(found.len(), 4, "{found:?}");
        let Element::Record(hr) = &found[0] else { panic!("{found:?}") };
        assert_eq!((hr.source.as_str(), hr.value.as_str(), hr.in_correlation), ("Apple Watch von Jörg", "61", false));
        let Element::Record(bp) = &found[1] else { panic!("{found:?}") };
        assert!(bp.in_correlation);
        let Element::Workout(run) = &found[2] else { panic!("{found:?}") };
        assert_eq!(run.distance, Some(("5.1".into(), "km".into())));
        assert_eq!(run.energy, Some(("310".into(), "kcal".into())));
        assert!(matches!(&found[3], Element::Other(name) if name == "ActivitySummary"));
        let mut reader = ExportReader::new(xml.as_bytes());
        while reader.next_element().unwrap().is_some() {}
        assert_eq!(reader.export_ms, crate::text::parse_time_ms("2026-01-03T09:00:00Z"));
    }

    #[test]
    fn broken_exports_are_errors_with_where() {
        let cut = "<HealthData><Record type=\"a\" value=\"1\"/><Record type=\"b\"";
        let err = elements(cut).unwrap_err();
        assert!(err.message.contains("not well-formed") || err.message.contains("cut short"), "{err:?}");
        let err = elements("<HealthData><Record type=\"a\" value=\"1\"/>").unwrap_err();
        assert!(err.message.contains("cut short"), "{err:?}");
        assert_eq!(err.offset, 40);
        let err = elements("<HealthData><Record></Workout></HealthData>").unwrap_err();
        assert!(err.message.contains("not well-formed"), "{err:?}");
        let err = elements("<ClinicalDocument/>").unwrap_err();
        assert!(err.message.contains("not <HealthData>"), "{err:?}");
        assert!(elements("").unwrap_err().message.contains("no HealthData"));
        // Read as a file is, a buffer at a time.
        let long = format!("<HealthData><Record value=\"{}\"/></HealthData>", "x".repeat(MAX_TAG_BYTES + 10));
        let mut reader = ExportReader::new(std::io::BufReader::with_capacity(8192, long.as_bytes()));
        let err = loop {
            match reader.next_element() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("a tag past the bound was read to the end"),
                Err(e) => break e,
            }
        };
        assert!(err.message.contains("longer than"), "{}", &err.message[..err.message.len().min(200)]);
        let deep = format!("<HealthData>{}", "<a>".repeat(MAX_DEPTH + 1));
        assert!(elements(&deep).unwrap_err().message.contains("nested"));
    }
}
