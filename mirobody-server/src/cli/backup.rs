//! `backup` and `restore`: a consistent copy of an SQLite deployment taken while the server
//! runs, and bringing it back into an empty data folder.
//!
//! A backup is a folder: `mirobody.db` (SQLite's `VACUUM INTO`, one read transaction, so one
//! point in time however many writers run), `files/` (the uploaded files, copied after the
//! database so every file it names is there; files stored since are harmless extras),
//! `keys/` only with `--with-keys`, and `manifest.json`, written last: it names the schema
//! level, the keys the data needs, and every file's size and SHA-256, which `restore` checks
//! before it copies anything. A folder without a manifest is a backup that did not finish.
//!
//! Nothing is encrypted here that was not already: the database is plaintext health data (keep
//! a backup as you keep the database); uploaded files stay as stored, encrypted when
//! `backends.file_encryption_key` is set, and that key is then named, never copied.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::ConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;

use super::Command;
use crate::config::Config;
use mirobody_store::StorageConfig;

/// The file in a backup that describes it.
pub const MANIFEST: &str = "manifest.json";
/// The version of the backup layout this program writes and reads.
pub const FORMAT: u32 = 1;
/// The largest manifest `restore` reads.
pub const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;
/// The most files one backup holds (the database, uploads and keys).
pub const MAX_ENTRIES: usize = 1_000_000;

const DATABASE: &str = "mirobody.db";

/// Why a backup or a restore stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    /// The database is not one this command copies (PostgreSQL: the message says how).
    #[error("{0}")]
    Unsupported(String),
    /// The destination, or the data folder to restore into, is not empty.
    #[error("{dir} is not empty; {1}", dir = .0.display())]
    NotEmpty(PathBuf, &'static str),
    /// A file to restore (a key kept outside the data folder) is already there.
    #[error("{path} exists; restore replaces nothing: move it away first", path = .0.display())]
    Exists(PathBuf),
    /// The backup is incomplete, altered or from a newer program.
    #[error("{0}")]
    BadBackup(String),
    /// The database could not be read or written.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A file could not be read or written.
    #[error("{path}: {1}", path = .0.display())]
    Io(PathBuf, #[source] std::io::Error),
}

/// What a backup holds, as `manifest.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    format: u32,
    mirobody_version: String,
    created_at: String,
    schema_version: i64,
    storage: String,
    files_encrypted: bool,
    keys: Vec<KeyNote>,
    entries: Vec<Entry>,
}

/// A key the data needs: `kind` is where `restore` puts a copied one (`token`, `url_signing`,
/// `oauth`), or `setting` for a key that lives in the configuration and is only named.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyNote {
    setting: String,
    kind: String,
    needed_for: String,
    copied_as: Option<String>,
}

/// One file of the backup, by its path inside it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    path: String,
    bytes: u64,
    sha256: String,
}

/// Runs `backup` or `restore` with the configuration as loaded (not resolved: resolving makes
/// keys in the data folder); the exit code.
pub async fn run(command: Command, config: &Config) -> Result<u8, Box<dyn std::error::Error>> {
    let mut out = std::io::stdout().lock();
    match command {
        Command::Backup { dest, with_keys } => writeln!(out, "{}", backup(config, &dest, with_keys).await?)?,
        Command::Restore { backup } => writeln!(out, "{}", restore(config, &backup).await?)?,
        _ => return Err("not a backup command".into()),
    }
    Ok(0)
}

/// Writes a backup of the configured deployment into `dest` (made if missing, refused when not
/// empty), copying the key files too with `with_keys`; a summary for the operator.
pub async fn backup(config: &Config, dest: &Path, with_keys: bool) -> Result<String, BackupError> {
    let backends = &config.backends;
    let source = sqlite_file(&database_url(backends))?;
    if !source.is_file() {
        return Err(BackupError::Unsupported(format!("no database at {}: nothing to back up", source.display())));
    }
    ensure_empty(dest, "back up into a new or empty folder")?;
    let (storage, files_dir) = match &backends.storage {
        StorageConfig::Local { dir } => ("local", Some(dir.clone().unwrap_or_else(|| backends.data_dir.join("files")))),
        StorageConfig::S3 { .. } => ("s3 (not copied: keep the bucket's versioning or replication)", None),
        _ => ("none", None),
    };
    create_private_dir(dest)?;
    // A backup inside the files it copies would copy itself.
    let inside = |dir: &Path| Some(dest.canonicalize().ok()?.starts_with(dir.canonicalize().ok()?));
    if files_dir.as_deref().and_then(inside) == Some(true) {
        let _ = std::fs::remove_dir(dest);
        return Err(BackupError::Unsupported("the backup folder cannot be inside the uploaded files' folder".into()));
    }

    // One read transaction in the live database (WAL: writers go on meanwhile), written out as
    // a database of its own with no -wal beside it.
    let copy = dest.join(DATABASE);
    let mut conn = SqliteConnectOptions::from_str(&database_url(backends))?
        .create_if_missing(false)
        .busy_timeout(std::time::Duration::from_secs(10))
        .connect()
        .await?;
    sqlx::query("VACUUM INTO ?").bind(copy.to_string_lossy().into_owned()).execute(&mut conn).await?;
    sqlx::Connection::close(conn).await?;
    restrict_file(&copy)?;
    let schema_version = schema_version(&copy).await?;
    let mut entries = vec![entry_of(dest, &copy)?];

    if let Some(files_dir) = files_dir.filter(|dir| dir.is_dir()) {
        copy_tree(&files_dir, dest, Path::new("files"), &mut entries)?;
    }

    let mut keys = key_notes(config);
    if with_keys {
        for key in keys.iter_mut() {
            let Some(file) = key_file(config, &key.kind).filter(|file| file.is_file()) else { continue };
            let inside = format!("keys/{}", key.kind);
            copy_file(&file, &dest.join(&inside))?;
            entries.push(entry_of(dest, &dest.join(&inside))?);
            key.copied_as = Some(inside);
        }
    }
    let manifest = Manifest {
        format: FORMAT,
        mirobody_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at: now_rfc3339(),
        schema_version,
        storage: storage.to_owned(),
        files_encrypted: backends.file_encryption_key.is_some(),
        keys,
        entries,
    };
    let text = serde_json::to_vec_pretty(&manifest).map_err(|e| BackupError::BadBackup(e.to_string()))?;
    let manifest_path = dest.join(MANIFEST);
    mirobody_store::write_private_atomically(&manifest_path, &text).map_err(|e| BackupError::Io(manifest_path, e))?;
    Ok(summary("backed up", dest, &manifest))
}

/// Restores the backup in `backup` into the configured data folder, which must be empty (or
/// not exist): every file is checked against the manifest before anything is copied.
pub async fn restore(config: &Config, backup: &Path) -> Result<String, BackupError> {
    let manifest = read_manifest(backup)?;
    // The level a database this program makes is at.
    let unknown = |e: mirobody_core::BackendError| {
        BackupError::BadBackup(format!("cannot tell this program's schema level: {e}"))
    };
    let scratch = mirobody_store::SqlStore::connect("sqlite::memory:", None, 1).await.map_err(unknown)?;
    let known = scratch.schema_version().await.map_err(unknown)?;
    scratch.close().await;
    if manifest.schema_version > known {
        return Err(BackupError::BadBackup(format!(
            "the backup's schema level is {}, newer than this program's {known}: restore it with mirobody {} or later",
            manifest.schema_version, manifest.mirobody_version
        )));
    }
    for entry in &manifest.entries {
        check_entry(backup, entry)?;
    }
    if !manifest.entries.iter().any(|entry| entry.path == DATABASE) {
        return Err(BackupError::BadBackup(format!("the manifest names no {DATABASE}")));
    }

    let backends = &config.backends;
    let database = sqlite_file(&database_url(backends))?;
    let files_dir = match &backends.storage {
        StorageConfig::Local { dir } => dir.clone().unwrap_or_else(|| backends.data_dir.join("files")),
        _ => backends.data_dir.join("files"),
    };
    let has_files = manifest.entries.iter().any(|entry| entry.path.starts_with("files/"));
    if has_files && !matches!(backends.storage, StorageConfig::Local { .. }) {
        return Err(BackupError::Unsupported(
            "the backup holds uploaded files, but storage is not a local folder here".to_owned(),
        ));
    }
    let refusal = "restore into a new or empty data folder";
    ensure_empty(&backends.data_dir, refusal)?;
    ensure_empty(&files_dir, refusal)?;
    if database.exists() {
        return Err(BackupError::Exists(database));
    }

    // Where each file goes, all of them free, before the first is copied.
    let mut plan = Vec::with_capacity(manifest.entries.len());
    for entry in &manifest.entries {
        let to = if entry.path == DATABASE {
            database.clone()
        } else if let Some(rest) = entry.path.strip_prefix("files/") {
            files_dir.join(rest)
        } else {
            let kind = entry.path.strip_prefix("keys/").unwrap_or_default();
            key_file(config, kind).ok_or_else(|| BackupError::BadBackup(format!("unknown file {}", entry.path)))?
        };
        if std::fs::symlink_metadata(&to).is_ok() {
            return Err(BackupError::Exists(to));
        }
        plan.push((backup.join(&entry.path), to));
    }
    create_private_dir(&backends.data_dir)?;
    for (from, to) in &plan {
        copy_file(from, to)?;
    }
    let files = manifest.entries.iter().filter(|entry| entry.path.starts_with("files/")).count();
    let mut done = summary("restored", &backends.data_dir, &manifest);
    done.push_str(&format!("\n{files} uploaded files restored; start the server on this data folder"));
    Ok(done)
}

// The database URL in force, as the store resolves it.
fn database_url(backends: &mirobody_store::BackendConfig) -> String {
    let default = || format!("sqlite://{}", backends.data_dir.join(DATABASE).display());
    backends.database_url.clone().unwrap_or_else(default)
}

// The file an `sqlite://` URL names; PostgreSQL gets the commands that back it up instead.
fn sqlite_file(url: &str) -> Result<PathBuf, BackupError> {
    if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        return Err(BackupError::Unsupported(
            "the database is PostgreSQL, which this command does not copy: back it up with \
             `pg_dump --format=custom --file=mirobody.dump \"$DATABASE_URL\"` (consistent while the \
             server runs) and restore it into an empty database with `pg_restore --no-owner \
             --dbname=\"$DATABASE_URL\" mirobody.dump`; copy the files folder (or keep the bucket's \
             versioning) and the keys the README names"
                .to_owned(),
        ));
    }
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| BackupError::Unsupported(format!("database_url is not a database this command copies: {e}")))?;
    let file = options.get_filename().to_path_buf();
    if file.as_os_str().is_empty() || file.as_os_str() == ":memory:" {
        return Err(BackupError::Unsupported("an in-memory database has nothing to back up".to_owned()));
    }
    Ok(file)
}

async fn schema_version(file: &Path) -> Result<i64, BackupError> {
    let mut conn = SqliteConnectOptions::new().filename(file).read_only(true).connect().await?;
    let version = sqlx::query_scalar::<_, i64>("SELECT COALESCE(MAX(version), 0) FROM mirobody_migrations")
        .fetch_one(&mut conn)
        .await?;
    sqlx::Connection::close(conn).await?;
    Ok(version)
}

// Every key the data needs, named; the key files among them are copied with `--with-keys`.
fn key_notes(config: &Config) -> Vec<KeyNote> {
    let note = |setting: &str, kind: &str, needed_for: &str| KeyNote {
        setting: setting.to_owned(),
        kind: kind.to_owned(),
        needed_for: needed_for.to_owned(),
        copied_as: None,
    };
    let mut keys = Vec::new();
    let backends = &config.backends;
    if key_file(config, "token").is_some_and(|file| file.is_file()) {
        keys.push(note(
            "auth.hs256_secret (generated into <data_dir>/token.key)",
            "token",
            "access tokens already handed out (and `mirobody-server token`)",
        ));
    }
    let auth = &config.auth;
    if auth.hs256_secret.is_some() || auth.rs256.is_some() || auth.es256.is_some() || auth.jwks.is_some() {
        keys.push(note(
            "auth (hs256_secret, rs256, es256 or jwks, as configured)",
            "setting",
            "access tokens already handed out",
        ));
    }
    if key_file(config, "oauth").is_some_and(|file| file.is_file()) {
        keys.push(note(
            "oauth.signing_key_file",
            "oauth",
            "the OAuth access tokens apps hold (else every app signs in again)",
        ));
    }
    match backends.signing_key {
        Some(_) => keys.push(note("backends.signing_key", "setting", "file URLs already handed out")),
        None if key_file(config, "url_signing").is_some_and(|file| file.is_file()) => {
            keys.push(note(
                "backends.signing_key (generated into <data_dir>/signing.key)",
                "url_signing",
                "file URLs already handed out",
            ));
        }
        None => {}
    }
    if backends.file_encryption_key.is_some() {
        keys.push(note(
            "backends.file_encryption_key",
            "setting",
            "reading the uploaded files, which stay encrypted in the backup: without it they are lost",
        ));
    }
    if config.request_state_key.is_some() {
        keys.push(note("request_state_key", "setting", "requestStates and shared sessions in flight (short-lived)"));
    }
    keys
}

// Where a kind of key file lives in this configuration.
fn key_file(config: &Config, kind: &str) -> Option<PathBuf> {
    let data_dir = &config.backends.data_dir;
    match kind {
        "token" => Some(data_dir.join("token.key")),
        "url_signing" => Some(data_dir.join("signing.key")),
        "oauth" => Some(crate::app::oauth_key_path(config)),
        _ => None,
    }
}

fn read_manifest(backup: &Path) -> Result<Manifest, BackupError> {
    let path = backup.join(MANIFEST);
    let file = std::fs::File::open(&path).map_err(|e| {
        BackupError::BadBackup(format!(
            "{} cannot be read ({e}): not a mirobody backup, or one that did not finish",
            path.display()
        ))
    })?;
    let mut text = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut text).map_err(|e| BackupError::Io(path.clone(), e))?;
    if text.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(BackupError::BadBackup(format!("{} is larger than {MAX_MANIFEST_BYTES} bytes", path.display())));
    }
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| BackupError::BadBackup(format!("{} is not a backup manifest: {e}", path.display())))?;
    if manifest.format != FORMAT {
        return Err(BackupError::BadBackup(format!(
            "the backup's format is {}, this program reads format {FORMAT}",
            manifest.format
        )));
    }
    if manifest.entries.len() > MAX_ENTRIES {
        return Err(BackupError::BadBackup(format!("the manifest names more than {MAX_ENTRIES} files")));
    }
    Ok(manifest)
}

// The entry is a plain relative path inside the backup, and the file there is the one hashed.
fn check_entry(backup: &Path, entry: &Entry) -> Result<(), BackupError> {
    let relative = Path::new(&entry.path);
    let plain = relative.components().all(|part| matches!(part, Component::Normal(_)));
    let known = entry.path == DATABASE || entry.path.starts_with("files/") || entry.path.starts_with("keys/");
    if !plain || !known || entry.path.is_empty() {
        return Err(BackupError::BadBackup(format!("the manifest names a file outside the backup: {:?}", entry.path)));
    }
    let path = backup.join(relative);
    let found = hash_file(&path)
        .map_err(|e| BackupError::BadBackup(format!("{} is missing or unreadable: {e}", entry.path)))?;
    if found.bytes != entry.bytes || found.sha256 != entry.sha256 {
        return Err(BackupError::BadBackup(format!(
            "{} is not the file the manifest names (changed or cut short): the backup cannot be trusted",
            entry.path
        )));
    }
    Ok(())
}

fn copy_tree(dir: &Path, dest: &Path, inside: &Path, entries: &mut Vec<Entry>) -> Result<(), BackupError> {
    let listing = std::fs::read_dir(dir).map_err(|e| BackupError::Io(dir.to_path_buf(), e))?;
    for item in listing {
        let item = item.map_err(|e| BackupError::Io(dir.to_path_buf(), e))?;
        let kind = item.file_type().map_err(|e| BackupError::Io(item.path(), e))?;
        let name = item.file_name();
        // Half-written uploads are object_store's staging files (`<key>#<n>`); links are not
        // the store's.
        if name.to_string_lossy().contains('#') || kind.is_symlink() {
            continue;
        }
        let target = inside.join(&name);
        if kind.is_dir() {
            create_private_dir(&dest.join(&target))?;
            copy_tree(&item.path(), dest, &target, entries)?;
        } else if kind.is_file() {
            if entries.len() >= MAX_ENTRIES {
                return Err(BackupError::Unsupported(format!("more than {MAX_ENTRIES} files to back up")));
            }
            // A file deleted since the database was copied is gone from it too, or will be.
            match copy_file(&item.path(), &dest.join(&target)) {
                Err(BackupError::Io(path, e)) if path == item.path() && e.kind() == std::io::ErrorKind::NotFound => {
                    continue;
                }
                other => other?,
            }
            entries.push(entry_of(dest, &dest.join(&target))?);
        }
    }
    Ok(())
}

struct Hashed {
    bytes: u64,
    sha256: String,
}

fn hash_file(path: &Path) -> std::io::Result<Hashed> {
    let mut file = std::fs::File::open(path)?;
    let (mut hasher, mut bytes, mut buffer) = (Sha256::new(), 0u64, vec![0u8; 64 * 1024]);
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        bytes += n as u64;
    }
    let sha256 = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(Hashed { bytes, sha256 })
}

fn entry_of(dest: &Path, file: &Path) -> Result<Entry, BackupError> {
    let hashed = hash_file(file).map_err(|e| BackupError::Io(file.to_path_buf(), e))?;
    let relative = file.strip_prefix(dest).unwrap_or(file);
    let path = relative.components().map(|part| part.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
    Ok(Entry { path, bytes: hashed.bytes, sha256: hashed.sha256 })
}

// Copies into a new owner-only file (never over one), making its folder if missing.
fn copy_file(from: &Path, to: &Path) -> Result<(), BackupError> {
    let mut source = std::fs::File::open(from).map_err(|e| BackupError::Io(from.to_path_buf(), e))?;
    if let Some(parent) = to.parent() {
        create_private_dir(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut target = options.open(to).map_err(|e| BackupError::Io(to.to_path_buf(), e))?;
    std::io::copy(&mut source, &mut target).map_err(|e| BackupError::Io(to.to_path_buf(), e))?;
    target.sync_all().map_err(|e| BackupError::Io(to.to_path_buf(), e))
}

fn restrict_file(path: &Path) -> Result<(), BackupError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| BackupError::Io(path.to_path_buf(), e))?;
    }
    Ok(())
}

fn create_private_dir(dir: &Path) -> Result<(), BackupError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| BackupError::Io(dir.to_path_buf(), e))
}

fn ensure_empty(dir: &Path, what_to_do: &'static str) -> Result<(), BackupError> {
    match std::fs::read_dir(dir) {
        Ok(listing) => match listing.into_iter().next() {
            Some(_) => Err(BackupError::NotEmpty(dir.to_path_buf(), what_to_do)),
            None => Ok(()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BackupError::Io(dir.to_path_buf(), e)),
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

fn summary(done: &str, dir: &Path, manifest: &Manifest) -> String {
    let files = manifest.entries.iter().filter(|entry| entry.path.starts_with("files/")).count();
    let mut text = format!(
        "{done} {}: database at schema level {}, {files} uploaded files (storage: {}{}), taken {}",
        dir.display(),
        manifest.schema_version,
        manifest.storage,
        if manifest.files_encrypted { ", encrypted" } else { "" },
        manifest.created_at
    );
    text.push_str("\nthe database holds health data in plaintext: keep the backup as you keep the database");
    for key in &manifest.keys {
        let state = match &key.copied_as {
            Some(inside) => format!("copied as {inside}"),
            None => "not in the backup: keep it yourself".to_owned(),
        };
        text.push_str(&format!("\nkey {} (for {}): {state}", key.setting, key.needed_for));
    }
    text
}
