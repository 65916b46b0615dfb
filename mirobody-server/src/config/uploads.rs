//! The `uploads` settings: what `POST /files`, the upload page and `POST /fhir` accept, and
//! how much of the server they may take.

use std::time::Duration;

use serde::Deserialize;

/// The `uploads` settings: what `POST /files`, the upload page and `POST /fhir` accept.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct UploadSettings {
    /// The largest file, in bytes.
    pub max_file_bytes: u64,
    /// The most files one person keeps.
    pub max_files_per_user: u64,
    /// The most bytes one person keeps, all files together.
    pub max_bytes_per_user: u64,
    /// The largest FHIR or CSV import body, in bytes.
    pub max_import_bytes: u64,
    /// Uploads and imports handled at once, server-wide (each from its first byte to its
    /// answer); more wait in line for up to 10 seconds, then get 503.
    pub max_concurrent: usize,
    /// The memory the uploads and imports being handled may take together, in bytes: a file
    /// counts twice (three times in a multipart body), an import its bytes and what it is
    /// parsed into. More wait up to 10 seconds, then get 503; one that needs more than all of
    /// it gets 413.
    pub max_inflight_bytes: u64,
    /// How many of `max_concurrent` one caller (a user; for upload links, the link's owner) may
    /// hold; more get 429 at once (0: no bound).
    pub max_concurrent_per_caller: usize,
    /// The slowest an upload's or import's body may arrive, in bytes a second on average since
    /// a grace of 5 s ended, judged every 5 s; slower ones get 408 (0: no bound).
    pub min_body_bytes_per_sec: u64,
    /// How long an upload link (the `upload_link` tool) works.
    #[serde(deserialize_with = "mirobody_mcp::human_duration::deserialize")]
    pub link_ttl: Duration,
    /// Files one upload link stores before it stops working.
    pub link_uses: u32,
    /// Upload links that still work one person may have at once.
    pub max_links_per_user: u32,
    /// How long importing an uploaded file of health data (FHIR, NDJSON, CSV, an Apple Health
    /// export) may read before it stops and says so.
    #[serde(deserialize_with = "mirobody_mcp::human_duration::deserialize")]
    pub import_time: Duration,
}

impl Default for UploadSettings {
    fn default() -> Self {
        let limits = mirobody_tools::uploads::UploadLimits::default();
        UploadSettings {
            max_file_bytes: limits.max_file_bytes,
            max_files_per_user: limits.max_files_per_user,
            max_bytes_per_user: limits.max_bytes_per_user,
            max_import_bytes: 16 << 20,
            max_concurrent: 8,
            max_inflight_bytes: 256 << 20,
            max_concurrent_per_caller: 2,
            min_body_bytes_per_sec: 16 * 1024,
            link_ttl: Duration::from_secs(15 * 60),
            link_uses: 1,
            max_links_per_user: 20,
            import_time: mirobody_tools::imports::DEFAULT_IMPORT_TIME,
        }
    }
}

impl UploadSettings {
    /// The limits [`mirobody_tools::uploads::store_upload`] applies.
    pub fn limits(&self) -> mirobody_tools::uploads::UploadLimits {
        let mut limits = mirobody_tools::uploads::UploadLimits::default();
        limits.max_file_bytes = self.max_file_bytes;
        limits.max_files_per_user = self.max_files_per_user;
        limits.max_bytes_per_user = self.max_bytes_per_user;
        limits
    }

    /// How [`mirobody_tools::upload_links::UploadLinks`] makes links.
    pub fn link_settings(&self) -> mirobody_tools::upload_links::LinkSettings {
        let mut settings = mirobody_tools::upload_links::LinkSettings::default();
        settings.lifetime = self.link_ttl;
        settings.uses = self.link_uses;
        settings.max_live_per_user = self.max_links_per_user;
        settings
    }
}
