//! The parent side of sandboxed extraction: [`Extractor`] runs each document's reader in a
//! child process ([`super::child`]) and reads its answer, so that no untrusted document is
//! parsed inside the server.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

use super::{ContentKind, ExtractError, MAX_TEXT_BYTES, child, extract_text};

/// The bounds on one document's reader and on how many run at once.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtractLimits {
    /// The reader's address space, in bytes (default 1 GiB): a decompression bomb ends there.
    pub memory_bytes: u64,
    /// The reader's CPU time, in seconds (default 20).
    pub cpu_seconds: u64,
    /// How long the server waits for a reader before it kills it (default 30 s).
    pub deadline: Duration,
    /// How many readers run at once, server-wide (default 2).
    pub max_running: usize,
    /// Poppler's `pdftotext`, to read PDFs with (default: none, pdf-extract reads them). It
    /// runs as the reader itself, under the same limits, in place of the child that set them.
    pub pdftotext: Option<PathBuf>,
    /// The most text kept of one document, in bytes (default 8 MiB): a reader that writes
    /// more is stopped there, and the text it wrote so far is the answer.
    pub max_text_bytes: usize,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits {
            memory_bytes: 1 << 30,
            cpu_seconds: 20,
            deadline: Duration::from_secs(30),
            max_running: 2,
            pdftotext: None,
            max_text_bytes: MAX_TEXT_BYTES,
        }
    }
}

/// Reads the text of documents in a sandboxed child process, at most
/// [`ExtractLimits::max_running`] at once.
///
/// The child is a program that runs [`child_main`](super::child_main) when given its
/// arguments: `mirobody-server extract` (what [`Extractor::current_exe`] starts), or the
/// `mirobody-extract` binary of this crate for an application with a `main` of its own.
/// Plain text needs no parser and is read in-process.
#[derive(Clone, Debug)]
pub struct Extractor {
    program: PathBuf,
    leading_args: Vec<OsString>,
    limits: ExtractLimits,
    running: Arc<Semaphore>,
}

impl Extractor {
    /// Readers started as `program leading_args... <protocol arguments>`.
    pub fn new(program: impl Into<PathBuf>, leading_args: Vec<OsString>, limits: ExtractLimits) -> Self {
        let running = Arc::new(Semaphore::new(limits.max_running.max(1)));
        Extractor { program: program.into(), leading_args, limits, running }
    }

    /// Readers started as this program's own `extract` subcommand, as `mirobody-server` has.
    pub fn current_exe(limits: ExtractLimits) -> std::io::Result<Self> {
        Ok(Extractor::new(std::env::current_exe()?, vec!["extract".into()], limits))
    }

    /// The limits each reader runs under.
    pub fn limits(&self) -> &ExtractLimits {
        &self.limits
    }

    /// The text of the document in `bytes` (a PDF or Word file, known by its content; text
    /// files are read as they are): `Ok(None)` when it has none (an image, a scan).
    ///
    /// Bytes of no kind the server takes are [`ExtractError::Damaged`].
    pub async fn extract_document(&self, bytes: Vec<u8>) -> Result<Option<String>, ExtractError> {
        match super::sniff(&bytes, None, "") {
            Ok(sniffed) => self.extract(sniffed.kind, bytes).await,
            Err(rejected) => Err(ExtractError::Damaged(rejected.to_string())),
        }
    }

    /// The text of `bytes`, read as `kind`: `Ok(None)` when it has none (an image, a scan).
    ///
    /// Any abnormal end of the reader (killed at a limit or the deadline, crashed, an answer
    /// out of protocol) is [`ExtractError::CouldNotRead`]; nothing of it reaches this process.
    pub(crate) async fn extract(&self, kind: ContentKind, bytes: Vec<u8>) -> Result<Option<String>, ExtractError> {
        let Some(kind_arg) = child::kind_name(kind, self.limits.pdftotext.is_some()) else {
            // Text kinds and images: no parser runs, so nothing needs a sandbox.
            return extract_text(kind, &bytes);
        };
        let _turn = self.running.acquire().await.map_err(|_| ExtractError::CouldNotRead)?;
        let mut child = match self.spawn(kind_arg) {
            Ok(child) => child,
            Err(e) => {
                tracing::warn!(error = %e, "a document reader could not be run");
                return Err(ExtractError::CouldNotRead);
            }
        };
        match tokio::time::timeout(self.limits.deadline, self.converse(&mut child, kind_arg, bytes)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                kill_reader(&mut child);
                tracing::warn!(error = %e, "a document reader could not be run");
                Err(ExtractError::CouldNotRead)
            }
            Err(_) => {
                kill_reader(&mut child);
                tracing::info!(kind = kind_arg, "a document reader passed its deadline and was stopped");
                Err(ExtractError::CouldNotRead)
            }
        }
    }

    fn spawn(&self, kind: &str) -> std::io::Result<tokio::process::Child> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.leading_args)
            .args([kind, &self.limits.memory_bytes.to_string(), &self.limits.cpu_seconds.to_string()])
            .args(self.limits.pdftotext.iter().filter(|_| kind == child::POPPLER))
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        // A group of its own, so that at its end anything it started ends with it.
        #[cfg(unix)]
        command.process_group(0);
        command.spawn()
    }

    // Feeds the document to `child` and reads its answer, stopping it once it has written all
    // the text that is kept.
    async fn converse(
        &self,
        child: &mut tokio::process::Child,
        kind: &str,
        bytes: Vec<u8>,
    ) -> std::io::Result<Result<Option<String>, ExtractError>> {
        let max_text = self.limits.max_text_bytes;
        let mut stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?;
        let mut stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?;
        // Written while the answer is read, so neither side waits on a full pipe. A reader that
        // dies early closes its stdin: the write error is its death, reported by its answer.
        let write = async move {
            let _ = stdin.write_all(&bytes).await;
            drop(stdin);
        };
        let mut answer = Vec::new();
        // The status line and the text, capped: a reader cannot make this process hold more.
        let limit = (max_text as u64).saturating_add(STATUS_ROOM);
        let mut capped = (&mut stdout).take(limit);
        let read = capped.read_to_end(&mut answer);
        let ((), read) = tokio::join!(write, read);
        read?;
        // At the cap the reader is stopped: left to write on, it would block on the full pipe
        // until its deadline, holding a reader's turn. What it wrote so far is its answer.
        let full = answer.len() as u64 >= limit;
        if full {
            drop_incomplete_char(&mut answer);
            kill_reader(child);
        }
        let status = child.wait().await?;
        if let Some(text) = answer.strip_prefix(POPPLER_STATUS) {
            let read = |text: &[u8]| {
                let text = super::pdf::poppler_pages(&String::from_utf8_lossy(text));
                (!text.is_empty()).then(|| super::cap_to(text, max_text))
            };
            if full {
                return Ok(Ok(read(text)));
            }
            // pdftotext answers with its exit code: 0 read, 1 not a PDF it can open, 3 not
            // allowed to copy the text; a signal is a limit it reached.
            return Ok(match status.code() {
                Some(0) => Ok(read(text)),
                Some(1) => Err(ExtractError::Damaged("it is not a PDF that can be opened".to_owned())),
                Some(3) => Err(ExtractError::Encrypted),
                _ => {
                    tracing::info!(kind, %status, "a document reader ended abnormally");
                    Err(ExtractError::CouldNotRead)
                }
            });
        }
        // A reader stopped at the cap ended by our signal, not abnormally.
        if !full && !status.success() {
            tracing::info!(kind, %status, "a document reader ended abnormally");
            return Ok(Err(ExtractError::CouldNotRead));
        }
        Ok(parse_answer(answer, max_text))
    }
}

/// Room for the status line before the text, in what is read of a reader's answer.
const STATUS_ROOM: u64 = 4096;

/// Kills a reader that has not been waited for, and its process group: anything it started
/// ends with it. A reader already waited for is left alone: its id may be another process's.
fn kill_reader(child: &mut tokio::process::Child) {
    #[cfg(unix)]
    if let Some(id) = child.id().and_then(|id| i32::try_from(id).ok()) {
        // The reader leads its own group (`process_group(0)`), so the group's id is its own.
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(id), nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.start_kill();
}

/// Drops an incomplete UTF-8 sequence at the end of `text`, where the cap cut a char: it would
/// read as a replacement character.
fn drop_incomplete_char(text: &mut Vec<u8>) {
    let incomplete = text.utf8_chunks().last().map_or(0, |chunk| chunk.invalid().len());
    text.truncate(text.len() - incomplete);
}

/// The status line of a child that hands over to pdftotext: its text follows, and its exit code
/// says how it went.
const POPPLER_STATUS: &[u8] = b"poppler\n";

/// The child's answer as the parent reports it; anything out of protocol is
/// [`ExtractError::CouldNotRead`].
fn parse_answer(mut answer: Vec<u8>, max_text: usize) -> Result<Option<String>, ExtractError> {
    let Some(end) = answer.iter().position(|&b| b == b'\n') else { return Err(ExtractError::CouldNotRead) };
    let status = String::from_utf8_lossy(&answer[..end]).into_owned();
    match status.split_once(' ').map_or((status.as_str(), ""), |(word, rest)| (word, rest)) {
        ("ok", _) => {
            let text = answer.split_off(end + 1);
            // A reader that passed the cap is cut, on a char boundary, as in-process text is.
            let text = String::from_utf8_lossy(&text).into_owned();
            Ok(Some(super::cap_to(text, max_text)))
        }
        ("none", _) => Ok(None),
        ("encrypted", _) => Err(ExtractError::Encrypted),
        ("too-large", _) => Err(ExtractError::TooLarge),
        ("damaged", why) if !why.is_empty() => Err(ExtractError::Damaged(why.to_owned())),
        _ => Err(ExtractError::CouldNotRead),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_answer_of(answer: Vec<u8>) -> Result<Option<String>, ExtractError> {
        parse_answer(answer, MAX_TEXT_BYTES)
    }

    #[test]
    fn an_answer_cut_at_the_cap_loses_only_the_char_it_cut() {
        let mut cut = "ok\nTempérature".as_bytes()[..8].to_vec();
        drop_incomplete_char(&mut cut);
        assert_eq!(cut, b"ok\nTemp");
        let mut whole = b"ok\nabc".to_vec();
        drop_incomplete_char(&mut whole);
        assert_eq!(whole, b"ok\nabc");
        assert_eq!(parse_answer(b"ok\nGlucose 5.4\n".to_vec(), 7).unwrap(), Some("Glucose".to_owned()));
    }

    #[test]
    fn answers_in_protocol_are_read_and_others_could_not_be_read() {
        assert_eq!(parse_answer_of(b"ok\nGlucose 5.4\n".to_vec()).unwrap(), Some("Glucose 5.4\n".to_owned()));
        assert_eq!(parse_answer_of(b"none\n".to_vec()).unwrap(), None);
        assert!(matches!(parse_answer_of(b"encrypted\n".to_vec()), Err(ExtractError::Encrypted)));
        assert!(matches!(parse_answer_of(b"too-large\n".to_vec()), Err(ExtractError::TooLarge)));
        assert!(
            matches!(parse_answer_of(b"damaged no xref\n".to_vec()), Err(ExtractError::Damaged(why)) if why == "no xref")
        );
        for garbage in [&b""[..], b"ok", b"running 0 tests\n", b"damaged\n", b"\xff\xfe\n"] {
            assert!(matches!(parse_answer_of(garbage.to_vec()), Err(ExtractError::CouldNotRead)), "{garbage:?}");
        }
    }
}
