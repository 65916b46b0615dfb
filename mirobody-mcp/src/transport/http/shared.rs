//! The endpoint's side of sessions shared by many instances (`McpHttp::with_shared_sessions`):
//! reading a session another instance made, keeping changes, passing cancellations and
//! answers on, and listening to what the other instances say.

use super::*;
use crate::jsonrpc::{Id, code};
use crate::session::{Answer, Delivery, Event, Heard, MAX_KEPT_BYTES, SharedSessions, fits_kept};
use axum::response::IntoResponse;
use futures::StreamExt;
use std::sync::Weak;

// Keeps this instance's copy of session `id`, read from its shared record, if it belongs to
// `user`: one round trip to the backplane.
pub(super) async fn adopt(
    inner: &HttpInner,
    shared: &SharedSessions,
    id: &str,
    user: &UserInfo,
    extensions: &http::Extensions,
) -> Result<Arc<Session>, Response> {
    // Only ids of the form this server makes are looked up: a made-up one costs no round trip,
    // and none longer than 32 bytes reaches a Redis key.
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(session_not_found());
    }
    let mut record = match shared.load(id).await {
        Ok(Some(record)) if record.belongs_to(user.user_id()) || record.claimable_by(user.user_id()) => record,
        Ok(_) => return Err(session_not_found()),
        Err(_) => return Err(unreachable_sessions(None)),
    };
    // An anonymous session's first signed-in caller makes it theirs (see `Session::claim`),
    // here as on the instance that made it.
    let claimed = record.claimable_by(user.user_id());
    if claimed {
        record.set_owner(user.user_id());
    }
    let session = record.to_session(id, &protocol::SUPPORTED_VERSIONS).ok_or_else(session_not_found)?;
    let caller = inner.callers.caller(CallerKey::of(user, extensions));
    let session = inner.sessions.adopt(session, caller).map_err(|refused| session_refused(refused, None))?;
    // The instance that wrote the record with its owner indexed it; a claim here indexes it.
    if !claimed && session.owner().is_some() {
        session.set_owner_indexed();
    }
    if claimed && shared.save(&session).await.is_err() {
        return Err(unreachable_sessions(None));
    }
    Ok(session)
}

// This instance's copy of session `id`, unless another instance ended the session: a client
// that sent DELETE to one instance gets 404 from every other at once, not once the news of
// the end has travelled (which the conformance suite's session lifecycle caught through a
// load balancer).
pub(super) async fn still_kept(
    inner: &HttpInner,
    shared: &SharedSessions,
    id: &str,
    session: Arc<Session>,
) -> Result<Arc<Session>, Response> {
    match shared.is_kept(id).await {
        Ok(true) => Ok(session),
        Ok(false) => {
            // As when the end is heard: the copy goes, and so do questions waiting in it.
            inner.sessions.forget(id);
            inner.engine.pending().abandon(Some(id));
            Err(session_not_found())
        }
        // The store is down: what this instance holds still serves (a change to it is refused
        // where it is saved), as before this check.
        Err(_) => Ok(session),
    }
}

// Writes a session's record (made, or changed by the request `id`) for every instance.
pub(super) async fn save(shared: &SharedSessions, session: &Session, id: &Id) -> Result<(), Response> {
    shared.save(session).await.map_err(|_| unreachable_sessions(Some(id)))
}

// Ends a session everywhere: DELETE. `here` says whether this instance held it for the
// caller; otherwise its record must show it is the caller's.
pub(super) async fn end(shared: &SharedSessions, id: &str, user_id: Option<&str>, here: bool) -> Response {
    if !here {
        match shared.load(id).await {
            Ok(Some(record)) if record.belongs_to(user_id) => {}
            Ok(_) => return session_not_found(),
            Err(_) => return unreachable_sessions(None),
        }
    }
    match shared.end(id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(_) => unreachable_sessions(None),
    }
}

// A cancellation of a request not running here, for the instance it runs in.
pub(super) async fn send_cancel(shared: &SharedSessions, session: &str, request: Id) {
    let event = Event::Cancel { session: session.to_owned(), request };
    if let Err(e) = shared.publish(event).await {
        tracing::warn!(error = %e, "a cancellation could not be passed to the other instances");
    }
}

// A client's answer no call here waits for, for the instance whose call asked. Accepted
// when it is sent on: only that instance can tell whether it was awaited, and it takes it
// only from the session and user it asked. Only an answer under an id of the form this server
// gives its questions, and of a bounded size, is kept for it: anything else answers nothing,
// and would only fill the store.
pub(super) async fn send_answer(
    shared: &SharedSessions,
    session: &str,
    user: &UserInfo,
    request: Id,
    outcome: Result<serde_json::Value, serde_json::Value>,
) -> Response {
    if !crate::protocol::peer::PendingRequests::could_be_ours(&request) {
        return rpc_error(StatusCode::BAD_REQUEST, Some(&request), code::INVALID_REQUEST, NOT_WAITED_FOR);
    }
    let outcome = Answer::from(outcome);
    if !fits_kept(&outcome) {
        let message = format!(
            "Invalid request: the response is larger than the {} KiB an answer may be; send a smaller one",
            MAX_KEPT_BYTES / 1024
        );
        return rpc_error(StatusCode::BAD_REQUEST, Some(&request), code::INVALID_REQUEST, message);
    }
    let event =
        Event::Answer { session: session.to_owned(), user: user.user_id().map(str::to_owned), request, outcome };
    match shared.publish(event).await {
        Ok(()) => accepted(),
        Err(_) => unreachable_sessions(None),
    }
}

const NOT_WAITED_FOR: &str = "No request is waiting for this response";

pub(super) fn unreachable_sessions(id: Option<&Id>) -> Response {
    over_limit(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        "Service Unavailable: the shared session store cannot be reached; try again",
        Duration::from_secs(1),
    )
}

// Subscribes to what the other instances say, then keeps listening in a task of its own
// (subscribing again after a lost connection, and dropping the copies news of which may have
// been missed meanwhile), and keeps alive the records of the sessions used here. Both end
// when the endpoint is dropped.
pub(super) async fn listen(inner: &Arc<HttpInner>) -> Result<(), mirobody_core::BackendError> {
    let Some(shared) = &inner.shared else { return Ok(()) };
    let first = shared.events().await?;
    tokio::spawn(keep_listening(Arc::downgrade(inner), first));
    tokio::spawn(keep_records_alive(Arc::downgrade(inner), shared.ttl()));
    if let Some(changes) = inner.engine.changes().relay() {
        tokio::spawn(pass_changes_on(Arc::downgrade(inner), changes));
    }
    Ok(())
}

// Tells the other instances of each change announced here, for their listen streams.
async fn pass_changes_on(
    weak: Weak<HttpInner>,
    mut changes: tokio::sync::mpsc::Receiver<crate::protocol::changes::Change>,
) {
    while let Some(change) = changes.recv().await {
        let Some(inner) = weak.upgrade() else { return };
        let Some(shared) = &inner.shared else { return };
        if let Err(e) = shared.publish(Event::Change { change: change.to_wire() }).await {
            tracing::warn!(error = %e, "a change could not be passed to the other instances");
        }
    }
}

async fn keep_listening(weak: Weak<HttpInner>, mut events: futures::stream::BoxStream<'static, Delivery>) {
    // Task status changes are read from the task store one after another, off this loop, so
    // that a slow store delays no other event and the statuses reach streams in order.
    let (statuses, pending_statuses) = tokio::sync::mpsc::channel(STATUS_BACKLOG);
    tokio::spawn(relay_task_statuses(weak.clone(), pending_statuses));
    loop {
        while let Some(Delivery { event, traceparent }) = events.next().await {
            let Some(inner) = weak.upgrade() else { return };
            // Entered only for the handling here; what it spawns carries it on.
            let span = match &inner.shared {
                Some(shared) => shared.handling_span(traceparent.as_deref()),
                None => tracing::Span::none(),
            };
            span.in_scope(|| on_event(&inner, event, &statuses));
        }
        tracing::warn!("lost the shared session store's events; subscribing again");
        events = loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let Some(inner) = weak.upgrade() else { return };
            let Some(shared) = &inner.shared else { return };
            if let Ok(events) = shared.events().await {
                let dropped = inner.sessions.forget_unused();
                tracing::info!(dropped, "listening to the shared session store again");
                break events;
            }
        };
    }
}

// How many task status changes heard may wait to be read from the task store; beyond, they are
// dropped with a warning (a client polling the task still sees it).
const STATUS_BACKLOG: usize = 1024;

fn on_event(inner: &HttpInner, event: Heard, statuses: &tokio::sync::mpsc::Sender<(String, String, String)>) {
    match event {
        Heard::Changed { session, record } => {
            if let Some(copy) = inner.sessions.peek(&session) {
                record.apply(&copy);
            }
        }
        Heard::Ended { session } => {
            inner.sessions.forget(&session);
            inner.engine.pending().abandon(Some(&session));
        }
        Heard::Cancel { session, request } => {
            if let Some(copy) = inner.sessions.peek(&session) {
                copy.cancel_request(&request);
            }
        }
        Heard::Answer { session, user, request, payload } => {
            // Read from the store only by the instance whose call asked (and still waits).
            if !inner.engine.pending().awaits(&request, Some(&session), user.as_deref()) {
                return;
            }
            let (Some(shared), pending) = (inner.shared.clone(), Arc::clone(inner.engine.pending())) else { return };
            tokio::spawn(
                async move {
                    match shared.answer(&payload).await {
                        Ok(Some(answer)) => {
                            let _ = pending.complete(&request, Some(&session), user.as_deref(), answer.into());
                        }
                        Ok(None) => tracing::warn!("a client's answer passed on was gone before it was read"),
                        Err(e) => tracing::warn!(error = %e, "a client's answer passed on could not be read"),
                    }
                }
                .in_current_span(),
            );
        }
        Heard::Change { change } => {
            if let Some(change) = crate::protocol::changes::Change::from_wire(&change) {
                inner.engine.changes().notify_here(change);
            }
        }
        Heard::TaskStatus { task, owner, status } => {
            // Nobody listens here: nothing to read.
            if inner.engine.changes().listeners() > 0 && statuses.try_send((task, owner, status)).is_err() {
                tracing::warn!("a task's status change from another instance was dropped: too many waiting");
            }
        }
        // Each for the instance running the task; the others have nothing to do.
        Heard::TaskAnswers { task, owner, payload } => {
            let (Some(shared), tasks) = (inner.shared.clone(), Arc::clone(inner.engine.tasks())) else { return };
            tokio::spawn(
                async move {
                    match shared.task_answers(&payload).await {
                        Ok(Some(responses)) => tasks.update_here(&task, &owner, responses).await,
                        Ok(None) => tracing::debug!("a task's answers passed on were gone before they were read"),
                        Err(e) => tracing::warn!(error = %e, "a task's answers passed on could not be read"),
                    }
                }
                .in_current_span(),
            );
        }
        Heard::TaskCancel { task, owner } => {
            let tasks = Arc::clone(inner.engine.tasks());
            tokio::spawn(
                async move {
                    if let Err(crate::protocol::tasks::TaskRefusal::Rpc(e)) = tasks.cancel_here(&task, &owner).await {
                        tracing::warn!(error = %e.message, "a cancellation from another instance failed");
                    }
                }
                .in_current_span(),
            );
        }
    }
}

// Tells this instance's listen streams of the task status changes heard from the others, with
// the task as the task store shows it: the result never travels between instances. A status
// the store has already moved past is left to the change that moved it.
async fn relay_task_statuses(
    weak: Weak<HttpInner>,
    mut statuses: tokio::sync::mpsc::Receiver<(String, String, String)>,
) {
    use crate::protocol::changes::Change;
    use crate::protocol::tasks::task_json;
    while let Some((task, owner, status)) = statuses.recv().await {
        let Some(inner) = weak.upgrade() else { return };
        let tasks = inner.engine.tasks();
        match tasks.get(&task, &owner).await {
            Ok(record) if record.state.as_str() == status => {
                let task = task_json(&record, &tasks.options, true);
                inner.engine.changes().notify_here(Change::TaskStatus { owner, task });
            }
            Ok(_) => {}
            Err(_) => tracing::debug!("a task whose status changed on another instance could not be read"),
        }
    }
}

// Renews, a few times per record's life, the records of the sessions used here since: one
// round trip for all of them, never one per request.
async fn keep_records_alive(weak: Weak<HttpInner>, ttl: Duration) {
    let every = (ttl / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = weak.upgrade() else { return };
        let Some(shared) = &inner.shared else { return };
        let (used, owners) = inner.sessions.used_within(every * 3 / 2);
        if let Err(e) = shared.renew(&used, &owners).await {
            tracing::warn!(error = %e, sessions = used.len(), "could not renew shared session records");
        }
    }
}
