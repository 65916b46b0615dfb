//! The child side of sandboxed extraction: a short-lived process that reads one document on
//! stdin and writes its text on stdout, under limits it puts on itself before it reads a byte.
//!
//! The parsers (pdf-extract and lopdf, the Word reader) see untrusted bytes, and some inputs
//! make them recurse without bound, inflate without an output cap or loop for hours. In this
//! process that costs only this process: the kernel ends it at its address-space or CPU limit,
//! a stack overflow aborts it, and the parent reads any such end as "the file could not be
//! read".
//!
//! The protocol, kept private between [`run`] and [`super::sandbox`]: the arguments are the
//! kind (`pdf` or `docx`), the address-space limit in bytes and the CPU limit in seconds; stdin
//! is the document; stdout is one status line (`ok`, `none`, `encrypted`, `too-large` or
//! `damaged <reason>`), followed after `ok` by the text.

use std::io::{Read, Write};

use super::{ContentKind, ExtractError, extract_text};

/// The most bytes the child reads from stdin: more than any upload the server takes.
const MAX_INPUT_BYTES: u64 = 1 << 30;

/// The kind a PDF goes as when poppler's `pdftotext` reads it: its path follows the limits.
pub(super) const POPPLER: &str = "pdf-poppler";

/// The kind as the protocol names it.
pub(super) fn kind_name(kind: ContentKind, poppler: bool) -> Option<&'static str> {
    match kind {
        ContentKind::Pdf if poppler => Some(POPPLER),
        ContentKind::Pdf => Some("pdf"),
        ContentKind::Docx => Some("docx"),
        _ => None,
    }
}

/// Runs the child: `args` are what follows the subcommand. Returns the process exit code: 0
/// whenever a status line was written (a damaged file is an answer, not a failure), 2 for
/// arguments the parent never sends.
pub(super) fn run(args: &[String]) -> u8 {
    // A parser's panic is caught and answered; its message must not reach the parent's log.
    std::panic::set_hook(Box::new(|_| {}));
    let (kind, memory, cpu, poppler) = match args {
        [kind, memory, cpu] => (kind, memory, cpu, None),
        [kind, memory, cpu, poppler] if kind == POPPLER => (kind, memory, cpu, Some(poppler)),
        _ => return 2,
    };
    let kind = match kind.as_str() {
        "pdf" | POPPLER => ContentKind::Pdf,
        "docx" => ContentKind::Docx,
        _ => return 2,
    };
    let (Ok(memory), Ok(cpu)) = (memory.parse::<u64>(), cpu.parse::<u64>()) else { return 2 };
    if let Some(pdftotext) = poppler {
        return hand_over_to_pdftotext(pdftotext, memory, cpu);
    }
    // Limits first, before a byte of the document is read: a child that cannot limit itself
    // refuses to parse rather than parse unbounded.
    if let Err(e) = confine(memory, cpu) {
        return answer(&format!("damaged the server could not confine its reader ({e})"), None);
    }
    let mut input = Vec::new();
    if std::io::stdin().lock().take(MAX_INPUT_BYTES).read_to_end(&mut input).is_err() {
        return answer("damaged it could not be received", None);
    }
    match extract_text(kind, &input) {
        Ok(Some(text)) => answer("ok", Some(&text)),
        Ok(None) => answer("none", None),
        Err(ExtractError::Encrypted) => answer("encrypted", None),
        Err(ExtractError::TooLarge) => answer("too-large", None),
        Err(ExtractError::Damaged(why)) => answer(&format!("damaged {}", why.replace('\n', " ")), None),
        Err(ExtractError::CouldNotRead) => answer("damaged it could not be read", None),
    }
}

fn answer(status: &str, text: Option<&str>) -> u8 {
    let mut out = std::io::stdout().lock();
    let written = writeln!(out, "{status}")
        .and_then(|()| text.map_or(Ok(()), |text| out.write_all(text.as_bytes())))
        .and_then(|()| out.flush());
    if written.is_ok() { 0 } else { 1 }
}

/// Becomes poppler's `pdftotext` (the same process: the parent's deadline still ends it),
/// under this process's limits, after a status line saying so. Only returns when it cannot.
fn hand_over_to_pdftotext(pdftotext: &str, memory: u64, cpu: u64) -> u8 {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if confine_resources(memory, cpu).is_err() {
            return answer("damaged the server could not confine its reader", None);
        }
        // It reads its program and libraries, and nothing it could write to.
        #[cfg(target_os = "linux")]
        forbid_files_but_programs(std::path::Path::new(pdftotext));
        if answer("poppler", None) != 0 {
            return 1;
        }
        // `exec` returns only when it failed; the status line is out, and the parent reads
        // this exit code as "could not read".
        let _ = std::process::Command::new(pdftotext).args(["-q", "-enc", "UTF-8", "-eol", "unix", "-", "-"]).exec();
        99
    }
    #[cfg(not(unix))]
    {
        let _ = (pdftotext, memory, cpu);
        answer("damaged pdftotext runs on Unix only", None)
    }
}

/// Limits this process: address space, CPU seconds, no files written or created, no core
/// dumps, no new processes; and, where the kernel has Landlock, no file opened at all, no
/// network and no signal or abstract socket reaching outside.
fn confine(memory_bytes: u64, cpu_seconds: u64) -> std::io::Result<()> {
    confine_resources(memory_bytes, cpu_seconds)?;
    #[cfg(target_os = "linux")]
    forbid_files();
    Ok(())
}

/// The resource limits of [`confine`].
fn confine_resources(memory_bytes: u64, cpu_seconds: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use rlimit::Resource;
        Resource::AS.set(memory_bytes, memory_bytes)?;
        // The soft limit sends SIGXCPU, which ends the process; the hard one a second later is
        // SIGKILL, should anything catch the first.
        Resource::CPU.set(cpu_seconds, cpu_seconds.saturating_add(1))?;
        Resource::FSIZE.set(0, 0)?;
        Resource::CORE.set(0, 0)?;
        // No fork, so nothing outlives the reader when it is killed. The kernel does not hold
        // root (CAP_SYS_RESOURCE) to this limit: there the process group killed at the
        // deadline is what remains.
        Resource::NPROC.set(0, 0)?;
    }
    #[cfg(not(unix))]
    let _ = (memory_bytes, cpu_seconds);
    Ok(())
}

/// Landlock, best effort: every filesystem access right handled and none granted, so the
/// reader cannot open a file even for reading. Kernels without Landlock run on the limits
/// above alone; stdin and stdout are already open and stay usable.
#[cfg(target_os = "linux")]
fn forbid_files() {
    restrict(Vec::new());
}

/// Like [`forbid_files`], but the system's programs and libraries may be read and run, with
/// the little of `/etc` the dynamic linker and fontconfig read: what `pdftotext` needs to
/// start. A `pdftotext` outside those (under /opt, say) brings its own directory, or its exec
/// would be refused.
#[cfg(target_os = "linux")]
fn forbid_files_but_programs(pdftotext: &std::path::Path) {
    let mut readable: Vec<std::path::PathBuf> =
        ["/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/etc/fonts"].iter().map(Into::into).collect();
    if let Some(home) = pdftotext.canonicalize().ok().and_then(|path| path.parent().map(ToOwned::to_owned))
        && !readable.iter().any(|system| home.starts_with(system))
    {
        readable.push(home);
    }
    restrict(readable);
}

/// Landlock's ruleset for the reader: files only as `readable` allows (paths that do not
/// exist are left out), no TCP bind or connect (ABI 4), and no signal or abstract unix socket
/// reaching a process outside (ABI 6). Best effort: each right the kernel lacks is left out.
#[cfg(target_os = "linux")]
fn restrict(readable: Vec<std::path::PathBuf>) {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules,
    };
    let abi = ABI::V6;
    let restricted = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(abi)))
        .and_then(|ruleset| ruleset.scope(Scope::from_all(abi)))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(readable, AccessFs::from_read(abi))))
        .and_then(|ruleset| ruleset.restrict_self());
    // Not fatal where the kernel has no Landlock: the resource limits hold whatever it offers.
    let _ = restricted;
}
