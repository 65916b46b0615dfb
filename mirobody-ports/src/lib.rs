//! The traits mirobody's server parts meet at, apart from the tool engine: what the auth layer
//! looks callers up in ([`SecretStore`]), what the MCP layer records and keeps
//! ([`AccessLog`], [`TaskStore`], [`SessionBackplane`]), and what people sign in with
//! ([`AccountStore`], [`WebSessionStore`], [`OAuthStore`], [`PasskeyStore`], [`IdentityStore`]).
//! `mirobody-store` implements them; `mirobody-auth`, `mirobody-oauth` and `mirobody-mcp` use
//! them.
//!
//! They are not in `mirobody-core`, which every tool and every embedder compiles: a tool never
//! reaches them, and an application that only runs tools in process needs none of them. Nor
//! are they in the crates that use them, since the store that implements them must not compile
//! the HTTP stack of mirobody-mcp or the token verification of mirobody-auth.
//!
//! ```
//! use mirobody_ports::{AccessOutcome, TaskState};
//!
//! assert_eq!(AccessOutcome::from_name("unknown_tool"), Some(AccessOutcome::UnknownTool));
//! assert!(TaskState::Completed.is_terminal());
//! ```

mod access;
mod accounts;
mod client_addr;
mod identities;
mod oauth;
mod passkeys;
mod secrets;
mod sessions;
mod tasks;

pub use access::{AccessKind, AccessLog, AccessOutcome, DataRead, MAX_READS_PAGE};
pub use accounts::{Account, AccountStore, SignupToken, WebSession, WebSessionStore};
pub use client_addr::ClientAddr;
pub use identities::{IdentityLink, IdentityStore, UpstreamLogin};
pub use oauth::{AuthorizationCode, CodeUse, Grant, OAuthClient, OAuthStore, RefreshUse, RegistrationBound};
pub use passkeys::{MAX_CREDENTIAL_ID_BYTES, MAX_PASSKEYS_PER_ACCOUNT, Passkey, PasskeyCeremony, PasskeyStore};
pub use secrets::{SecretOwner, SecretStore};
pub use sessions::{MAX_SESSION_VALUE_BYTES, SessionBackplane};
pub use tasks::{ANONYMOUS_OWNER_PREFIX, TaskRecord, TaskState, TaskStore};
