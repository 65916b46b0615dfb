//! Object storage through the `object_store` crate: the local filesystem by default, any
//! S3-compatible store when configured, with optional encryption at rest.
//!
//! Signed read URLs: an unencrypted S3 store pre-signs its own URLs; otherwise (the local
//! store, or any encrypted store, whose bytes only the server can decrypt) URLs point at the
//! server and are HMAC-signed by a [`UrlSigner`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::Storage;
use mirobody_core::backend::{BackendError, BackendResult};
#[cfg(feature = "s3")]
use object_store::aws::AmazonS3;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
#[cfg(feature = "s3")]
use object_store::signer::Signer;
use object_store::{Attribute, Attributes, ObjectStore, ObjectStoreExt, PutOptions, PutPayload};

use super::cipher::FileCipher;
use super::signing::UrlSigner;

// The one rule for storage keys, the health domain's (the tools check keys with it too).
pub use mirobody_health::valid_key;

enum Urls {
    // The store pre-signs (S3, unencrypted).
    #[cfg(feature = "s3")]
    Native(Arc<AmazonS3>),
    // The server serves and checks HMAC-signed URLs.
    Server(UrlSigner),
}

/// Why [`ObjectStorage::local`] could not set up its folder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalStorageError {
    /// The folder could not be created (or made owner-only).
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        /// The folder.
        dir: std::path::PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The folder exists but the store could not be opened over it.
    #[error("{source}")]
    Open {
        /// The folder.
        dir: std::path::PathBuf,
        /// What the object store said.
        source: object_store::Error,
    },
}

/// Object storage for uploaded files, implementing [`Storage`].
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    // The same store when it is a local folder, whose files are made owner-only.
    local: Option<Arc<LocalFileSystem>>,
    s3: bool,
    urls: Urls,
    cipher: Option<FileCipher>,
}

impl fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStorage")
            .field("store", &self.store.to_string())
            .field("encrypted", &self.cipher.is_some())
            .field("presigned_by_store", &self.url_signer().is_none())
            .finish()
    }
}

fn storage_error(what: &str, e: object_store::Error) -> BackendError {
    if matches!(e, object_store::Error::NotFound { .. }) {
        return BackendError::new("File not found in storage.");
    }
    tracing::warn!(error = %e, "object storage error");
    BackendError::new(format!("Object storage failed to {what}; try again later."))
}

fn path(key: &str) -> BackendResult<Path> {
    if !valid_key(key) {
        return Err(BackendError::new("Invalid storage key."));
    }
    Path::parse(key).map_err(|_| BackendError::new("Invalid storage key."))
}

impl ObjectStorage {
    /// Files under the folder `dir` (created owner-only if missing: `0700` on Unix, and each
    /// stored file `0600`); signed URLs from `signer`.
    pub fn local(
        dir: &std::path::Path,
        signer: UrlSigner,
        cipher: Option<FileCipher>,
    ) -> Result<Self, LocalStorageError> {
        super::private::create_private_dir(dir)
            .map_err(|source| LocalStorageError::CreateDir { dir: dir.to_owned(), source })?;
        let store = Arc::new(
            LocalFileSystem::new_with_prefix(dir)
                .map_err(|source| LocalStorageError::Open { dir: dir.to_owned(), source })?,
        );
        let local = Some(Arc::clone(&store));
        Ok(ObjectStorage { store, local, s3: false, urls: Urls::Server(signer), cipher })
    }

    /// An S3-compatible store. With a cipher, URLs are the server's own (`signer`): a URL the
    /// store signed would hand out ciphertext.
    #[cfg(feature = "s3")]
    pub fn s3(store: AmazonS3, signer: UrlSigner, cipher: Option<FileCipher>) -> Self {
        let store = Arc::new(store);
        let urls = if cipher.is_some() { Urls::Server(signer) } else { Urls::Native(Arc::clone(&store)) };
        ObjectStorage { store, local: None, s3: true, urls, cipher }
    }

    /// The signer of server-served URLs, when this store uses them.
    pub fn url_signer(&self) -> Option<&UrlSigner> {
        match &self.urls {
            Urls::Server(signer) => Some(signer),
            #[cfg(feature = "s3")]
            Urls::Native(_) => None,
        }
    }

    /// Whether files are encrypted at rest.
    pub fn is_encrypted(&self) -> bool {
        self.cipher.is_some()
    }

    /// The stored bytes as they are on disk or in the bucket (ciphertext when encrypted).
    pub async fn get_raw(&self, key: &str) -> BackendResult<Vec<u8>> {
        let result = self.store.get(&path(key)?).await.map_err(|e| storage_error("read the file", e))?;
        let bytes = result.bytes().await.map_err(|e| storage_error("read the file", e))?;
        Ok(bytes.to_vec())
    }
}

#[async_trait]
impl Storage for ObjectStorage {
    async fn get(&self, key: &str) -> BackendResult<Vec<u8>> {
        let stored = self.get_raw(key).await?;
        match &self.cipher {
            Some(cipher) if FileCipher::is_encrypted(&stored) => cipher.decrypt(key, &stored).map_err(|e| {
                tracing::warn!(error = %e, "decryption failed");
                BackendError::new("The file could not be decrypted.")
            }),
            None if FileCipher::is_encrypted(&stored) => {
                Err(BackendError::new("The file is encrypted and no file_encryption_key is configured."))
            }
            _ => Ok(stored),
        }
    }

    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> BackendResult<()> {
        let location = path(key)?;
        let bytes = match &self.cipher {
            Some(cipher) => cipher.encrypt(key, &bytes),
            None => bytes,
        };
        let mut options = PutOptions::default();
        // The local store keeps no attributes; S3 serves the type with pre-signed reads.
        if self.s3 && self.cipher.is_none() {
            options.attributes = Attributes::from_iter([(Attribute::ContentType, content_type.to_owned())]);
        }
        self.store
            .put_opts(&location, PutPayload::from(bytes), options)
            .await
            .map_err(|e| storage_error("store the file", e))?;
        if let Some(local) = &self.local {
            // object_store writes with the process umask's bits (0644 by default); until this
            // runs the file is still out of other users' reach inside the owner-only folder.
            let file = local.path_to_filesystem(&location).map_err(|e| storage_error("store the file", e))?;
            tokio::task::spawn_blocking(move || super::private::tighten_file(&file))
                .await
                .map_err(|_| BackendError::new("Object storage failed to store the file; try again later."))?
                .map_err(|e| {
                    tracing::warn!(error = %e, "cannot make a stored file owner-only");
                    BackendError::new("Object storage failed to store the file; try again later.")
                })?;
        }
        Ok(())
    }

    async fn delete(&self, key: &str) -> BackendResult<()> {
        // An object already gone is deleted, as S3 answers too: an erase run again finishes.
        match self.store.delete(&path(key)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(storage_error("delete the file", e)),
        }
    }

    async fn signed_url(&self, key: &str, expires_in: Duration) -> BackendResult<String> {
        // Checked for every store: a key the local store would refuse is refused here too.
        let _location = path(key)?;
        match &self.urls {
            Urls::Server(signer) => Ok(signer.sign(key, expires_in)),
            #[cfg(feature = "s3")]
            Urls::Native(s3) => s3
                .signed_url(http::Method::GET, &_location, expires_in)
                .await
                .map(|url| url.to_string())
                .map_err(|e| storage_error("sign a URL", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_inside_the_store() {
        for good in ["abc", "u/1/report.pdf", "f_0a.trans", "A-b_c.d"] {
            assert!(valid_key(good), "{good}");
        }
        for bad in ["", "/abs", "a//b", "a/../b", "..", "a/./b", "a b", "a\\b", "é", "a?b", &"a".repeat(513)] {
            assert!(!valid_key(bad), "{bad}");
        }
    }

    fn signer() -> UrlSigner {
        UrlSigner::new(vec![3u8; 32], "http://localhost/files").unwrap()
    }

    #[tokio::test]
    async fn local_files_round_trip_and_sign() {
        let dir = tempfile::tempdir().unwrap();
        let storage = ObjectStorage::local(dir.path(), signer(), None).unwrap();
        storage.put("a/b.txt", b"hello".to_vec(), "text/plain").await.unwrap();
        assert_eq!(storage.get("a/b.txt").await.unwrap(), b"hello");
        let url = storage.signed_url("a/b.txt", Duration::from_secs(60)).await.unwrap();
        let (path, query) = url.strip_prefix("http://localhost/files").unwrap().split_once('?').unwrap();
        assert_eq!(storage.url_signer().unwrap().verify(path, query).unwrap(), "a/b.txt");
        storage.delete("a/b.txt").await.unwrap();
        let err = storage.get("a/b.txt").await.unwrap_err();
        assert_eq!(err.to_string(), "File not found in storage.");
        assert_eq!(storage.get("../x").await.unwrap_err().to_string(), "Invalid storage key.");
    }

    #[test]
    fn a_folder_that_cannot_be_created_is_named_in_the_error() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("not-a-folder");
        std::fs::write(&file, b"x").unwrap();
        let Err(LocalStorageError::CreateDir { dir, .. }) = ObjectStorage::local(&file.join("files"), signer(), None)
        else {
            panic!("a folder under a file was created");
        };
        assert_eq!(dir, file.join("files"));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn local_files_and_their_folder_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("files");
        let storage = ObjectStorage::local(&dir, signer(), None).unwrap();
        assert_eq!(mode(&dir), 0o700);
        storage.put("u/1/report.pdf", b"%PDF".to_vec(), "application/pdf").await.unwrap();
        assert_eq!(mode(&dir.join("u/1/report.pdf")), 0o600);
        // Replacing a file keeps it owner-only.
        storage.put("u/1/report.pdf", b"%PDF-2".to_vec(), "application/pdf").await.unwrap();
        assert_eq!(mode(&dir.join("u/1/report.pdf")), 0o600);
        assert_eq!(storage.get("u/1/report.pdf").await.unwrap(), b"%PDF-2");
    }

    #[tokio::test]
    async fn encrypted_files_are_ciphertext_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let cipher = FileCipher::from_config(&"42".repeat(32)).unwrap();
        let storage = ObjectStorage::local(dir.path(), signer(), Some(cipher)).unwrap();
        storage.put("secret.txt", b"my lab results".to_vec(), "text/plain").await.unwrap();
        let on_disk = std::fs::read(dir.path().join("secret.txt")).unwrap();
        assert!(!on_disk.windows(3).any(|w| w == b"lab"), "plaintext on disk");
        assert_eq!(storage.get("secret.txt").await.unwrap(), b"my lab results");

        let plain = ObjectStorage::local(dir.path(), signer(), None).unwrap();
        let err = plain.get("secret.txt").await.unwrap_err();
        assert!(err.to_string().contains("no file_encryption_key"), "{err}");
    }
}
