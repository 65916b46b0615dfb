//! Fair shares of the routes beside MCP: the turns each caller may hold among the uploads and
//! imports being received, the pace a body must keep while it arrives, and the request rate,
//! which is the one `/mcp` keeps for the same caller.
//!
//! Without them one account with eight slow bodies held every server-wide turn, and a client
//! could send care-circle requests as fast as its connection went.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, Request, StatusCode, header};
use http_body_util::BodyExt;
use mirobody_core::UserInfo;
use mirobody_mcp::limits::{CallerKey, Callers};
use tokio::time::Instant;

use super::error;

/// How long a body may arrive at any pace before its pace is first checked: a client's
/// connection may take a moment to open its window.
const GRACE: Duration = Duration::from_secs(5);
/// How often a body's pace is judged, after the grace (on its average since the grace).
const WINDOW: Duration = Duration::from_secs(5);

/// Who a request counts against: its signed-in user, else its client's address (an IPv6 one by
/// its /64), as on `/mcp`. An upload through a link counts against the link's owner instead
/// (`uploads.rs`): by address, one person's links from many addresses would hold every turn.
pub(super) fn caller_key(request: &Request<Body>) -> CallerKey {
    match request.extensions().get::<UserInfo>() {
        Some(user) => CallerKey::of(user, request.extensions()),
        None => CallerKey::anonymous(request.extensions()),
    }
}

/// The uploads and imports each caller is having received now.
pub(super) struct CallerTurns {
    max: usize,
    held: Mutex<HashMap<CallerKey, usize>>,
}

/// One caller's turn, given back when it drops.
#[must_use = "the turn is given back when it drops"]
pub(super) struct CallerTurn<'a> {
    turns: &'a CallerTurns,
    // `None` when turns are not bounded per caller.
    key: Option<CallerKey>,
}

impl CallerTurns {
    /// At most `max` turns per caller; zero for no bound.
    pub(super) fn new(max: usize) -> Self {
        CallerTurns { max, held: Mutex::default() }
    }

    /// A turn for `key`, unless it holds as many as it may.
    pub(super) fn take(&self, key: CallerKey) -> Option<CallerTurn<'_>> {
        if self.max == 0 {
            return Some(CallerTurn { turns: self, key: None });
        }
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(key.clone()).or_default();
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(CallerTurn { turns: self, key: Some(key) })
    }

    #[cfg(test)]
    fn callers(&self) -> usize {
        self.held.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

impl Drop for CallerTurn<'_> {
    fn drop(&mut self) {
        let Some(key) = &self.key else { return };
        let mut held = self.turns.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                held.remove(key);
            }
        }
    }
}

/// Refuses a request over its caller's rate (429 with `Retry-After`): the same limiter, and so
/// the same budget, as the caller's requests to `/mcp`.
pub(super) async fn within_rate(State(callers): State<Arc<Callers>>, request: Request<Body>, next: Next) -> Response {
    let anonymous = UserInfo::default();
    let user = request.extensions().get::<UserInfo>().unwrap_or(&anonymous);
    if let Err(wait) = callers.admit_request(user, request.extensions()) {
        let mut refused = error(StatusCode::TOO_MANY_REQUESTS, "Too many requests; slow down.");
        refused.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs(wait)));
        return refused;
    }
    next.run(request).await
}

/// The whole seconds to wait, at least one.
fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// How a request body must arrive.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyPace {
    /// The whole body within this, from when reading starts.
    pub(super) deadline: Duration,
    /// After [`GRACE`], at least this many bytes a second on average since the grace ended,
    /// judged every [`WINDOW`]; zero for no bound.
    pub(super) min_bytes_per_sec: u64,
}

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BodyRefusal {
    /// It is larger than allowed.
    TooLarge,
    /// It did not arrive within the deadline.
    TooLong,
    /// It arrived more slowly than the minimum pace.
    TooSlow,
    /// The connection failed while it arrived.
    Unreadable,
}

/// The body, at most `max` bytes, arriving at `pace`. Its pace is judged as each piece arrives
/// and, when none does, at each window's end, so a body that stops arriving is cut as one that
/// trickles; judged on the average since the grace ended, so one stall (a phone changing cell)
/// does not cut a body that was well above the pace.
pub(super) async fn read_paced(mut body: Body, max: usize, pace: BodyPace) -> Result<Bytes, BodyRefusal> {
    let started = Instant::now();
    // None: a deadline too far to name, which is none.
    let deadline = started.checked_add(pace.deadline);
    let mut since_grace = SinceGrace::new(started);
    let mut read = Vec::new();
    loop {
        let wake = match (pace.min_bytes_per_sec, deadline) {
            (0, deadline) => deadline,
            (_, Some(deadline)) => Some(deadline.min(since_grace.next_check)),
            (_, None) => Some(since_grace.next_check),
        };
        let next = match wake {
            Some(wake) => tokio::time::timeout_at(wake, body.frame()).await,
            None => Ok(body.frame().await),
        };
        match next {
            Ok(None) => return Ok(Bytes::from(read)),
            Ok(Some(Err(_))) => return Err(BodyRefusal::Unreadable),
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if read.len().saturating_add(data.len()) > max {
                        return Err(BodyRefusal::TooLarge);
                    }
                    read.extend_from_slice(data);
                    since_grace.arrived(data.len(), Instant::now());
                }
            }
            // Nothing arrived by the deadline or the check: judged below.
            Err(_) => {}
        }
        let now = Instant::now();
        if deadline.is_some_and(|deadline| now >= deadline) {
            return Err(BodyRefusal::TooLong);
        }
        if pace.min_bytes_per_sec > 0 && since_grace.too_slow(now, pace.min_bytes_per_sec) {
            return Err(BodyRefusal::TooSlow);
        }
    }
}

// The bytes that arrived since the grace ended, and when the pace is judged next.
struct SinceGrace {
    grace_end: Instant,
    bytes: u64,
    next_check: Instant,
}

impl SinceGrace {
    fn new(started: Instant) -> Self {
        let grace_end = started + GRACE;
        SinceGrace { grace_end, bytes: 0, next_check: grace_end + WINDOW }
    }

    fn arrived(&mut self, bytes: usize, now: Instant) {
        // What arrives during the grace is not counted for later.
        if now >= self.grace_end {
            self.bytes = self.bytes.saturating_add(bytes as u64);
        }
    }

    // At each window's end: whether less than `min` a second arrived on average since the
    // grace ended.
    fn too_slow(&mut self, now: Instant, min: u64) -> bool {
        if now < self.next_check {
            return false;
        }
        self.next_check = now + WINDOW;
        let elapsed_ms = now.duration_since(self.grace_end).as_millis();
        u128::from(self.bytes) * 1000 < u128::from(min) * elapsed_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirobody_mcp::limits::ClientAddr;

    // A body whose pieces the test sends, and the sender (dropped: the body ends).
    fn channel_body() -> (tokio::sync::mpsc::Sender<&'static [u8]>, Body) {
        let (send, receive) = tokio::sync::mpsc::channel::<&'static [u8]>(16);
        let stream = futures::stream::unfold(receive, |mut receive| async move {
            let piece = receive.recv().await?;
            Some((Ok::<_, std::io::Error>(Bytes::from_static(piece)), receive))
        });
        (send, Body::from_stream(stream))
    }

    const PACE: BodyPace = BodyPace { deadline: Duration::from_secs(60), min_bytes_per_sec: 1000 };

    #[tokio::test(start_paused = true)]
    async fn a_body_that_trickles_is_cut_after_the_grace_and_one_window() {
        let (send, body) = channel_body();
        let started = Instant::now();
        let trickle = tokio::spawn(async move {
            // 100 bytes a second: a tenth of the pace.
            while send.send(&[b'x'; 100]).await.is_ok() {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        assert_eq!(read_paced(body, 1 << 20, PACE).await, Err(BodyRefusal::TooSlow));
        let took = started.elapsed();
        assert!(took >= GRACE + WINDOW && took < GRACE + WINDOW * 2, "{took:?}");
        trickle.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stops_arriving_is_cut_too() {
        let (send, body) = channel_body();
        send.send(&[b'x'; 4000]).await.unwrap();
        let started = Instant::now();
        assert_eq!(read_paced(body, 1 << 20, PACE).await, Err(BodyRefusal::TooSlow));
        assert!(started.elapsed() < GRACE + WINDOW * 2, "{:?}", started.elapsed());
        drop(send);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_at_the_pace_is_read_whole_and_the_deadline_still_holds() {
        let (send, body) = channel_body();
        let sending = tokio::spawn(async move {
            // Twice the pace, so that no window ends between two pieces short of it.
            for _ in 0..30 {
                send.send(&[b'y'; 2000]).await.unwrap();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let read = read_paced(body, 1 << 20, PACE).await.unwrap();
        assert_eq!(read.len(), 30 * 2000);
        assert!(read.iter().all(|b| *b == b'y'));
        sending.await.unwrap();

        // The same pace for longer than the deadline: 408 for the whole body's time.
        let (send, body) = channel_body();
        let sending = tokio::spawn(async move {
            while send.send(&[b'y'; 2000]).await.is_ok() {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let short = BodyPace { deadline: Duration::from_secs(20), ..PACE };
        assert_eq!(read_paced(body, 1 << 20, short).await, Err(BodyRefusal::TooLong));
        sending.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn one_stall_does_not_cut_a_body_well_above_the_pace() {
        let (send, body) = channel_body();
        let sending = tokio::spawn(async move {
            // Four times the pace, a stall of 6 s (a phone changing cell), then on again.
            for second in 0..30 {
                if second == 12 {
                    tokio::time::sleep(Duration::from_secs(6)).await;
                }
                send.send(&[b'z'; 4000]).await.unwrap();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let read = read_paced(body, 1 << 20, PACE).await.unwrap();
        assert_eq!(read.len(), 30 * 4000);
        sending.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_too_far_to_name_is_none() {
        let far = BodyPace { deadline: Duration::MAX, min_bytes_per_sec: 0 };
        assert_eq!(read_paced(Body::from("whole"), 5, far).await.unwrap(), "whole");
        let (send, body) = channel_body();
        send.send(&[b'x'; 10]).await.unwrap();
        let paced = BodyPace { deadline: Duration::MAX, ..PACE };
        assert_eq!(read_paced(body, 1 << 20, paced).await, Err(BodyRefusal::TooSlow));
        drop(send);
    }

    #[tokio::test(start_paused = true)]
    async fn no_minimum_pace_waits_for_the_deadline_and_size_is_bounded() {
        let (send, body) = channel_body();
        send.send(b"slow").await.unwrap();
        let started = Instant::now();
        let unpaced = BodyPace { deadline: Duration::from_secs(30), min_bytes_per_sec: 0 };
        assert_eq!(read_paced(body, 1 << 20, unpaced).await, Err(BodyRefusal::TooLong));
        assert!(started.elapsed() >= Duration::from_secs(30));
        drop(send);

        let (send, body) = channel_body();
        send.send(&[0; 600]).await.unwrap();
        send.send(&[0; 600]).await.unwrap();
        assert_eq!(read_paced(body, 1000, PACE).await, Err(BodyRefusal::TooLarge));
        assert_eq!(read_paced(Body::from("small"), 5, PACE).await.unwrap(), "small");
    }

    #[test]
    fn a_caller_holds_at_most_its_turns_and_others_are_not_touched() {
        let turns = CallerTurns::new(2);
        let alice = || CallerKey::User("alice".into());
        let (one, two) = (turns.take(alice()).unwrap(), turns.take(alice()).unwrap());
        assert!(turns.take(alice()).is_none(), "a third is over the bound");
        let bob = turns.take(CallerKey::User("bob".into()));
        assert!(bob.is_some(), "another caller has turns of their own");
        drop(one);
        let three = turns.take(alice());
        assert!(three.is_some(), "a turn given back is taken again");
        drop((two, three, bob));
        assert_eq!(turns.callers(), 0, "callers holding nothing are forgotten");
        let unbounded = CallerTurns::new(0);
        let many: Vec<_> = (0..100).map(|_| unbounded.take(alice()).unwrap()).collect();
        assert_eq!(many.len(), 100);
    }

    #[test]
    fn a_request_counts_against_its_user_else_its_address() {
        let mut request = Request::new(Body::empty());
        request.extensions_mut().insert(ClientAddr("2001:db8::1".parse().unwrap()));
        let by_address = caller_key(&request);
        assert!(matches!(by_address, CallerKey::Address(_)), "{by_address:?}");
        request.extensions_mut().insert(UserInfo::authenticated("alice"));
        assert_eq!(caller_key(&request), CallerKey::User("alice".into()));
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
    }
}
