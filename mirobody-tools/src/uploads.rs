//! A person's uploads: storing a file they send (checked by its content, within their quota,
//! encrypted at rest as the store is configured) and the text read from it. The links to the
//! upload page are [`crate::upload_links`].
//!
//! The server's routes (`POST /files`, the upload page) are thin: they authenticate, read a
//! bounded body and call [`store_upload`], which is the same path the demo takes.

use std::sync::Arc;

use serde::Serialize;

use crate::extract::{self, ContentKind};
pub use crate::file_names::{MAX_FILENAME_CHARS, clean_filename};
use crate::reading::TextReader;
use mirobody_health::FileQuota;
use mirobody_health::text::{now_ms, rfc3339};
use mirobody_health::{FileRecord, TextState};
use mirobody_store::OpenedBackends;

/// How much one person may upload, and how large one file may be.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UploadLimits {
    /// The largest file, in bytes (default 25 MiB).
    pub max_file_bytes: u64,
    /// The most files one person keeps (default 1,000).
    pub max_files_per_user: u64,
    /// The most bytes one person keeps, all files together (default 1 GiB).
    pub max_bytes_per_user: u64,
}

impl Default for UploadLimits {
    fn default() -> Self {
        UploadLimits { max_file_bytes: 25 << 20, max_files_per_user: 1_000, max_bytes_per_user: 1 << 30 }
    }
}

/// A stored upload, as the routes answer it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Uploaded {
    /// The key to read it by (`read_file`, `list_files`).
    pub file_key: String,
    /// The name it was uploaded under.
    pub filename: String,
    /// Its type, decided from its content.
    pub mime: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether text was read from it.
    pub has_text: bool,
    /// Whether its text is still to be read (a PDF or Word file: read after this answer).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub text_pending: bool,
    /// Whether the same file was stored before (health data only, which is kept once): this
    /// is that file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already_stored: bool,
    /// For health data (FHIR, NDJSON, a CSV of measurements, an Apple Health export), what
    /// importing it as the person's data did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<crate::imports::ImportReport>,
}

/// Why an upload was refused; nothing of it is stored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    /// The body was empty.
    #[error("The file is empty.")]
    Empty,
    /// The file is larger than [`UploadLimits::max_file_bytes`].
    #[error("The file is larger than the {} MiB allowed.", .max >> 20)]
    TooLarge {
        /// The limit, in bytes.
        max: u64,
    },
    /// Its content is not a type the server takes.
    #[error("{0}")]
    UnsupportedType(String),
    /// The person's quota would be exceeded.
    #[error("{0}")]
    Quota(String),
    /// The file name is not usable.
    #[error("{0}")]
    BadName(String),
    /// The server has no object storage.
    #[error("File storage is not configured on this server.")]
    NoStorage,
    /// A backend failed; the message is safe to show.
    #[error("{0}")]
    Backend(String),
}

impl UploadError {
    /// The HTTP status a route answers with.
    pub fn status(&self) -> u16 {
        match self {
            UploadError::Empty | UploadError::BadName(_) => 400,
            UploadError::TooLarge { .. } | UploadError::Quota(_) => 413,
            UploadError::UnsupportedType(_) => 415,
            UploadError::NoStorage | UploadError::Backend(_) => 503,
        }
    }
}

fn extension(kind: ContentKind, mime: &str) -> &'static str {
    match kind {
        ContentKind::Pdf => ".pdf",
        ContentKind::Docx => ".docx",
        ContentKind::PlainText => ".txt",
        ContentKind::Markdown => ".md",
        ContentKind::Csv => ".csv",
        ContentKind::Json => ".json",
        ContentKind::Archive => ".zip",
        ContentKind::Image => match mime {
            "image/png" => ".png",
            "image/jpeg" => ".jpg",
            "image/gif" => ".gif",
            "image/webp" => ".webp",
            "image/tiff" => ".tiff",
            _ => ".img",
        },
    }
}

/// What the `upload_file` tool stores through (put it in the context's extensions): the
/// server's backends, its upload limits and its text readers, so a file uploaded from a view
/// is checked and kept exactly as one posted to `/files`.
#[derive(Clone)]
pub struct Uploader {
    backends: Arc<OpenedBackends>,
    limits: UploadLimits,
    reader: Option<TextReader>,
    import_time: std::time::Duration,
}

impl Uploader {
    /// An uploader over `backends`, within `limits`, whose documents wait for a reader: give it
    /// one with [`with_reader`](Self::with_reader).
    pub fn new(backends: Arc<OpenedBackends>, limits: UploadLimits) -> Self {
        Uploader { backends, limits, reader: None, import_time: crate::imports::DEFAULT_IMPORT_TIME }
    }

    /// Imports of uploaded health data stop reading after `limit` (default ten minutes), and
    /// say so.
    pub fn with_import_time(mut self, limit: std::time::Duration) -> Self {
        self.import_time = limit;
        self
    }

    pub(crate) fn import_time(&self) -> std::time::Duration {
        self.import_time
    }

    pub(crate) fn backends(&self) -> &OpenedBackends {
        &self.backends
    }

    /// Stores health data of `format` as `owner`'s file under a key made from its content:
    /// the same file stored before is answered as it is ([`Uploaded::already_stored`]).
    pub(crate) async fn store_data(
        &self,
        owner: &str,
        filename: &str,
        declared: Option<&str>,
        bytes: Vec<u8>,
        format: mirobody_health::formats::DataFormat,
    ) -> Result<Uploaded, UploadError> {
        store_file(&self.backends, &self.limits, owner, filename, declared, bytes, Some(format)).await
    }

    /// Documents stored through this uploader are read by `reader`.
    pub fn with_reader(mut self, reader: TextReader) -> Self {
        self.reader = Some(reader);
        self
    }

    /// The limits it stores within.
    pub fn limits(&self) -> &UploadLimits {
        &self.limits
    }

    /// The readers of its documents' text, if it has them.
    pub fn reader(&self) -> Option<&TextReader> {
        self.reader.as_ref()
    }

    /// Stores `bytes` as `owner`'s file `filename` (see [`store_upload`]), and queues a
    /// document's text to be read.
    pub async fn store(
        &self,
        owner: &str,
        filename: &str,
        declared: Option<&str>,
        bytes: Vec<u8>,
    ) -> Result<Uploaded, UploadError> {
        let uploaded = store_upload(&self.backends, &self.limits, owner, filename, declared, bytes).await?;
        if let (true, Some(reader)) = (uploaded.text_pending, &self.reader) {
            reader.wake(owner);
        }
        Ok(uploaded)
    }

    /// Stores the documents of the reports an import stored (`presentedForm` sent inline) as
    /// `owner`'s files, exactly as uploads are (checked by content, within the quota, text
    /// queued): each one's file, or why it was not stored. A form that fails does not undo the
    /// import: its report keeps the document in its resource.
    pub async fn store_report_forms(
        &self,
        owner: &str,
        forms: &[mirobody_health::fhir::ReportForm],
    ) -> Vec<Result<Uploaded, String>> {
        use base64::Engine as _;
        let mut stored = Vec::with_capacity(forms.len());
        for form in forms {
            let result = match base64::engine::general_purpose::STANDARD.decode(form.data_base64.as_bytes()) {
                Ok(bytes) => {
                    let declared = form.content_type.as_deref();
                    self.store(owner, &form.filename, declared, bytes).await.map_err(|e| e.to_string())
                }
                Err(e) => Err(format!("{}: presentedForm.data is not base64: {e}", form.report)),
            };
            if let Err(why) = &result {
                tracing::warn!(owner, report = form.report, why, "a report's document was not stored");
            }
            stored.push(result);
        }
        stored
    }
}

/// Stores `bytes` as `owner`'s file `filename` (the client's `declared` type is only a hint:
/// the type is read from the content) and adds it to their index.
///
/// Refused, with nothing stored, when it is empty, too large, of a type not taken, or over the
/// owner's quota (checked and taken in one step, so uploads made at once cannot together pass
/// it). Text files are indexed with their text. A PDF or Word file is answered as soon as its
/// bytes are stored, its text waiting ([`Uploaded::text_pending`]) for a
/// [`TextReader`] to read it in a sandboxed child process: no document is parsed here. If
/// indexing fails after the bytes were written, they are removed.
pub async fn store_upload(
    backends: &OpenedBackends,
    limits: &UploadLimits,
    owner: &str,
    filename: &str,
    declared: Option<&str>,
    bytes: Vec<u8>,
) -> Result<Uploaded, UploadError> {
    store_file(backends, limits, owner, filename, declared, bytes, None).await
}

/// [`store_upload`]; health data (`data`) under a key made from its owner and content, stored
/// once.
async fn store_file(
    backends: &OpenedBackends,
    limits: &UploadLimits,
    owner: &str,
    filename: &str,
    declared: Option<&str>,
    bytes: Vec<u8>,
    data: Option<mirobody_health::formats::DataFormat>,
) -> Result<Uploaded, UploadError> {
    use sha2::Digest as _;
    let size = bytes.len() as u64;
    if size > limits.max_file_bytes {
        return Err(UploadError::TooLarge { max: limits.max_file_bytes });
    }
    let filename = clean_filename(filename);
    let sniffed = match data {
        // A zip is no document: the Apple export's data is imported, its bytes kept as they are.
        Some(mirobody_health::formats::DataFormat::AppleZip) => {
            extract::Sniffed { kind: ContentKind::Archive, mime: "application/zip" }
        }
        _ => extract::sniff(&bytes, declared, &filename).map_err(|rejected| match rejected {
            extract::Rejected::Empty => UploadError::Empty,
            other => UploadError::UnsupportedType(other.to_string()),
        })?,
    };
    let storage = backends.storage().ok_or(UploadError::NoStorage)?;
    let sql = backends.health();
    let backend = |e: mirobody_core::backend::BackendError| UploadError::Backend(e.to_string());
    // Health data is kept once: its key is its owner's and content's, and one found is it.
    let content_key = data.map(|_| {
        let digest =
            sha2::Sha256::new().chain_update(owner.as_bytes()).chain_update([0]).chain_update(&bytes).finalize();
        format!("up-{}{}", hex::encode(&digest[..16]), extension(sniffed.kind, sniffed.mime))
    });
    if let Some(key) = &content_key
        && let Some(stored) = sql.file(owner, key).await.map_err(backend)?
    {
        return Ok(already_stored(stored));
    }
    // A first look, to refuse before the bytes are written; the insert below holds the line.
    let (files, used) = sql.file_usage(owner).await.map_err(backend)?;
    if files >= limits.max_files_per_user {
        return Err(too_many_files(files));
    }
    if used.saturating_add(size) > limits.max_bytes_per_user {
        return Err(too_many_bytes(limits));
    }

    let file_key = content_key.clone().unwrap_or_else(|| {
        let mut random = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut random);
        format!("up-{}{}", hex::encode(random), extension(sniffed.kind, sniffed.mime))
    });
    let is_document = matches!(sniffed.kind, ContentKind::Pdf | ContentKind::Docx);
    // Text kinds need no parser: their text is the bytes, read here.
    let text = if is_document { None } else { extract::extract_text(sniffed.kind, &bytes).ok().flatten() };
    storage.put(&file_key, bytes, sniffed.mime).await.map_err(backend)?;
    let text_key = match &text {
        Some(text) => {
            let text_key = format!("{file_key}.trans");
            if let Err(e) = storage.put(&text_key, text.as_bytes().to_vec(), "text/plain").await {
                let _ = storage.delete(&file_key).await;
                return Err(backend(e));
            }
            Some(text_key)
        }
        None => None,
    };
    let record = FileRecord {
        file_key: file_key.clone(),
        filename: filename.clone(),
        mime_type: sniffed.mime.to_owned(),
        size,
        uploaded_at: rfc3339(now_ms()),
        text_key: text_key.clone(),
        text_state: if is_document { TextState::Waiting } else { TextState::Settled },
    };
    let quota = FileQuota { max_files: limits.max_files_per_user, max_bytes: limits.max_bytes_per_user };
    let indexed = sql.add_file_within(owner, &record, quota).await;
    if !matches!(indexed, Ok(true)) {
        // The same file stored by an upload made at once: its bytes are these, and stay.
        if content_key.is_some()
            && let Ok(Some(stored)) = sql.file(owner, &file_key).await
        {
            return Ok(already_stored(stored));
        }
        // Nothing half-stored: the bytes go when their index entry could not be written.
        let _ = storage.delete(&file_key).await;
        if let Some(text_key) = &text_key {
            let _ = storage.delete(text_key).await;
        }
        return Err(match indexed {
            Err(e) => backend(e),
            // Other uploads took the quota since the first look.
            _ => UploadError::Quota(
                "This file would take your uploads over what this server keeps per person.".to_owned(),
            ),
        });
    }
    tracing::info!(owner, file_key, size, mime = sniffed.mime, text_pending = is_document, "file uploaded");
    Ok(Uploaded {
        file_key,
        filename,
        mime: sniffed.mime.to_owned(),
        size,
        has_text: text.is_some(),
        text_pending: is_document,
        already_stored: false,
        import: None,
    })
}

/// The answer for a file found stored.
fn already_stored(file: FileRecord) -> Uploaded {
    Uploaded {
        file_key: file.file_key,
        filename: file.filename,
        mime: file.mime_type,
        size: file.size,
        has_text: file.text_key.is_some(),
        text_pending: file.text_state == TextState::Waiting,
        already_stored: true,
        import: None,
    }
}

fn too_many_files(files: u64) -> UploadError {
    UploadError::Quota(format!(
        "You have {files} files, the most this server keeps per person; delete some to upload more."
    ))
}

fn too_many_bytes(limits: &UploadLimits) -> UploadError {
    UploadError::Quota(format!(
        "This file would take your uploads over the {} MiB this server keeps per person.",
        limits.max_bytes_per_user >> 20
    ))
}
