//! The access log's writer: records go to one task through a bounded queue, so a burst of
//! calls never piles up tasks or memory. A record of one's own data that finds the queue full
//! is dropped and counted, and the count is logged. A read of another person's data is never
//! dropped: the call holds room in the queue before it reads ([`CallAccess`], the
//! `ReadRecorder` of its context), waiting a bounded time for it, or the read fails. A call's
//! record is written at its end, a task's when the task ends.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mirobody_core::{ReadNotRecorded, ReadRecorder};
use mirobody_ports::{AccessKind, AccessLog, AccessOutcome};
use serde::Deserialize;
use tokio::sync::mpsc;

/// The longest name kept in a record, in characters: a caller cannot make the log store
/// arbitrary text.
const MAX_NAME_CHARS: usize = 128;

/// The most other people whose data one call may read: each holds a place in the queue.
pub(crate) const MAX_SUBJECTS_PER_CALL: usize = 16;

/// The most old entries one purge forgets; a full batch is followed by another soon after.
const PURGE_BATCH: u64 = 1_000;

/// How the access log is written and kept. It reads from configuration too (durations by
/// [`human_duration`](crate::human_duration)), as mirobody-server's `access_log` section.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AccessLogOptions {
    /// Records waiting to be written, at most. Past it a record of one's own data is dropped
    /// (counted, and a warning logged); a read of another person's data waits.
    pub queue: usize,
    /// How long a read of another person's data waits for room in a full queue before it
    /// fails.
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub read_wait: Duration,
    /// How long entries are kept; zero keeps them for ever. Older ones are purged hourly.
    #[serde(deserialize_with = "crate::human_duration::deserialize")]
    pub retention: Duration,
}

impl Default for AccessLogOptions {
    fn default() -> Self {
        AccessLogOptions {
            queue: 1024,
            read_wait: Duration::from_secs(5),
            retention: Duration::from_secs(400 * 24 * 3600),
        }
    }
}

impl AccessLogOptions {
    /// The same options with another queue bound (at least 1).
    pub fn with_queue(mut self, queue: usize) -> Self {
        self.queue = queue;
        self
    }

    /// The same options with another wait for a read of another person's data.
    pub fn with_read_wait(mut self, wait: Duration) -> Self {
        self.read_wait = wait;
        self
    }

    /// The same options with another retention (zero: for ever).
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }
}

pub(crate) struct Record {
    user_id: String,
    subject: Option<String>,
    kind: AccessKind,
    name: String,
    outcome: AccessOutcome,
    duration_ms: u64,
}

/// Hands records to an [`AccessLog`] from one task of its own, started at the first record.
#[derive(Clone)]
pub(crate) struct AccessWriter {
    inner: Arc<Inner>,
}

struct Inner {
    log: Arc<dyn AccessLog>,
    queue: OnceLock<mpsc::Sender<Record>>,
    dropped: AtomicU64,
    options: AccessLogOptions,
}

impl AccessWriter {
    pub(crate) fn new(log: Arc<dyn AccessLog>, options: AccessLogOptions) -> Self {
        let inner = Inner { log, queue: OnceLock::new(), dropped: AtomicU64::new(0), options };
        AccessWriter { inner: Arc::new(inner) }
    }

    /// Queues one record of `user_id`'s own access; never waits. Called from within a tokio
    /// runtime.
    pub(crate) fn record(&self, user_id: &str, kind: AccessKind, name: &str, outcome: AccessOutcome, took: Duration) {
        let record = Record {
            user_id: user_id.to_owned(),
            subject: None,
            kind,
            name: name.chars().take(MAX_NAME_CHARS).collect(),
            outcome,
            duration_ms: millis(took),
        };
        if self.sender().try_send(record).is_err() {
            let dropped = self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            if dropped == 0 {
                tracing::warn!("the access log's queue is full: records of callers' own data are dropped");
            }
        }
    }

    /// Room for one record, waiting at most the configured time for it.
    async fn reserve(&self) -> Option<mpsc::OwnedPermit<Record>> {
        let sender = self.sender().clone();
        tokio::time::timeout(self.inner.options.read_wait, sender.reserve_owned()).await.ok()?.ok()
    }

    /// Records dropped so far and not yet reported.
    #[cfg(test)]
    fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    fn sender(&self) -> &mpsc::Sender<Record> {
        self.inner.queue.get_or_init(|| self.start())
    }

    fn start(&self) -> mpsc::Sender<Record> {
        let (tx, mut rx) = mpsc::channel::<Record>(self.inner.options.queue.max(1));
        // Weak: the task ends when the engine and its queue are gone.
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            while let Some(record) = rx.recv().await {
                let Some(inner) = inner.upgrade() else { break };
                let Record { user_id, subject, kind, name, outcome, duration_ms } = record;
                let subject = subject.as_deref();
                if let Err(e) = inner.log.record(&user_id, subject, kind, &name, outcome, duration_ms).await {
                    tracing::warn!(error = %e, "access log write failed");
                }
                let dropped = inner.dropped.swap(0, Ordering::Relaxed);
                if dropped > 0 {
                    tracing::warn!(dropped, "access log records dropped: the writer fell behind");
                }
            }
        });
        let retention = self.inner.options.retention;
        if !retention.is_zero() {
            tokio::spawn(purge_every_hour(Arc::downgrade(&self.inner), retention));
        }
        tx
    }
}

// Forgets entries older than `retention`, an hour apart, in bounded batches.
async fn purge_every_hour(inner: std::sync::Weak<Inner>, retention: Duration) {
    let mut timer = tokio::time::interval(Duration::from_secs(3600));
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let before = mirobody_core::clock::now_ms().saturating_sub(retention.as_millis() as i64);
        match inner.log.purge_before(before, PURGE_BATCH).await {
            Ok(removed) if removed >= PURGE_BATCH => timer.reset_after(Duration::from_millis(100)),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not purge the access log"),
        }
    }
}

fn millis(took: Duration) -> u64 {
    u64::try_from(took.as_millis()).unwrap_or(u64::MAX)
}

/// One call's record, written when it ends: one entry, or when it read other people's data,
/// one entry per person, each naming them, in room held before the read.
pub(crate) struct CallAccess {
    writer: AccessWriter,
    user_id: String,
    kind: AccessKind,
    name: String,
    started: Instant,
    reads: Mutex<Vec<(String, mpsc::OwnedPermit<Record>)>>,
    finished: AtomicBool,
}

impl CallAccess {
    pub(crate) fn new(writer: &AccessWriter, user_id: &str, kind: AccessKind, name: &str) -> Self {
        CallAccess {
            writer: writer.clone(),
            user_id: user_id.to_owned(),
            kind,
            name: name.chars().take(MAX_NAME_CHARS).collect(),
            started: Instant::now(),
            reads: Mutex::new(Vec::new()),
            finished: AtomicBool::new(false),
        }
    }

    /// Writes the call's record with `outcome`, once: a later call does nothing.
    pub(crate) fn finish(&self, outcome: AccessOutcome) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        let reads = std::mem::take(&mut *self.reads.lock().unwrap_or_else(|p| p.into_inner()));
        if reads.is_empty() {
            self.writer.record(&self.user_id, self.kind, &self.name, outcome, self.started.elapsed());
            return;
        }
        for (subject, permit) in reads {
            permit.send(self.record(Some(subject), outcome));
        }
    }

    fn record(&self, subject: Option<String>, outcome: AccessOutcome) -> Record {
        Record {
            user_id: self.user_id.clone(),
            subject,
            kind: self.kind,
            name: self.name.clone(),
            outcome,
            duration_ms: millis(self.started.elapsed()),
        }
    }
}

impl Drop for CallAccess {
    // A call dropped before its end (its client went, or it was stopped) after it reached other
    // people's data still leaves their entries, as cancelled; its own entry is not written.
    fn drop(&mut self) {
        if self.finished.load(Ordering::Acquire) {
            return;
        }
        let reads = std::mem::take(&mut *self.reads.lock().unwrap_or_else(|p| p.into_inner()));
        for (subject, permit) in reads {
            permit.send(self.record(Some(subject), AccessOutcome::Cancelled));
        }
    }
}

#[async_trait]
impl ReadRecorder for CallAccess {
    async fn reads_data_of(&self, subject: &str) -> Result<(), ReadNotRecorded> {
        if subject == self.user_id {
            return Ok(());
        }
        {
            let reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
            if reads.iter().any(|(noted, _)| noted == subject) {
                return Ok(());
            }
            if reads.len() >= MAX_SUBJECTS_PER_CALL {
                return Err(ReadNotRecorded(format!(
                    "One call may read the data of at most {MAX_SUBJECTS_PER_CALL} other people; ask about fewer."
                )));
            }
        }
        let Some(permit) = self.writer.reserve().await else {
            tracing::warn!("a read of another person's data was refused: the access log could not take it");
            return Err(ReadNotRecorded(
                "The server is too busy to record this read of another person's data, so it did not read it. \
                 Try again in a moment."
                    .to_owned(),
            ));
        };
        let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
        if self.finished.load(Ordering::Acquire) {
            // Finished meanwhile (a call does not do this): give the room back.
            return Ok(());
        }
        reads.push((subject.to_owned(), permit));
        Ok(())
    }
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
