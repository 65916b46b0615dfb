// The pages' test harness, shared by `web.rs` and `invite.rs` through `include!` (so its
// items stay private to each test): a router over the in-memory stores or `SqlStore` on
// SQLite with Alice and Bob's accounts, and a browser that keeps cookies. The including file
// declares `mod memory` (`support/memory.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::{Request, Response, StatusCode, header};
use memory::Memory;
use mirobody_auth::{McpEndpoint, RevokedGrants};
use mirobody_oauth::{OAuthServer, OAuthSettings, OAuthStores, SigningKey, hash_password};
use mirobody_ports::{Account, AccountStore, ClientAddr, OAuthStore, PasskeyStore, SecretStore, WebSessionStore};
use mirobody_store::{BackendConfig, open};
use tower::ServiceExt;

const ALICE: &str = "alice@example.com";
const ALICE_PASSWORD: &str = "alice's long password";
const BOB: &str = "bob@example.com";
const BOB_PASSWORD: &str = "bob's long password!";

/// Which stores a test runs over.
#[derive(Clone, Copy, Debug)]
enum Backing {
    /// `support/memory.rs`.
    Memory,
    /// `mirobody_store::SqlStore` on SQLite in a temp dir.
    Sqlite,
}

struct Harness {
    router: Router,
    /// The server, for what is not a page (`invite_link`).
    #[allow(dead_code)] // web.rs drives pages only
    server: OAuthServer,
    accounts: Arc<dyn AccountStore>,
    sessions: Arc<dyn WebSessionStore>,
    oauth: Arc<dyn OAuthStore>,
    secrets: Arc<dyn SecretStore>,
    /// The passkey store, when passkeys are on.
    #[allow(dead_code)] // only passkeys.rs reads it
    passkeys: Option<Arc<dyn PasskeyStore>>,
    revoked: RevokedGrants,
    /// The access log, on SQLite.
    #[allow(dead_code)] // only web.rs reads it
    access_log: Option<Arc<dyn mirobody_ports::AccessLog>>,
    dir: PathBuf,
}

impl Harness {
    /// How many web sessions are kept: all are swept (a test asks last, or when there are none).
    async fn sessions(&self) -> u64 {
        self.sessions.sweep_web_sessions(i64::MAX).await.unwrap()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs each named test over both stores, as `<name>::memory` and `<name>::sqlite`.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn memory() {
                super::$name(super::Backing::Memory).await;
            }

            #[tokio::test]
            async fn sqlite() {
                super::$name(super::Backing::Sqlite).await;
            }
        }
    )*};
}

/// One response, read whole.
struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: String,
}

impl Answer {
    fn location(&self) -> &str {
        self.headers.get(header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    fn set_cookies(&self) -> Vec<&str> {
        self.headers.get_all(header::SET_COOKIE).iter().filter_map(|v| v.to_str().ok()).collect()
    }

    /// The `Set-Cookie` of the session cookie, if the answer has one.
    fn session_cookie(&self) -> Option<&str> {
        self.set_cookies().into_iter().find(|c| c.starts_with("mirobody_session="))
    }

    /// The value of the first hidden `csrf` field.
    fn csrf_field(&self) -> String {
        let start = self.body.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
        self.body[start..].split('"').next().unwrap().to_owned()
    }
}

/// A browser: its cookies, and the address it comes from.
#[derive(Clone, Default)]
struct Browser {
    cookies: HashMap<String, String>,
    address: Option<IpAddr>,
}

impl Browser {
    fn from(address: &str) -> Self {
        Browser { cookies: HashMap::new(), address: Some(address.parse().unwrap()) }
    }

    fn keep(&mut self, answer: &Answer) {
        for cookie in answer.set_cookies() {
            let (pair, attributes) = cookie.split_once(';').unwrap_or((cookie, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if attributes.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
    }

    fn request(&self, method: &str, path: &str, body: Body, form: bool) -> Request<Body> {
        let mut request = Request::builder().method(method).uri(path);
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header(header::COOKIE, jar.join("; "));
        }
        if form {
            request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        }
        let mut request = request.body(body).unwrap();
        if let Some(address) = self.address {
            request.extensions_mut().insert(ClientAddr(address));
        }
        request
    }

    async fn get(&mut self, harness: &Harness, path: &str) -> Answer {
        let request = self.request("GET", path, Body::empty(), false);
        let answer = send(harness, request).await;
        self.keep(&answer);
        answer
    }

    async fn post(&mut self, harness: &Harness, path: &str, fields: &[(&str, &str)]) -> Answer {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        let request = self.request("POST", path, Body::from(body), true);
        let answer = send(harness, request).await;
        self.keep(&answer);
        answer
    }

    fn signed_in(&self) -> bool {
        self.cookies.contains_key("mirobody_session")
    }

    /// Opens the sign-in page and signs in; the answer to the form.
    async fn sign_in(&mut self, harness: &Harness, email: &str, password: &str, next: &str) -> Answer {
        let page = self.get(harness, &format!("/signin?next={}", encode(next))).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let csrf = page.csrf_field();
        self.post(harness, "/signin", &[("email", email), ("password", password), ("csrf", &csrf), ("next", next)])
            .await
    }

    /// The access page's CSRF token (the session's).
    async fn account_csrf(&mut self, harness: &Harness) -> String {
        let page = self.get(harness, "/account").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        page.csrf_field()
    }
}

fn encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

async fn send(harness: &Harness, request: Request<Body>) -> Answer {
    let response: Response<Body> = harness.router.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    Answer { status: parts.status, headers: parts.headers, body: String::from_utf8(bytes.to_vec()).unwrap() }
}

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

async fn harness(backing: Backing, settings: serde_json::Value) -> Harness {
    harness_at(backing, settings, "http://127.0.0.1:8080").await
}

async fn harness_at(backing: Backing, settings: serde_json::Value, base_url: &str) -> Harness {
    harness_full(backing, settings, base_url, false).await
}

/// [`harness_at`], with passkeys on when `passkeys` (over SQLite only).
async fn harness_full(backing: Backing, settings: serde_json::Value, base_url: &str, passkeys: bool) -> Harness {
    let dir = std::env::temp_dir().join(format!(
        "mirobody-oauth-web-{}-{}",
        std::process::id(),
        NEXT_DIR.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let key = SigningKey::load_or_create(&dir.join("key.pem")).unwrap();
    let stores = match backing {
        Backing::Memory => {
            let store = Arc::new(Memory::default());
            OAuthStores {
                accounts: store.clone(),
                sessions: store.clone(),
                oauth: store.clone(),
                secrets: Some(store),
                passkeys: None,
                identities: None,
                access_log: None,
            }
        }
        Backing::Sqlite => {
            let backends = open(&BackendConfig::embedded(dir.join("data"))).await.expect("SQLite opens");
            OAuthStores {
                accounts: backends.accounts(),
                sessions: backends.web_sessions(),
                oauth: backends.oauth(),
                secrets: Some(backends.secrets()),
                passkeys: passkeys.then(|| backends.passkeys()),
                identities: Some(backends.identities()),
                access_log: Some(backends.access_log()),
            }
        }
    };
    let (accounts, sessions, oauth) = (stores.accounts.clone(), stores.sessions.clone(), stores.oauth.clone());
    let secrets = stores.secrets.clone().unwrap();
    let passkeys = stores.passkeys.clone();
    let access_log = stores.access_log.clone();
    let settings: OAuthSettings = serde_json::from_value(settings).unwrap();
    let revoked = RevokedGrants::new(Duration::from_secs(900));
    let endpoint = McpEndpoint::new(base_url, "");
    let server = OAuthServer::new(stores, endpoint, settings, key, vec![], revoked.clone());
    for (id, email, name, password) in
        [("u_alice", ALICE, "Alice <A>", ALICE_PASSWORD), ("u_bob", BOB, "Bob", BOB_PASSWORD)]
    {
        let account = Account {
            id: id.to_owned(),
            email: email.to_owned(),
            display_name: Some(name.to_owned()),
            password_hash: Some(hash_password(password).unwrap()),
            disabled: false,
            created_at_ms: 0,
        };
        assert!(accounts.create_account(&account).await.unwrap());
    }
    Harness { router: server.router(), server, accounts, sessions, oauth, secrets, passkeys, revoked, access_log, dir }
}
