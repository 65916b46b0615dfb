//! `mirobody-server user ...`: the operator's commands for the accounts people sign in with
//! (add, list, disable, enable, reset a password).

use std::io::{BufRead, Write};

use clap::Subcommand;
use mirobody_ports::{Account, AccountStore, OAuthStore, WebSessionStore};

/// The longest email accepted (RFC 5321's limit on a path, less its brackets).
pub const MAX_EMAIL_BYTES: usize = 254;
/// The longest user id `--id` accepts.
pub const MAX_USER_ID_BYTES: usize = 128;
/// How many characters a generated password has.
const GENERATED_PASSWORD_CHARS: usize = 20;
/// How many accounts `list` reads at a time.
const LIST_PAGE: u32 = 500;

/// A `user` subcommand.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Make an account. Without --password-stdin a random password is printed, once.
    Add {
        /// The email to sign in with (stored lower-cased).
        #[arg(long)]
        email: String,
        /// The name shown on pages.
        #[arg(long)]
        name: Option<String>,
        /// The user id to sign in as: an existing user (the demo's, one made by token) keeps
        /// their data. Default: a new random id.
        #[arg(long)]
        id: Option<String>,
        /// Read the password from the first line of stdin.
        #[arg(long)]
        password_stdin: bool,
    },
    /// One line per account: email, id, name, state, when it was made.
    List,
    /// Stop an account: it cannot sign in, its web sessions end and its apps lose access.
    Disable {
        /// The account's email.
        email: String,
    },
    /// Let a disabled account sign in again (its apps must be connected again).
    Enable {
        /// The account's email.
        email: String,
    },
    /// Set a new password (its web sessions end). Without --password-stdin a random one is
    /// printed, once.
    Reset {
        /// The account's email.
        email: String,
        /// Read the password from the first line of stdin.
        #[arg(long)]
        password_stdin: bool,
    },
}

/// The stores the `user` commands act on.
#[derive(Clone, Copy)]
pub struct UserStores<'a> {
    /// The accounts.
    pub accounts: &'a dyn AccountStore,
    /// Their web sessions, ended on disable and reset.
    pub web_sessions: &'a dyn WebSessionStore,
    /// Their grants, revoked on disable.
    pub oauth: &'a dyn OAuthStore,
}

/// Why a `user` command did nothing; its message is what the operator sees.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserError {
    /// The email does not look like one.
    #[error("'{0}' is not an email address (name@domain, at most {MAX_EMAIL_BYTES} bytes)")]
    BadEmail(String),
    /// The `--id` is empty, too long or has spaces or control characters.
    #[error("'{0}' is not a user id (1 to {MAX_USER_ID_BYTES} bytes, no spaces or control characters)")]
    BadId(String),
    /// Another account has the email.
    #[error("an account with the email {0} already exists")]
    DuplicateEmail(String),
    /// The user id already has an account.
    #[error("the user id {0} already has an account")]
    DuplicateId(String),
    /// No account has the email.
    #[error("no account has the email {0}")]
    UnknownEmail(String),
    /// The password is refused (too short, too long) or could not be hashed.
    #[error("{0}")]
    Password(#[from] mirobody_oauth::PasswordError),
    /// The password could not be read, or no random one made.
    #[error("{0}")]
    Input(String),
    /// The store failed.
    #[error("{0}")]
    Store(#[from] mirobody_core::backend::BackendError),
}

impl UserError {
    /// The process exit code: 2 when the store failed, 1 when the request was refused.
    pub fn exit_code(&self) -> i32 {
        if matches!(self, UserError::Store(_)) { 2 } else { 1 }
    }
}

/// The email as stored (trimmed, lower-cased), if it looks like one: one `@` with text on
/// both sides, no spaces or control characters, at most [`MAX_EMAIL_BYTES`] bytes.
pub fn normalize_email(email: &str) -> Option<String> {
    let email = email.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let fits = email.len() <= MAX_EMAIL_BYTES
        && !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    fits.then_some(email)
}

fn valid_user_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_USER_ID_BYTES && !id.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn random_bytes<const N: usize>() -> Result<[u8; N], UserError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| UserError::Input(format!("no random numbers: {e}")))?;
    Ok(bytes)
}

/// A new user id: `u_` and 16 random hex digits.
fn random_user_id() -> Result<String, UserError> {
    let bytes: [u8; 8] = random_bytes()?;
    Ok(bytes.iter().fold(String::from("u_"), |mut id, b| {
        id.push_str(&format!("{b:02x}"));
        id
    }))
}

/// A random password of letters, digits, `-` and `_`: 64 symbols, so six bits of each byte
/// pick one without bias (120 bits in all).
fn random_password() -> Result<String, UserError> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes: [u8; GENERATED_PASSWORD_CHARS] = random_bytes()?;
    Ok(bytes.iter().map(|b| char::from(ALPHABET[usize::from(b & 63)])).collect())
}

/// The password to set: the first line of `input` (its line ending left out) with
/// `--password-stdin`, else a random one that the caller prints (`true`).
fn password(from_stdin: bool, input: &mut impl BufRead) -> Result<(String, bool), UserError> {
    if !from_stdin {
        return Ok((random_password()?, true));
    }
    let mut line = String::new();
    // Bounded: a longer "line" is refused by the hash's length rule anyway.
    std::io::Read::take(&mut *input, mirobody_oauth::MAX_PASSWORD_BYTES as u64 + 2)
        .read_line(&mut line)
        .map_err(|e| UserError::Input(format!("cannot read the password from stdin: {e}")))?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    Ok((password.to_owned(), false))
}

async fn account_of(stores: UserStores<'_>, email: &str) -> Result<Account, UserError> {
    let email = normalize_email(email).ok_or_else(|| UserError::BadEmail(email.trim().to_owned()))?;
    stores.accounts.account_by_email(&email).await?.ok_or(UserError::UnknownEmail(email))
}

fn rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| ms.to_string())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Runs a `user` subcommand: what it did goes to `out`, a refusal's reason is the error.
/// `input` is read only with `--password-stdin`.
pub async fn run_user(
    stores: UserStores<'_>,
    action: UserCommand,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<(), UserError> {
    let written = |e: std::io::Error| UserError::Input(format!("cannot write the output: {e}"));
    match action {
        UserCommand::Add { email, name, id, password_stdin } => {
            let email = normalize_email(&email).ok_or_else(|| UserError::BadEmail(email.trim().to_owned()))?;
            let id = match id {
                Some(id) if valid_user_id(&id) => id,
                Some(id) => return Err(UserError::BadId(id)),
                None => random_user_id()?,
            };
            // Everything is checked before anything is stored.
            let (password, generated) = password(password_stdin, input)?;
            let password_hash = mirobody_oauth::hash_password(&password)?;
            let name = name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
            let account = Account {
                id: id.clone(),
                email: email.clone(),
                display_name: name,
                password_hash: Some(password_hash),
                disabled: false,
                created_at_ms: now_ms(),
            };
            if !stores.accounts.create_account(&account).await? {
                return Err(match stores.accounts.account_by_email(&email).await? {
                    Some(_) => UserError::DuplicateEmail(email),
                    None => UserError::DuplicateId(id),
                });
            }
            writeln!(out, "Added {email} (user id {id})").map_err(written)?;
            if generated {
                writeln!(out, "Password (shown once): {password}").map_err(written)?;
            }
        }
        UserCommand::List => {
            let mut after: Option<String> = None;
            loop {
                let page = stores.accounts.list_accounts(after.as_deref(), LIST_PAGE).await?;
                for account in &page {
                    let state = if account.disabled { "disabled" } else { "enabled" };
                    let name = account.display_name.as_deref().unwrap_or("-");
                    let created = rfc3339(account.created_at_ms);
                    writeln!(out, "{}\t{}\t{name}\t{state}\t{created}", account.email, account.id).map_err(written)?;
                }
                match page.last() {
                    Some(last) if page.len() == LIST_PAGE as usize => after = Some(last.email.clone()),
                    _ => break,
                }
            }
        }
        UserCommand::Disable { email } => {
            let account = account_of(stores, &email).await?;
            stores.accounts.set_account_disabled(&account.id, true).await?;
            let sessions = stores.web_sessions.end_web_sessions_of(&account.id).await?;
            let grants = stores.oauth.revoke_grants_of(&account.id, now_ms()).await?;
            writeln!(out, "Disabled {}: {sessions} web sessions ended, {grants} app grants revoked", account.email)
                .map_err(written)?;
        }
        UserCommand::Enable { email } => {
            let account = account_of(stores, &email).await?;
            stores.accounts.set_account_disabled(&account.id, false).await?;
            writeln!(out, "Enabled {}", account.email).map_err(written)?;
        }
        UserCommand::Reset { email, password_stdin } => {
            let account = account_of(stores, &email).await?;
            let (password, generated) = password(password_stdin, input)?;
            let password_hash = mirobody_oauth::hash_password(&password)?;
            stores.accounts.set_password_hash(&account.id, Some(&password_hash)).await?;
            let sessions = stores.web_sessions.end_web_sessions_of(&account.id).await?;
            writeln!(out, "Password reset for {}: {sessions} web sessions ended", account.email).map_err(written)?;
            if generated {
                writeln!(out, "Password (shown once): {password}").map_err(written)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_trimmed_lower_cased_and_checked() {
        assert_eq!(normalize_email("  Ada@Example.COM \n").as_deref(), Some("ada@example.com"));
        for bad in ["", "ada", "@example.com", "ada@", "a@b@c", "ad a@example.com", "ada@exa\u{7}mple.com"] {
            assert_eq!(normalize_email(bad), None, "{bad:?}");
        }
        let long = format!("{}@example.com", "a".repeat(MAX_EMAIL_BYTES));
        assert_eq!(normalize_email(&long), None);
        let fits = format!("{}@example.com", "a".repeat(MAX_EMAIL_BYTES - "@example.com".len()));
        assert_eq!(normalize_email(&fits).map(|e| e.len()), Some(MAX_EMAIL_BYTES));
    }

    #[test]
    fn generated_ids_and_passwords_are_random_and_well_formed() {
        let (a, b) = (random_user_id().unwrap(), random_user_id().unwrap());
        assert_ne!(a, b);
        assert!(a.starts_with("u_") && a.len() == 18 && a[2..].chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        let (p, q) = (random_password().unwrap(), random_password().unwrap());
        assert_ne!(p, q);
        assert_eq!(p.chars().count(), GENERATED_PASSWORD_CHARS);
        assert!(p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'), "{p}");
        assert!(mirobody_oauth::hash_password(&p).is_ok(), "a generated password meets the length rule");
    }

    #[test]
    fn a_password_from_stdin_is_its_first_line() {
        let mut input = std::io::Cursor::new("correct horse battery\r\nsecond line\n");
        assert_eq!(password(true, &mut input).unwrap(), ("correct horse battery".to_owned(), false));
        let mut empty = std::io::Cursor::new("");
        assert_eq!(password(true, &mut empty).unwrap(), (String::new(), false));
    }
}
