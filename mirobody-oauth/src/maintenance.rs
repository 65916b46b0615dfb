//! Background upkeep: learning other instances' revocations, and deleting what expired.

use std::time::Duration;

use crate::server::OAuthServer;

/// How often the store is asked for grants revoked elsewhere.
const REVOCATION_POLL: Duration = Duration::from_secs(5);
/// How often expired codes, tokens, sessions and unused clients are deleted.
const SWEEP_EVERY: Duration = Duration::from_secs(600);

impl OAuthServer {
    /// Starts the upkeep on the current tokio runtime: every 5 s the grants revoked on any
    /// instance join this one's revoked list (so an access token stops working everywhere
    /// within seconds), and every 10 minutes expired codes, refresh tokens and sessions, and
    /// clients no grant names past `unused_client_ttl`, expired sign-up links, passkey
    /// ceremonies and sign-ins in flight to a provider are deleted.
    pub fn spawn_maintenance(&self) -> tokio::task::JoinHandle<()> {
        let server = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(REVOCATION_POLL);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let sweeps_per_poll = (SWEEP_EVERY.as_secs() / REVOCATION_POLL.as_secs()).max(1);
            let mut count = 0u64;
            loop {
                ticks.tick().await;
                server.learn_revocations().await;
                if count.is_multiple_of(sweeps_per_poll) {
                    server.sweep().await;
                }
                count = count.wrapping_add(1);
            }
        })
    }

    /// Adds the grants revoked within one access-token lifetime to the revoked list.
    pub async fn learn_revocations(&self) {
        let window = self.inner.settings.access_token_ttl + REVOCATION_POLL * 2;
        let since = mirobody_core::clock::now_ms() - i64::try_from(window.as_millis()).unwrap_or(i64::MAX / 2);
        match self.inner.stores.oauth.revoked_grants_since(since).await {
            Ok(ids) => self.inner.revoked.extend(ids.iter().map(String::as_str)),
            Err(e) => tracing::warn!(error = %e, "cannot read revoked grants"),
        }
    }

    async fn sweep(&self) {
        let stores = &self.inner.stores;
        let now = mirobody_core::clock::now_ms();
        let unused = now - i64::try_from(self.inner.settings.unused_client_ttl.as_millis()).unwrap_or(i64::MAX / 2);
        let ceremonies = match &stores.passkeys {
            Some(passkeys) => passkeys.sweep_ceremonies(now).await,
            None => Ok(0),
        };
        let results = [
            ("codes and refresh tokens", stores.oauth.sweep_oauth(now).await),
            ("unused clients", stores.oauth.sweep_unused_clients(unused).await),
            ("web sessions", stores.sessions.sweep_web_sessions(now).await),
            ("sign-up links", stores.accounts.sweep_signup_tokens(now).await),
            ("passkey ceremonies", ceremonies),
        ];
        let logins = crate::upstream::sweep(self, now).await.map(|result| ("sign-ins in flight", result));
        for (what, result) in results.into_iter().chain(logins) {
            match result {
                Ok(0) => {}
                Ok(count) => tracing::debug!(count, what, "expired sign-in records deleted"),
                Err(e) => tracing::warn!(error = %e, what, "cannot delete expired sign-in records"),
            }
        }
    }
}
