//! The access log's writer: records go to one task through a bounded queue, so a burst of
//! calls never piles up tasks or memory; a record that finds the queue full is dropped and
//! counted, and the count is logged when the writer catches up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mirobody_ports::{AccessKind, AccessLog, AccessOutcome};
use tokio::sync::mpsc;

/// Records waiting to be written, at most.
pub(crate) const QUEUED_RECORDS: usize = 1024;

/// The longest name kept in a record, in characters: a caller cannot make the log store
/// arbitrary text.
const MAX_NAME_CHARS: usize = 128;

struct Record {
    user_id: String,
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
    capacity: usize,
}

impl AccessWriter {
    pub(crate) fn new(log: Arc<dyn AccessLog>) -> Self {
        Self::with_capacity(log, QUEUED_RECORDS)
    }

    fn with_capacity(log: Arc<dyn AccessLog>, capacity: usize) -> Self {
        let inner = Inner { log, queue: OnceLock::new(), dropped: AtomicU64::new(0), capacity };
        AccessWriter { inner: Arc::new(inner) }
    }

    /// Queues one record; never waits. Called from within a tokio runtime.
    pub(crate) fn record(&self, user_id: &str, kind: AccessKind, name: &str, outcome: AccessOutcome, took: Duration) {
        let record = Record {
            user_id: user_id.to_owned(),
            kind,
            name: name.chars().take(MAX_NAME_CHARS).collect(),
            outcome,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        };
        let queue = self.inner.queue.get_or_init(|| self.start());
        if queue.try_send(record).is_err() {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records dropped so far and not yet reported.
    #[cfg(test)]
    fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    fn start(&self) -> mpsc::Sender<Record> {
        let (tx, mut rx) = mpsc::channel::<Record>(self.inner.capacity);
        // Weak: the task ends when the engine and its queue are gone.
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            while let Some(record) = rx.recv().await {
                let Some(inner) = inner.upgrade() else { break };
                let Record { user_id, kind, name, outcome, duration_ms } = record;
                if let Err(e) = inner.log.record(&user_id, kind, &name, outcome, duration_ms).await {
                    tracing::warn!(error = %e, "access log write failed");
                }
                let dropped = inner.dropped.swap(0, Ordering::Relaxed);
                if dropped > 0 {
                    tracing::warn!(dropped, "access log records dropped: the writer fell behind");
                }
            }
        });
        tx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use mirobody_core::BackendError;
    use std::sync::Mutex;

    // A log that holds every write until the gate opens.
    #[derive(Default)]
    struct Gated {
        gate: tokio::sync::Notify,
        written: Mutex<Vec<(String, AccessOutcome, String)>>,
    }

    #[async_trait]
    impl AccessLog for Gated {
        async fn record(
            &self,
            user_id: &str,
            _kind: AccessKind,
            name: &str,
            outcome: AccessOutcome,
            _duration_ms: u64,
        ) -> Result<(), BackendError> {
            self.gate.notified().await;
            self.written.lock().unwrap().push((user_id.to_owned(), outcome, name.to_owned()));
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_burst_past_the_queue_is_dropped_and_counted_not_piled_up() {
        let log = Arc::new(Gated::default());
        let writer = AccessWriter::with_capacity(log.clone(), 4);
        // The writer holds one record at the gate and four more queue; the rest are dropped.
        for n in 0..100 {
            writer.record("u1", AccessKind::Tool, &format!("t{n}"), AccessOutcome::Hidden, Duration::ZERO);
            tokio::task::yield_now().await;
        }
        // At most one at the gate and four queued: the rest were dropped.
        assert!(writer.dropped() >= 95, "dropped {}", writer.dropped());
        for _ in 0..5 {
            log.gate.notify_one();
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
        }
        let written = log.written.lock().unwrap().clone();
        assert!((4..=5).contains(&written.len()), "{written:?}");
        assert!(written.iter().all(|(user, outcome, _)| user == "u1" && *outcome == AccessOutcome::Hidden));
        assert_eq!(writer.dropped(), 0, "the count was reported once the writer caught up");
    }

    #[tokio::test]
    async fn names_are_cut() {
        let log = Arc::new(Gated::default());
        let writer = AccessWriter::new(log.clone());
        writer.record("u1", AccessKind::Resource, &"é".repeat(1000), AccessOutcome::Ok, Duration::ZERO);
        log.gate.notify_one();
        while log.written.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(log.written.lock().unwrap()[0].2.chars().count(), MAX_NAME_CHARS);
    }
}
