//! Passkeys (WebAuthn credentials) people sign in with, and the state a passkey ceremony keeps
//! between its two requests. The credential itself is opaque text here: the sign-in pages
//! serialise it, so this crate (and the store) need not know WebAuthn.

use async_trait::async_trait;
use mirobody_core::backend::BackendResult;

/// The most passkeys one account keeps; [`PasskeyStore::add_passkey`] refuses more.
pub const MAX_PASSKEYS_PER_ACCOUNT: u32 = 20;
/// The longest credential id WebAuthn allows, in bytes.
pub const MAX_CREDENTIAL_ID_BYTES: usize = 1023;

/// One passkey of an account.
#[derive(Clone, PartialEq, Eq)]
pub struct Passkey {
    /// The credential id the authenticator gave it; unique across accounts.
    pub credential_id: Vec<u8>,
    /// The account it signs in.
    pub account_id: String,
    /// The credential as the sign-in pages serialise it (its public key and counter).
    pub credential: String,
    /// The name its owner gave it.
    pub name: String,
    /// When it was added, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When it last signed in, if ever.
    pub last_used_at_ms: Option<i64>,
}

// Hand-written so a credential never fills a log line.
impl std::fmt::Debug for Passkey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passkey")
            .field("account_id", &self.account_id)
            .field("name", &self.name)
            .field("created_at_ms", &self.created_at_ms)
            .field("last_used_at_ms", &self.last_used_at_ms)
            .finish_non_exhaustive()
    }
}

/// What a passkey ceremony (adding one, or signing in with one) keeps between the request
/// that begins it and the one that finishes it. Stored under the SHA-256 of a random ceremony
/// id only the browser holds, and taken once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PasskeyCeremony {
    /// What it is for (`"register"`, `"authenticate"`): a state is only finished as what it began as.
    pub purpose: String,
    /// Whose outstanding ceremonies it counts among: the account adding a passkey, or the
    /// address signing in.
    pub owner: String,
    /// The ceremony's state, serialised by the sign-in pages.
    pub state: String,
    /// When it began, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When it can no longer be finished.
    pub expires_at_ms: i64,
}

/// Where passkeys and ceremony states are kept. Everything lives in the store, none in a
/// process, so a ceremony begun on one instance finishes on another.
#[async_trait]
pub trait PasskeyStore: Send + Sync {
    /// Stores a passkey, unless its account already has `max_per_account` or its credential id
    /// is taken: then false, storing nothing. Checked and stored at once.
    async fn add_passkey(&self, passkey: &Passkey, max_per_account: u32) -> BackendResult<bool>;
    /// An account's passkeys, oldest first, at most `limit`.
    async fn passkeys_of(&self, account_id: &str, limit: u32) -> BackendResult<Vec<Passkey>>;
    /// The passkey with this credential id, whoever's it is.
    async fn passkey(&self, credential_id: &[u8]) -> BackendResult<Option<Passkey>>;
    /// Replaces a passkey's serialised credential (its counter moved) and notes its use;
    /// false when there is no such passkey.
    async fn passkey_used(&self, credential_id: &[u8], credential: &str, used_at_ms: i64) -> BackendResult<bool>;
    /// Deletes `account_id`'s passkey with this credential id; false (deleting nothing) when it
    /// is not theirs or not there.
    async fn delete_passkey(&self, account_id: &str, credential_id: &[u8]) -> BackendResult<bool>;
    /// Deletes every passkey of an account; how many.
    async fn delete_passkeys_of(&self, account_id: &str) -> BackendResult<u64>;

    /// Stores a ceremony's state under the SHA-256 of its id, unless its owner already has
    /// `max_live_per_owner` unexpired ones: then false, storing nothing. Checked and stored at
    /// once.
    async fn put_ceremony(
        &self,
        id_hash: &[u8; 32],
        ceremony: &PasskeyCeremony,
        max_live_per_owner: u32,
    ) -> BackendResult<bool>;
    /// Deletes the ceremony with this id hash and returns it if it had not expired by
    /// `now_ms`: of several takes, at once or in turn, at most one gets it.
    async fn take_ceremony(&self, id_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<PasskeyCeremony>>;
    /// Deletes ceremonies expired by `now_ms`; how many.
    async fn sweep_ceremonies(&self, now_ms: i64) -> BackendResult<u64>;
}
