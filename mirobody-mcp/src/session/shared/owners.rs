//! Each owner's sessions, indexed where their records are kept, so that ending a person's
//! sessions (their account deleted) reaches those every instance made, not only this one's.
//!
//! An owner's index is a set in the backplane under a keyed hash of `owner\0<owner id>` (no
//! session id holds a NUL, which no HTTP header carries, so no index is named as a record is),
//! each member a session id sealed for that owner: whoever reads the store sees how many
//! sessions someone holds, not whose they are nor their ids. A member is added once per
//! session, when its record is first written with an owner (made by a signed-in caller, or
//! claimed by one); the index lives as long as the records do (given the records' time to live
//! on each addition, renewed with the records of the sessions in use) and keeps at most
//! [`MAX_INDEXED_SESSIONS`], those added longest ago dropped first.

use super::*;

// What an index's members are sealed for, under their owner's id.
const INDEXED: &str = "owner index";

/// The most sessions an owner's index keeps: far more than a person's clients hold at once (32
/// per instance by default, each gone after its idle timeout); past it the oldest, whose
/// records have most likely expired, are dropped.
pub(crate) const MAX_INDEXED_SESSIONS: usize = 1024;

impl SharedSessions {
    /// The name `owner`'s index is kept under.
    pub(super) fn index_name(&self, owner: &str) -> String {
        self.trust.keys.name(&format!("owner\0{owner}"))
    }

    /// Adds the session to its owner's index, unless it is anonymous or there already. A
    /// failure is logged, not returned: the session works all the same (a store that refuses
    /// sets, such as a Redis ACL user of an earlier release's guide, only leaves a deleted
    /// account's sessions on other instances to their expiry), and the next save tries again.
    pub(super) async fn index(&self, session: &Session) {
        let (Some(id), Some(owner)) = (session.id(), session.owner()) else { return };
        if session.owner_indexed() {
            return;
        }
        let member = self.trust.keys.seal(INDEXED, owner, id.as_bytes());
        match self.backplane.add_member(&self.index_name(owner), member, MAX_INDEXED_SESSIONS, self.ttl).await {
            Ok(()) => session.set_owner_indexed(),
            Err(e) => tracing::warn!(error = %e, "a session could not be added to its owner's index"),
        }
    }

    /// The ids of `owner`'s sessions in their index (a member that does not open counts as
    /// none, and is counted as refused).
    pub(crate) async fn sessions_of(&self, owner: &str) -> BackendResult<Vec<String>> {
        let members = self.backplane.members(&self.index_name(owner), MAX_INDEXED_SESSIONS).await?;
        let mut ids = Vec::with_capacity(members.len());
        for member in members {
            match self.trust.keys.open(INDEXED, owner, &member).and_then(|id| String::from_utf8(id).ok()) {
                Some(id) => ids.push(id),
                None => self.trust.guard.refuse(Refusal::Unreadable),
            }
        }
        Ok(ids)
    }

    /// Ends every session of `owner` everywhere: those in their index and those of `known`
    /// (this instance's), their records and the index removed, and every instance told to drop
    /// its copies. Answered once the last end was heard back (the backplane hands events over
    /// in order), as [`end`](Self::end) is. The ids ended.
    pub(crate) async fn end_sessions_of(&self, owner: &str, known: &[String]) -> BackendResult<Vec<String>> {
        let mut ids = self.sessions_of(owner).await?;
        ids.extend_from_slice(known);
        ids.sort_unstable();
        ids.dedup();
        for id in &ids {
            self.backplane.remove(&self.trust.keys.name(id)).await?;
        }
        self.backplane.remove(&self.index_name(owner)).await?;
        if let Some((last, rest)) = ids.split_last() {
            for id in rest {
                self.send(Heard::Ended { session: id.clone() }, random_token(), false).await?;
            }
            self.announce(Heard::Ended { session: last.clone() }).await?;
        }
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::MemoryBackplane;

    fn session(id: &str, owner: Option<&str>) -> Session {
        let session = Session::new(Some(id.into())).owned_by(owner);
        session.initialize("2025-11-25", ClientInfo::default());
        session
    }

    // An instance that hears its own announcements back, so a change is answered at once.
    async fn shared(backplane: &Arc<MemoryBackplane>, secret: u8) -> SharedSessions {
        let shared = SharedSessions::new(Arc::clone(backplane) as _, Duration::from_secs(60), &[secret; 32]);
        tokio::spawn(shared.events().await.unwrap().for_each(|_| std::future::ready(())));
        shared
    }

    const ALICE: &str = "alice-7f3e";
    const S1: &str = "5d1c0a7e9b2f4e6a8c3d1b0f9e8d7c6b";
    const S2: &str = "0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7";
    const S3: &str = "9a8b7c6d5e4f30211f2e3d4c5b6a7988";

    #[tokio::test]
    async fn an_owners_sessions_are_indexed_once_and_unreadably() {
        let backplane = Arc::new(MemoryBackplane::new());
        let (a, b) = (shared(&backplane, 1).await, shared(&backplane, 1).await);
        let (one, two) = (session(S1, Some(ALICE)), session(S2, Some(ALICE)));
        a.save(&one).await.unwrap();
        b.save(&two).await.unwrap();
        a.save(&session(S3, None)).await.unwrap();
        assert_eq!((backplane.len(), backplane.sets()), (3, 1), "one index; none for the anonymous session");
        // Saved again (a change): not added again.
        one.set_log_level(3);
        a.save(&one).await.unwrap();
        let listed = backplane.members(&a.index_name(ALICE), usize::MAX).await.unwrap();
        assert_eq!(listed.len(), 2);
        let mut ids = b.sessions_of(ALICE).await.unwrap();
        ids.sort_unstable();
        assert_eq!(ids, [S2, S1]);
        for readable in [ALICE, S1, S2, S3] {
            assert!(!backplane.holds(readable.as_bytes()), "the store shows {readable}");
        }
        // Another secret reads nothing; a member moved to another's index does not open there.
        assert_eq!(shared(&backplane, 2).await.sessions_of(ALICE).await.unwrap(), Vec::<String>::new());
        let moved = listed[0].clone();
        backplane.add_member(&a.index_name("mallory"), moved, 10, Duration::from_secs(60)).await.unwrap();
        assert_eq!(a.sessions_of("mallory").await.unwrap(), Vec::<String>::new());
        assert_eq!(a.refused().unreadable, 1);
    }

    #[tokio::test]
    async fn ending_an_owners_sessions_removes_their_records_and_index_and_tells_everyone() {
        let backplane = Arc::new(MemoryBackplane::new());
        // b listens through `on_b` alone: of two listeners of one instance, whichever reads an
        // event first has it, and the guard they share refuses it to the other as a replay.
        let a = shared(&backplane, 1).await;
        let b = SharedSessions::new(Arc::clone(&backplane) as _, Duration::from_secs(60), &[1; 32]);
        let mut on_b = b.events().await.unwrap().map(|delivery| delivery.event).boxed();
        a.save(&session(S1, Some(ALICE))).await.unwrap();
        b.save(&session(S2, Some(ALICE))).await.unwrap();
        a.save(&session(S3, Some("bob"))).await.unwrap();
        while tokio::time::timeout(Duration::from_millis(50), on_b.next()).await.is_ok() {}

        let ended = a.end_sessions_of(ALICE, &["0123".into()]).await.unwrap();
        assert_eq!(ended, ["0123", S2, S1]);
        assert_eq!((a.load(S1).await.unwrap(), b.load(S2).await.unwrap()), (None, None));
        assert!(b.load(S3).await.unwrap().is_some(), "bob's is kept");
        assert_eq!((backplane.len(), backplane.sets()), (1, 1), "bob's record and index only");
        let mut heard = Vec::new();
        while let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(300), on_b.next()).await {
            heard.push(event);
        }
        let told: Vec<Heard> = ended.iter().map(|id| Heard::Ended { session: id.clone() }).collect();
        assert_eq!(heard, told);
        // Nothing left to end.
        assert_eq!(b.end_sessions_of(ALICE, &[]).await.unwrap(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn an_index_keeps_its_newest_members_up_to_its_bound() {
        let backplane = MemoryBackplane::new();
        let ttl = Duration::from_secs(60);
        for n in 0..5u8 {
            backplane.add_member("i", vec![n], 3, ttl).await.unwrap();
        }
        backplane.add_member("i", vec![3], 3, ttl).await.unwrap();
        assert_eq!(backplane.members("i", 10).await.unwrap(), [vec![2], vec![4], vec![3]]);
        assert_eq!(backplane.members("i", 2).await.unwrap().len(), 2);
        backplane.add_member("short", vec![1], 3, Duration::from_millis(1)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(backplane.members("short", 10).await.unwrap().is_empty(), "expired");
        backplane.remove("i").await.unwrap();
        assert_eq!(backplane.sets(), 0);
    }
}
