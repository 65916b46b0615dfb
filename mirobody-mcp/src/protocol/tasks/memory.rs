//! [`MemoryTaskStore`]: task records in this process, for a server without a database.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_ports::{ANONYMOUS_OWNER_PREFIX, TaskRecord, TaskStore};

use crate::session::lock;

/// Task records in this process's memory: they end with it. At most `capacity` are kept; past
/// that, ended tasks are forgotten oldest first (running ones are bounded per caller).
pub struct MemoryTaskStore {
    records: Mutex<HashMap<String, TaskRecord>>,
    capacity: usize,
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        MemoryTaskStore::with_capacity(10_000)
    }
}

impl MemoryTaskStore {
    /// A store keeping at most `capacity` ended tasks.
    ///
    /// ```
    /// use mirobody_ports::{ANONYMOUS_OWNER_PREFIX, TaskRecord, TaskStore};
    /// use mirobody_mcp::MemoryTaskStore;
    ///
    /// let store = MemoryTaskStore::with_capacity(100);
    /// # futures::executor::block_on(async {
    /// store.save(&TaskRecord::new("t1".into(), "user:ada".into(), "echo".into(), 0, 60_000, 30_000)).await.unwrap();
    /// assert!(store.load("t1", "user:ada", 1).await.unwrap().is_some());
    /// assert!(store.load("t1", "user:bob", 1).await.unwrap().is_none(), "another caller's task is not found");
    /// # });
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        MemoryTaskStore { records: Mutex::default(), capacity }
    }
}

#[async_trait]
impl TaskStore for MemoryTaskStore {
    async fn save(&self, task: &TaskRecord) -> BackendResult<()> {
        let mut records = lock(&self.records);
        match records.get(&task.id) {
            Some(kept) if kept.owner != task.owner || kept.state.is_terminal() => return Ok(()),
            _ => {}
        }
        if records.len() >= self.capacity && !records.contains_key(&task.id) {
            let oldest =
                records.values().filter(|r| r.state.is_terminal()).min_by_key(|r| r.updated_ms).map(|r| r.id.clone());
            if let Some(oldest) = oldest {
                records.remove(&oldest);
            }
        }
        records.insert(task.id.clone(), task.clone());
        Ok(())
    }

    async fn load(&self, id: &str, owner: &str, now_ms: i64) -> BackendResult<Option<TaskRecord>> {
        let records = lock(&self.records);
        Ok(records.get(id).filter(|r| r.owner == owner && r.expires_ms > now_ms).cloned())
    }

    async fn live(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        let records = lock(&self.records);
        let live = records
            .values()
            .filter(|r| r.owner == owner && r.expires_ms > now_ms && !r.state_at(now_ms).is_terminal())
            .count();
        Ok(live as u64)
    }

    async fn live_anonymous(&self, now_ms: i64) -> BackendResult<u64> {
        let records = lock(&self.records);
        let live = records
            .values()
            .filter(|r| {
                r.owner.starts_with(ANONYMOUS_OWNER_PREFIX)
                    && r.expires_ms > now_ms
                    && !r.state_at(now_ms).is_terminal()
            })
            .count();
        Ok(live as u64)
    }

    async fn kept(&self, owner: &str, now_ms: i64) -> BackendResult<u64> {
        let records = lock(&self.records);
        Ok(records.values().filter(|r| r.owner == owner && r.expires_ms > now_ms).count() as u64)
    }

    async fn kept_anonymous(&self, now_ms: i64) -> BackendResult<u64> {
        let records = lock(&self.records);
        let kept =
            records.values().filter(|r| r.owner.starts_with(ANONYMOUS_OWNER_PREFIX) && r.expires_ms > now_ms).count();
        Ok(kept as u64)
    }

    async fn purge(&self, now_ms: i64, max: u64) -> BackendResult<u64> {
        let mut records = lock(&self.records);
        let expired: Vec<String> =
            records.values().filter(|r| r.expires_ms <= now_ms).take(max as usize).map(|r| r.id.clone()).collect();
        for id in &expired {
            records.remove(id);
        }
        Ok(expired.len() as u64)
    }
}
