//! The access log's writer under pressure: own-data records dropped and counted, reads of
//! another person's data waiting for room or refused, never dropped.

use super::*;
use mirobody_core::BackendError;
use mirobody_ports::DataRead;

type Written = (String, Option<String>, AccessOutcome, String);

// A log that holds every write until the gate opens.
#[derive(Default)]
struct Gated {
    gate: tokio::sync::Notify,
    written: Mutex<Vec<Written>>,
}

#[async_trait]
impl AccessLog for Gated {
    async fn record(
        &self,
        user_id: &str,
        subject: Option<&str>,
        _kind: AccessKind,
        name: &str,
        outcome: AccessOutcome,
        _duration_ms: u64,
    ) -> Result<(), BackendError> {
        self.gate.notified().await;
        let entry = (user_id.to_owned(), subject.map(str::to_owned), outcome, name.to_owned());
        self.written.lock().unwrap().push(entry);
        Ok(())
    }

    async fn reads_of(&self, _: &str, _: Option<i64>, _: u32) -> Result<Vec<DataRead>, BackendError> {
        Ok(Vec::new())
    }

    async fn purge_before(&self, _: i64, _: u64) -> Result<u64, BackendError> {
        Ok(0)
    }
}

impl Gated {
    fn written(&self) -> Vec<Written> {
        self.written.lock().unwrap().clone()
    }

    // Opens the gate for one write and waits until it is done.
    async fn let_one_through(&self) {
        let before = self.written().len();
        self.gate.notify_one();
        while self.written().len() == before {
            tokio::task::yield_now().await;
        }
    }
}

fn options(queue: usize) -> AccessLogOptions {
    AccessLogOptions::default().with_queue(queue).with_retention(Duration::ZERO)
}

#[tokio::test]
async fn a_burst_past_the_queue_is_dropped_and_counted_not_piled_up() {
    let log = Arc::new(Gated::default());
    let writer = AccessWriter::new(log.clone(), options(4));
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
    let written = log.written();
    assert!((4..=5).contains(&written.len()), "{written:?}");
    assert!(written.iter().all(|(user, _, outcome, _)| user == "u1" && *outcome == AccessOutcome::Hidden));
    assert_eq!(writer.dropped(), 0, "the count was reported once the writer caught up");
}

#[tokio::test]
async fn names_are_cut() {
    let log = Arc::new(Gated::default());
    let writer = AccessWriter::new(log.clone(), AccessLogOptions::default());
    writer.record("u1", AccessKind::Resource, &"é".repeat(1000), AccessOutcome::Ok, Duration::ZERO);
    log.let_one_through().await;
    assert_eq!(log.written()[0].3.chars().count(), MAX_NAME_CHARS);
}

#[tokio::test]
async fn a_read_of_another_persons_data_waits_for_room_and_is_never_dropped() {
    let log = Arc::new(Gated::default());
    let writer = AccessWriter::new(log.clone(), options(1).with_read_wait(Duration::from_secs(600)));
    // The writer takes one record and blocks on it; the queue's one place is taken by another.
    writer.record("bob", AccessKind::Tool, "first", AccessOutcome::Ok, Duration::ZERO);
    while writer.sender().capacity() == 0 {
        tokio::task::yield_now().await;
    }
    writer.record("bob", AccessKind::Tool, "second", AccessOutcome::Ok, Duration::ZERO);
    assert_eq!(writer.sender().capacity(), 0, "the queue is full");

    let call = CallAccess::new(&writer, "bob", AccessKind::Tool, "family_health");
    let read = call.reads_data_of("ann");
    tokio::pin!(read);
    // The read waits while the queue is full...
    for _ in 0..50 {
        assert!(futures::poll!(&mut read).is_pending(), "a read of ann's data waits for room");
        tokio::task::yield_now().await;
    }
    // ... and an own-data record meanwhile is dropped, not queued before it.
    writer.record("bob", AccessKind::Tool, "own", AccessOutcome::Ok, Duration::ZERO);
    assert_eq!(writer.dropped(), 1);
    // Once the writer takes the next record, there is room: the read goes on.
    log.let_one_through().await;
    read.await.expect("room was found");
    call.finish(AccessOutcome::Ok);
    log.let_one_through().await;
    log.let_one_through().await;
    let written = log.written();
    assert_eq!(written.len(), 3, "{written:?}");
    assert_eq!(written[2], ("bob".into(), Some("ann".into()), AccessOutcome::Ok, "family_health".into()));
    assert!(written.iter().all(|(_, _, _, name)| name != "own"), "the own-data record was the one dropped");
}

#[tokio::test]
async fn a_read_that_finds_no_room_in_time_fails_with_a_clear_error() {
    let log = Arc::new(Gated::default());
    let writer = AccessWriter::new(log.clone(), options(1).with_read_wait(Duration::from_millis(20)));
    writer.record("bob", AccessKind::Tool, "first", AccessOutcome::Ok, Duration::ZERO);
    while writer.sender().capacity() == 0 {
        tokio::task::yield_now().await;
    }
    writer.record("bob", AccessKind::Tool, "second", AccessOutcome::Ok, Duration::ZERO);
    let call = CallAccess::new(&writer, "bob", AccessKind::Tool, "family_health");
    let refused = call.reads_data_of("ann").await.unwrap_err();
    assert!(refused.0.contains("too busy to record this read"), "{refused}");
    // One's own data needs no room.
    call.reads_data_of("bob").await.unwrap();
}

#[tokio::test]
async fn one_entry_per_person_read_and_a_dropped_call_leaves_them_cancelled() {
    let log = Arc::new(Gated::default());
    let writer = AccessWriter::new(log.clone(), options(64));
    let call = CallAccess::new(&writer, "bob", AccessKind::Tool, "family_health");
    call.reads_data_of("ann").await.unwrap();
    call.reads_data_of("ann").await.unwrap();
    call.reads_data_of("cy").await.unwrap();
    drop(call);
    log.let_one_through().await;
    log.let_one_through().await;
    let mut written = log.written();
    written.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        written,
        [
            ("bob".into(), Some("ann".into()), AccessOutcome::Cancelled, "family_health".into()),
            ("bob".into(), Some("cy".into()), AccessOutcome::Cancelled, "family_health".into()),
        ]
    );
    // A dropped call that read nobody else's data leaves nothing.
    drop(CallAccess::new(&writer, "bob", AccessKind::Tool, "echo"));
    // Too many people in one call is refused.
    let call = CallAccess::new(&writer, "bob", AccessKind::Tool, "family_health");
    for n in 0..MAX_SUBJECTS_PER_CALL {
        call.reads_data_of(&format!("p{n}")).await.unwrap();
    }
    let refused = call.reads_data_of("one-more").await.unwrap_err();
    assert!(refused.0.contains("at most 16 other people"), "{refused}");
    call.finish(AccessOutcome::Ok);
    call.finish(AccessOutcome::Failed);
    for _ in 0..MAX_SUBJECTS_PER_CALL {
        log.let_one_through().await;
    }
    let written = log.written();
    assert_eq!(written.len(), 2 + MAX_SUBJECTS_PER_CALL, "finished once: {written:?}");
    assert!(written[2..].iter().all(|(_, _, outcome, _)| *outcome == AccessOutcome::Ok));
}
