//! A bounded end: once a shutdown is asked for (SIGINT or SIGTERM), the process is gone within
//! `serve.shutdown_grace` and a few seconds more, whatever is still running.
//!
//! Requests in flight get the grace (`mirobody_mcp::serve_until`); closing the backends gets
//! what is left of it; and the runtime is shut down with a timeout rather than dropped.
//! Dropping a tokio runtime waits for every blocking thread, so one stuck in a blocking call (a
//! parser that never returns, a hung file system) kept the process alive forever after it had
//! logged "stopped".

use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What each step after the grace still gets, however late it starts: enough to give back
/// pooled connections and write the last log lines.
pub const AT_LEAST: Duration = Duration::from_secs(2);

/// The deadline of a shutdown: its grace, counted from when it was asked for.
#[derive(Debug)]
pub struct Shutdown {
    grace: Duration,
    asked: OnceLock<Instant>,
}

impl Shutdown {
    /// A shutdown that will give `grace` once asked for.
    pub fn new(grace: Duration) -> Self {
        Shutdown { grace, asked: OnceLock::new() }
    }

    /// Resolves on SIGINT or SIGTERM, noting when.
    pub async fn signal(&self) {
        mirobody_mcp::shutdown_signal().await;
        self.ask();
    }

    /// Notes that the shutdown starts now; later calls change nothing.
    pub fn ask(&self) {
        let _ = self.asked.set(Instant::now());
    }

    /// The time left of the grace, and at least [`AT_LEAST`]; the whole grace when no shutdown
    /// was asked for (a command that ended by itself).
    pub fn left(&self) -> Duration {
        let left = match self.asked.get() {
            Some(asked) => self.grace.saturating_sub(asked.elapsed()),
            None => self.grace,
        };
        left.max(AT_LEAST)
    }

    /// `step` run for at most [`left`](Self::left); `None` when it took longer (and was
    /// dropped).
    pub async fn within<F: Future>(&self, step: F) -> Option<F::Output> {
        tokio::time::timeout(self.left(), step).await.ok()
    }

    /// Shuts `runtime` down: its tasks are dropped, and its blocking threads are waited for
    /// [`left`](Self::left) at most. One still running then is left behind, and ends with the
    /// process.
    pub fn end_runtime(&self, runtime: tokio::runtime::Runtime) {
        runtime.shutdown_timeout(self.left());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocking_thread_that_never_returns_does_not_hold_the_end() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
        let (started, running) = std::sync::mpsc::channel();
        let (_release, stuck) = std::sync::mpsc::channel::<()>();
        // Blocked until the test ends: as a thread stuck in a parser or a read would be.
        let blocked = runtime.spawn_blocking(move || {
            started.send(()).unwrap();
            let _ = stuck.recv();
        });
        running.recv_timeout(Duration::from_secs(30)).expect("the blocking thread started");
        let shutdown = Shutdown::new(Duration::from_millis(100));
        shutdown.ask();
        let ending = Instant::now();
        shutdown.end_runtime(runtime);
        let took = ending.elapsed();
        // The floor, and a wide margin for a loaded machine; dropping the runtime instead
        // would wait as long as the thread stays blocked.
        assert!(took >= AT_LEAST - Duration::from_millis(100), "it did not wait for the thread: {took:?}");
        assert!(took < AT_LEAST + Duration::from_secs(5), "{took:?}");
        drop(blocked);
    }

    #[test]
    fn what_is_left_counts_from_the_signal_and_keeps_a_floor() {
        let shutdown = Shutdown::new(Duration::from_secs(60));
        assert_eq!(shutdown.left(), Duration::from_secs(60), "not asked yet: the whole grace");
        shutdown.ask();
        let left = shutdown.left();
        assert!(left <= Duration::from_secs(60) && left > Duration::from_secs(50), "{left:?}");
        shutdown.ask();
        assert!(shutdown.left() <= left, "asking again does not restart the grace");
        let none = Shutdown::new(Duration::ZERO);
        none.ask();
        assert_eq!(none.left(), AT_LEAST, "a grace of zero still gives each step its floor");
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_that_never_ends_is_given_up_on() {
        let shutdown = Shutdown::new(Duration::from_secs(5));
        shutdown.ask();
        assert_eq!(shutdown.within(std::future::pending::<()>()).await, None);
        assert_eq!(shutdown.within(async { 7 }).await, Some(7));
    }
}
