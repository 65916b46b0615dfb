//! A person's uploads: storing a file they send (checked by its content, within their quota,
//! encrypted at rest as the store is configured) and the text read from it. The links to the
//! upload page are [`crate::upload_links`].
//!
//! The server's routes (`POST /files`, the upload page) are thin: they authenticate, read a
//! bounded body and call [`store_upload`], which is the same path the demo takes.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::Semaphore;

use crate::backends::OpenedBackends;
use crate::extract::{self, ContentKind};
pub use crate::file_names::{MAX_FILENAME_CHARS, clean_filename};
use crate::health::FileRecord;
use crate::text::{hex, now_ms, rfc3339};

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
    /// Why no text could be read from a document that should have some (the file is stored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_error: Option<String>,
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

/// How long reading the text of one file may take before it is stored without text.
pub const EXTRACT_TIMEOUT: Duration = Duration::from_secs(30);

// Text extraction runs on blocking threads; a parser that never ends keeps its permit, so at
// most this many run at once whatever clients send.
static EXTRACTIONS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(2)));

fn extension(kind: ContentKind, mime: &str) -> &'static str {
    match kind {
        ContentKind::Pdf => ".pdf",
        ContentKind::Docx => ".docx",
        ContentKind::PlainText => ".txt",
        ContentKind::Markdown => ".md",
        ContentKind::Csv => ".csv",
        ContentKind::Json => ".json",
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
/// server's backends and its upload limits, so a file uploaded from a view is checked and kept
/// exactly as one posted to `/files`.
#[derive(Clone)]
pub struct Uploader {
    backends: std::sync::Arc<OpenedBackends>,
    limits: UploadLimits,
}

impl Uploader {
    /// An uploader over `backends`, within `limits`.
    pub fn new(backends: std::sync::Arc<OpenedBackends>, limits: UploadLimits) -> Self {
        Uploader { backends, limits }
    }

    /// Stores `bytes` as `owner`'s file `filename` (see [`store_upload`]).
    pub async fn store(&self, owner: &str, filename: &str, bytes: Vec<u8>) -> Result<Uploaded, UploadError> {
        store_upload(&self.backends, &self.limits, owner, filename, None, bytes).await
    }
}

/// Stores `bytes` as `owner`'s file `filename` (the client's `declared` type is only a hint:
/// the type is read from the content), reads its text, and adds it to their index.
///
/// Refused, with nothing stored, when it is empty, too large, of a type not taken, or over the
/// owner's quota. A document whose text cannot be read is still stored, with the reason in
/// [`Uploaded::text_error`]. If indexing fails after the bytes were written, they are removed.
pub async fn store_upload(
    backends: &OpenedBackends,
    limits: &UploadLimits,
    owner: &str,
    filename: &str,
    declared: Option<&str>,
    bytes: Vec<u8>,
) -> Result<Uploaded, UploadError> {
    let size = bytes.len() as u64;
    if size > limits.max_file_bytes {
        return Err(UploadError::TooLarge { max: limits.max_file_bytes });
    }
    let filename = clean_filename(filename);
    let sniffed = extract::sniff(&bytes, declared, &filename).map_err(|rejected| match rejected {
        extract::Rejected::Empty => UploadError::Empty,
        other => UploadError::UnsupportedType(other.to_string()),
    })?;
    let storage = backends.storage().ok_or(UploadError::NoStorage)?;
    let sql = backends.sql();
    let backend = |e: mirobody_core::backend::BackendError| UploadError::Backend(e.to_string());
    let (files, used) = sql.file_usage(owner).await.map_err(backend)?;
    if files >= limits.max_files_per_user {
        return Err(UploadError::Quota(format!(
            "You have {files} files, the most this server keeps per person; delete some to upload more."
        )));
    }
    if used.saturating_add(size) > limits.max_bytes_per_user {
        return Err(UploadError::Quota(format!(
            "This file would take your uploads over the {} MiB this server keeps per person.",
            limits.max_bytes_per_user >> 20
        )));
    }

    let mut random = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut random);
    let file_key = format!("up-{}{}", hex(&random), extension(sniffed.kind, sniffed.mime));
    let (text, text_error) = read_text(sniffed.kind, &bytes).await;
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
    };
    if let Err(e) = sql.add_file(owner, &record).await {
        // Nothing half-stored: the bytes go when their index entry could not be written.
        let _ = storage.delete(&file_key).await;
        if let Some(text_key) = &text_key {
            let _ = storage.delete(text_key).await;
        }
        return Err(backend(e));
    }
    tracing::info!(owner, file_key, size, mime = sniffed.mime, has_text = text.is_some(), "file uploaded");
    Ok(Uploaded { file_key, filename, mime: sniffed.mime.to_owned(), size, has_text: text.is_some(), text_error })
}

// The text of an upload on a blocking thread, bounded in time and in how many run at once.
async fn read_text(kind: ContentKind, bytes: &[u8]) -> (Option<String>, Option<String>) {
    if kind == ContentKind::Image {
        return (None, None);
    }
    let busy = || (None, Some("The server was too busy to read its text; the file is stored.".to_owned()));
    let Ok(permit) = tokio::time::timeout(EXTRACT_TIMEOUT, Arc::clone(&EXTRACTIONS).acquire_owned()).await else {
        return busy();
    };
    let Ok(permit) = permit else { return busy() };
    let owned = bytes.to_vec();
    let task = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        extract::extract_text(kind, &owned)
    });
    match tokio::time::timeout(EXTRACT_TIMEOUT, task).await {
        Ok(Ok(Ok(text))) => (text, None),
        Ok(Ok(Err(e))) => (None, Some(format!("No text could be read from it: {e}"))),
        Ok(Err(_)) => (None, Some("No text could be read from it.".to_owned())),
        Err(_) => (None, Some("Reading its text took too long; the file is stored without text.".to_owned())),
    }
}
