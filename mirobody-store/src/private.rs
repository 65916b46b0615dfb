//! Files on disk that only their owner may read: the data folder, the embedded database and
//! its `-wal`/`-shm` files, uploaded files and generated keys.
//!
//! On Unix, folders this crate creates are `0700` and files `0600`, whatever the process umask
//! (a library does not change the umask of the process it runs in). A folder that already
//! exists with wider bits is not changed, only reported: an operator may have chosen it (a
//! mounted volume, a folder other programs read), and the files in it are `0600` anyway, so it
//! shows other users their names, not their contents. The uploads folder mirobody names itself
//! (`<data_dir>/files`) is the exception, tightened because it holds the files of earlier
//! versions, which were written with the umask's bits. Elsewhere the modes are not changed.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Group and other bits of a mode.
#[cfg(unix)]
const NOT_OWNER: u32 = 0o077;

/// Creates `dir` and its missing parents, each `0700` on Unix; nothing when it exists.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Logs a warning when the existing folder `dir` is open to other users (group or other
/// bits set). What `what` names is kept in it.
pub(crate) fn warn_if_shared(dir: &Path, what: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(metadata) = fs::metadata(dir) {
            let mode = metadata.permissions().mode() & 0o777;
            if metadata.is_dir() && mode & NOT_OWNER != 0 {
                tracing::warn!(
                    folder = %dir.display(),
                    mode = format_args!("{mode:o}"),
                    "the folder of {what} is open to other users; its files are owner-only, but their \
                     names are visible: `chmod 700` it to hide them"
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (dir, what);
}

/// Takes the group and other bits off the existing folder `dir` (Unix; nothing elsewhere).
pub(crate) fn tighten_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata = fs::metadata(dir)?;
        let mode = metadata.permissions().mode();
        if metadata.is_dir() && mode & NOT_OWNER != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(mode & 0o700))?;
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Makes the regular file at `path` readable and writable by its owner only, if it exists
/// (Unix; nothing elsewhere). Anything but a regular file is left alone.
pub(crate) fn tighten_file(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata = match fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if metadata.is_file() && metadata.permissions().mode() & NOT_OWNER != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Creates an empty file at `path`, `0600` on Unix, unless something is there already; an
/// existing regular file is made `0600`.
pub(crate) fn create_private_file(path: &Path) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => tighten_file(path),
        Err(e) => Err(e),
    }
}

/// Writes `contents` to a new file at `path` that only its owner may read (`0600` on Unix),
/// atomically: a crash at any point leaves either no file at `path` or the whole of
/// `contents`, never an empty or partial file (which would stop the next start that reads it).
///
/// The bytes go to a temporary file in the same folder (created `0700` with its missing
/// parents), which is flushed to disk, then linked at `path`, and the folder is flushed so the
/// new name survives a crash. It never replaces a file: when `path` exists, or appears
/// meanwhile (another process generating the same key), it fails with
/// [`io::ErrorKind::AlreadyExists`] and leaves that file alone, so the caller can read it. On a
/// filesystem without hard links the temporary file is renamed into place instead, after a
/// check that `path` is still free. The temporary file is removed on every error; only a crash
/// can leave one (`.<name>.<random>.tmp`, never read).
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let dir = std::env::temp_dir().join(format!("mirobody-doc-{}", std::process::id()));
/// let key = dir.join("signing.key");
/// mirobody_store::write_private_atomically(&key, b"0123456789abcdef")?;
/// assert_eq!(std::fs::read(&key)?, b"0123456789abcdef");
/// let again = mirobody_store::write_private_atomically(&key, b"other");
/// assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(()) }
/// ```
pub fn write_private_atomically(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_with(path, contents, |_| Ok(()))
}

// `write_private_atomically`, calling `before_publish` with the temporary file once it is
// written and flushed, before it takes the name `path` (tests fail there).
fn write_with(path: &Path, contents: &[u8], before_publish: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_private_dir(&dir)?;
    if fs::symlink_metadata(path).is_ok() {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} exists", path.display())));
    }
    let mut random = [0u8; 8];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut random);
    let temp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), hex::encode(random)));
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temp)?;
    let written = file
        .write_all(contents)
        .and_then(|()| file.sync_all())
        .and_then(|()| before_publish(&temp))
        .and_then(|()| publish(&temp, path));
    drop(file);
    // Linked or not, the temporary name goes (after a rename it is already gone).
    let _ = fs::remove_file(&temp);
    written?;
    sync_dir(&dir)
}

// Gives the flushed temporary file the name `path`, unless `path` exists.
fn publish(temp: &Path, path: &Path) -> io::Result<()> {
    match fs::hard_link(temp, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        // No hard links here (some network and FUSE filesystems): rename, which replaces, so
        // only after checking that the name is still free.
        Err(_) if fs::symlink_metadata(path).is_err() => fs::rename(temp, path),
        Err(_) => Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} exists", path.display()))),
    }
}

// Flushes the folder's entries, so a new name in it survives a crash (Unix; elsewhere the
// filesystem does what it does).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn an_atomic_write_leaves_the_whole_file_owner_only_and_no_temporary_file() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        let path = dir.join("token.key");
        write_private_atomically(&path, b"the whole key").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"the whole key");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700, "missing folders are created owner-only");
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(names(&dir), ["token.key"], "no temporary file is left");
        // An existing file is never replaced, and the attempt leaves nothing behind.
        let again = write_private_atomically(&path, b"another key").unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"the whole key");
        assert_eq!(names(&dir), ["token.key"]);
    }

    #[test]
    fn a_failure_before_the_file_takes_its_name_leaves_no_file_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signing.key");
        let mut seen = None;
        let failed = write_with(&path, b"0123456789", |temp| {
            // Written and flushed in full, owner-only, and not yet at `path`.
            seen = Some((fs::read(temp).unwrap(), mode(temp), path.exists()));
            Err(io::Error::other("crash"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "crash");
        assert_eq!(seen, Some((b"0123456789".to_vec(), 0o600, false)));
        assert!(!path.exists(), "no partial key where the next start would read it");
        assert_eq!(names(dir.path()), Vec::<String>::new(), "the temporary file is removed");
        // The next attempt writes the key.
        write_private_atomically(&path, b"0123456789").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"0123456789");
    }

    #[test]
    fn a_file_that_appears_meanwhile_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signing.key");
        let failed = write_with(&path, b"mine", |_| fs::write(&path, b"theirs")).unwrap_err();
        assert_eq!(failed.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"theirs");
        assert_eq!(names(dir.path()), ["signing.key"]);
    }

    #[test]
    fn files_and_folders_are_tightened_or_reported_as_asked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db");
        fs::write(&file, b"x").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        create_private_file(&file).unwrap();
        assert_eq!((mode(&file), fs::read(&file).unwrap()), (0o600, b"x".to_vec()), "tightened, kept");
        let new = dir.path().join("new");
        create_private_file(&new).unwrap();
        assert_eq!((mode(&new), fs::metadata(&new).unwrap().len()), (0o600, 0));
        // A folder where a file is expected is left alone.
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o755)).unwrap();
        create_private_file(&sub).unwrap();
        assert_eq!(mode(&sub), 0o755);
        tighten_dir(&sub).unwrap();
        assert_eq!(mode(&sub), 0o700);
        tighten_file(&dir.path().join("missing")).unwrap();
    }
}
