//! The iPhone Health app's export (`export.zip`, or the `export.xml` in it), imported as a
//! stream: the XML is read one element at a time and stored in batches, so memory holds a
//! batch and the day and night buckets, never the file.
//!
//! - Quantity samples of the common types (heart rate, resting heart rate, HRV, body mass,
//!   BMI, height, body fat, blood pressure, blood glucose, oxygen saturation, respiratory rate,
//!   body temperature, VO2 max) are stored one value each, under the catalog's LOINC code
//!   where one fits, in Apple's unit (`%` values, which HealthKit keeps as fractions, as the
//!   percentage; glucose's `mmol<180.15...>/L` as `mmol/L`), at their `startDate` with its own
//!   offset.
//! - Cumulative types (steps, distances, active and resting energy, flights, exercise minutes)
//!   are stored as one total per type and local day (each sample's day from its own `+HHMM`),
//!   of one source: the one with the largest total that day. The iPhone and the Watch both
//!   count the same minutes and the export does not carry the Health app's source priority, so
//!   adding the sources counts most steps twice; the largest single source is what the device
//!   that was with the person counted, and never more than the truth. A day one device covers
//!   in the morning and the other in the afternoon is undercounted by the part the chosen one
//!   missed.
//! - Sleep analysis is stored per night (noon to noon, named by the day it ends on): the time
//!   asleep (every asleep stage merged) and the time in bed, each the union of every source's
//!   intervals, so overlaps count once.
//! - Blood pressure: a `Correlation`'s members are stored as systolic and diastolic values;
//!   their copies at the top level have the same source id and are stored once.
//! - A workout is one value: its duration, under its activity type, with its distance and
//!   energy as components.
//! - A day or night that had not ended when the export was made (the export's own day) is not
//!   stored: its total would be short, and a later export could not correct it.
//!
//! Every value's source id is a hash of what Apple wrote (type, source, dates, value, unit),
//! or the type and day of a total, so importing the same export, or a later one, stores
//! nothing twice. An export cut short or not well-formed is an error saying where: the samples
//! stored before that point are kept (each is whole, and importing the full export later adds
//! the rest and nothing twice), the daily totals and nights are not (they would be short).

mod fold;
pub mod generate;
mod kinds;
mod read;
mod run;

use std::io::{BufRead, BufReader, Read, Seek};

use crate::import::ImportResponse;
use crate::store::RecordStore;

pub use run::import_apple_health;

/// The XML entry every export.zip has, in English.
const EXPORT_XML: &str = "apple_health_export/export.xml";
/// The folder of an export in its zip.
const EXPORT_DIR: &str = "apple_health_export/";

/// What a file is, to the importer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportKind {
    /// An `export.zip`.
    Zip,
    /// An `export.xml`.
    Xml,
}

/// Whether the first bytes of a file (a few hundred KiB: the DTD comes before the root) are
/// an Apple Health export: a zip (whose entries [`import_apple_health_zip`] then checks), or
/// XML whose root element is `HealthData`.
pub fn sniff(head: &[u8]) -> Option<ExportKind> {
    if head.starts_with(b"PK\x03\x04") {
        return Some(ExportKind::Zip);
    }
    let mut rest = head;
    while let Some(at) = memchr::memchr(b'<', rest) {
        rest = &rest[at + 1..];
        match rest.first() {
            Some(b'?' | b'!') => continue,
            Some(_) => return rest.starts_with(b"HealthData").then_some(ExportKind::Xml),
            None => return None,
        }
    }
    None
}

/// Whether the zip holds an Apple Health export (an entry under `apple_health_export/`).
pub fn zip_is_export<R: Read + Seek>(zip: R) -> bool {
    zip::ZipArchive::new(zip)
        .is_ok_and(|archive| archive.file_names().any(|name| name.is_ok_and(|name| name.starts_with(EXPORT_DIR))))
}

/// Imports an `export.zip` as `subject`'s: its `apple_health_export/export.xml` (or, in a
/// language that names it otherwise, the one XML in that folder that is not `export_cda.xml`),
/// read as a stream out of the archive; see [`import_apple_health`].
pub async fn import_apple_health_zip<R: Read + Seek>(store: &dyn RecordStore, subject: &str, zip: R) -> ImportResponse {
    let mut archive = match zip::ZipArchive::new(zip) {
        Ok(archive) => archive,
        Err(e) => return run::refused(400, format!("The file is not a zip that can be read: {e}.")),
    };
    let Some(index) = export_entry(&archive) else {
        return run::refused(
            400,
            "The zip has no apple_health_export/export.xml: send the export.zip the Health app makes, \
             or the export.xml in it."
                .to_owned(),
        );
    };
    let entry = match archive.by_index(index) {
        Ok(entry) => entry,
        Err(e) => return run::refused(400, format!("The export.xml in the zip cannot be read: {e}.")),
    };
    import_apple_health(store, subject, BufReader::with_capacity(1 << 16, entry)).await
}

/// The index of the export's XML in the archive.
fn export_entry<R: Read + Seek>(archive: &zip::ZipArchive<R>) -> Option<usize> {
    let names: Vec<String> = archive.file_names().filter_map(|name| name.ok().map(|n| n.into_owned())).collect();
    let index_of = |wanted: &str| archive.index_for_name(wanted);
    index_of(EXPORT_XML).or_else(|| {
        let localised: Vec<&String> = names
            .iter()
            .filter(|name| {
                name.strip_prefix(EXPORT_DIR).is_some_and(|file| {
                    !file.contains('/') && file.ends_with(".xml") && !file.ends_with("export_cda.xml")
                })
            })
            .collect();
        match localised[..] {
            [one] => index_of(one),
            _ => None,
        }
    })
}

/// Imports an export from `reader`, a zip or the XML, telling which by its first bytes;
/// `None` when it is neither (the caller tries other formats).
pub async fn import_apple_health_auto<R: BufRead + Seek>(
    store: &dyn RecordStore,
    subject: &str,
    mut reader: R,
) -> Option<ImportResponse> {
    // The DTD comes before the root element: 256 KiB covers Apple's many times over.
    const HEAD: u64 = 256 * 1024;
    let mut head = Vec::with_capacity(HEAD as usize);
    reader.by_ref().take(HEAD).read_to_end(&mut head).ok()?;
    reader.rewind().ok()?;
    let kind = sniff(&head)?;
    match kind {
        ExportKind::Xml => Some(import_apple_health(store, subject, reader).await),
        ExportKind::Zip => Some(import_apple_health_zip(store, subject, reader).await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_are_told_by_their_content() {
        let dtd = "<?xml version=\"1.0\"?>\n<!DOCTYPE HealthData [\n<!ELEMENT HealthData (Record*)>\n]>\n";
        assert_eq!(sniff(format!("{dtd}<HealthData locale=\"en\">").as_bytes()), Some(ExportKind::Xml));
        assert_eq!(sniff(b"<?xml version=\"1.0\"?><ClinicalDocument>"), None);
        assert_eq!(sniff(b"PK\x03\x04rest"), Some(ExportKind::Zip));
        assert_eq!(sniff(b"{\"resourceType\": \"Bundle\"}"), None);
        assert_eq!(sniff(b"time,indicator,value"), None);
    }
}
