//! The operator's OpenID providers (`oauth.providers`), checked at start.

use std::collections::HashSet;
use std::path::PathBuf;

use mirobody_auth::SecretString;
use serde::Deserialize;
use url::{Host, Url};

/// The most providers one server lists.
const MAX_PROVIDERS: usize = 20;
/// The longest provider id.
const MAX_ID_BYTES: usize = 32;
/// The longest name, issuer, client id or scope kept.
const MAX_TEXT_BYTES: usize = 512;
/// The most scopes asked for.
const MAX_SCOPES: usize = 20;
/// The largest client secret file read.
const MAX_SECRET_FILE_BYTES: u64 = 4096;

/// One OpenID provider people may sign in with (Google, Microsoft Entra, Keycloak, Auth0 and
/// the like): its button, where its discovery document is, and this server's client there.
///
/// ```
/// use mirobody_oauth::ProviderSettings;
///
/// let google: ProviderSettings = serde_json::from_value(serde_json::json!({
///     "id": "google", "name": "Google", "issuer": "https://accounts.google.com",
///     "client_id": "123.apps.googleusercontent.com", "client_secret_env": "GOOGLE_CLIENT_SECRET",
/// })).unwrap();
/// assert_eq!(google.scopes, ["openid", "email", "profile"]);
/// assert!(!google.allow_signup);
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ProviderSettings {
    /// The provider's id in this server's URLs (`/signin/with/{id}`) and its links: lower-case
    /// letters, digits and `-`, unique. Changing it forgets who was linked.
    pub id: String,
    /// What the sign-in page's button says: "Sign in with {name}".
    pub name: String,
    /// The issuer URL; its `/.well-known/openid-configuration` is read. https, or http on a
    /// loopback address (local testing).
    pub issuer: String,
    /// This server's client id at the provider.
    pub client_id: String,
    /// The client secret, if the provider gave one. Prefer `client_secret_env` or
    /// `client_secret_file`; at most one of the three.
    #[serde(default)]
    pub client_secret: Option<SecretString>,
    /// The environment variable holding the client secret (in mirobody-server, not one
    /// starting with `MIROBODY_`: those are settings).
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// The file holding the client secret (trailing white space ignored).
    #[serde(default)]
    pub client_secret_file: Option<PathBuf>,
    /// The scopes asked for. Default: `openid email profile`.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// Whether someone with no account is given one, from the email the provider vouches
    /// for (`email_verified`). Default: off: only people who have an account (with that
    /// verified email) or are linked already may sign in.
    #[serde(default)]
    pub allow_signup: bool,
}

fn default_scopes() -> Vec<String> {
    ["openid", "email", "profile"].map(String::from).to_vec()
}

impl ProviderSettings {
    /// What is wrong with this provider's settings, if anything.
    pub fn validate(&self) -> Result<(), String> {
        let id = &self.id;
        if id.is_empty()
            || id.len() > MAX_ID_BYTES
            || !id.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
        {
            return Err(format!("id {id:?} must be 1 to {MAX_ID_BYTES} of a-z, 0-9 and -"));
        }
        let fail = |what: &str| Err(format!("provider {id}: {what}"));
        for (key, value) in [("name", &self.name), ("client_id", &self.client_id), ("issuer", &self.issuer)] {
            if value.trim().is_empty() || value.len() > MAX_TEXT_BYTES || value.chars().any(char::is_control) {
                return fail(&format!("{key} must be 1 to {MAX_TEXT_BYTES} bytes with no control character"));
            }
        }
        check_issuer(&self.issuer).or_else(|why| fail(&format!("issuer {why}")))?;
        let secrets =
            [self.client_secret.is_some(), self.client_secret_env.is_some(), self.client_secret_file.is_some()];
        if secrets.into_iter().filter(|set| *set).count() > 1 {
            return fail("give at most one of client_secret, client_secret_env and client_secret_file");
        }
        if self.scopes.len() > MAX_SCOPES || !self.scopes.iter().any(|s| s == "openid") {
            return fail(&format!("scopes must include openid, and at most {MAX_SCOPES} in all"));
        }
        if let Some(bad) = self
            .scopes
            .iter()
            .find(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\'))
        {
            return fail(&format!("scope {bad:?} is not a scope token"));
        }
        self.client_secret().map(drop).or_else(|why| fail(&why))
    }

    /// The client secret, read from the setting, the environment or the file (each time, so
    /// a rotated file is picked up); `None` for a public client.
    pub(crate) fn client_secret(&self) -> Result<Option<SecretString>, String> {
        if let Some(secret) = &self.client_secret {
            return Ok(Some(secret.clone()));
        }
        if let Some(var) = &self.client_secret_env {
            return match std::env::var(var) {
                Ok(value) if !value.trim().is_empty() => Ok(Some(SecretString::from(value.trim().to_owned()))),
                _ => Err(format!("the environment variable {var} (client_secret_env) is not set")),
            };
        }
        if let Some(path) = &self.client_secret_file {
            let shown = path.display();
            let size = std::fs::metadata(path).map_err(|e| format!("client_secret_file {shown}: {e}"))?.len();
            if size > MAX_SECRET_FILE_BYTES {
                return Err(format!("client_secret_file {shown} is larger than {MAX_SECRET_FILE_BYTES} bytes"));
            }
            let text = std::fs::read_to_string(path).map_err(|e| format!("client_secret_file {shown}: {e}"))?;
            return match text.trim() {
                "" => Err(format!("client_secret_file {shown} is empty")),
                secret => Ok(Some(SecretString::from(secret.to_owned()))),
            };
        }
        Ok(None)
    }
}

/// An issuer is an absolute https URL with no query or fragment; http only to a loopback
/// address, where nothing crosses a network.
fn check_issuer(issuer: &str) -> Result<(), String> {
    let url = Url::parse(issuer).map_err(|e| format!("is not a URL: {e}"))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err("must have no query or fragment".into());
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        _ => Err("must be https (http only to 127.0.0.1, [::1] or localhost)".into()),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name == "localhost",
        None => false,
    }
}

/// What is wrong with a list of providers: each one's settings, their number, and ids used
/// twice.
pub(crate) fn validate_all(providers: &[ProviderSettings]) -> Result<(), String> {
    if providers.len() > MAX_PROVIDERS {
        return Err(format!("oauth.providers: at most {MAX_PROVIDERS}, not {}", providers.len()));
    }
    let mut ids = HashSet::new();
    for provider in providers {
        provider.validate().map_err(|e| format!("oauth.providers: {e}"))?;
        if !ids.insert(provider.id.as_str()) {
            return Err(format!("oauth.providers: the id {} is used twice", provider.id));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirobody_auth::ExposeSecret;

    fn provider(extra: serde_json::Value) -> Result<ProviderSettings, String> {
        let mut value = serde_json::json!({
            "id": "kc", "name": "Keycloak", "issuer": "https://id.example.com/realms/x", "client_id": "mirobody",
        });
        value.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let settings: ProviderSettings = serde_json::from_value(value).map_err(|e| e.to_string())?;
        settings.validate().map(|()| settings)
    }

    #[test]
    fn good_settings_pass() {
        let settings = provider(serde_json::json!({"client_secret": "s3cret-value"})).unwrap();
        assert_eq!(settings.client_secret().unwrap().unwrap().expose_secret(), "s3cret-value");
        assert!(!format!("{settings:?}").contains("s3cret-value"), "Debug redacts the secret");
        provider(serde_json::json!({"issuer": "http://127.0.0.1:8080"})).unwrap();
        provider(serde_json::json!({"issuer": "http://localhost:8080/realms/x"})).unwrap();
        provider(serde_json::json!({"issuer": "http://[::1]:8080"})).unwrap();
    }

    #[test]
    fn bad_settings_are_named() {
        for (extra, expected) in [
            (serde_json::json!({"id": "Google"}), "a-z"),
            (serde_json::json!({"id": ""}), "a-z"),
            (serde_json::json!({"id": "a".repeat(33)}), "a-z"),
            (serde_json::json!({"issuer": "http://id.example.com"}), "must be https"),
            (serde_json::json!({"issuer": "https://id.example.com/?a=b"}), "no query"),
            (serde_json::json!({"issuer": "id.example.com"}), "not a URL"),
            (serde_json::json!({"name": " "}), "name must be"),
            (serde_json::json!({"client_id": "x".repeat(513)}), "client_id must be"),
            (serde_json::json!({"scopes": ["email"]}), "must include openid"),
            (serde_json::json!({"scopes": ["openid", "a b"]}), "not a scope token"),
            (serde_json::json!({"client_secret": "a", "client_secret_env": "B"}), "at most one"),
            (serde_json::json!({"client_secret_env": "MIROBODY_TEST_SURELY_UNSET_VARIABLE"}), "is not set"),
            (serde_json::json!({"client_secret_file": "/nonexistent/secret"}), "client_secret_file"),
            (serde_json::json!({"surprise": true}), "unknown field"),
        ] {
            let error = provider(extra.clone()).unwrap_err();
            assert!(error.contains(expected), "{extra}: {error}");
        }
    }

    #[test]
    fn the_secret_file_is_read_and_bounded() {
        let dir = std::env::temp_dir().join(format!("mirobody-oidc-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (good, large) = (dir.join("good"), dir.join("large"));
        std::fs::write(&good, "from-a-file\n").unwrap();
        std::fs::write(&large, "x".repeat(4097)).unwrap();
        let settings = provider(serde_json::json!({"client_secret_file": good})).unwrap();
        assert_eq!(settings.client_secret().unwrap().unwrap().expose_secret(), "from-a-file");
        let error = provider(serde_json::json!({"client_secret_file": large})).unwrap_err();
        assert!(error.contains("larger than 4096"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ids_are_unique_and_providers_few() {
        let one = provider(serde_json::json!({})).unwrap();
        assert!(validate_all(&[one.clone(), one.clone()]).unwrap_err().contains("used twice"));
        let many: Vec<_> = (0..21).map(|n| ProviderSettings { id: format!("p{n}"), ..one.clone() }).collect();
        assert!(validate_all(&many).unwrap_err().contains("at most 20"));
        assert!(validate_all(&many[..20]).is_ok());
    }
}
