//! Graceful shutdown of [`crate::serve_until`]'s connections: when it begins, each connection
//! finishes the request it is answering and closes.
//!
//! By hand rather than with hyper-util's `GracefulShutdown`, whose connections poll a
//! `watch` change future, and so lock its waiter list, every time they are polled (what that
//! cost is in benches/README.md). Here a connection registers
//! for the wake-up once, polling the notification again only if its task's waker changes, and
//! otherwise reads one flag.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

/// The signal every watched connection heeds.
#[derive(Debug, Default)]
pub(crate) struct Shutdown {
    begun: AtomicBool,
    notify: Arc<Notify>,
}

impl Shutdown {
    /// `connection`, told to close gracefully once [`Shutdown::begin`] is called.
    pub(crate) fn watch<C: Closable>(self: &Arc<Self>, connection: C) -> Watched<C> {
        Watched {
            connection,
            notified: Arc::clone(&self.notify).notified_owned(),
            shutdown: Arc::clone(self),
            registered: None,
            closing: false,
        }
    }

    /// Tells every watched connection, and any watched later, to close after its request.
    pub(crate) fn begin(&self) {
        // The flag first: a connection woken below, or polled meanwhile, must find it set.
        self.begun.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }
}

/// A connection that can be asked to finish what it is doing and close.
pub(crate) trait Closable: Future {
    /// Asks it to close once the request in flight is answered.
    fn close_gracefully(self: Pin<&mut Self>);
}

impl<I, S, B> Closable for hyper::server::conn::http1::Connection<I, S>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn close_gracefully(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

pin_project_lite::pin_project! {
    /// A connection watched by a [`Shutdown`].
    pub(crate) struct Watched<C> {
        #[pin]
        connection: C,
        #[pin]
        notified: OwnedNotified,
        shutdown: Arc<Shutdown>,
        // The waker `notified` was last polled with: it wakes this task when shutdown begins.
        registered: Option<Waker>,
        closing: bool,
    }
}

impl<C: Closable> Future for Watched<C> {
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let mut this = self.project();
        if !*this.closing {
            let registered = this.registered.as_ref().is_some_and(|waker| waker.will_wake(cx.waker()));
            // Created before shutdown began, `notified` is ready once it has, polled or not.
            let told = if registered {
                this.shutdown.begun.load(Ordering::Acquire)
            } else {
                *this.registered = Some(cx.waker().clone());
                this.notified.as_mut().poll(cx).is_ready() || this.shutdown.begun.load(Ordering::Acquire)
            };
            if told {
                *this.closing = true;
                this.connection.as_mut().close_gracefully();
            }
        }
        this.connection.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    // A connection that counts its polls, is asked to close, and ends once asked.
    #[derive(Default)]
    struct Counting {
        polls: Arc<AtomicUsize>,
        asked: bool,
    }

    impl Future for Counting {
        type Output = usize;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<usize> {
            let polls = self.polls.fetch_add(1, Ordering::Relaxed) + 1;
            if self.asked { Poll::Ready(polls) } else { Poll::Pending }
        }
    }

    impl Closable for Counting {
        fn close_gracefully(mut self: Pin<&mut Self>) {
            self.asked = true;
        }
    }

    #[tokio::test]
    async fn a_waiting_connection_is_woken_and_closes_when_shutdown_begins() {
        let shutdown = Arc::new(Shutdown::default());
        let polls = Arc::new(AtomicUsize::new(0));
        let connection = tokio::spawn(shutdown.watch(Counting { polls: Arc::clone(&polls), asked: false }));
        tokio::task::yield_now().await;
        while polls.load(Ordering::Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
        assert!(!connection.is_finished(), "nothing asked it to close yet");
        shutdown.begin();
        let polled = tokio::time::timeout(std::time::Duration::from_secs(5), connection).await.unwrap().unwrap();
        assert_eq!(polled, 2, "woken once, and closed on that poll");
    }

    #[tokio::test]
    async fn a_connection_watched_after_shutdown_began_closes_on_its_first_poll() {
        let shutdown = Arc::new(Shutdown::default());
        shutdown.begin();
        assert_eq!(shutdown.watch(Counting::default()).await, 1);
    }

    #[test]
    fn a_connection_polled_with_a_new_waker_registers_it() {
        let shutdown = Arc::new(Shutdown::default());
        let mut watched = Box::pin(shutdown.watch(Counting::default()));
        let (first, first_woken) = counting_waker();
        assert!(watched.as_mut().poll(&mut Context::from_waker(&first)).is_pending());
        // Polled elsewhere now: the wake-up must reach the new waker, not the first.
        let (second, second_woken) = counting_waker();
        assert!(watched.as_mut().poll(&mut Context::from_waker(&second)).is_pending());
        shutdown.begin();
        assert_eq!((first_woken.load(Ordering::Relaxed), second_woken.load(Ordering::Relaxed)), (0, 1));
        assert!(watched.as_mut().poll(&mut Context::from_waker(&second)).is_ready());
    }

    fn counting_waker() -> (Waker, Arc<AtomicUsize>) {
        struct Count(Arc<AtomicUsize>);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let count = Arc::new(AtomicUsize::new(0));
        (Waker::from(Arc::new(Count(Arc::clone(&count)))), count)
    }
}
