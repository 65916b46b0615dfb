//! [`MemoryBackplane`]: shared sessions within one process, for tests and for an application
//! that runs several endpoints side by side.

use futures::stream::{BoxStream, StreamExt};
use mirobody_core::backend::BackendResult;
use mirobody_ports::SessionBackplane;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

use super::lock;

// A set's members, those added longest ago first.
type Members = VecDeque<Vec<u8>>;

/// A [`SessionBackplane`] in memory: records and sets with their expiry, events through a
/// broadcast channel. Every endpoint given the same one (an `Arc`) shares its sessions, as instances
/// sharing a Redis do.
///
/// ```
/// use std::sync::Arc;
/// use mirobody_core::Registry;
/// use mirobody_ports::SessionBackplane;
/// use mirobody_mcp::http::{HttpOptions, McpHttp};
/// use mirobody_mcp::session::MemoryBackplane;
/// use mirobody_mcp::{McpEngine, StateKey};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let backplane: Arc<dyn SessionBackplane> = Arc::new(MemoryBackplane::new());
/// // The secret every instance shares (from its configuration, never generated per process).
/// let key = StateKey::new(*b"an example secret of 32 bytes!!!").unwrap();
/// let engine = || {
///     let registry = Arc::new(Registry::builder().build().unwrap());
///     McpEngine::builder(registry).request_state_key(key.clone()).build()
/// };
/// let (options, shared) = (HttpOptions::default(), Arc::clone(&backplane));
/// let a = McpHttp::with_shared_sessions(engine(), options.clone(), shared, &key).await.unwrap();
/// let b = McpHttp::with_shared_sessions(engine(), options, backplane, &key).await.unwrap();
/// assert!(a.shares_sessions() && b.shares_sessions());
/// assert_eq!(a.refused_events().unwrap().total(), 0);
/// # });
/// ```
pub struct MemoryBackplane {
    records: Mutex<HashMap<String, (Vec<u8>, Instant)>>,
    sets: Mutex<HashMap<String, (Members, Instant)>>,
    events: broadcast::Sender<Vec<u8>>,
}

impl std::fmt::Debug for MemoryBackplane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBackplane").field("records", &lock(&self.records).len()).finish()
    }
}

impl Default for MemoryBackplane {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBackplane {
    /// An empty one. Events a listener has not taken are kept up to 1,024; a listener further
    /// behind loses the oldest, as a Redis subscriber that falls behind is cut off.
    pub fn new() -> Self {
        MemoryBackplane { records: Mutex::default(), sets: Mutex::default(), events: broadcast::channel(1024).0 }
    }

    /// How many records are live.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        lock(&self.records).values().filter(|(_, until)| *until > now).count()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many sets (of [`add_member`](SessionBackplane::add_member)) are live.
    pub fn sets(&self) -> usize {
        let now = Instant::now();
        lock(&self.sets).values().filter(|(_, until)| *until > now).count()
    }

    /// Whether any name, record or member it keeps (expired or not) contains `bytes`: for tests
    /// that check what a reader of the store could learn.
    pub fn holds(&self, bytes: &[u8]) -> bool {
        let found = |haystack: &[u8]| !bytes.is_empty() && haystack.windows(bytes.len()).any(|w| w == bytes);
        let in_records = lock(&self.records).iter().any(|(id, (record, _))| found(id.as_bytes()) || found(record));
        in_records
            || lock(&self.sets)
                .iter()
                .any(|(id, (members, _))| found(id.as_bytes()) || members.iter().any(|m| found(m)))
    }
}

#[async_trait::async_trait]
impl SessionBackplane for MemoryBackplane {
    async fn save(&self, id: &str, record: Vec<u8>, ttl: Duration) -> BackendResult<()> {
        let now = Instant::now();
        let mut records = lock(&self.records);
        records.retain(|_, (_, until)| *until > now);
        records.insert(id.to_owned(), (record, now + ttl));
        Ok(())
    }

    async fn load(&self, id: &str) -> BackendResult<Option<Vec<u8>>> {
        let now = Instant::now();
        Ok(lock(&self.records).get(id).filter(|(_, until)| *until > now).map(|(record, _)| record.clone()))
    }

    async fn remove(&self, id: &str) -> BackendResult<()> {
        lock(&self.records).remove(id);
        lock(&self.sets).remove(id);
        Ok(())
    }

    async fn renew(&self, ids: &[String], ttl: Duration) -> BackendResult<()> {
        let now = Instant::now();
        let (mut records, mut sets) = (lock(&self.records), lock(&self.sets));
        for id in ids {
            if let Some((_, until)) = records.get_mut(id).filter(|(_, until)| *until > now) {
                *until = now + ttl;
            }
            if let Some((_, until)) = sets.get_mut(id).filter(|(_, until)| *until > now) {
                *until = now + ttl;
            }
        }
        Ok(())
    }

    async fn add_member(&self, id: &str, member: Vec<u8>, max: usize, ttl: Duration) -> BackendResult<()> {
        let now = Instant::now();
        let mut sets = lock(&self.sets);
        sets.retain(|_, (_, until)| *until > now);
        let (members, until) = sets.entry(id.to_owned()).or_insert_with(|| (VecDeque::new(), now));
        // A set is of distinct members, as Redis's are: one added again counts as new.
        members.retain(|kept| *kept != member);
        members.push_back(member);
        while members.len() > max.max(1) {
            members.pop_front();
        }
        *until = now + ttl;
        Ok(())
    }

    async fn members(&self, id: &str, max: usize) -> BackendResult<Vec<Vec<u8>>> {
        let now = Instant::now();
        let sets = lock(&self.sets);
        let members = sets.get(id).filter(|(_, until)| *until > now).map(|(members, _)| members);
        Ok(members.map(|members| members.iter().take(max).cloned().collect()).unwrap_or_default())
    }

    async fn publish(&self, event: Vec<u8>) -> BackendResult<()> {
        // No listener is not an error: the event is for whoever listens now.
        let _ = self.events.send(event);
        Ok(())
    }

    async fn events(&self) -> BackendResult<BoxStream<'static, Vec<u8>>> {
        let rx = self.events.subscribe();
        let events = futures::stream::unfold(rx, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(event) => return Some((event, rx)),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        Ok(events.boxed())
    }
}
