//! The account, web-session and OAuth stores of `SqlStore`: the same checks on SQLite in a
//! temp dir, and on PostgreSQL in a fresh schema when `MIROBODY_TEST_POSTGRES_URL` is set.
//! Every id and email is made up per run, so the checks never meet earlier data.

use std::sync::Arc;

use mirobody_health::testing::unique_id;
use mirobody_ports::{
    Account, AccountStore, AuthorizationCode, CodeUse, Grant, IdentityLink, MAX_PASSKEYS_PER_ACCOUNT, OAuthClient,
    OAuthStore, Passkey, PasskeyCeremony, PasskeyStore, RefreshUse, RegistrationBound, SignupToken, UpstreamLogin,
    WebSession,
};
use mirobody_store::{BackendConfig, OpenedBackends, open};
use sha2::{Digest, Sha256};

/// A stand-in for a random token's hash: the SHA-256 of a unique string.
fn hash(what: &str) -> [u8; 32] {
    Sha256::digest(unique_id(what).as_bytes()).into()
}

/// The `users` row of an id, read beside the store: (display name, email).
enum UsersTable {
    Sqlite(sqlx::SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

impl UsersTable {
    async fn row(&self, id: &str) -> Option<(Option<String>, Option<String>)> {
        const SQL: &str = "SELECT display_name, email FROM users WHERE id = $1";
        match self {
            UsersTable::Sqlite(pool) => sqlx::query_as(SQL).bind(id).fetch_optional(pool).await.unwrap(),
            #[cfg(feature = "postgres")]
            UsersTable::Postgres(pool) => sqlx::query_as(SQL).bind(id).fetch_optional(pool).await.unwrap(),
        }
    }
}

fn account(id: &str, email: &str) -> Account {
    Account {
        id: id.into(),
        email: email.into(),
        display_name: Some("Ada".into()),
        password_hash: Some("$argon2id$v=19$not-a-real-hash".into()),
        disabled: false,
        created_at_ms: 1_700_000_000_000,
    }
}

async fn check_accounts(backends: &OpenedBackends, users: &UsersTable) {
    let accounts = backends.accounts();
    let run = unique_id("acct").to_lowercase();
    let (id, email) = (format!("{run}-1"), format!("{run}-1@example.com"));
    assert!(accounts.create_account(&account(&id, &email)).await.unwrap());
    assert_eq!(accounts.account(&id).await.unwrap(), Some(account(&id, &email)));
    assert_eq!(accounts.account_by_email(&email).await.unwrap(), Some(account(&id, &email)));
    assert_eq!(users.row(&id).await, Some((Some("Ada".into()), Some(email.clone()))), "the users row is made");

    // A taken email or a taken id stores nothing, not even a users row.
    let other_id = format!("{run}-2");
    assert!(!accounts.create_account(&account(&other_id, &email)).await.unwrap());
    assert_eq!(accounts.account(&other_id).await.unwrap(), None);
    assert_eq!(users.row(&other_id).await, None, "a refused account leaves no users row");
    assert!(!accounts.create_account(&account(&id, &format!("{run}-other@example.com"))).await.unwrap());
    assert_eq!(accounts.account_by_email(&format!("{run}-other@example.com")).await.unwrap(), None);

    // An existing user keeps their row.
    let existing = format!("{run}-existing");
    backends.health().upsert_user(&existing, Some("Old Name"), Some("old@example.org")).await.unwrap();
    let mut new = account(&existing, &format!("{run}-existing@example.com"));
    new.display_name = Some("New Name".into());
    assert!(accounts.create_account(&new).await.unwrap());
    assert_eq!(users.row(&existing).await, Some((Some("Old Name".into()), Some("old@example.org".into()))));

    // Paging in order of email.
    for n in 3..=6 {
        assert!(
            accounts.create_account(&account(&format!("{run}-{n}"), &format!("{run}-{n}@example.com"))).await.unwrap()
        );
    }
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = accounts.list_accounts(after.as_deref(), 2).await.unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        after = Some(last.email.clone());
        seen.extend(page.into_iter().map(|a| a.email).filter(|e| e.starts_with(&run)));
    }
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted, "pages come in order of email");
    assert_eq!(seen.len(), 6, "every account of this run is listed once: {seen:?}");

    // Password and disabling.
    assert!(accounts.set_password_hash(&id, Some("$argon2id$new")).await.unwrap());
    assert_eq!(accounts.account(&id).await.unwrap().unwrap().password_hash.as_deref(), Some("$argon2id$new"));
    assert!(accounts.set_password_hash(&id, None).await.unwrap());
    assert_eq!(accounts.account(&id).await.unwrap().unwrap().password_hash, None);
    assert!(!accounts.set_password_hash(&format!("{run}-nobody"), Some("x")).await.unwrap());
    assert!(accounts.set_account_disabled(&id, true).await.unwrap());
    assert!(accounts.account(&id).await.unwrap().unwrap().disabled);
    assert!(accounts.set_account_disabled(&id, false).await.unwrap());
    assert!(!accounts.account(&id).await.unwrap().unwrap().disabled);
    assert!(!accounts.set_account_disabled(&format!("{run}-nobody"), true).await.unwrap());
    // The hash never reaches Debug.
    assert!(!format!("{:?}", account(&id, &email)).contains("argon2"));
}

async fn check_web_sessions(backends: &OpenedBackends) {
    let (accounts, sessions) = (backends.accounts(), backends.web_sessions());
    let run = unique_id("web").to_lowercase();
    let id = format!("{run}-a");
    assert!(accounts.create_account(&account(&id, &format!("{id}@example.com"))).await.unwrap());
    let now = 1_800_000_000_000;
    let session = |expires_at_ms| WebSession { account_id: id.clone(), created_at_ms: now - 10, expires_at_ms };
    let (live, expired, other) = (hash("live"), hash("expired"), hash("other"));
    sessions.create_web_session(&live, &session(now + 1000)).await.unwrap();
    sessions.create_web_session(&expired, &session(now)).await.unwrap();
    sessions.create_web_session(&other, &session(now + 1000)).await.unwrap();
    assert_eq!(sessions.web_session(&live, now).await.unwrap(), Some(session(now + 1000)));
    assert_eq!(sessions.web_session(&expired, now).await.unwrap(), None, "expired");
    assert_eq!(sessions.web_session(&hash("unknown"), now).await.unwrap(), None);

    // A disabled account's sessions stop at once, and work again when it is enabled.
    accounts.set_account_disabled(&id, true).await.unwrap();
    assert_eq!(sessions.web_session(&live, now).await.unwrap(), None, "disabled account");
    accounts.set_account_disabled(&id, false).await.unwrap();
    assert!(sessions.web_session(&live, now).await.unwrap().is_some());

    assert!(sessions.end_web_session(&live).await.unwrap());
    assert!(!sessions.end_web_session(&live).await.unwrap());
    assert_eq!(sessions.web_session(&live, now).await.unwrap(), None);
    assert!(sessions.sweep_web_sessions(now).await.unwrap() >= 1);
    assert_eq!(sessions.end_web_sessions_of(&id).await.unwrap(), 1, "only `other` was left");
    assert_eq!(sessions.web_session(&other, now).await.unwrap(), None);
    assert_eq!(sessions.end_web_sessions_of(&id).await.unwrap(), 0);
}

fn client(client_id: &str, from: &str, created_at_ms: i64) -> OAuthClient {
    OAuthClient {
        client_id: client_id.into(),
        client_name: Some("Claude".into()),
        client_uri: None,
        redirect_uris: vec!["https://claude.ai/api/mcp/auth_callback".into(), "http://127.0.0.1/cb".into()],
        secret_hash: Some(hash("secret")),
        registered_from: from.into(),
        created_at_ms,
    }
}

async fn check_clients(oauth: &dyn OAuthStore) {
    let run = unique_id("client");
    let now = 1_800_000_000_000;
    let (from, elsewhere) = (format!("{run}-10.0.0.1"), format!("{run}-10.0.0.2"));
    let bound = RegistrationBound { since_ms: now - 3_600_000, max_from_one: 2, max_total: 1_000_000 };
    // An old registration does not count against the window.
    assert!(oauth.register_client(&client(&format!("{run}-old"), &from, now - 7_200_000), bound).await.unwrap());
    let first = client(&format!("{run}-1"), &from, now);
    assert!(oauth.register_client(&first, bound).await.unwrap());
    assert!(oauth.register_client(&client(&format!("{run}-2"), &from, now), bound).await.unwrap());
    assert!(!oauth.register_client(&client(&format!("{run}-3"), &from, now), bound).await.unwrap(), "max_from_one");
    assert_eq!(oauth.client(&format!("{run}-3")).await.unwrap(), None, "a refused client is not stored");
    assert!(oauth.register_client(&client(&format!("{run}-4"), &elsewhere, now), bound).await.unwrap());
    assert_eq!(oauth.client(&first.client_id).await.unwrap(), Some(first.clone()));

    // The total counts every client; this database holds at least the four above.
    let full = RegistrationBound { max_from_one: 100, max_total: 4, ..bound };
    let fresh = client(&format!("{run}-5"), &format!("{run}-new"), now);
    assert!(!oauth.register_client(&fresh, full).await.unwrap(), "max_total");
    assert_eq!(oauth.client(&fresh.client_id).await.unwrap(), None);

    // A metadata-document client is stored or replaced, without a bound.
    let mut document = client(&format!("https://{run}.example/client.json"), "metadata", now);
    document.secret_hash = None;
    oauth.put_client(&document).await.unwrap();
    document.client_name = Some("Renamed".into());
    oauth.put_client(&document).await.unwrap();
    assert_eq!(oauth.client(&document.client_id).await.unwrap(), Some(document));
}

fn grant(id: &str, account_id: &str, client_id: &str, created_at_ms: i64) -> Grant {
    Grant {
        id: id.into(),
        account_id: account_id.into(),
        client_id: client_id.into(),
        scopes: vec!["health:read".into(), "memory".into()],
        resource: "https://mcp.example/mcp".into(),
        created_at_ms,
        last_used_at_ms: None,
        revoked_at_ms: None,
    }
}

/// An account with one grant of a stored client: (account id, grant id).
async fn account_with_grant(backends: &OpenedBackends, run: &str) -> (String, String) {
    let account_id = unique_id(run).to_lowercase();
    assert!(
        backends.accounts().create_account(&account(&account_id, &format!("{account_id}@example.com"))).await.unwrap()
    );
    let client_id = format!("{account_id}-client");
    backends.oauth().put_client(&client(&client_id, "metadata", 1)).await.unwrap();
    let grant_id = format!("{account_id}-grant");
    backends.oauth().create_grant(&grant(&grant_id, &account_id, &client_id, 1_800_000_000_000)).await.unwrap();
    (account_id, grant_id)
}

async fn check_grants(backends: &OpenedBackends) {
    let oauth = backends.oauth();
    let now = 1_800_000_000_000;
    let (account_id, first) = account_with_grant(backends, "grants").await;
    let (other_account, other_grant) = account_with_grant(backends, "grants-other").await;
    let second = format!("{account_id}-second");
    oauth.create_grant(&grant(&second, &account_id, "some-client", now + 5)).await.unwrap();
    let listed: Vec<String> = oauth.grants_of(&account_id).await.unwrap().into_iter().map(|g| g.id).collect();
    assert_eq!(listed, [second.clone(), first.clone()], "newest first");
    assert_eq!(
        oauth.grant(&first).await.unwrap(),
        Some(grant(&first, &account_id, &format!("{account_id}-client"), now))
    );

    // Another account's id revokes nothing.
    assert!(!oauth.revoke_grant(&first, Some(&other_account), now + 10).await.unwrap());
    assert_eq!(oauth.grant(&first).await.unwrap().unwrap().revoked_at_ms, None);
    assert!(oauth.revoke_grant(&first, Some(&account_id), now + 10).await.unwrap());
    assert!(!oauth.revoke_grant(&first, Some(&account_id), now + 11).await.unwrap(), "already revoked");
    assert_eq!(oauth.grant(&first).await.unwrap().unwrap().revoked_at_ms, Some(now + 10));
    let listed: Vec<String> = oauth.grants_of(&account_id).await.unwrap().into_iter().map(|g| g.id).collect();
    assert_eq!(listed, std::slice::from_ref(&second));

    assert!(oauth.revoke_grant(&other_grant, None, now + 20).await.unwrap(), "no account: any grant");
    assert_eq!(oauth.revoke_grants_of(&account_id, now + 30).await.unwrap(), 1);
    assert!(oauth.grants_of(&account_id).await.unwrap().is_empty());
    let since = oauth.revoked_grants_since(now + 20).await.unwrap();
    assert!(since.contains(&other_grant) && since.contains(&second) && !since.contains(&first), "{since:?}");

    oauth.touch_grant(&other_grant, now + 40).await.unwrap();
    assert_eq!(oauth.grant(&other_grant).await.unwrap().unwrap().last_used_at_ms, Some(now + 40));
}

fn code(grant_id: &str, expires_at_ms: i64) -> AuthorizationCode {
    AuthorizationCode {
        grant_id: grant_id.into(),
        client_id: "c".into(),
        redirect_uri: "http://127.0.0.1:3000/cb".into(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
        expires_at_ms,
    }
}

async fn check_codes(backends: &OpenedBackends) {
    let oauth = backends.oauth();
    let now = 1_800_000_000_000;
    let (_, grant_id) = account_with_grant(backends, "codes").await;
    let fresh = hash("code");
    oauth.put_code(&fresh, &code(&grant_id, now + 60_000)).await.unwrap();
    assert_eq!(oauth.take_code(&fresh, now).await.unwrap(), CodeUse::Fresh(code(&grant_id, now + 60_000)));
    assert_eq!(oauth.take_code(&fresh, now + 1).await.unwrap(), CodeUse::Replayed { grant_id: grant_id.clone() });
    let expired = hash("code-expired");
    oauth.put_code(&expired, &code(&grant_id, now)).await.unwrap();
    assert_eq!(oauth.take_code(&expired, now).await.unwrap(), CodeUse::Unknown);
    assert_eq!(oauth.take_code(&hash("code-unknown"), now).await.unwrap(), CodeUse::Unknown);

    // Two takes at once: exactly one is fresh, the other a replay.
    for _ in 0..5 {
        let raced = hash("code-raced");
        oauth.put_code(&raced, &code(&grant_id, now + 60_000)).await.unwrap();
        let take =
            move |oauth: Arc<dyn OAuthStore>| tokio::spawn(async move { oauth.take_code(&raced, now).await.unwrap() });
        let (a, b) = (take(oauth.clone()), take(oauth.clone()));
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        let fresh = [&a, &b].iter().filter(|u| matches!(u, CodeUse::Fresh(_))).count();
        let replayed = [&a, &b].iter().filter(|u| matches!(u, CodeUse::Replayed { .. })).count();
        assert_eq!((fresh, replayed), (1, 1), "{a:?} {b:?}");
    }

    // A code of a revoked grant is gone with it.
    let after_revoke = hash("code-revoked");
    oauth.put_code(&after_revoke, &code(&grant_id, now + 60_000)).await.unwrap();
    assert!(oauth.revoke_grant(&grant_id, None, now).await.unwrap());
    assert_eq!(oauth.take_code(&after_revoke, now).await.unwrap(), CodeUse::Unknown);
}

async fn check_refresh_tokens(backends: &OpenedBackends) {
    let oauth = backends.oauth();
    let now = 1_800_000_000_000;
    let later = now + 86_400_000;
    let (account_id, grant_id) = account_with_grant(backends, "refresh").await;
    let (first, second, third) = (hash("rt1"), hash("rt2"), hash("rt3"));
    oauth.put_refresh_token(&first, &grant_id, later).await.unwrap();
    assert_eq!(oauth.refresh_token_grant(&first).await.unwrap(), Some(grant_id.clone()));
    match oauth.rotate_refresh_token(&first, &second, later, now).await.unwrap() {
        RefreshUse::Rotated(grant) => {
            assert_eq!(grant.id, grant_id);
            assert_eq!(grant.last_used_at_ms, Some(now), "the grant's last use is stamped");
        }
        other => panic!("expected Rotated, got {other:?}"),
    }
    assert_eq!(oauth.refresh_token_grant(&second).await.unwrap(), Some(grant_id.clone()));
    assert_eq!(oauth.refresh_token_grant(&first).await.unwrap(), Some(grant_id.clone()), "used, still known");
    assert_eq!(
        oauth.rotate_refresh_token(&first, &third, later, now + 1).await.unwrap(),
        RefreshUse::Reused { grant_id: grant_id.clone() }
    );
    assert_eq!(oauth.refresh_token_grant(&third).await.unwrap(), None, "a reuse stores no new token");
    assert_eq!(oauth.rotate_refresh_token(&hash("rt-unknown"), &third, later, now).await.unwrap(), RefreshUse::Unknown);
    let expired = hash("rt-expired");
    oauth.put_refresh_token(&expired, &grant_id, now).await.unwrap();
    assert_eq!(oauth.rotate_refresh_token(&expired, &third, later, now).await.unwrap(), RefreshUse::Unknown);

    // A disabled account's tokens are unknown, and work again when it is enabled.
    let accounts = backends.accounts();
    accounts.set_account_disabled(&account_id, true).await.unwrap();
    assert_eq!(oauth.rotate_refresh_token(&second, &third, later, now).await.unwrap(), RefreshUse::Unknown);
    accounts.set_account_disabled(&account_id, false).await.unwrap();
    assert!(matches!(oauth.rotate_refresh_token(&second, &third, later, now).await.unwrap(), RefreshUse::Rotated(_)));

    // After the grant is revoked its tokens, used or not, are unknown.
    assert!(oauth.revoke_grant(&grant_id, Some(&account_id), now).await.unwrap());
    assert_eq!(oauth.rotate_refresh_token(&third, &hash("rt4"), later, now).await.unwrap(), RefreshUse::Unknown);
    assert_eq!(oauth.rotate_refresh_token(&second, &hash("rt4"), later, now).await.unwrap(), RefreshUse::Unknown);
}

async fn check_sweeps(backends: &OpenedBackends) {
    let oauth = backends.oauth();
    let now = 1_900_000_000_000;
    let (_, grant_id) = account_with_grant(backends, "sweep").await;
    let (old_code, new_code, old_token, new_token) = (hash("c-old"), hash("c-new"), hash("t-old"), hash("t-new"));
    oauth.put_code(&old_code, &code(&grant_id, now - 1)).await.unwrap();
    oauth.put_code(&new_code, &code(&grant_id, now + 60_000)).await.unwrap();
    oauth.put_refresh_token(&old_token, &grant_id, now - 1).await.unwrap();
    oauth.put_refresh_token(&new_token, &grant_id, now + 60_000).await.unwrap();
    assert!(oauth.sweep_oauth(now).await.unwrap() >= 2);
    assert_eq!(oauth.refresh_token_grant(&old_token).await.unwrap(), None);
    assert_eq!(oauth.refresh_token_grant(&new_token).await.unwrap(), Some(grant_id.clone()));
    assert!(matches!(oauth.take_code(&new_code, now).await.unwrap(), CodeUse::Fresh(_)));
    assert_eq!(oauth.take_code(&old_code, now - 2).await.unwrap(), CodeUse::Unknown, "swept");

    // Unused clients made before the cut go; a client a grant names stays, as do newer ones.
    let run = unique_id("sweep-client");
    let (unused, named, newer) = (format!("{run}-unused"), format!("{run}-named"), format!("{run}-newer"));
    for (id, at) in [(&unused, 100), (&named, 100), (&newer, now)] {
        oauth.put_client(&client(id, "metadata", at)).await.unwrap();
    }
    oauth.create_grant(&grant(&format!("{run}-grant"), "someone", &named, now)).await.unwrap();
    assert!(oauth.sweep_unused_clients(now - 1).await.unwrap() >= 1);
    assert_eq!(oauth.client(&unused).await.unwrap(), None);
    assert!(oauth.client(&named).await.unwrap().is_some());
    assert!(oauth.client(&newer).await.unwrap().is_some());
}

fn signup(email: &str, invited_by: &str, created_at_ms: i64, expires_at_ms: i64) -> SignupToken {
    SignupToken { email: email.into(), invited_by: invited_by.into(), created_at_ms, expires_at_ms }
}

async fn check_signup_tokens(backends: &OpenedBackends) {
    let accounts = backends.accounts();
    let now = 1_800_000_000_000;
    let inviter = unique_id("inviter");
    let email = format!("{}@example.com", unique_id("invited").to_lowercase());
    let token = hash("signup");
    assert!(accounts.create_signup_token(&token, &signup(&email, &inviter, now, now + 60_000), 50).await.unwrap());
    assert_eq!(accounts.signup_token_email(&token, now).await.unwrap(), Some(email.clone()));
    assert_eq!(accounts.signup_token_email(&token, now + 60_000).await.unwrap(), None, "expired");
    assert_eq!(accounts.use_signup_token(&token, now + 60_000).await.unwrap(), None, "expired");
    assert_eq!(accounts.use_signup_token(&token, now).await.unwrap(), Some(email.clone()));
    assert_eq!(accounts.use_signup_token(&token, now).await.unwrap(), None, "used once");
    assert_eq!(accounts.signup_token_email(&token, now).await.unwrap(), None, "used");
    assert_eq!(accounts.use_signup_token(&hash("signup-unknown"), now).await.unwrap(), None);

    // At most so many live tokens per inviter: used and expired ones do not count, another
    // inviter's do not either.
    let bounded = unique_id("bounded");
    for _ in 0..2 {
        let fresh = hash("signup-bound");
        assert!(accounts.create_signup_token(&fresh, &signup(&email, &bounded, now, now + 60_000), 2).await.unwrap());
    }
    let refused = hash("signup-refused");
    assert!(!accounts.create_signup_token(&refused, &signup(&email, &bounded, now, now + 60_000), 2).await.unwrap());
    assert_eq!(accounts.signup_token_email(&refused, now).await.unwrap(), None, "nothing stored");
    assert!(accounts.create_signup_token(&refused, &signup(&email, &inviter, now, now + 60_000), 2).await.unwrap());
    let later = now + 60_000;
    assert!(accounts.create_signup_token(&hash("b"), &signup(&email, &bounded, later, later + 1), 2).await.unwrap());

    // Two uses at once: exactly one gets the email.
    for _ in 0..5 {
        let raced = hash("signup-raced");
        assert!(accounts.create_signup_token(&raced, &signup(&email, &inviter, now, now + 60_000), 50).await.unwrap());
        let take = move |accounts: Arc<dyn AccountStore>| {
            tokio::spawn(async move { accounts.use_signup_token(&raced, now).await.unwrap() })
        };
        let (a, b) = (take(accounts.clone()), take(accounts.clone()));
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert_eq!([&a, &b].iter().filter(|taken| taken.as_deref() == Some(email.as_str())).count(), 1, "{a:?} {b:?}");
        assert!(a.is_none() || b.is_none());
    }

    // Expired tokens are swept, used or not; live ones stay.
    let (old, live) = (hash("signup-old"), hash("signup-live"));
    let far = now + 86_400_000;
    assert!(accounts.create_signup_token(&old, &signup(&email, &inviter, now, now + 1), 50).await.unwrap());
    assert!(accounts.create_signup_token(&live, &signup(&email, &inviter, now, far + 1), 50).await.unwrap());
    assert!(accounts.sweep_signup_tokens(far).await.unwrap() >= 2);
    assert_eq!(accounts.signup_token_email(&live, now).await.unwrap(), Some(email.clone()));
    assert_eq!(accounts.signup_token_email(&old, now).await.unwrap(), None, "swept");
}

async fn check_identities(backends: &OpenedBackends) {
    let (accounts, identities) = (backends.accounts(), backends.identities());
    let run = unique_id("ident").to_lowercase();
    let (ada, bob) = (format!("{run}-ada"), format!("{run}-bob"));
    for id in [&ada, &bob] {
        assert!(accounts.create_account(&account(id, &format!("{id}@example.com"))).await.unwrap());
    }
    let link = |provider: &str, subject: &str, account_id: &str, at: i64| IdentityLink {
        provider: provider.into(),
        subject: subject.into(),
        account_id: account_id.into(),
        email: Some(format!("{account_id}@example.com")),
        created_at_ms: at,
    };
    assert!(identities.link_identity(&link("google", &run, &ada, 1)).await.unwrap());
    assert!(identities.link_identity(&link("keycloak", &run, &ada, 2)).await.unwrap(), "one account, two links");
    // The pair is unique: neither another account nor the same one links it again.
    assert!(!identities.link_identity(&link("google", &run, &bob, 3)).await.unwrap());
    assert!(!identities.link_identity(&link("google", &run, &ada, 3)).await.unwrap());
    assert_eq!(identities.identity_account("google", &run).await.unwrap(), Some(ada.clone()));
    assert_eq!(identities.identity_account("google", "someone else").await.unwrap(), None);
    assert_eq!(
        identities.identities_of(&ada).await.unwrap(),
        vec![link("google", &run, &ada, 1), link("keycloak", &run, &ada, 2)]
    );
    assert!(identities.identities_of(&bob).await.unwrap().is_empty());
    // Unlinking is scoped to the account.
    assert!(!identities.unlink_identity(&bob, "google", &run).await.unwrap(), "not bob's link");
    assert!(identities.unlink_identity(&ada, "google", &run).await.unwrap());
    assert!(!identities.unlink_identity(&ada, "google", &run).await.unwrap(), "already gone");
    assert_eq!(identities.identity_account("google", &run).await.unwrap(), None);
    assert!(identities.link_identity(&link("google", &run, &bob, 4)).await.unwrap(), "free again");
}

async fn check_upstream_logins(backends: &OpenedBackends) {
    let identities = backends.identities();
    let now = 1_800_000_000_000;
    // Other tests' rows expire long before this run's `now`: a clean slate for the bound.
    identities.sweep_upstream_logins(now).await.unwrap();
    let login = |expires_at_ms: i64| UpstreamLogin {
        provider: "google".into(),
        pkce_verifier: "verifier".into(),
        nonce: "nonce".into(),
        next: "/account".into(),
        created_at_ms: now,
        expires_at_ms,
    };
    let (one, two, three) = (hash("state-1"), hash("state-2"), hash("state-3"));
    assert!(identities.create_upstream_login(&one, &login(now + 600_000), 2).await.unwrap());
    assert!(identities.create_upstream_login(&two, &login(now + 600_000), 2).await.unwrap());
    assert!(!identities.create_upstream_login(&three, &login(now + 600_000), 2).await.unwrap(), "the bound");
    // Taken once, by exactly one of several concurrent takes.
    let takes = futures::future::join_all((0..4).map(|_| identities.take_upstream_login(&one, now))).await;
    let taken: Vec<_> = takes.into_iter().filter_map(Result::unwrap).collect();
    assert_eq!(taken, vec![login(now + 600_000)]);
    assert_eq!(identities.take_upstream_login(&one, now).await.unwrap(), None, "no replay");
    // An expired one is not given, and is gone.
    assert!(identities.create_upstream_login(&three, &login(now + 10), 2).await.unwrap(), "room again");
    assert_eq!(identities.take_upstream_login(&three, now + 10).await.unwrap(), None);
    assert_eq!(identities.take_upstream_login(&two, now).await.unwrap(), Some(login(now + 600_000)));
    // The sweep deletes what expired, and the bound counts only what is live.
    assert!(identities.create_upstream_login(&one, &login(now + 5), 2).await.unwrap());
    assert!(identities.create_upstream_login(&two, &login(now + 5), 2).await.unwrap());
    let later = UpstreamLogin { created_at_ms: now + 5, ..login(now + 600_000) };
    assert!(identities.create_upstream_login(&three, &later, 2).await.unwrap(), "the others expired by then");
    assert_eq!(identities.sweep_upstream_logins(now + 5).await.unwrap(), 2);
    assert!(identities.take_upstream_login(&three, now + 5).await.unwrap().is_some());
}

fn passkey(credential_id: &[u8], account_id: &str, created_at_ms: i64) -> Passkey {
    Passkey {
        credential_id: credential_id.to_vec(),
        account_id: account_id.into(),
        credential: r#"{"cred":"opaque"}"#.into(),
        name: format!("key {created_at_ms}"),
        created_at_ms,
        last_used_at_ms: None,
    }
}

async fn check_passkeys(store: &dyn PasskeyStore) {
    let run = unique_id("pk");
    let (alice, bob) = (format!("{run}-alice"), format!("{run}-bob"));
    let id = |n: u32| format!("{run}-cred-{n}").into_bytes();
    assert!(store.add_passkey(&passkey(&id(0), &alice, 10), MAX_PASSKEYS_PER_ACCOUNT).await.unwrap());
    assert_eq!(store.passkey(&id(0)).await.unwrap(), Some(passkey(&id(0), &alice, 10)));
    assert_eq!(store.passkey(&id(99)).await.unwrap(), None);
    // A credential id is one passkey's, whichever account asks.
    assert!(!store.add_passkey(&passkey(&id(0), &bob, 11), MAX_PASSKEYS_PER_ACCOUNT).await.unwrap());
    assert_eq!(store.passkey(&id(0)).await.unwrap().unwrap().account_id, alice);

    // The bound per account is checked in the insert; another account is not held back.
    for n in 1..MAX_PASSKEYS_PER_ACCOUNT {
        assert!(
            store.add_passkey(&passkey(&id(n), &alice, 10 + i64::from(n)), MAX_PASSKEYS_PER_ACCOUNT).await.unwrap()
        );
    }
    let over = id(MAX_PASSKEYS_PER_ACCOUNT);
    assert!(!store.add_passkey(&passkey(&over, &alice, 100), MAX_PASSKEYS_PER_ACCOUNT).await.unwrap());
    assert_eq!(store.passkey(&over).await.unwrap(), None, "nothing stored past the bound");
    assert!(store.add_passkey(&passkey(&id(50), &bob, 5), MAX_PASSKEYS_PER_ACCOUNT).await.unwrap());

    // Listing is the account's own, oldest first, and bounded.
    let listed = store.passkeys_of(&alice, 1000).await.unwrap();
    assert_eq!(listed.len(), MAX_PASSKEYS_PER_ACCOUNT as usize);
    assert_eq!(listed[0].credential_id, id(0));
    assert!(listed.iter().all(|p| p.account_id == alice));
    assert_eq!(store.passkeys_of(&alice, 3).await.unwrap().len(), 3);

    // A use replaces the credential and notes when.
    assert!(store.passkey_used(&id(0), r#"{"cred":"counter 2"}"#, 500).await.unwrap());
    let used = store.passkey(&id(0)).await.unwrap().unwrap();
    assert_eq!((used.credential.as_str(), used.last_used_at_ms), (r#"{"cred":"counter 2"}"#, Some(500)));
    assert!(!store.passkey_used(&id(99), "{}", 500).await.unwrap());

    // Deleting is scoped to the account: Bob's id for Alice's passkey deletes nothing.
    assert!(!store.delete_passkey(&bob, &id(0)).await.unwrap());
    assert!(store.passkey(&id(0)).await.unwrap().is_some());
    assert!(store.delete_passkey(&alice, &id(0)).await.unwrap());
    assert!(!store.delete_passkey(&alice, &id(0)).await.unwrap(), "once");
    assert_eq!(store.passkey(&id(0)).await.unwrap(), None);
    // A freed place takes a new passkey.
    assert!(store.add_passkey(&passkey(&over, &alice, 100), MAX_PASSKEYS_PER_ACCOUNT).await.unwrap());
    assert_eq!(store.delete_passkeys_of(&alice).await.unwrap(), u64::from(MAX_PASSKEYS_PER_ACCOUNT));
    assert!(store.passkeys_of(&alice, 100).await.unwrap().is_empty());
    assert_eq!(store.passkeys_of(&bob, 100).await.unwrap().len(), 1, "Bob keeps his");
}

fn ceremony(owner: &str, created_at_ms: i64, expires_at_ms: i64) -> PasskeyCeremony {
    PasskeyCeremony {
        purpose: "authenticate".into(),
        owner: owner.into(),
        state: r#"{"state":1}"#.into(),
        created_at_ms,
        expires_at_ms,
    }
}

async fn check_ceremonies(store: &dyn PasskeyStore) {
    let owner = unique_id("owner");
    let now = 1_000_000;
    let first = hash("ceremony-1");
    assert!(store.put_ceremony(&first, &ceremony(&owner, now, now + 300_000), 3).await.unwrap());
    // Taken once: a replay finds nothing.
    assert_eq!(store.take_ceremony(&first, now + 1).await.unwrap(), Some(ceremony(&owner, now, now + 300_000)));
    assert_eq!(store.take_ceremony(&first, now + 2).await.unwrap(), None);

    // An expired one is refused, and gone after.
    let late = hash("ceremony-late");
    assert!(store.put_ceremony(&late, &ceremony(&owner, now, now + 10), 3).await.unwrap());
    assert_eq!(store.take_ceremony(&late, now + 10).await.unwrap(), None);

    // At most 3 live per owner; expired ones do not count, and another owner is not held back.
    let live: Vec<[u8; 32]> = (0..3).map(|n| hash(&format!("live-{n}"))).collect();
    for id in &live {
        assert!(store.put_ceremony(id, &ceremony(&owner, now, now + 300_000), 3).await.unwrap());
    }
    let extra = hash("extra");
    assert!(!store.put_ceremony(&extra, &ceremony(&owner, now, now + 300_000), 3).await.unwrap());
    assert_eq!(store.take_ceremony(&extra, now).await.unwrap(), None, "nothing stored past the bound");
    assert!(store.put_ceremony(&extra, &ceremony(&unique_id("other"), now, now + 300_000), 3).await.unwrap());
    assert!(store.put_ceremony(&hash("later"), &ceremony(&owner, now + 300_000, now + 600_000), 3).await.unwrap());

    // Two takes at once: one gets it.
    let raced = hash("raced");
    assert!(store.put_ceremony(&raced, &ceremony(&unique_id("race"), now, now + 300_000), 3).await.unwrap());
    let (a, b) = tokio::join!(store.take_ceremony(&raced, now), store.take_ceremony(&raced, now));
    assert_eq!(usize::from(a.unwrap().is_some()) + usize::from(b.unwrap().is_some()), 1);

    assert!(store.sweep_ceremonies(now + 300_000).await.unwrap() >= 4);
    assert_eq!(store.take_ceremony(&live[0], now).await.unwrap(), None, "swept");
}

async fn check_all(backends: &OpenedBackends, users: &UsersTable) {
    check_accounts(backends, users).await;
    check_signup_tokens(backends).await;
    check_web_sessions(backends).await;
    check_clients(backends.oauth().as_ref()).await;
    check_grants(backends).await;
    check_codes(backends).await;
    check_refresh_tokens(backends).await;
    check_sweeps(backends).await;
    check_passkeys(backends.passkeys().as_ref()).await;
    check_ceremonies(backends.passkeys().as_ref()).await;
    check_identities(backends).await;
    check_upstream_logins(backends).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_the_account_and_oauth_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let config = BackendConfig::embedded(dir.path());
    let backends = open(&config).await.expect("the backends open on SQLite");
    let users = UsersTable::Sqlite(sqlx::SqlitePool::connect(&config.database_url()).await.unwrap());
    check_all(&backends, &users).await;
    backends.close().await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::{UsersTable, check_all};
    use mirobody_health::testing::unique_id;
    use mirobody_store::{BackendConfig, Dialect, open};
    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

    /// The URL of an external service from `var`, or `None` after printing `SKIPPED: <why>`;
    /// with `MIROBODY_REQUIRE_EXTERNAL=1` a missing URL fails the test instead.
    fn external(var: &str, test: &str) -> Option<String> {
        match std::env::var(var) {
            Ok(url) if !url.is_empty() => Some(url),
            _ => {
                if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
                    panic!("{test}: {var} is not set, and MIROBODY_REQUIRE_EXTERNAL=1 requires it");
                }
                println!("SKIPPED: {test}: {var} is not set");
                None
            }
        }
    }

    /// A PostgreSQL schema that is dropped when this goes out of scope (even when a test fails).
    struct PgSchema {
        url: String,
        name: String,
    }

    impl Drop for PgSchema {
        fn drop(&mut self) {
            let (url, name) = (self.url.clone(), self.name.clone());
            // A runtime of its own: Drop cannot await, and the test's runtime may be gone.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    use sqlx::{Connection, Executor};
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&url).await {
                        let _ = conn.execute(format!("DROP SCHEMA IF EXISTS {name} CASCADE").as_str()).await;
                        let _ = conn.close().await;
                    }
                });
            })
            .join();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_keeps_the_account_and_oauth_contracts() {
        let test = "postgres::postgres_keeps_the_account_and_oauth_contracts";
        let Some(url) = external("MIROBODY_TEST_POSTGRES_URL", test) else { return };
        let name = unique_id("mirobody_oauth_test").replace('-', "_");
        let schema = PgSchema { url: url.clone(), name };
        let dir = tempfile::tempdir().unwrap();
        let config = BackendConfig {
            database_url: Some(url.clone()),
            database_schema: Some(schema.name.clone()),
            ..BackendConfig::embedded(dir.path())
        };
        let backends = open(&config).await.expect("the backends open on PostgreSQL");
        assert_eq!(backends.sql().dialect(), Dialect::Postgres);
        let options: PgConnectOptions = url.parse().unwrap();
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(options.options([("search_path", schema.name.as_str())]))
            .await
            .unwrap();
        check_all(&backends, &UsersTable::Postgres(pool.clone())).await;
        pool.close().await;
        backends.close().await;
        drop(schema);
    }
}
