//! Time limits on tool calls: how long a handler may work before the engine stops waiting
//! for it, drops it and answers an error result. A tool declares its own
//! ([`Tool::time_limit`](mirobody_core::Tool::time_limit)); [`McpOptions`](crate::McpOptions)
//! sets one for the tools that declare none and overrides any by name.
//!
//! Only the handler's own time counts: while it waits for its client to answer a question
//! (which has its own bound, the answer timeout, and may be a person typing) the clock is
//! paused, so a limit meant for CPU-heavy work never cuts an honest elicitation short.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use mirobody_core::{CallError, ClientPeer, PeerError, ToolContext, ToolResult, UserInfo};
use serde_json::Value;
use tokio::time::{Instant, Sleep};

use crate::protocol::Inner;
use crate::session::lock;

impl Inner {
    /// The time limit of a call of `name`: the engine's override for it, else what the tool
    /// declares, else the engine's default.
    fn time_limit_of(&self, name: &str) -> Option<Duration> {
        let options = &self.options;
        // Most services override no tool: no hashing of the name on every call then.
        if !options.tool_time_limits.is_empty()
            && let Some(limit) = options.tool_time_limits.get(name)
        {
            return *limit;
        }
        self.registry.get(name).and_then(|tool| tool.declared_time_limit()).or(options.tool_time_limit)
    }

    /// Calls a tool through the registry within its time limit: past it, an error result
    /// saying so (and the handler dropped). Counted and timed when the engine records metrics.
    pub(crate) async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        user: &UserInfo,
        ctx: &ToolContext<'_>,
    ) -> Result<ToolResult, CallError> {
        let Some(metrics) = &self.metrics else { return self.call_tool_in_time(name, arguments, user, ctx).await };
        let started = std::time::Instant::now();
        let outcome = self.call_tool_in_time(name, arguments, user, ctx).await;
        metrics.tool_call(name, &outcome, started.elapsed());
        outcome
    }

    // `call_tool` without the metrics.
    async fn call_tool_in_time(
        &self,
        name: &str,
        arguments: Value,
        user: &UserInfo,
        ctx: &ToolContext<'_>,
    ) -> Result<ToolResult, CallError> {
        // A limit needs tokio's timer: an embedder polling calls on another executor gets none.
        // One too far off to be a time (a century or more) is none; the clock is not read here,
        // but only once a call is still working after its first poll.
        let limit = self
            .time_limit_of(name)
            .filter(|limit| *limit < FOREVER)
            .filter(|_| tokio::runtime::Handle::try_current().is_ok());
        let Some(limit) = limit else { return self.registry.call(name, arguments, user, ctx).await };
        let clock = Clock::default();
        let peer = ctx.client().map(|inner| PausingPeer { inner, clock: &clock });
        let ctx = match &peer {
            Some(peer) => ctx.with_client(peer),
            None => *ctx,
        };
        let call = Limited::new(self.registry.call(name, arguments, user, &ctx), limit, &clock);
        match call.await {
            Some(outcome) => outcome,
            None => {
                tracing::warn!(tool = name, limit_ms = limit.as_millis() as u64, "a tool call passed its time limit");
                Ok(ToolResult::error(format!(
                    "Tool '{name}' took longer than its time limit of {} and was stopped. Try again with \
                     less data (a shorter range, fewer points), or later.",
                    seconds(limit)
                )))
            }
        }
    }
}

/// A limit this long or longer is no limit: an instant a century ahead may not be a time.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

// "30 s", "1.5 s".
fn seconds(limit: Duration) -> String {
    if limit.subsec_millis() == 0 { format!("{} s", limit.as_secs()) } else { format!("{:.1} s", limit.as_secs_f64()) }
}

/// How long a call has waited for its client's answers, so that time does not count.
#[derive(Default)]
struct Clock {
    state: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    // Questions waiting for an answer now.
    asking: usize,
    // Since when, while any is.
    since: Option<Instant>,
    // The waits that ended.
    waited: Duration,
}

impl Clock {
    // The time worked since `started` (waits for answers left out), and whether a question
    // is waiting now.
    fn worked(&self, started: Instant) -> (Duration, bool) {
        let now = Instant::now();
        let state = lock(&self.state);
        let waiting = state.since.map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        (now.saturating_duration_since(started).saturating_sub(state.waited + waiting), state.asking > 0)
    }

    fn ask(&self) -> Asking<'_> {
        let mut state = lock(&self.state);
        state.asking += 1;
        if state.asking == 1 {
            state.since = Some(Instant::now());
        }
        Asking(self)
    }
}

// A question waiting: the clock is paused until the last one ends (answered, or dropped).
struct Asking<'a>(&'a Clock);

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.asking -= 1;
        if state.asking == 0
            && let Some(since) = state.since.take()
        {
            state.waited += since.elapsed();
        }
    }
}

/// The call's client, pausing the clock while a question waits for its answer.
struct PausingPeer<'a> {
    inner: &'a dyn ClientPeer,
    clock: &'a Clock,
}

#[async_trait]
impl ClientPeer for PausingPeer<'_> {
    async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.inner.progress(progress, total, message).await;
    }

    async fn log(&self, level: &str, data: Value) {
        self.inner.log(level, data).await;
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        let _asking = self.clock.ask();
        self.inner.request(method, params).await
    }

    async fn request_keyed(&self, key: &str, method: &str, params: Value) -> Result<Value, PeerError> {
        let _asking = self.clock.ask();
        self.inner.request_keyed(key, method, params).await
    }

    fn supports(&self, capability: &str) -> bool {
        self.inner.supports(capability)
    }

    fn become_task(&self) {
        self.inner.become_task();
    }
}

pin_project_lite::pin_project! {
    /// `work` within `limit`, `None` past it. Written out rather than `tokio::time::timeout`,
    /// which arms a timer before the first poll: most calls end in their first poll, and this
    /// arms one only for those that do not (the timer's cost stays off the fast path).
    struct Limited<'a, F> {
        #[pin]
        work: F,
        limit: Duration,
        // When the first poll that did not end it ended: the work's start, near enough.
        started: Option<Instant>,
        clock: &'a Clock,
        timer: Option<Pin<Box<Sleep>>>,
    }
}

impl<'a, F> Limited<'a, F> {
    fn new(work: F, limit: Duration, clock: &'a Clock) -> Self {
        Limited { work, limit, started: None, clock, timer: None }
    }
}

impl<F: Future> Future for Limited<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.work.poll(cx) {
            return Poll::Ready(Some(output));
        }
        let limit = *this.limit;
        let started = *this.started.get_or_insert_with(Instant::now);
        let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(started + limit)));
        while timer.as_mut().poll(cx).is_ready() {
            let (worked, asking) = this.clock.worked(started);
            if worked >= limit && !asking {
                return Poll::Ready(None);
            }
            // Not yet: the time spent waiting for answers is given back. While a question
            // waits, look again at most once a second.
            let left = limit.saturating_sub(worked);
            let wait = if asking { left.max(Duration::from_secs(1)) } else { left.max(Duration::from_millis(1)) };
            timer.as_mut().reset(Instant::now() + wait);
        }
        Poll::Pending
    }
}
