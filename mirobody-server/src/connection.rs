//! The header timeout of [`crate::serve_until`]'s connections, kept without a timer per request.
//!
//! A connection is closed once its client has sent no complete request head for the timeout
//! while nothing was being answered on it: a client that never finishes its headers
//! (slow-loris), or one that keeps an idle connection open. This is what hyper's
//! `header_read_timeout` does, but hyper arms a timer for every request (a boxed sleep
//! registered in the timer wheel and removed again), 3.6% of the instructions of a
//! `tools/call` (benches/load/instructions.sh). Here a request costs two counter increments and
//! a reference count, and each connection has one watchdog task that looks at the counters a
//! few times per timeout.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::Request;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use tokio::task::AbortHandle;
use tokio::time::MissedTickBehavior;
use tower::ServiceExt;
use tower::util::Oneshot;

use crate::HttpApp;

/// Requests begun and answered on one connection.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    started: AtomicU64,
    finished: AtomicU64,
}

impl Activity {
    /// Begun and finished so far; a request is being answered while they differ.
    fn snapshot(&self) -> (u64, u64) {
        // Finished first: a request that finishes between the two loads is then seen as still
        // running, never as not yet begun.
        let finished = self.finished.load(Ordering::Acquire);
        (self.started.load(Ordering::Acquire), finished)
    }
}

/// A request being answered, from its complete head until its response body is done (or
/// dropped, when the client goes away).
struct Busy(Arc<Activity>);

impl Busy {
    fn begin(activity: &Arc<Activity>) -> Busy {
        activity.started.fetch_add(1, Ordering::Release);
        Busy(Arc::clone(activity))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Ordering::Release);
    }
}

/// `app` as a hyper service that counts its requests in `activity`.
pub(crate) struct Watched<S> {
    app: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    pub(crate) fn new(app: S, activity: Arc<Activity>) -> Self {
        Watched { app, activity }
    }
}

impl<S: HttpApp> hyper::service::Service<Request<Incoming>> for Watched<S> {
    type Response = http::Response<WatchedBody>;
    type Error = Infallible;
    type Future = Answering<Oneshot<S, Request<Incoming>>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        // hyper calls with `&self`, tower with `&mut self`: a clone per request, as hyper-util's
        // `TowerToHyperService` does.
        Answering { answer: self.app.clone().oneshot(request), busy: Some(Busy::begin(&self.activity)) }
    }
}

pin_project_lite::pin_project! {
    /// The response of a [`Watched`] service, whose body keeps the request counted as busy.
    pub(crate) struct Answering<F> {
        #[pin]
        answer: F,
        busy: Option<Busy>,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for Answering<F> {
    type Output = Result<http::Response<WatchedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = ready!(this.answer.poll(cx));
        let busy = this.busy.take().expect("an answer is not polled after it is ready");
        Poll::Ready(response.map(|response| response.map(|body| WatchedBody { body, _busy: busy })))
    }
}

/// A response body that counts its request as busy until it is done.
pub(crate) struct WatchedBody {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for WatchedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// How many looks per timeout: a connection is closed after between one and 1 + 1/LOOKS
/// timeouts without a request.
const LOOKS: u32 = 4;

/// Aborts `connection` once `activity` has shown nothing begun or finished, and nothing
/// running, for `timeout`; returns when the connection has ended.
pub(crate) async fn close_when_idle(activity: Arc<Activity>, connection: AbortHandle, timeout: Duration) {
    // A zero timeout (possible through the library's `ServeOptions`) still gets ticks.
    let period = (timeout / LOOKS).max(Duration::from_millis(1));
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut last = activity.snapshot();
    let mut quiet_looks = 0;
    loop {
        ticks.tick().await;
        if connection.is_finished() {
            return;
        }
        let now = activity.snapshot();
        let (started, finished) = now;
        if started != finished || now != last {
            (last, quiet_looks) = (now, 0);
            continue;
        }
        quiet_looks += 1;
        if quiet_looks == LOOKS {
            tracing::debug!(?timeout, "closing a connection that sent no request within the header timeout");
            connection.abort();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A connection task that runs until aborted.
    fn connection() -> tokio::task::JoinHandle<()> {
        tokio::spawn(std::future::pending())
    }

    // Such a connection with its activity and a watchdog of the given timeout over it.
    fn watched(timeout: Duration) -> (Arc<Activity>, tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>) {
        let activity = Arc::new(Activity::default());
        let task = connection();
        let watchdog = tokio::spawn(close_when_idle(Arc::clone(&activity), task.abort_handle(), timeout));
        (activity, task, watchdog)
    }

    // The promise: closed between one and 1¼ timeouts after the connection went quiet.
    fn assert_closed_on_time(idle: Duration, timeout: Duration) {
        assert!(idle >= timeout && idle <= timeout + timeout / LOOKS, "closed after {idle:?} idle");
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_is_closed_after_the_timeout_and_not_before() {
        let started = tokio::time::Instant::now();
        let (_activity, task, watchdog) = watched(Duration::from_secs(8));
        watchdog.await.unwrap();
        assert_closed_on_time(started.elapsed(), Duration::from_secs(8));
        assert!(task.await.unwrap_err().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_being_answered_keeps_the_connection_open() {
        let (activity, task, watchdog) = watched(Duration::from_secs(8));
        // A call that runs for a minute, then its connection idles.
        let busy = Busy::begin(&activity);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!task.is_finished(), "closed while a request was being answered");
        drop(busy);
        let answered = tokio::time::Instant::now();
        watchdog.await.unwrap();
        assert_closed_on_time(answered.elapsed(), Duration::from_secs(8));
        assert!(task.await.unwrap_err().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn each_request_restarts_the_timeout() {
        let (activity, task, watchdog) = watched(Duration::from_secs(8));
        // A request every 6 s for a minute: never 8 s without one.
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_secs(6)).await;
            drop(Busy::begin(&activity));
        }
        assert!(!task.is_finished(), "closed although requests kept coming");
        watchdog.await.unwrap();
        assert!(task.await.unwrap_err().is_cancelled(), "closed once they stopped");
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_timeout_closes_at_once() {
        let task = connection();
        close_when_idle(Arc::new(Activity::default()), task.abort_handle(), Duration::ZERO).await;
        assert!(task.await.unwrap_err().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn the_watchdog_ends_with_its_connection() {
        let activity = Arc::new(Activity::default());
        let task = tokio::spawn(tokio::time::sleep(Duration::from_secs(3)));
        let started = tokio::time::Instant::now();
        close_when_idle(activity, task.abort_handle(), Duration::from_secs(60)).await;
        assert!(task.await.is_ok(), "the connection ended by itself, not aborted");
        assert!(started.elapsed() <= Duration::from_secs(15), "the watchdog lingered {:?}", started.elapsed());
    }
}
