//! Sign-up links (`OAuthServer::invite_link`, `/signup/{token}`), driven through the router
//! over the in-memory stores and `SqlStore` on SQLite: a link makes the account of the invited
//! email, once, with `open_signup` off; the form cannot change the email; expired, used and
//! unknown links get one answer; an email that has an account gets no link.

// The shared harness has helpers these tests do not use.
#![allow(dead_code)]

#[path = "support/memory.rs"]
mod memory;

use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_oauth::{InviteLinkError, MAX_LIVE_SIGNUP_LINKS};
use mirobody_ports::SignupToken;
use sha2::{Digest, Sha256};

include!("support/pages.rs");

const CAROL: &str = "carol@example.com";
const CAROL_PASSWORD: &str = "carol's long password";

/// The path of a link `invite_link` made, checked to be under the issuer.
fn link_path(url: &str) -> String {
    let path = url.strip_prefix("http://127.0.0.1:8080").expect("a link under the issuer");
    assert!(path.starts_with("/signup/") && path.len() == "/signup/".len() + 43, "{path}");
    path.to_owned()
}

/// Sends the sign-up form of `path` with `name` and the same password twice, plus `extra`.
async fn sign_up(browser: &mut Browser, harness: &Harness, path: &str, extra: &[(&str, &str)]) -> Answer {
    let page = browser.get(harness, path).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let csrf = page.csrf_field();
    let mut fields = vec![("name", "Carol"), ("password", CAROL_PASSWORD), ("again", CAROL_PASSWORD)];
    fields.push(("csrf", csrf.as_str()));
    fields.extend_from_slice(extra);
    browser.post(harness, path, &fields).await
}

async fn a_link_makes_the_invited_account_once(backing: Backing) {
    // `open_signup` is off (the default): the link works all the same.
    let harness = harness(backing, serde_json::json!({})).await;
    assert_eq!(Browser::default().get(&harness, "/signup").await.status, StatusCode::NOT_FOUND);
    let url = harness.server.invite_link(" Carol@Example.COM ", "u_alice").await.unwrap().expect("a link");
    let path = link_path(&url);

    let mut browser = Browser::default();
    let page = browser.get(&harness, &path).await;
    assert!(page.body.contains(CAROL) && page.body.contains("readonly"), "{}", page.body);
    assert!(!page.body.contains("name=\"email\""), "the fixed email is not a form field: {}", page.body);
    // An email sent along anyway is ignored: the account has the invited one.
    let answer = sign_up(&mut browser, &harness, &path, &[("email", "mallory@example.com")]).await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/account"), "{}", answer.body);
    assert!(answer.session_cookie().is_some() && browser.signed_in());
    let account = harness.accounts.account_by_email(CAROL).await.unwrap().expect("the account is made");
    assert!(account.id.starts_with("u_") && account.id.len() == 18, "{}", account.id);
    assert_eq!(account.display_name.as_deref(), Some("Carol"));
    assert_eq!(harness.accounts.account_by_email("mallory@example.com").await.unwrap(), None);
    let landed = browser.get(&harness, "/account").await;
    assert_eq!(landed.status, StatusCode::OK, "signed in: {}", landed.body);
    assert!(landed.body.contains(CAROL));
    // The password works for signing in later.
    let again = Browser::default().sign_in(&harness, CAROL, CAROL_PASSWORD, "").await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);

    // A second use, from the page or a form sent straight, is refused and makes nothing.
    let mut other = Browser::default();
    let page = other.get(&harness, &path).await;
    assert_eq!(page.status, StatusCode::GONE);
    assert!(page.body.contains("was used already"), "{}", page.body);
    let csrf = other.get(&harness, "/signin").await.csrf_field();
    let fields = [("name", "Mallory"), ("password", "mallory's password"), ("again", "mallory's password")];
    let replay = other.post(&harness, &path, &[fields.as_slice(), &[("csrf", csrf.as_str())]].concat()).await;
    assert_eq!(replay.status, StatusCode::GONE);
    assert!(replay.session_cookie().is_none());
    let all = harness.accounts.list_accounts(None, 100).await.unwrap();
    assert_eq!(all.len(), 3, "Alice, Bob and Carol only: {all:?}");

    // Now that Carol has an account, inviting her gives no link.
    assert_eq!(harness.server.invite_link(CAROL, "u_bob").await.unwrap(), None);
}

async fn an_email_with_an_account_gets_no_link(backing: Backing) {
    let harness = harness(backing, serde_json::json!({"open_signup": true})).await;
    assert_eq!(harness.server.invite_link(ALICE, "u_bob").await.unwrap(), None);
    assert_eq!(harness.server.invite_link("ALICE@example.com", "u_bob").await.unwrap(), None);
    assert!(matches!(harness.server.invite_link("not an email", "u_bob").await, Err(InviteLinkError::Email)));
}

async fn expired_and_unknown_links_get_one_answer(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let token = "expired-token-expired-token-expired-token-x";
    let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let now = mirobody_core::clock::now_ms();
    let record = SignupToken {
        email: CAROL.into(),
        invited_by: "u_alice".into(),
        created_at_ms: now - 20 * 86_400_000,
        expires_at_ms: now - 1,
    };
    assert!(harness.accounts.create_signup_token(&hash, &record, 50).await.unwrap());
    let mut browser = Browser::default();
    let expired = browser.get(&harness, &format!("/signup/{token}")).await;
    let unknown = browser.get(&harness, "/signup/never-made-never-made-never-made-never-made").await;
    let odd = browser.get(&harness, "/signup/%3Cscript%3E").await;
    for answer in [&expired, &unknown, &odd] {
        assert_eq!(answer.status, StatusCode::GONE, "{}", answer.body);
        assert_eq!(answer.body, expired.body);
    }
    let csrf = browser.get(&harness, "/signin").await.csrf_field();
    let fields = [("name", "C"), ("password", CAROL_PASSWORD), ("again", CAROL_PASSWORD), ("csrf", csrf.as_str())];
    let sent = browser.post(&harness, &format!("/signup/{token}"), &fields).await;
    assert_eq!(sent.status, StatusCode::GONE);
    assert_eq!(harness.accounts.account_by_email(CAROL).await.unwrap(), None);
}

async fn a_refused_form_keeps_the_link(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let path = link_path(&harness.server.invite_link(CAROL, "u_alice").await.unwrap().unwrap());
    let mut browser = Browser::default();
    let csrf = browser.get(&harness, &path).await.csrf_field();
    // Without the CSRF cookie's token, and with passwords that differ: nothing is used up.
    let forged = Browser::default()
        .post(&harness, &path, &[("password", CAROL_PASSWORD), ("again", CAROL_PASSWORD), ("csrf", &csrf)])
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let differ = [("password", CAROL_PASSWORD), ("again", "another long password"), ("csrf", csrf.as_str())];
    let answer = browser.post(&harness, &path, &differ).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.body.contains("differ") && answer.body.contains(CAROL), "{}", answer.body);
    let answer = sign_up(&mut browser, &harness, &path, &[]).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert!(harness.accounts.account_by_email(CAROL).await.unwrap().is_some());
}

async fn two_forms_at_once_make_one_account(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let path = link_path(&harness.server.invite_link(CAROL, "u_alice").await.unwrap().unwrap());
    let (mut first, mut second) = (Browser::default(), Browser::default());
    let (a, b) = tokio::join!(sign_up(&mut first, &harness, &path, &[]), sign_up(&mut second, &harness, &path, &[]));
    let made = [&a, &b].iter().filter(|answer| answer.status == StatusCode::SEE_OTHER).count();
    assert_eq!(made, 1, "{:?} {:?}", a.status, b.status);
    let other = if a.status == StatusCode::SEE_OTHER { &b } else { &a };
    assert!([StatusCode::CONFLICT, StatusCode::GONE].contains(&other.status), "{}", other.body);
    assert!(other.session_cookie().is_none());
    assert_eq!(harness.accounts.list_accounts(None, 100).await.unwrap().len(), 3, "Alice, Bob and one Carol");
    assert_eq!(Browser::default().get(&harness, &path).await.status, StatusCode::GONE, "the link is spent");
}

/// The accounts of `inner`, whose next account write fails as a broken database's would.
struct FailingOnce {
    inner: Arc<dyn AccountStore>,
    failed: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl AccountStore for FailingOnce {
    async fn create_account(&self, account: &Account) -> BackendResult<bool> {
        if !self.failed.swap(true, Ordering::SeqCst) {
            return Err(BackendError::new("the database is down"));
        }
        self.inner.create_account(account).await
    }
    async fn account(&self, id: &str) -> BackendResult<Option<Account>> {
        self.inner.account(id).await
    }
    async fn account_by_email(&self, email: &str) -> BackendResult<Option<Account>> {
        self.inner.account_by_email(email).await
    }
    async fn list_accounts(&self, after: Option<&str>, limit: u32) -> BackendResult<Vec<Account>> {
        self.inner.list_accounts(after, limit).await
    }
    async fn set_password_hash(&self, id: &str, password_hash: Option<&str>) -> BackendResult<bool> {
        self.inner.set_password_hash(id, password_hash).await
    }
    async fn set_account_disabled(&self, id: &str, disabled: bool) -> BackendResult<bool> {
        self.inner.set_account_disabled(id, disabled).await
    }
    async fn create_signup_token(&self, hash: &[u8; 32], token: &SignupToken, max: u32) -> BackendResult<bool> {
        self.inner.create_signup_token(hash, token, max).await
    }
    async fn signup_token_email(&self, hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<String>> {
        self.inner.signup_token_email(hash, now_ms).await
    }
    async fn use_signup_token(&self, hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<String>> {
        self.inner.use_signup_token(hash, now_ms).await
    }
    async fn sweep_signup_tokens(&self, now_ms: i64) -> BackendResult<u64> {
        self.inner.sweep_signup_tokens(now_ms).await
    }
}

async fn a_store_failure_leaves_the_link_working(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let accounts = Arc::new(FailingOnce { inner: harness.accounts.clone(), failed: Default::default() });
    let stores = OAuthStores {
        accounts: accounts.clone(),
        sessions: harness.sessions.clone(),
        oauth: harness.oauth.clone(),
        secrets: Some(harness.secrets.clone()),
        passkeys: None,
        identities: None,
        access_log: None,
    };
    let key = harness.server.signing_key().clone();
    let endpoint = McpEndpoint::new("http://127.0.0.1:8080", "");
    let server = OAuthServer::new(stores, endpoint, OAuthSettings::default(), key, vec![], harness.revoked.clone());
    let path = link_path(&server.invite_link(CAROL, "u_alice").await.unwrap().unwrap());
    let broken = Harness {
        router: server.router(),
        server,
        accounts: harness.accounts.clone(),
        sessions: harness.sessions.clone(),
        oauth: harness.oauth.clone(),
        secrets: harness.secrets.clone(),
        passkeys: None,
        revoked: harness.revoked.clone(),
        access_log: None,
        dir: harness.dir.join("unused"),
    };

    let mut browser = Browser::default();
    let failed = sign_up(&mut browser, &broken, &path, &[]).await;
    assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", failed.body);
    assert_eq!(broken.accounts.account_by_email(CAROL).await.unwrap(), None);
    // The database is back: the same link makes the account.
    let answer = sign_up(&mut browser, &broken, &path, &[]).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert!(broken.accounts.account_by_email(CAROL).await.unwrap().is_some());
    assert_eq!(Browser::default().get(&broken, &path).await.status, StatusCode::GONE, "and only then is spent");
}

async fn links_per_inviter_are_bounded(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    for n in 0..MAX_LIVE_SIGNUP_LINKS {
        let email = format!("person{n}@example.com");
        assert!(harness.server.invite_link(&email, "u_alice").await.unwrap().is_some());
    }
    let refused = harness.server.invite_link("one-more@example.com", "u_alice").await;
    assert!(matches!(refused, Err(InviteLinkError::TooMany)), "{refused:?}");
    assert!(harness.server.invite_link("one-more@example.com", "u_bob").await.unwrap().is_some(), "per inviter");
}

on_both!(
    a_link_makes_the_invited_account_once,
    an_email_with_an_account_gets_no_link,
    expired_and_unknown_links_get_one_answer,
    a_refused_form_keeps_the_link,
    links_per_inviter_are_bounded,
    two_forms_at_once_make_one_account,
    a_store_failure_leaves_the_link_working,
);
