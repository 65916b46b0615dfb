//! CPU-heavy work off the async workers: a job (drawing a chart, say) runs on tokio's blocking
//! pool, behind two bounds, one for the whole process (by default, one job per CPU) and one per
//! caller (two jobs per signed-in user; one for every anonymous caller together, since they
//! cannot be told apart). The async workers stay free to answer everyone else, and a call
//! awaiting its job yields, so a tool with task support becomes a task as declared.
//!
//! A caller whose share is taken waits a bounded time for it, then gets a clear error ("busy,
//! try again"); waiting is what bounds the queue, so nothing piles up.
//!
//! Written here rather than taken from a crate: it is a semaphore in front of
//! `spawn_blocking`, and what it must know (who the caller is, that anonymous callers share
//! one turn) is this project's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use mirobody_core::{ToolError, UserInfo};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How much CPU-heavy work runs at once.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuLimits {
    /// Jobs running at once in the process (default: one per CPU the process may use).
    pub jobs: usize,
    /// Jobs one signed-in user may have running at once.
    pub per_user: usize,
    /// Jobs every anonymous caller together may have running at once.
    pub anonymous: usize,
    /// How long a job waits for its turn before it is refused as busy.
    pub wait: Duration,
}

impl Default for CpuLimits {
    fn default() -> Self {
        CpuLimits {
            jobs: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            per_user: 2,
            anonymous: 1,
            wait: Duration::from_secs(10),
        }
    }
}

/// Why a job did not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CpuError {
    /// The caller's share (or the server's) stayed taken for the whole wait.
    #[error(
        "The server is busy with other heavy work (at most {running} at once for this caller); try again in a \
         few seconds."
    )]
    Busy {
        /// The caller's bound.
        running: usize,
    },
}

impl From<CpuError> for ToolError {
    fn from(error: CpuError) -> Self {
        ToolError::new(error.to_string())
    }
}

/// The bounded pool CPU-heavy jobs run on.
#[derive(Debug)]
pub struct CpuPool {
    limits: CpuLimits,
    jobs: Arc<Semaphore>,
    anonymous: Arc<Semaphore>,
    // Each signed-in user's turns while they have a job running or waiting.
    users: Mutex<HashMap<String, Arc<Semaphore>>>,
}

// Past this many users, the entries of users with no job are dropped.
const USERS_KEPT: usize = 1024;

impl CpuPool {
    /// A pool with these bounds (each at least one).
    pub fn new(limits: CpuLimits) -> Self {
        let limits = CpuLimits {
            jobs: limits.jobs.max(1),
            per_user: limits.per_user.max(1),
            anonymous: limits.anonymous.max(1),
            wait: limits.wait,
        };
        CpuPool {
            jobs: Arc::new(Semaphore::new(limits.jobs)),
            anonymous: Arc::new(Semaphore::new(limits.anonymous)),
            users: Mutex::default(),
            limits,
        }
    }

    /// The process's pool, with the default bounds; what the built-in tools use.
    pub fn shared() -> &'static CpuPool {
        static POOL: OnceLock<CpuPool> = OnceLock::new();
        POOL.get_or_init(|| CpuPool::new(CpuLimits::default()))
    }

    /// Runs `job` on the blocking pool as `user`'s, within the bounds: its result, or
    /// [`CpuError::Busy`] when no turn came within the wait. Once started, a job runs to its
    /// end and keeps its turn until then, even if the caller stops waiting for it (a thread
    /// cannot be stopped from outside), so the bounds always hold. A panic in `job` resumes
    /// in the caller.
    ///
    /// ```
    /// use mirobody_core::UserInfo;
    /// use mirobody_tools::cpu::CpuPool;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sum = CpuPool::shared().run(&UserInfo::anonymous(), || (1..=100u64).sum::<u64>()).await;
    /// assert_eq!(sum, Ok(5050));
    /// # }
    /// ```
    pub async fn run<T, F>(&self, user: &UserInfo, job: F) -> Result<T, CpuError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (share, running) = match user.user_id() {
            Some(id) => (self.user_share(id), self.limits.per_user),
            None => (Arc::clone(&self.anonymous), self.limits.anonymous),
        };
        let turns = async {
            // The caller's own turn first, so that one caller's queue never holds the
            // process's turns while it waits.
            let mine = Arc::clone(&share).acquire_owned().await.ok()?;
            let any = Arc::clone(&self.jobs).acquire_owned().await.ok()?;
            Some((mine, any))
        };
        let turns: (OwnedSemaphorePermit, OwnedSemaphorePermit) =
            match tokio::time::timeout(self.limits.wait, turns).await {
                Ok(Some(turns)) => turns,
                _ => return Err(CpuError::Busy { running }),
            };
        drop(share);
        let handle = tokio::task::spawn_blocking(move || {
            let _turns = turns;
            job()
        });
        match handle.await {
            Ok(output) => Ok(output),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // The runtime is shutting down: nothing will answer anyway.
            Err(_) => Err(CpuError::Busy { running }),
        }
    }

    fn user_share(&self, id: &str) -> Arc<Semaphore> {
        let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        if users.len() >= USERS_KEPT {
            // An entry only the map holds has no job running or waiting.
            users.retain(|_, share| Arc::strong_count(share) > 1);
        }
        let share = users.entry(id.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.limits.per_user)));
        Arc::clone(share)
    }
}

/// Runs `job` on the process's pool ([`CpuPool::shared`]) as `user`'s.
pub async fn run<T, F>(user: &UserInfo, job: F) -> Result<T, CpuError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    CpuPool::shared().run(user, job).await
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn pool(jobs: usize, wait_ms: u64) -> Arc<CpuPool> {
        Arc::new(CpuPool::new(CpuLimits { jobs, per_user: 2, anonymous: 1, wait: Duration::from_millis(wait_ms) }))
    }

    // A job that holds its turn until `release` is sent to (or dropped).
    fn held(pool: &Arc<CpuPool>, user: UserInfo) -> (mpsc::Sender<()>, tokio::task::JoinHandle<Result<(), CpuError>>) {
        let (release, wait) = mpsc::channel::<()>();
        let pool = Arc::clone(pool);
        let job = tokio::spawn(async move {
            pool.run(&user, move || {
                let _ = wait.recv();
            })
            .await
        });
        (release, job)
    }

    async fn until_running(pool: &CpuPool, running: usize) {
        while pool.limits.jobs - pool.jobs.available_permits() < running {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test]
    async fn anonymous_callers_share_one_turn_and_a_long_wait_is_refused_as_busy() {
        let pool = pool(4, 100);
        let (release, first) = held(&pool, UserInfo::anonymous());
        until_running(&pool, 1).await;
        let refused = pool.run(&UserInfo::anonymous(), || ()).await;
        assert_eq!(refused, Err(CpuError::Busy { running: 1 }));
        assert!(ToolError::from(refused.unwrap_err()).to_string().contains("try again"));
        // A signed-in user has turns of their own meanwhile.
        assert_eq!(pool.run(&UserInfo::authenticated("alice"), || 7).await, Ok(7));
        release.send(()).unwrap();
        first.await.unwrap().unwrap();
        assert_eq!(pool.run(&UserInfo::anonymous(), || 1).await, Ok(1), "the turn is given back");
    }

    #[tokio::test]
    async fn a_user_has_two_turns_and_the_process_its_bound() {
        let pool = pool(3, 100);
        let alice = UserInfo::authenticated("alice");
        let (one, first) = held(&pool, alice.clone());
        let (two, second) = held(&pool, alice.clone());
        until_running(&pool, 2).await;
        assert!(pool.run(&alice, || ()).await.is_err(), "a third job of alice's waits, then is refused");
        let (three, third) = held(&pool, UserInfo::authenticated("bob"));
        until_running(&pool, 3).await;
        assert!(pool.run(&UserInfo::authenticated("carol"), || ()).await.is_err(), "the process's bound");
        for release in [one, two, three] {
            release.send(()).unwrap();
        }
        for job in [first, second, third] {
            job.await.unwrap().unwrap();
        }
        assert_eq!(pool.run(&UserInfo::authenticated("carol"), || 3).await, Ok(3));
    }

    #[tokio::test]
    async fn a_job_keeps_its_turn_when_its_caller_stops_waiting() {
        let pool = pool(4, 100);
        let (release, job) = held(&pool, UserInfo::anonymous());
        until_running(&pool, 1).await;
        job.abort();
        let _ = job.await;
        assert!(pool.run(&UserInfo::anonymous(), || ()).await.is_err(), "still running on its thread");
        release.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(20), async {
            while pool.run(&UserInfo::anonymous(), || ()).await.is_err() {}
        })
        .await
        .expect("the turn comes back when the job ends");
    }

    #[tokio::test]
    #[should_panic(expected = "the job's own panic")]
    async fn a_panic_in_a_job_resumes_in_its_caller() {
        let _ = pool(1, 100).run(&UserInfo::anonymous(), || panic!("the job's own panic")).await;
    }
}
