//! Reading the text of uploaded documents after the upload is answered: a queue per person,
//! served in turn, each document read by the sandboxed [`Extractor`].
//!
//! The queue lives in the file index (`text_state`), so it outlives the process: a
//! [`TextReader`] started on a store with files still waiting reads them, and a file claimed by
//! a process that died is taken again once its claim lapses. In memory there is only the order
//! in which people are served: one document per person at a time, the next person's next, so
//! one person's hundred uploads do not keep anyone else waiting behind them.

use std::collections::{HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{Notify, broadcast};

use crate::extract::{ContentKind, Extractor};
use mirobody_health::{FileRecord, TextState};
use mirobody_store::OpenedBackends;

/// How long a claim on a file holds before another reader may take it.
const CLAIM_LEASE: Duration = Duration::from_secs(300);
/// How many times a file's reading is tried (a claim that lapsed counts) before it is
/// settled as unreadable: a document that takes its reader's process down with it each time
/// must not be retried forever.
const MAX_ATTEMPTS: u32 = 3;
/// How often the readers look for work they were not told about (files waiting after another
/// instance died, lapsed claims), busy or not.
const RESCAN: Duration = Duration::from_secs(30);
/// The longest one document's turn may take, its storage reads and writes included: past it
/// the reader gives up the turn, and the file's claim lapses before it is taken again.
const TURN_LIMIT: Duration = Duration::from_secs(CLAIM_LEASE.as_secs() / 2);
/// How many times a reader tries to claim a person's next file before it ends their turn: a
/// claim lost to another instance's reader is not the end of their queue.
const CLAIM_TRIES: u32 = 2;

/// The background readers of uploads' text. Cheap to clone.
#[derive(Clone)]
pub struct TextReader {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for TextReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextReader").field("extractor", &self.shared.extractor).finish_non_exhaustive()
    }
}

struct Shared {
    backends: Arc<OpenedBackends>,
    extractor: Extractor,
    turns: Mutex<Turns>,
    work: Notify,
    // Each settled file's key, for those waiting to read its text.
    settled: broadcast::Sender<String>,
    started: AtomicBool,
    rescan_ms: AtomicU64,
}

// Who is served next: each person with work once, in order; those being served are skipped.
#[derive(Default)]
struct Turns {
    order: VecDeque<String>,
    queued: HashSet<String>,
    serving: HashSet<String>,
}

impl Turns {
    fn push(&mut self, owner: &str) {
        if self.queued.insert(owner.to_owned()) {
            self.order.push_back(owner.to_owned());
        }
    }

    // The first person in line who is not being served, taken out of the line.
    fn next(&mut self) -> Option<String> {
        let at = self.order.iter().position(|owner| !self.serving.contains(owner))?;
        let owner = self.order.remove(at)?;
        self.queued.remove(&owner);
        self.serving.insert(owner.clone());
        Some(owner)
    }
}

impl TextReader {
    /// Readers of the files in `backends`, each document read by `extractor`; none runs
    /// until [`start`](Self::start). Files queued before then wait.
    pub fn new(backends: Arc<OpenedBackends>, extractor: Extractor) -> TextReader {
        let (settled, _) = broadcast::channel(64);
        let shared = Shared {
            backends,
            extractor,
            turns: Mutex::default(),
            work: Notify::new(),
            settled,
            started: AtomicBool::new(false),
            rescan_ms: AtomicU64::new(RESCAN.as_millis() as u64),
        };
        TextReader { shared: Arc::new(shared) }
    }

    /// The same readers, looking for files waiting unannounced every `period` (default 30 s)
    /// once started.
    pub fn with_rescan(self, period: Duration) -> TextReader {
        let millis = u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1);
        self.shared.rescan_ms.store(millis, Ordering::SeqCst);
        self
    }

    /// The people waiting in line for a reader, and those being served now (the extraction
    /// queue as this instance holds it; the files themselves wait in the file index).
    pub fn people_waiting(&self) -> usize {
        let turns = self.shared.turns.lock().unwrap_or_else(|p| p.into_inner());
        turns.order.len() + turns.serving.len()
    }

    /// Starts [`ExtractLimits::max_running`](crate::extract::ExtractLimits::max_running)
    /// readers on the current tokio runtime, and a timer that queues every file waiting in the
    /// store, at once and then every rescan period. A second call does nothing.
    ///
    /// Only a process that serves should start them: a reader claims a file for minutes, and
    /// one ended mid-read (a CLI command exiting) would keep the file waiting that long.
    pub fn start(&self) {
        if self.shared.started.swap(true, Ordering::SeqCst) {
            return;
        }
        for _ in 0..self.shared.extractor.limits().max_running.max(1) {
            tokio::spawn(work(Arc::clone(&self.shared)));
        }
        // On its own timer: with steady uploads no reader is ever idle, and a file whose claim
        // lapsed would otherwise wait until its owner uploads again.
        let rescan = self.clone();
        let period = Duration::from_millis(self.shared.rescan_ms.load(Ordering::SeqCst));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                rescan.queue_waiting().await;
            }
        });
    }

    /// Queues `owner`'s waiting files (after an upload of theirs).
    pub fn wake(&self, owner: &str) {
        self.shared.turns.lock().unwrap_or_else(|p| p.into_inner()).push(owner);
        self.shared.work.notify_one();
    }

    /// `owner`'s file `file_key` once its text is settled, or as it stands after `wait`.
    pub async fn settled(&self, owner: &str, file_key: &str, wait: Duration) -> Option<FileRecord> {
        let mut settled = self.shared.settled.subscribe();
        let read = || async { self.shared.backends.health().file(owner, file_key).await.ok().flatten() };
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let file = read().await?;
            if file.text_state != TextState::Waiting {
                return Some(file);
            }
            // Any settled file wakes us; a lagged channel only means many did.
            match tokio::time::timeout_at(deadline, settled.recv()).await {
                Err(_) => return read().await,
                Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(broadcast::error::RecvError::Closed)) => return Some(file),
            }
        }
    }

    // Queues every owner with waiting files in the store.
    async fn queue_waiting(&self) {
        match self.shared.backends.health().owners_waiting_for_text().await {
            Ok(owners) => {
                let mut turns = self.shared.turns.lock().unwrap_or_else(|p| p.into_inner());
                for owner in &owners {
                    turns.push(owner);
                }
                drop(turns);
                for _ in &owners {
                    self.shared.work.notify_one();
                }
            }
            Err(e) => tracing::warn!(error = %e, "the files waiting to be read could not be listed"),
        }
    }
}

// One reader: serves the next person in line one document, then goes to the back of the line.
async fn work(shared: Arc<Shared>) {
    loop {
        let next = shared.turns.lock().unwrap_or_else(|p| p.into_inner()).next();
        let Some(owner) = next else {
            shared.work.notified().await;
            continue;
        };
        let mut turn = Turn { turns: &shared.turns, work: &shared.work, owner: &owner, more: true };
        // A panic or a read that never returns (storage that hangs) ends the turn, not the
        // reader: the guard hands the owner back, and the file's claim lapses.
        let read = AssertUnwindSafe(read_one(&shared, &owner)).catch_unwind();
        match tokio::time::timeout(TURN_LIMIT, read).await {
            Ok(Ok(more)) => turn.more = more,
            Ok(Err(_)) => tracing::warn!("reading a file's text panicked"),
            Err(_) => tracing::warn!("reading a file's text took longer than its turn"),
        }
    }
}

// One person's turn with a reader: however it ends, they are no longer being served, and
// back in line if they may have more.
struct Turn<'a> {
    turns: &'a Mutex<Turns>,
    work: &'a Notify,
    owner: &'a str,
    more: bool,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
        turns.serving.remove(self.owner);
        if self.more {
            turns.push(self.owner);
            drop(turns);
            self.work.notify_one();
        }
    }
}

// Reads `owner`'s next waiting file; whether they may have more.
async fn read_one(shared: &Shared, owner: &str) -> bool {
    let sql = shared.backends.health();
    let lease = i64::try_from(CLAIM_LEASE.as_millis()).unwrap_or(i64::MAX);
    let mut claimed = None;
    for _ in 0..CLAIM_TRIES {
        match sql.claim_text(owner, lease).await {
            Ok(Some(claim)) => {
                claimed = Some(claim);
                break;
            }
            // Nothing, or a claim another instance won at the same moment: look once more.
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "a file waiting to be read could not be claimed");
                return false;
            }
        }
    }
    let Some(claimed) = claimed else { return false };
    let outcome = if claimed.attempts > MAX_ATTEMPTS {
        Read::Unreadable("Reading its text failed each time it was tried; the file is stored as it is.".to_owned())
    } else {
        let started = std::time::Instant::now();
        let read = read_text(shared, &claimed.file_key, &claimed.mime_type).await;
        metrics::histogram!(EXTRACTION_DURATION).record(started.elapsed());
        read
    };
    metrics::counter!(EXTRACTIONS, "outcome" => outcome.label()).increment(1);
    let settled = match &outcome {
        Read::Text(text_key) => sql.settle_text(owner, &claimed.file_key, Ok(text_key.as_deref())).await,
        Read::Unreadable(why) => sql.settle_text(owner, &claimed.file_key, Err(why)).await,
        Read::Later(why) => {
            // Left claimed: the claim lapses, and the file is tried again (MAX_ATTEMPTS bounds it).
            tracing::warn!(file_key = claimed.file_key, error = why, "a file's text will be read again later");
            return true;
        }
    };
    match settled {
        Ok(()) => {
            tracing::info!(file_key = claimed.file_key, has_text = matches!(outcome, Read::Text(Some(_))), "file read");
            let _ = shared.settled.send(claimed.file_key);
        }
        // The claim lapses and another reader takes the file again.
        Err(e) => tracing::warn!(error = %e, "a file's text could not be settled"),
    }
    true
}

/// Documents read by the text readers, by `outcome`: `text`, `no_text` (read, nothing to
/// keep), `unreadable` (never will be), `later` (tried again once storage answers).
pub const EXTRACTIONS: &str = "mirobody_extractions_total";

/// How long reading one document took, its storage reads and writes included.
pub const EXTRACTION_DURATION: &str = "mirobody_extraction_duration_seconds";

// How one reading ended.
enum Read {
    // The key its text is stored under, or none when it has no text.
    Text(Option<String>),
    // Why it will never be read.
    Unreadable(String),
    // Why it could not be read now (storage failed): it is tried again later.
    Later(String),
}

impl Read {
    fn label(&self) -> &'static str {
        match self {
            Read::Text(Some(_)) => "text",
            Read::Text(None) => "no_text",
            Read::Unreadable(_) => "unreadable",
            Read::Later(_) => "later",
        }
    }
}

// Reads the text of a stored file and stores it beside it.
async fn read_text(shared: &Shared, file_key: &str, mime: &str) -> Read {
    let Some(storage) = shared.backends.storage() else {
        return Read::Unreadable("File storage is not configured on this server.".to_owned());
    };
    let kind = match mime {
        crate::extract::PDF_MIME => ContentKind::Pdf,
        crate::extract::DOCX_MIME => ContentKind::Docx,
        // Only documents wait; anything else has nothing to read here.
        _ => return Read::Text(None),
    };
    let bytes = match storage.get(file_key).await {
        Ok(bytes) => bytes,
        Err(e) => return Read::Later(format!("The file could not be read from storage: {e}")),
    };
    let text = match shared.extractor.extract(kind, bytes.to_vec()).await {
        Ok(Some(text)) => text,
        Ok(None) => return Read::Text(None),
        Err(e) => return Read::Unreadable(format!("No text could be read from it: {e}")),
    };
    let text_key = format!("{file_key}.trans");
    match storage.put(&text_key, text.into_bytes(), "text/plain").await {
        Ok(_) => Read::Text(Some(text_key)),
        Err(e) => Read::Later(format!("Its text could not be stored: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_are_served_in_turn_and_one_at_a_time_each() {
        let mut turns = Turns::default();
        turns.push("alice");
        turns.push("alice");
        turns.push("bob");
        assert_eq!(turns.next().as_deref(), Some("alice"));
        // Alice is being served: queued again, she waits behind Bob.
        turns.push("alice");
        assert_eq!(turns.next().as_deref(), Some("bob"));
        assert_eq!(turns.next(), None, "alice is still being served");
        turns.serving.remove("alice");
        assert_eq!(turns.next().as_deref(), Some("alice"));
        assert_eq!(turns.next(), None);
    }

    #[tokio::test]
    async fn a_turn_that_panics_hands_its_owner_back() {
        let turns = Mutex::new(Turns::default());
        let work = Notify::new();
        turns.lock().unwrap().push("alice");
        let owner = turns.lock().unwrap().next().unwrap();
        let read = async {
            let _turn = Turn { turns: &turns, work: &work, owner: &owner, more: true };
            panic!("a parser's bug");
        };
        assert!(AssertUnwindSafe(read).catch_unwind().await.is_err());
        // No longer being served, and back in line, with a reader woken for her.
        assert!(turns.lock().unwrap().serving.is_empty());
        assert_eq!(turns.lock().unwrap().next().as_deref(), Some("alice"));
        tokio::time::timeout(Duration::from_secs(1), work.notified()).await.expect("a reader is woken");
        // A turn that ends with nothing more leaves her out of line.
        drop(Turn { turns: &turns, work: &work, owner: &owner, more: false });
        assert!(turns.lock().unwrap().serving.is_empty());
        assert_eq!(turns.lock().unwrap().next(), None);
    }
}
