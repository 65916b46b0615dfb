//! The header timeout of [`crate::serve_until`]'s connections, kept without a timer per request.
//!
//! A connection is closed once its client has sent no complete request head for the timeout
//! while nothing was being answered on it: a client that never finishes its headers
//! (slow-loris), or one that keeps an idle connection open. This is what hyper's
//! `header_read_timeout` does, but hyper arms a timer for every request (a boxed sleep
//! registered in the timer wheel and removed again; benches/README.md has what that cost).
//! Here a request costs two counter increments and
//! a reference count, and each connection has one watchdog task that looks at the counters a
//! few times per timeout.
//!
//! The same watchdog closes a connection whose client stops reading its responses: the socket
//! notes when a write first had to wait ([`Timed`]), and a write that waits longer than the
//! write timeout ends the connection, SSE streams included.

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

use super::proxies::TrustedProxies;
use crate::session::clock_ms;
use crate::session::limits::ClientAddr;

/// What [`serve`](crate::serve) serves: a tower service of HTTP requests that always answers, such as an axum
/// `Router`, or one wrapped in layers (the auth layer). Implemented for every such service.
pub trait HttpApp:
    tower::Service<
        ::http::Request<hyper::body::Incoming>,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + 'static
{
}

impl<S> HttpApp for S where
    S: tower::Service<
            ::http::Request<hyper::body::Incoming>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + 'static
{
}

pin_project_lite::pin_project! {
    /// A connection's socket that notes in its [`Activity`] when a write has to wait for the
    /// client to read, and when writes go through again.
    pub(crate) struct Timed<T> {
        #[pin]
        io: T,
        activity: Arc<Activity>,
    }
}

impl<T> Timed<T> {
    pub(crate) fn new(io: T, activity: Arc<Activity>) -> Self {
        Timed { io, activity }
    }
}

impl Activity {
    fn note_write<R>(&self, poll: &Poll<R>) {
        let blocked = &self.write_blocked_since_ms;
        match poll {
            Poll::Pending if blocked.load(Ordering::Relaxed) == 0 => {
                blocked.store(clock_ms().max(1), Ordering::Relaxed)
            }
            Poll::Ready(_) if blocked.load(Ordering::Relaxed) != 0 => blocked.store(0, Ordering::Relaxed),
            _ => {}
        }
    }

    // How long the current write has waited, if one waits.
    fn write_blocked_for(&self) -> Option<Duration> {
        match self.write_blocked_since_ms.load(Ordering::Relaxed) {
            0 => None,
            since => Some(Duration::from_millis(clock_ms().saturating_sub(since))),
        }
    }
}

impl<T: tokio::io::AsyncRead> tokio::io::AsyncRead for Timed<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        self.project().io.poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite> tokio::io::AsyncWrite for Timed<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.project();
        let poll = this.io.poll_write(cx, buf);
        this.activity.note_write(&poll);
        poll
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.project();
        let poll = this.io.poll_write_vectored(cx, bufs);
        this.activity.note_write(&poll);
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.project();
        let poll = this.io.poll_flush(cx);
        this.activity.note_write(&poll);
        poll
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}

/// Requests begun and answered on one connection, and whether its writes are stuck.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    started: AtomicU64,
    finished: AtomicU64,
    // When a write to the client last had to wait and has not gone through since, on
    // `session::clock_ms`; zero while writes go through.
    write_blocked_since_ms: AtomicU64,
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

/// `app` as a hyper service that counts its requests in `activity`, and tells each request
/// the client's address ([`ClientAddr`]): the connection's peer, or when the peer is a trusted
/// proxy, the client its headers name.
pub(crate) struct Watched<S> {
    app: S,
    activity: Arc<Activity>,
    client: Option<ClientAddr>,
    // Set when the peer is a trusted proxy.
    proxies: Option<TrustedProxies>,
}

impl<S> Watched<S> {
    pub(crate) fn new(
        app: S,
        activity: Arc<Activity>,
        client: Option<std::net::IpAddr>,
        proxies: Option<TrustedProxies>,
    ) -> Self {
        Watched { app, activity, client: client.map(ClientAddr), proxies }
    }
}

impl<S: HttpApp> hyper::service::Service<Request<Incoming>> for Watched<S> {
    type Response = http::Response<WatchedBody>;
    type Error = Infallible;
    type Future = Answering<Oneshot<S, Request<Incoming>>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        if let Some(ClientAddr(peer)) = self.client {
            let client = match &self.proxies {
                Some(proxies) => proxies.client(peer, request.headers()),
                None => peer,
            };
            request.extensions_mut().insert(ClientAddr(client));
        }
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
/// running, for `timeout`, or once a write to the client has waited longer than
/// `write_timeout`; returns when the connection has ended.
pub(crate) async fn close_when_idle(
    activity: Arc<Activity>,
    connection: AbortHandle,
    timeout: Duration,
    write_timeout: Duration,
) {
    // A zero timeout (possible through the library's `ServeOptions`) still gets ticks.
    let period = (timeout.min(write_timeout) / LOOKS).max(Duration::from_millis(1));
    // Looks a quiet connection must pass to be closed: at least `timeout`'s worth.
    let looks_to_close = u32::try_from(timeout.as_nanos().div_ceil(period.as_nanos())).unwrap_or(u32::MAX).max(1);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut last = activity.snapshot();
    let mut quiet_looks = 0;
    loop {
        ticks.tick().await;
        if connection.is_finished() {
            return;
        }
        if activity.write_blocked_for().is_some_and(|blocked| blocked > write_timeout) {
            tracing::debug!(?write_timeout, "closing a connection whose client stopped reading");
            connection.abort();
            return;
        }
        let now = activity.snapshot();
        let (started, finished) = now;
        if started != finished || now != last {
            (last, quiet_looks) = (now, 0);
            continue;
        }

        quiet_looks += 1;
        if quiet_looks >= looks_to_close {
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
        let watchdog =
            tokio::spawn(close_when_idle(Arc::clone(&activity), task.abort_handle(), timeout, Duration::MAX));
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
        close_when_idle(Arc::new(Activity::default()), task.abort_handle(), Duration::ZERO, Duration::MAX).await;
        assert!(task.await.unwrap_err().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn the_watchdog_ends_with_its_connection() {
        let activity = Arc::new(Activity::default());
        let task = tokio::spawn(tokio::time::sleep(Duration::from_secs(3)));
        let started = tokio::time::Instant::now();
        close_when_idle(activity, task.abort_handle(), Duration::from_secs(60), Duration::MAX).await;
        assert!(task.await.is_ok(), "the connection ended by itself, not aborted");
        assert!(started.elapsed() <= Duration::from_secs(15), "the watchdog lingered {:?}", started.elapsed());
    }

    // Real time: the write clock is the coarse monotonic clock, which tokio's paused time does
    // not move.
    #[tokio::test]
    async fn a_write_stuck_past_the_write_timeout_closes_the_connection_while_busy() {
        let activity = Arc::new(Activity::default());
        let task = connection();
        let _busy = Busy::begin(&activity);
        let watchdog = tokio::spawn(close_when_idle(
            Arc::clone(&activity),
            task.abort_handle(),
            Duration::from_secs(3600),
            Duration::from_millis(200),
        ));
        // Writes that wait and then go through do not count.
        activity.note_write(&Poll::<()>::Pending);
        tokio::time::sleep(Duration::from_millis(100)).await;
        activity.note_write(&Poll::Ready(()));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!task.is_finished(), "closed though its writes went through");
        // One that stays stuck does.
        let stuck = std::time::Instant::now();
        activity.note_write(&Poll::<()>::Pending);
        watchdog.await.unwrap();
        assert!(task.await.unwrap_err().is_cancelled());
        let after = stuck.elapsed();
        // The coarse clock lags the fine one by up to a tick (1-10 ms), and counts whole
        // milliseconds: the close may come that much before 200 ms of real time.
        let tick = Duration::from_millis(20);
        assert!(after >= Duration::from_millis(200) - tick && after < Duration::from_secs(2), "closed after {after:?}");
    }
}
