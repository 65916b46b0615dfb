//! People sign in to a mirobody server: accounts with passwords, browser sessions, the pages
//! where a person manages who has access to their data, and an OAuth 2.1 authorization server
//! (RFC 8414 metadata, RFC 7591 registration, PKCE, RFC 9207 `iss`, RFC 8707 resources,
//! rotating refresh tokens, RFC 7009 revocation) that issues the ES256 access tokens the
//! resource side (`mirobody-auth`) verifies.
//!
//! It keeps no state itself: [`OAuthStores`] names the storage traits of `mirobody-ports`
//! it uses, which `mirobody-store` implements on SQLite and PostgreSQL. An application that
//! embeds the MCP endpoint mounts [`OAuthServer::router`] beside it.

mod authz;
mod data;
mod error_chain;
mod invite;
mod maintenance;
mod page;
mod random;
mod server;
mod settings;
mod upstream;
mod web;

pub use authz::DEFAULT_SCOPE;
pub use authz::keys::{KeyError, SigningKey};
pub use data::{AccountData, DataItem, DataItemKind};
pub use invite::{InviteLinkError, MAX_LIVE_SIGNUP_LINKS, SIGNUP_LINK_TTL};
pub use random::RandomError;
pub use server::{OAuthServer, OAuthStores};
pub use settings::OAuthSettings;
pub use upstream::settings::ProviderSettings;
pub use web::password::{MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS, PasswordError, hash_password, verify_password};
