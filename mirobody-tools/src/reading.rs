//! Reading the text of uploaded documents after the upload is answered: a queue per person,
//! served in turn, each document read by the sandboxed [`Extractor`].
//!
//! The queue lives in the file index (`text_state`), so it outlives the process: a
//! [`TextReader`] started on a store with files still waiting reads them, and a file claimed by
//! a process that died is taken again once its claim lapses. In memory there is only the order
//! in which people are served: one document per person at a time, the next person's next, so
//! one person's hundred uploads do not keep anyone else waiting behind them.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, broadcast};

use crate::backends::OpenedBackends;
use crate::extract::{ContentKind, Extractor};
use crate::health::{FileRecord, HealthStore, TextState};

/// How long a claim on a file holds before another reader may take it.
const CLAIM_LEASE: Duration = Duration::from_secs(300);
/// How many times a file's reading is tried (a claim that lapsed counts) before it is
/// settled as unreadable: a document that takes its reader's process down with it each time
/// must not be retried forever.
const MAX_ATTEMPTS: u32 = 3;
/// How often an idle reader looks for work it was not told about (files waiting after another
/// instance died, lapsed claims).
const RESCAN: Duration = Duration::from_secs(30);

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
        };
        TextReader { shared: Arc::new(shared) }
    }

    /// Starts [`ExtractLimits::max_running`](crate::extract::ExtractLimits::max_running)
    /// readers on the current tokio runtime, which first queue every file already waiting in
    /// the store. A second call does nothing.
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
        let rescan = self.clone();
        tokio::spawn(async move { rescan.queue_waiting().await });
    }

    /// Queues `owner`'s waiting files (after an upload of theirs).
    pub fn wake(&self, owner: &str) {
        self.shared.turns.lock().unwrap_or_else(|p| p.into_inner()).push(owner);
        self.shared.work.notify_one();
    }

    /// `owner`'s file `file_key` once its text is settled, or as it stands after `wait`.
    pub async fn settled(&self, owner: &str, file_key: &str, wait: Duration) -> Option<FileRecord> {
        let mut settled = self.shared.settled.subscribe();
        let read = || async { self.shared.backends.sql().file(owner, file_key).await.ok().flatten() };
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
        match self.shared.backends.sql().owners_waiting_for_text().await {
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
    let reader = TextReader { shared: Arc::clone(&shared) };
    loop {
        let next = shared.turns.lock().unwrap_or_else(|p| p.into_inner()).next();
        let Some(owner) = next else {
            if tokio::time::timeout(RESCAN, shared.work.notified()).await.is_err() {
                reader.queue_waiting().await;
            }
            continue;
        };
        let more = read_one(&shared, &owner).await;
        let mut turns = shared.turns.lock().unwrap_or_else(|p| p.into_inner());
        turns.serving.remove(&owner);
        if more {
            turns.push(&owner);
            drop(turns);
            shared.work.notify_one();
        }
    }
}

// Reads `owner`'s next waiting file; whether they may have more.
async fn read_one(shared: &Shared, owner: &str) -> bool {
    let sql = shared.backends.sql();
    let lease = i64::try_from(CLAIM_LEASE.as_millis()).unwrap_or(i64::MAX);
    let claimed = match sql.claim_text(owner, lease).await {
        Ok(Some(claimed)) => claimed,
        Ok(None) => return false,
        Err(e) => {
            tracing::warn!(error = %e, "a file waiting to be read could not be claimed");
            return false;
        }
    };
    let outcome = if claimed.attempts > MAX_ATTEMPTS {
        Err("Reading its text failed each time it was tried; the file is stored as it is.".to_owned())
    } else {
        read_text(shared, &claimed.file_key, &claimed.mime_type).await
    };
    let settled = match &outcome {
        Ok(text_key) => sql.settle_text(owner, &claimed.file_key, Ok(text_key.as_deref())).await,
        Err(why) => sql.settle_text(owner, &claimed.file_key, Err(why)).await,
    };
    match settled {
        Ok(()) => {
            tracing::info!(file_key = claimed.file_key, has_text = matches!(outcome, Ok(Some(_))), "file read");
            let _ = shared.settled.send(claimed.file_key);
        }
        // The claim lapses and another reader takes the file again.
        Err(e) => tracing::warn!(error = %e, "a file's text could not be settled"),
    }
    true
}

// Reads the text of a stored file and stores it beside it: its key, or none when the file has
// no text, or why it could not be read.
async fn read_text(shared: &Shared, file_key: &str, mime: &str) -> Result<Option<String>, String> {
    let storage = shared.backends.storage().ok_or("File storage is not configured on this server.")?;
    let kind = match mime {
        crate::extract::PDF_MIME => ContentKind::Pdf,
        crate::extract::DOCX_MIME => ContentKind::Docx,
        // Only documents wait; anything else has nothing to read here.
        _ => return Ok(None),
    };
    let bytes = storage.get(file_key).await.map_err(|e| format!("The file could not be read from storage: {e}"))?;
    let text = match shared.extractor.extract(kind, bytes.to_vec()).await {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("No text could be read from it: {e}")),
    };
    let text_key = format!("{file_key}.trans");
    storage
        .put(&text_key, text.into_bytes(), "text/plain")
        .await
        .map_err(|e| format!("Its text could not be stored: {e}"))?;
    Ok(Some(text_key))
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
}
