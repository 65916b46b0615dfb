//! Imports as things: each import a store records (what kind, from which file, when, what it
//! did), the import every stored value names, and what one item of an import did.

use serde::Serialize;

/// How the values of an import arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ImportKind {
    /// A FHIR Bundle or resource (`POST /fhir`, `POST /fhir/Observation`, a FHIR file).
    Fhir,
    /// FHIR resources one per line (NDJSON, a bulk export).
    Ndjson,
    /// A wearable's CSV export.
    Csv,
    /// The iPhone Health app's export.
    AppleHealth,
    /// An uploaded file, read by [`RecordStore::import_items`](crate::RecordStore::import_items)
    /// whose caller did not say more.
    Upload,
    /// A tool's call (`add_observations`).
    Tool,
    /// Anything else.
    Other,
}

impl ImportKind {
    /// The name the store keeps: `fhir`, `ndjson`, `csv`, `apple-health`, `upload`, `tool`
    /// or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fhir => "fhir",
            Self::Ndjson => "ndjson",
            Self::Csv => "csv",
            Self::AppleHealth => "apple-health",
            Self::Upload => "upload",
            Self::Tool => "tool",
            Self::Other => "other",
        }
    }

    /// The kind named `name` ([`as_str`](Self::as_str)); an unknown name is [`Other`](Self::Other).
    pub fn from_name(name: &str) -> Self {
        [Self::Fhir, Self::Ndjson, Self::Csv, Self::AppleHealth, Self::Upload, Self::Tool]
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .unwrap_or(Self::Other)
    }
}

/// Where an import's values come from, as [`RecordStore::begin_import`](crate::RecordStore::begin_import)
/// records it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportSource {
    /// How they arrived.
    pub kind: ImportKind,
    /// The uploaded file they were read from, if any: every value names it too.
    pub file_key: Option<String>,
    /// The tool or route that imported them (`POST /fhir`, `add_observations`), if known.
    pub via: Option<String>,
}

impl ImportSource {
    /// An import of `kind`, from no file.
    pub fn new(kind: ImportKind) -> Self {
        ImportSource { kind, file_key: None, via: None }
    }

    /// The same, read from the uploaded file `file_key`.
    pub fn with_file(mut self, file_key: Option<&str>) -> Self {
        self.file_key = file_key.map(str::to_owned);
        self
    }

    /// The same, made by the tool or route `via`.
    pub fn via(mut self, via: &str) -> Self {
        self.via = Some(via.to_owned());
        self
    }
}

/// What the store did with one item of an import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemOutcome {
    /// A new value, stored.
    Created,
    /// A newer version of a stored value (a later `meta.versionId` or `meta.lastUpdated`, or
    /// status `amended`/`corrected`): it is served now, the earlier one kept as history.
    Updated,
    /// A removal ([`ImportItem::Remove`](crate::fhir::ImportItem::Remove)) took a stored value
    /// out of every read (kept as history).
    Removed,
    /// Nothing changed: the same or an older version was stored already, or a removal found
    /// nothing stored.
    Unchanged,
}

/// What an import did, counted, as its record keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImportCounts {
    /// New values stored.
    pub stored: u64,
    /// Stored values replaced by a newer version.
    pub updated: u64,
    /// Stored values removed.
    pub removed: u64,
    /// Items that changed nothing.
    pub unchanged: u64,
    /// Entries of a type that is not imported, and samples folded or left out.
    pub skipped: u64,
    /// Entries refused.
    pub invalid: u64,
}

impl ImportCounts {
    /// Counts as a store reads them back.
    pub fn new(stored: u64, updated: u64, removed: u64, unchanged: u64, skipped: u64, invalid: u64) -> Self {
        ImportCounts { stored, updated, removed, unchanged, skipped, invalid }
    }

    /// Counts `outcome` once.
    pub fn add(&mut self, outcome: ItemOutcome) {
        match outcome {
            ItemOutcome::Created => self.stored += 1,
            ItemOutcome::Updated => self.updated += 1,
            ItemOutcome::Removed => self.removed += 1,
            ItemOutcome::Unchanged => self.unchanged += 1,
        }
    }
}

/// One import of a person's, as [`RecordStore::imports`](crate::RecordStore::imports) lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImportRecord {
    /// Its id, which every value it stored names.
    pub id: i64,
    /// How its values arrived.
    pub kind: ImportKind,
    /// The uploaded file they were read from, if any.
    pub file_key: Option<String>,
    /// The tool or route that made it, if known.
    pub via: Option<String>,
    /// When it began, RFC 3339.
    pub at: String,
    /// What it did (zero until it finished).
    pub counts: ImportCounts,
}

impl ImportRecord {
    /// An import as a store reads it back.
    pub fn new(
        id: i64,
        kind: ImportKind,
        file_key: Option<String>,
        via: Option<String>,
        at: String,
        counts: ImportCounts,
    ) -> Self {
        ImportRecord { id, kind, file_key, via, at, counts }
    }
}

/// What [`RecordStore::delete_import`](crate::RecordStore::delete_import) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DeletedImport {
    /// Values the import had stored that left every read.
    pub removed: u64,
    /// Values it had replaced or removed whose earlier version is served again.
    pub restored: u64,
}

impl DeletedImport {
    /// What a store did.
    pub fn new(removed: u64, restored: u64) -> Self {
        DeletedImport { removed, restored }
    }
}
