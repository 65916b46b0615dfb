//! A person's uploads: storing a file they send (checked by its content, within their quota,
//! encrypted at rest as the store is configured), the text read from it, and the short-lived
//! signed links a model hands out to a page where they can upload from any browser.
//!
//! The server's routes (`POST /files`, the upload page) are thin: they authenticate, read a
//! bounded body and call [`store_upload`], which is the same path the demo takes.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use sha2::Sha256;
use tokio::sync::Semaphore;

use crate::backends::{OpenedBackends, SignedUrlError};
use crate::extract::{self, ContentKind};
use crate::health::FileRecord;
use crate::text::{hex, now_ms, rfc3339, unhex};

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

/// The longest file name kept, in characters.
pub const MAX_FILENAME_CHARS: usize = 255;
/// How long reading the text of one file may take before it is stored without text.
pub const EXTRACT_TIMEOUT: Duration = Duration::from_secs(30);

// Text extraction runs on blocking threads; a parser that never ends keeps its permit, so at
// most this many run at once whatever clients send.
static EXTRACTIONS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(2)));

/// The name to keep for an upload: its last path segment, without control characters, at
/// most [`MAX_FILENAME_CHARS`] characters; `upload` when nothing is left.
pub fn clean_filename(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last.chars().filter(|c| !c.is_control()).take(MAX_FILENAME_CHARS).collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() || cleaned == "." || cleaned == ".." { "upload".to_owned() } else { cleaned.to_owned() }
}

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

type HmacSha256 = Hmac<Sha256>;

/// Short-lived signed links to the upload page: whoever holds one may upload files as the
/// person it was made for until it expires, and nothing else.
///
/// A link is `<base>/<token>`, the token `<user id, base64url>.<expiry, unix seconds>.<HMAC>`.
/// The page it opens is the same for every link; the token stays in the URL.
#[derive(Clone)]
pub struct UploadLinks {
    key: Vec<u8>,
    base: String,
    lifetime: Duration,
}

impl std::fmt::Debug for UploadLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadLinks").field("base", &self.base).field("lifetime", &self.lifetime).finish()
    }
}

/// The longest user id an upload link carries.
const MAX_LINK_USER_BYTES: usize = 256;

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl UploadLinks {
    /// Links under `base` (for example `https://mirobody.example/upload`) signed with `key`
    /// (at least 32 bytes), each valid for `lifetime`.
    pub fn new(key: impl Into<Vec<u8>>, base: impl Into<String>, lifetime: Duration) -> Result<Self, String> {
        let key = key.into();
        if key.len() < 32 {
            return Err("the upload-link key must be at least 32 bytes".into());
        }
        Ok(UploadLinks { key, base: base.into().trim_end_matches('/').to_owned(), lifetime })
    }

    /// How long a link works.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    fn mac(&self, user: &str, expires: u64) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(b"mirobody-upload-link-v1\n");
        mac.update(user.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// A link for `user_id` and when it expires (unix seconds); `None` for an id too long to
    /// carry.
    pub fn link(&self, user_id: &str) -> Option<(String, u64)> {
        if user_id.is_empty() || user_id.len() > MAX_LINK_USER_BYTES {
            return None;
        }
        let expires = unix_now().saturating_add(self.lifetime.as_secs().max(1));
        let signature = hex(&self.mac(user_id, expires).finalize().into_bytes());
        Some((format!("{}/{}.{expires}.{signature}", self.base, URL_SAFE_NO_PAD.encode(user_id)), expires))
    }

    /// The user a link's token was made for, or why it is refused (checked in constant time).
    pub fn verify(&self, token: &str) -> Result<String, SignedUrlError> {
        let mut parts = token.split('.');
        let (Some(user), Some(expires), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(SignedUrlError::Malformed);
        };
        let user = URL_SAFE_NO_PAD.decode(user).ok().and_then(|b| String::from_utf8(b).ok());
        let (Some(user), Ok(expires), Some(signature)) = (user, expires.parse::<u64>(), unhex(signature)) else {
            return Err(SignedUrlError::Malformed);
        };
        if user.is_empty() || user.len() > MAX_LINK_USER_BYTES {
            return Err(SignedUrlError::Malformed);
        }
        self.mac(&user, expires).verify_slice(&signature).map_err(|_| SignedUrlError::BadSignature)?;
        if unix_now() >= expires {
            return Err(SignedUrlError::Expired);
        }
        Ok(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(lifetime: u64) -> UploadLinks {
        UploadLinks::new(vec![9u8; 32], "https://m.example/upload/", Duration::from_secs(lifetime)).unwrap()
    }

    fn token(url: &str) -> &str {
        url.strip_prefix("https://m.example/upload/").unwrap()
    }

    #[test]
    fn a_link_verifies_to_its_user_only() {
        let (url, expires) = links(600).link("alice@example.com").unwrap();
        assert!(expires > unix_now() + 590);
        assert_eq!(links(600).verify(token(&url)), Ok("alice@example.com".to_owned()));
        let other = UploadLinks::new(vec![8u8; 32], "https://m.example/upload", Duration::from_secs(600)).unwrap();
        assert_eq!(other.verify(token(&url)), Err(SignedUrlError::BadSignature));
        // Another user's id with this link's signature.
        let mut parts: Vec<&str> = token(&url).split('.').collect();
        let bob = URL_SAFE_NO_PAD.encode("bob");
        parts[0] = &bob;
        assert_eq!(links(600).verify(&parts.join(".")), Err(SignedUrlError::BadSignature));
        for bad in ["", "a.b", "a.1.zz", "a.1.00.extra", &format!("{bob}.x.00")] {
            assert_eq!(links(600).verify(bad), Err(SignedUrlError::Malformed), "{bad}");
        }
        assert!(links(600).link(&"u".repeat(MAX_LINK_USER_BYTES + 1)).is_none());
    }

    #[test]
    fn an_expired_link_is_refused() {
        let l = links(600);
        let expires = unix_now() - 1;
        let signature = hex(&l.mac("alice", expires).finalize().into_bytes());
        let token = format!("{}.{expires}.{signature}", URL_SAFE_NO_PAD.encode("alice"));
        assert_eq!(l.verify(&token), Err(SignedUrlError::Expired));
    }

    #[test]
    fn file_names_lose_paths_and_control_characters() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\Users\\me\\lab.pdf"), "lab.pdf");
        assert_eq!(clean_filename("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(clean_filename(".."), "upload");
        assert_eq!(clean_filename(""), "upload");
        assert_eq!(clean_filename(&"x".repeat(400)).chars().count(), MAX_FILENAME_CHARS);
    }
}
