//! Giving back the memory that only start-up used.
//!
//! Start-up runs code that no request runs again: reading the configuration, parsing the
//! command line, creating the schema of a fresh SQLite database (about 0.7 MB of SQLite's own
//! code). The kernel maps a program's file 64 KiB around each page that faults, so after
//! start-up several MiB of the server's file stay resident for the life of the process, about
//! as much again as the requests use. [`release_startup_pages`] asks the kernel to reclaim the
//! read-only part of the program's own file once start-up is over; the pages that requests use
//! come back on their first use, from the page cache or the file, and the rest stay out.
//!
//! The binary calls it before it serves (`serve` and `stdio`) when `release_startup_memory` is
//! set (off by default). An application can call it at the same point of its own start-up.

/// Asks the kernel to reclaim the resident pages of the running program's own file that no
/// writable mapping holds: its code, read-only data and relocation tables. Returns how many
/// bytes of address space were advised (resident or not).
///
/// This is only advice (`MADV_PAGEOUT`, Linux 5.4 and later): the contents of memory never
/// change, a page the program uses again is read back in, and the kernel skips what it cannot
/// drop. Read-ahead is turned off for those mappings (`MADV_RANDOM`), so that a page used
/// again does not bring back the megabytes around it (some kernels still read ahead for
/// code). Mappings that hold copied (relocated) pages are left alone, since reclaiming those
/// would mean swapping them. It costs one read of `/proc/self/smaps` and one system call per
/// mapping, and some page faults afterwards as requests bring their code back; call it once,
/// after start-up.
///
/// # Errors
///
/// An older kernel refuses the advice (`EINVAL`), and other systems than Linux have no such
/// advice ([`std::io::ErrorKind::Unsupported`]). Either way nothing changed, and the program
/// runs on as before.
///
/// # Examples
///
/// ```
/// // After start-up (configuration read, databases opened), before serving:
/// match mirobody_server::startup_pages::release_startup_pages() {
///     Ok(bytes) => tracing::debug!(bytes, "start-up pages released"),
///     Err(e) => tracing::debug!(error = %e, "start-up pages kept"),
/// }
/// ```
pub fn release_startup_pages() -> std::io::Result<usize> {
    #[cfg(target_os = "linux")]
    {
        let program = std::fs::read_link("/proc/self/exe")?;
        let smaps = std::fs::read_to_string("/proc/self/smaps")?;
        let mut advised = 0;
        for mapping in read_only_file_mappings(&smaps, &program.to_string_lossy()) {
            linux::page_out(mapping.start, mapping.end - mapping.start)?;
            advised += mapping.end - mapping.start;
        }
        Ok(advised)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "only Linux can reclaim a program's pages"))
    }
}

/// A mapping's address range, `[start, end)`.
#[derive(Debug, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
}

/// The mappings of `path` in `smaps` (the text of `/proc/PID/smaps`) that are not writable and
/// hold no anonymous (copied-on-write) pages: the ones whose every page is the file's own.
fn read_only_file_mappings<'a>(smaps: &'a str, path: &'a str) -> impl Iterator<Item = Mapping> + 'a {
    let mut current: Option<Mapping> = None;
    let mut lines = smaps.lines();
    std::iter::from_fn(move || {
        for line in lines.by_ref() {
            let mut fields = line.split_ascii_whitespace();
            let Some(first) = fields.next() else { continue };
            if !first.ends_with(':') {
                // A mapping's header: `start-end perms offset device inode path`.
                current = parse_header(line, path);
            } else if first == "Anonymous:" {
                let candidate = current.take();
                if fields.next() == Some("0")
                    && let Some(mapping) = candidate
                {
                    return Some(mapping);
                }
            }
        }
        None
    })
}

/// The range of the mapping `header` describes, if it maps `path` and is not writable.
fn parse_header(header: &str, path: &str) -> Option<Mapping> {
    let mut fields = header.splitn(6, ' ');
    let (range, perms) = (fields.next()?, fields.next()?);
    // Offset, device and inode; the path follows after padding and may contain spaces.
    let mapped = fields.nth(3)?.trim_start();
    if mapped != path || perms.as_bytes().get(1) != Some(&b'-') {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    Some(Mapping { start: usize::from_str_radix(start, 16).ok()?, end: usize::from_str_radix(end, 16).ok()? })
}

#[cfg(target_os = "linux")]
mod linux {
    /// Advises the kernel to reclaim `[start, start + len)` now, and to read back only the
    /// pages that are used again rather than the read-ahead window around each (8 MiB on some
    /// machines), which would make resident again much of what was just released.
    pub(super) fn page_out(start: usize, len: usize) -> std::io::Result<()> {
        advise(start, len, libc::MADV_RANDOM)?;
        advise(start, len, libc::MADV_PAGEOUT)
    }

    // The one unsafe call in the server: the standard library has no madvise, and the crates
    // that wrap it (libc, rustix) make it unsafe because other advice can discard memory.
    #[allow(unsafe_code)]
    fn advise(start: usize, len: usize, advice: libc::c_int) -> std::io::Result<()> {
        // SAFETY: the two pieces of advice given (`page_out`) never change what memory holds:
        // MADV_RANDOM only turns read-ahead off, and a page MADV_PAGEOUT reclaims is read back
        // from its file on its next use (the kernel skips pages it cannot reclaim). The range
        // is a whole mapping of this process, read from /proc/self/smaps.
        let status = unsafe { libc::madvise(start as *mut libc::c_void, len, advice) };
        if status == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
5555a0000000-5555a0400000 r--p 00000000 08:01 1234                       /opt/mirobody server
Size:               4096 kB
Rss:                 716 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
5555a0400000-5555a1300000 r-xp 00400000 08:01 1234                       /opt/mirobody server
Size:              15360 kB
Anonymous:             0 kB
5555a1300000-5555a1400000 r--p 01300000 08:01 1234                       /opt/mirobody server
Anonymous:           516 kB
5555a1400000-5555a1410000 rw-p 01400000 08:01 1234                       /opt/mirobody server
Anonymous:            40 kB
5555a1410000-5555a1420000 rw-p 00000000 00:00 0 
Anonymous:            24 kB
7f0000000000-7f0000100000 r-xp 00000000 08:01 99                         /usr/lib/libc.so.6
Anonymous:             0 kB
";

    #[test]
    fn only_the_programs_read_only_mappings_without_copied_pages_are_released() {
        let found: Vec<Mapping> = read_only_file_mappings(SMAPS, "/opt/mirobody server").collect();
        assert_eq!(
            found,
            [
                Mapping { start: 0x5555a0000000, end: 0x5555a0400000 },
                Mapping { start: 0x5555a0400000, end: 0x5555a1300000 },
            ],
            "the relocated (copied) mapping, the writable ones and other files' are left alone"
        );
    }

    #[test]
    fn a_header_without_a_matching_anonymous_line_releases_nothing() {
        let truncated = "5555a0000000-5555a0400000 r--p 00000000 08:01 1234   /bin/x\nRss: 4 kB\n";
        assert_eq!(read_only_file_mappings(truncated, "/bin/x").count(), 0);
        let garbled = "zz-5555a0400000 r--p 00000000 08:01 1234   /bin/x\nAnonymous: 0 kB\n";
        assert_eq!(read_only_file_mappings(garbled, "/bin/x").count(), 0);
    }
}
