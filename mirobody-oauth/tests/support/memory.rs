//! Every store `mirobody-oauth` needs, in memory: the smallest correct implementation of
//! `AccountStore`, `WebSessionStore`, `OAuthStore` and `SecretStore`, following each method's
//! documented contract. The tests drive the pages over it; an application embedding the
//! server without a database could start from it (it keeps nothing across restarts).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;
use mirobody_ports::{
    Account, AccountStore, AuthorizationCode, CodeUse, Grant, OAuthClient, OAuthStore, RefreshUse, RegistrationBound,
    SecretOwner, SecretStore, SignupToken, WebSession, WebSessionStore,
};

#[derive(Default)]
struct State {
    accounts: HashMap<String, Account>,
    sessions: HashMap<[u8; 32], WebSession>,
    clients: HashMap<String, OAuthClient>,
    grants: HashMap<String, Grant>,
    /// A code and whether it was taken.
    codes: HashMap<[u8; 32], (AuthorizationCode, bool)>,
    refresh: HashMap<[u8; 32], Refresh>,
    /// A secret's owner, hash and expiry, by user.
    secrets: HashMap<String, (SecretOwner, [u8; 32], Option<u64>)>,
    /// A sign-up token and whether it was used.
    signup: HashMap<[u8; 32], (SignupToken, bool)>,
}

struct Refresh {
    grant_id: String,
    expires_at_ms: i64,
    used: bool,
}

impl State {
    fn account_live(&self, id: &str) -> bool {
        self.accounts.get(id).is_some_and(|account| !account.disabled)
    }

    fn grant_live(&self, id: &str) -> bool {
        self.grants.get(id).is_some_and(|grant| grant.revoked_at_ms.is_none() && self.account_live(&grant.account_id))
    }

    fn secret_live(&self, user_id: &str, now_ms: u64) -> bool {
        self.secrets.get(user_id).is_some_and(|(_, _, expires)| expires.is_none_or(|at| at > now_ms))
    }
}

/// The stores, behind one lock.
#[derive(Default)]
pub(crate) struct Memory {
    state: Mutex<State>,
}

impl Memory {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn now_ms() -> u64 {
    mirobody_core::clock::now_ms().unsigned_abs()
}

#[async_trait]
impl AccountStore for Memory {
    async fn create_account(&self, account: &Account) -> BackendResult<bool> {
        let mut state = self.lock();
        let taken = state.accounts.contains_key(&account.id)
            || state.accounts.values().any(|other| other.email == account.email);
        if taken {
            return Ok(false);
        }
        state.accounts.insert(account.id.clone(), account.clone());
        Ok(true)
    }

    async fn account(&self, id: &str) -> BackendResult<Option<Account>> {
        Ok(self.lock().accounts.get(id).cloned())
    }

    async fn account_by_email(&self, email: &str) -> BackendResult<Option<Account>> {
        Ok(self.lock().accounts.values().find(|account| account.email == email).cloned())
    }

    async fn list_accounts(&self, after: Option<&str>, limit: u32) -> BackendResult<Vec<Account>> {
        let state = self.lock();
        let mut accounts: Vec<Account> = state
            .accounts
            .values()
            .filter(|account| after.is_none_or(|after| account.email.as_str() > after))
            .cloned()
            .collect();
        accounts.sort_by(|a, b| a.email.cmp(&b.email));
        accounts.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(accounts)
    }

    async fn set_password_hash(&self, id: &str, password_hash: Option<&str>) -> BackendResult<bool> {
        Ok(self
            .lock()
            .accounts
            .get_mut(id)
            .map(|account| account.password_hash = password_hash.map(str::to_owned))
            .is_some())
    }

    async fn set_account_disabled(&self, id: &str, disabled: bool) -> BackendResult<bool> {
        Ok(self.lock().accounts.get_mut(id).map(|account| account.disabled = disabled).is_some())
    }

    async fn create_signup_token(
        &self,
        token_hash: &[u8; 32],
        token: &SignupToken,
        max_live_per_inviter: u32,
    ) -> BackendResult<bool> {
        let mut state = self.lock();
        let live = state
            .signup
            .values()
            .filter(|(other, used)| {
                !used && other.invited_by == token.invited_by && other.expires_at_ms > token.created_at_ms
            })
            .count();
        if live >= max_live_per_inviter as usize || state.signup.contains_key(token_hash) {
            return Ok(false);
        }
        state.signup.insert(*token_hash, (token.clone(), false));
        Ok(true)
    }

    async fn signup_token_email(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<String>> {
        let state = self.lock();
        let live = state.signup.get(token_hash).filter(|(token, used)| !used && token.expires_at_ms > now_ms);
        Ok(live.map(|(token, _)| token.email.clone()))
    }

    async fn use_signup_token(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<String>> {
        let mut state = self.lock();
        let live = state.signup.get_mut(token_hash).filter(|(token, used)| !*used && token.expires_at_ms > now_ms);
        Ok(live.map(|(token, used)| {
            *used = true;
            token.email.clone()
        }))
    }

    async fn sweep_signup_tokens(&self, now_ms: i64) -> BackendResult<u64> {
        let mut state = self.lock();
        let before = state.signup.len();
        state.signup.retain(|_, (token, _)| token.expires_at_ms > now_ms);
        Ok((before - state.signup.len()) as u64)
    }
}

#[async_trait]
impl WebSessionStore for Memory {
    async fn create_web_session(&self, token_hash: &[u8; 32], session: &WebSession) -> BackendResult<()> {
        self.lock().sessions.insert(*token_hash, session.clone());
        Ok(())
    }

    async fn web_session(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<WebSession>> {
        let state = self.lock();
        let session = state.sessions.get(token_hash).filter(|session| session.expires_at_ms > now_ms);
        Ok(session.filter(|session| state.account_live(&session.account_id)).cloned())
    }

    async fn end_web_session(&self, token_hash: &[u8; 32]) -> BackendResult<bool> {
        Ok(self.lock().sessions.remove(token_hash).is_some())
    }

    async fn end_web_sessions_of(&self, account_id: &str) -> BackendResult<u64> {
        let mut state = self.lock();
        let before = state.sessions.len();
        state.sessions.retain(|_, session| session.account_id != account_id);
        Ok((before - state.sessions.len()) as u64)
    }

    async fn sweep_web_sessions(&self, now_ms: i64) -> BackendResult<u64> {
        let mut state = self.lock();
        let before = state.sessions.len();
        state.sessions.retain(|_, session| session.expires_at_ms > now_ms);
        Ok((before - state.sessions.len()) as u64)
    }
}

#[async_trait]
impl OAuthStore for Memory {
    async fn register_client(&self, client: &OAuthClient, bound: RegistrationBound) -> BackendResult<bool> {
        let mut state = self.lock();
        let from_one = state
            .clients
            .values()
            .filter(|other| other.registered_from == client.registered_from && other.created_at_ms >= bound.since_ms)
            .count();
        let within = from_one < bound.max_from_one as usize && (state.clients.len() as u64) < bound.max_total;
        if !within || state.clients.contains_key(&client.client_id) {
            return Ok(false);
        }
        state.clients.insert(client.client_id.clone(), client.clone());
        Ok(true)
    }

    async fn put_client(&self, client: &OAuthClient) -> BackendResult<()> {
        self.lock().clients.insert(client.client_id.clone(), client.clone());
        Ok(())
    }

    async fn client(&self, client_id: &str) -> BackendResult<Option<OAuthClient>> {
        Ok(self.lock().clients.get(client_id).cloned())
    }

    async fn sweep_unused_clients(&self, before_ms: i64) -> BackendResult<u64> {
        let mut state = self.lock();
        let named: Vec<String> = state.grants.values().map(|grant| grant.client_id.clone()).collect();
        let before = state.clients.len();
        state.clients.retain(|id, client| client.created_at_ms >= before_ms || named.contains(id));
        Ok((before - state.clients.len()) as u64)
    }

    async fn create_grant(&self, grant: &Grant) -> BackendResult<()> {
        self.lock().grants.insert(grant.id.clone(), grant.clone());
        Ok(())
    }

    async fn grant(&self, id: &str) -> BackendResult<Option<Grant>> {
        Ok(self.lock().grants.get(id).cloned())
    }

    async fn grants_of(&self, account_id: &str) -> BackendResult<Vec<Grant>> {
        let state = self.lock();
        let mut grants: Vec<Grant> = state
            .grants
            .values()
            .filter(|grant| grant.account_id == account_id && grant.revoked_at_ms.is_none())
            .cloned()
            .collect();
        grants.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then_with(|| a.id.cmp(&b.id)));
        Ok(grants)
    }

    async fn revoke_grant(&self, id: &str, account_id: Option<&str>, now_ms: i64) -> BackendResult<bool> {
        let mut state = self.lock();
        let Some(grant) = state.grants.get_mut(id) else { return Ok(false) };
        if grant.revoked_at_ms.is_some() || account_id.is_some_and(|owner| owner != grant.account_id) {
            return Ok(false);
        }
        grant.revoked_at_ms = Some(now_ms);
        state.refresh.retain(|_, refresh| refresh.grant_id != id);
        state.codes.retain(|_, (code, _)| code.grant_id != id);
        Ok(true)
    }

    async fn revoke_grants_of(&self, account_id: &str, now_ms: i64) -> BackendResult<u64> {
        let mut state = self.lock();
        let mut revoked = Vec::new();
        for grant in state.grants.values_mut() {
            if grant.account_id == account_id && grant.revoked_at_ms.is_none() {
                grant.revoked_at_ms = Some(now_ms);
                revoked.push(grant.id.clone());
            }
        }
        state.refresh.retain(|_, refresh| !revoked.contains(&refresh.grant_id));
        state.codes.retain(|_, (code, _)| !revoked.contains(&code.grant_id));
        Ok(revoked.len() as u64)
    }

    async fn revoked_grants_since(&self, since_ms: i64) -> BackendResult<Vec<String>> {
        let state = self.lock();
        Ok(state
            .grants
            .values()
            .filter(|grant| grant.revoked_at_ms.is_some_and(|at| at >= since_ms))
            .map(|grant| grant.id.clone())
            .collect())
    }

    async fn put_code(&self, code_hash: &[u8; 32], code: &AuthorizationCode) -> BackendResult<()> {
        self.lock().codes.insert(*code_hash, (code.clone(), false));
        Ok(())
    }

    async fn take_code(&self, code_hash: &[u8; 32], now_ms: i64) -> BackendResult<CodeUse> {
        let mut state = self.lock();
        let Some((code, taken)) = state.codes.get(code_hash) else { return Ok(CodeUse::Unknown) };
        if *taken {
            return Ok(CodeUse::Replayed { grant_id: code.grant_id.clone() });
        }
        // A code of a revoked grant, or of a disabled account, is no code.
        let live = code.expires_at_ms > now_ms && state.grant_live(&code.grant_id);
        if !live {
            return Ok(CodeUse::Unknown);
        }
        let Some((code, taken)) = state.codes.get_mut(code_hash) else { return Ok(CodeUse::Unknown) };
        *taken = true;
        Ok(CodeUse::Fresh(code.clone()))
    }

    async fn put_refresh_token(&self, token_hash: &[u8; 32], grant_id: &str, expires_at_ms: i64) -> BackendResult<()> {
        let refresh = Refresh { grant_id: grant_id.to_owned(), expires_at_ms, used: false };
        self.lock().refresh.insert(*token_hash, refresh);
        Ok(())
    }

    async fn rotate_refresh_token(
        &self,
        old_hash: &[u8; 32],
        new_hash: &[u8; 32],
        new_expires_at_ms: i64,
        now_ms: i64,
    ) -> BackendResult<RefreshUse> {
        let mut state = self.lock();
        let Some(old) = state.refresh.get(old_hash) else { return Ok(RefreshUse::Unknown) };
        if old.used {
            return Ok(RefreshUse::Reused { grant_id: old.grant_id.clone() });
        }
        let grant_id = old.grant_id.clone();
        let live = old.expires_at_ms > now_ms && state.grant_live(&grant_id);
        if !live {
            return Ok(RefreshUse::Unknown);
        }
        if let Some(old) = state.refresh.get_mut(old_hash) {
            old.used = true;
        }
        let refresh = Refresh { grant_id: grant_id.clone(), expires_at_ms: new_expires_at_ms, used: false };
        state.refresh.insert(*new_hash, refresh);
        let Some(grant) = state.grants.get_mut(&grant_id) else { return Ok(RefreshUse::Unknown) };
        grant.last_used_at_ms = Some(now_ms);
        Ok(RefreshUse::Rotated(grant.clone()))
    }

    async fn refresh_token_grant(&self, token_hash: &[u8; 32]) -> BackendResult<Option<String>> {
        Ok(self.lock().refresh.get(token_hash).map(|refresh| refresh.grant_id.clone()))
    }

    async fn touch_grant(&self, id: &str, now_ms: i64) -> BackendResult<()> {
        if let Some(grant) = self.lock().grants.get_mut(id) {
            grant.last_used_at_ms = Some(now_ms);
        }
        Ok(())
    }

    async fn sweep_oauth(&self, now_ms: i64) -> BackendResult<u64> {
        let mut state = self.lock();
        let before = state.codes.len() + state.refresh.len();
        state.codes.retain(|_, (code, _)| code.expires_at_ms >= now_ms);
        state.refresh.retain(|_, refresh| refresh.expires_at_ms >= now_ms);
        Ok((before - state.codes.len() - state.refresh.len()) as u64)
    }
}

#[async_trait]
impl SecretStore for Memory {
    async fn secret_owner(&self, secret_hash: &[u8; 32]) -> BackendResult<Option<SecretOwner>> {
        let (state, now) = (self.lock(), now_ms());
        Ok(state
            .secrets
            .iter()
            .find(|(user, (_, hash, _))| hash == secret_hash && state.secret_live(user, now))
            .map(|(_, (owner, _, _))| owner.clone()))
    }

    async fn put_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<()> {
        let owner = SecretOwner { user_id: user_id.to_owned(), agent: agent.map(str::to_owned) };
        self.lock().secrets.insert(user_id.to_owned(), (owner, *secret_hash, expires_at_ms));
        Ok(())
    }

    async fn add_secret(
        &self,
        user_id: &str,
        secret_hash: &[u8; 32],
        agent: Option<&str>,
        expires_at_ms: Option<u64>,
    ) -> BackendResult<bool> {
        let mut state = self.lock();
        if state.secret_live(user_id, now_ms()) {
            return Ok(false);
        }
        let owner = SecretOwner { user_id: user_id.to_owned(), agent: agent.map(str::to_owned) };
        state.secrets.insert(user_id.to_owned(), (owner, *secret_hash, expires_at_ms));
        Ok(true)
    }

    async fn has_secret(&self, user_id: &str) -> BackendResult<bool> {
        Ok(self.lock().secret_live(user_id, now_ms()))
    }

    async fn revoke_secret(&self, user_id: &str) -> BackendResult<bool> {
        Ok(self.lock().secrets.remove(user_id).is_some())
    }
}
