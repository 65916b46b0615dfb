//! The browser pages, driven through `OAuthServer::router` over the in-memory stores and
//! `SqlStore` on SQLite:
//! sign-in and its CSRF, `next` and throttle rules, sign-up, and the access page's forms.

#[path = "support/memory.rs"]
mod memory;

use mirobody_ports::{Grant, OAuthClient};

include!("support/pages.rs");

async fn signing_in_sets_a_guarded_cookie_and_returns_to_a_local_next(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    let answer = browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "/authorize?client_id=x&state=1").await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert_eq!(answer.location(), "/authorize?client_id=x&state=1");
    let cookie = answer.session_cookie().expect("a session cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite="), "{cookie}");
    assert!(answer.set_cookies().iter().any(|c| c.starts_with("mirobody_csrf=;")), "the form's token is cleared");

    let page = browser.get(&harness, "/account").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(ALICE));
    assert!(page.body.contains("Alice &lt;A&gt;"), "the name is escaped: {}", page.body);
    // Signed in, the sign-in page passes straight on.
    let again = browser.get(&harness, "/signin?next=%2Faccount").await;
    assert_eq!((again.status, again.location()), (StatusCode::SEE_OTHER, "/account"));
}

async fn a_next_off_this_server_goes_to_the_account_page(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    for next in ["//evil.com", "https://evil.com", "/\\evil.com", "\\\\evil.com", "/\tevil", "evil", ""] {
        let mut browser = Browser::default();
        let answer = browser.sign_in(&harness, ALICE, ALICE_PASSWORD, next).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{next:?}");
        assert_eq!(answer.location(), "/account", "{next:?}");
    }
}

async fn a_wrong_password_and_an_unknown_email_get_the_same_answer(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    let csrf = browser.get(&harness, "/signin").await.csrf_field();
    let form = |email, password| [("email", email), ("password", password), ("csrf", csrf.as_str()), ("next", "")];
    let wrong = browser.post(&harness, "/signin", &form(ALICE, "not the password")).await;
    let unknown = browser.post(&harness, "/signin", &form("nobody@example.com", "not the password")).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert_eq!(unknown.status, wrong.status);
    assert!(wrong.body.contains("Email or password is wrong."));
    // The pages differ only in the email typed, which the form shows again.
    assert_eq!(wrong.body.replace(ALICE, "EMAIL"), unknown.body.replace("nobody@example.com", "EMAIL"));
    assert!(wrong.session_cookie().is_none() && unknown.session_cookie().is_none());

    // A disabled account answers the same, even with its right password.
    harness.accounts.set_account_disabled("u_bob", true).await.unwrap();
    let disabled = browser.post(&harness, "/signin", &form(BOB, BOB_PASSWORD)).await;
    assert_eq!(disabled.status, StatusCode::UNAUTHORIZED);
    assert_eq!(disabled.body.replace(BOB, "EMAIL"), wrong.body.replace(ALICE, "EMAIL"));
}

async fn a_form_without_its_csrf_token_makes_no_session(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    let csrf = browser.get(&harness, "/signin").await.csrf_field();
    let cases: [(&str, Option<&str>); 3] = [("missing", None), ("wrong", Some("not-the-token")), ("empty", Some(""))];
    for (case, field) in cases {
        let mut fields = vec![("email", ALICE), ("password", ALICE_PASSWORD), ("next", "/account")];
        if let Some(field) = field {
            fields.push(("csrf", field));
        }
        let answer = browser.clone().post(&harness, "/signin", &fields).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{case}");
        assert!(answer.session_cookie().is_none(), "{case}");
    }
    // The right token from a browser without the cookie (another site's form) is refused too.
    let mut elsewhere = Browser::default();
    let fields = [("email", ALICE), ("password", ALICE_PASSWORD), ("csrf", csrf.as_str()), ("next", "/account")];
    let answer = elsewhere.post(&harness, "/signin", &fields).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert_eq!(harness.sessions().await, 0);
    // The refusal offers a fresh form that works.
    let retry = answer.csrf_field();
    let fields = [("email", ALICE), ("password", ALICE_PASSWORD), ("csrf", retry.as_str()), ("next", "/account")];
    assert_eq!(elsewhere.post(&harness, "/signin", &fields).await.status, StatusCode::SEE_OTHER);
    assert_eq!(harness.sessions().await, 1);
}

async fn failures_are_bounded_per_account_and_per_address(backing: Backing) {
    let harness = harness(backing, serde_json::json!({"sign_in_burst": 3, "sign_in_interval": "1h"})).await;
    // Three wrong passwords for Alice, from three addresses: her account is held back.
    for address in ["192.0.2.1", "192.0.2.2", "192.0.2.3"] {
        let answer = Browser::from(address).sign_in(&harness, ALICE, "wrong password!", "").await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    let mut fresh = Browser::from("198.51.100.9");
    let answer = fresh.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS, "even the right password waits");
    let retry: u64 = answer.headers[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    assert!(answer.body.contains("Too many failed sign-ins"));
    assert!(!fresh.signed_in());
    // Upper case is the same account.
    let shouted = fresh.sign_in(&harness, "ALICE@example.com", ALICE_PASSWORD, "").await;
    assert_eq!(shouted.status, StatusCode::TOO_MANY_REQUESTS);

    // One address trying three unknown emails is held back for every email, Bob's included.
    let mut prober = Browser::from("203.0.113.7");
    for email in ["a@example.com", "b@example.com", "c@example.com"] {
        assert_eq!(prober.sign_in(&harness, email, "guess guess guess", "").await.status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(prober.sign_in(&harness, BOB, BOB_PASSWORD, "").await.status, StatusCode::TOO_MANY_REQUESTS);
    // Bob from elsewhere is not.
    let mut bob = Browser::from("198.51.100.10");
    assert_eq!(bob.sign_in(&harness, BOB, BOB_PASSWORD, "").await.status, StatusCode::SEE_OTHER);
}

async fn successes_are_not_counted(backing: Backing) {
    let harness = harness(backing, serde_json::json!({"sign_in_burst": 2, "sign_in_interval": "1h"})).await;
    for _ in 0..5 {
        let mut browser = Browser::from("192.0.2.1");
        assert_eq!(browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await.status, StatusCode::SEE_OTHER);
    }
}

async fn sign_up_is_there_only_when_open(backing: Backing) {
    let closed = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    assert_eq!(browser.get(&closed, "/signup").await.status, StatusCode::NOT_FOUND);
    let fields = [("email", "carol@example.com"), ("password", "carol's password"), ("again", "carol's password")];
    assert_eq!(browser.post(&closed, "/signup", &fields).await.status, StatusCode::NOT_FOUND);
    assert!(closed.accounts.account_by_email("carol@example.com").await.unwrap().is_none());
    assert!(!browser.get(&closed, "/signin").await.body.contains("/signup"));

    let open = harness(backing, serde_json::json!({"open_signup": true})).await;
    let mut browser = Browser::default();
    let page = browser.get(&open, "/signup?next=%2Fauthorize%3Fx%3D1").await;
    assert_eq!(page.status, StatusCode::OK);
    let csrf = page.csrf_field();
    let mut fields = vec![
        ("email", " Carol@Example.com "),
        ("name", "Carol"),
        ("password", "carol's password"),
        ("again", "carol's passwort"),
        ("csrf", csrf.as_str()),
        ("next", "/authorize?x=1"),
    ];
    let differ = browser.post(&open, "/signup", &fields).await;
    assert_eq!(differ.status, StatusCode::BAD_REQUEST);
    assert!(differ.body.contains("differ"));
    fields[3].1 = "carol's password";
    let made = browser.post(&open, "/signup", &fields).await;
    assert_eq!((made.status, made.location()), (StatusCode::SEE_OTHER, "/authorize?x=1"), "{}", made.body);
    assert!(made.session_cookie().is_some());
    let account = open.accounts.account_by_email("carol@example.com").await.unwrap().expect("the account");
    let hex = account.id.strip_prefix("u_").expect("u_ prefix");
    assert!(hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()), "{}", account.id);
    assert_eq!(account.display_name.as_deref(), Some("Carol"));
    assert!(browser.get(&open, "/account").await.body.contains("carol@example.com"));

    // The same email again, from another browser.
    let mut other = Browser::default();
    let csrf = other.get(&open, "/signup").await.csrf_field();
    fields[4].1 = &csrf;
    let again = other.post(&open, "/signup", &fields).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(again.body.contains("An account with this email exists; sign in instead."));
    // Fields are bounded.
    let long_name = "n".repeat(101);
    let long = [
        ("email", "dan@example.com"),
        ("name", long_name.as_str()),
        ("password", "dan's password"),
        ("again", "dan's password"),
        ("csrf", csrf.as_str()),
    ];
    assert_eq!(other.post(&open, "/signup", &long).await.status, StatusCode::BAD_REQUEST);
    let long_email = format!("{}@example.com", "d".repeat(250));
    let long = [
        ("email", long_email.as_str()),
        ("password", "dan's password"),
        ("again", "dan's password"),
        ("csrf", csrf.as_str()),
    ];
    assert_eq!(other.post(&open, "/signup", &long).await.status, StatusCode::BAD_REQUEST);
    assert!(open.accounts.account_by_email("dan@example.com").await.unwrap().is_none());
}

async fn sign_ups_from_one_address_are_bounded(backing: Backing) {
    let settings = serde_json::json!({"open_signup": true, "sign_in_burst": 2, "sign_in_interval": "1h"});
    let harness = harness(backing, settings).await;
    // A new browser each time, from `address`.
    async fn sign_up(harness: &Harness, address: &str, email: &str) -> Answer {
        let mut browser = Browser::from(address);
        let csrf = browser.get(harness, "/signup").await.csrf_field();
        let fields = [("email", email), ("password", "a long password"), ("again", "a long password"), ("csrf", &csrf)];
        browser.post(harness, "/signup", &fields).await
    }
    for email in ["f1@example.com", "f2@example.com"] {
        let answer = sign_up(&harness, "203.0.113.9", email).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    }
    // The third from the address waits, before any password is hashed or account made.
    let refused = sign_up(&harness, "203.0.113.9", "f3@example.com").await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = refused.headers[http::header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    assert!(refused.body.contains("Too many sign-ups"));
    assert!(harness.accounts.account_by_email("f3@example.com").await.unwrap().is_none());
    // Another address is not held back.
    let elsewhere = sign_up(&harness, "198.51.100.20", "f3@example.com").await;
    assert_eq!(elsewhere.status, StatusCode::SEE_OTHER, "{}", elsewhere.body);
    assert!(harness.accounts.account_by_email("f3@example.com").await.unwrap().is_some());
}

async fn the_account_page_needs_a_session_and_a_large_form_is_refused(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    let answer = browser.get(&harness, "/account").await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/signin?next=%2Faccount"));
    let answer = browser.post(&harness, "/account/signout-everywhere", &[("csrf", "x")]).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert!(answer.location().starts_with("/signin"));

    let csrf = browser.get(&harness, "/signin").await.csrf_field();
    let padding = "x".repeat(20 * 1024);
    let fields = [("email", ALICE), ("password", ALICE_PASSWORD), ("csrf", csrf.as_str()), ("pad", padding.as_str())];
    let answer = browser.post(&harness, "/signin", &fields).await;
    assert!(answer.status.is_client_error(), "{}", answer.status);
    assert!(answer.session_cookie().is_none());
}

fn client(id: &str, name: &str, redirect: &str) -> OAuthClient {
    OAuthClient {
        client_id: id.to_owned(),
        client_name: Some(name.to_owned()),
        client_uri: None,
        redirect_uris: vec![redirect.to_owned()],
        secret_hash: None,
        registered_from: "192.0.2.1".to_owned(),
        created_at_ms: 0,
    }
}

fn grant(id: &str, account: &str, client: &str) -> Grant {
    Grant {
        id: id.to_owned(),
        account_id: account.to_owned(),
        client_id: client.to_owned(),
        scopes: vec!["mcp:tools".to_owned()],
        resource: "http://127.0.0.1:8080/mcp".to_owned(),
        created_at_ms: 1_796_545_486_000,
        last_used_at_ms: None,
        revoked_at_ms: None,
    }
}

async fn an_app_is_revoked_by_its_owner_only(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let oauth = harness.oauth.as_ref();
    oauth.put_client(&client("c1", "Notes <b>app</b>", "https://notes.example/callback")).await.unwrap();
    oauth.put_client(&client("c2", "Bob's app", "https://bobs.example/cb")).await.unwrap();
    oauth.create_grant(&grant("g_alice", "u_alice", "c1")).await.unwrap();
    oauth.create_grant(&grant("g_bob", "u_bob", "c2")).await.unwrap();

    let mut alice = Browser::default();
    alice.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let page = alice.get(&harness, "/account").await;
    assert!(page.body.contains("Notes &lt;b&gt;app&lt;/b&gt;"), "{}", page.body);
    assert!(page.body.contains("notes.example") && page.body.contains("2026-12-06 08:24 UTC"));
    assert!(page.body.contains("mcp:tools") && page.body.contains("never"));
    assert!(!page.body.contains("Bob&#39;s app"));
    let csrf = page.csrf_field();

    // Bob's grant id in Alice's form: nothing happens.
    let answer = alice.post(&harness, "/account/apps/revoke", &[("csrf", &csrf), ("grant", "g_bob")]).await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/account"));
    assert!(!harness.revoked.contains("g_bob"));
    assert_eq!(oauth.grants_of("u_bob").await.unwrap().len(), 1);

    // Without the session's token: refused.
    let answer = alice.post(&harness, "/account/apps/revoke", &[("csrf", "forged"), ("grant", "g_alice")]).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(!harness.revoked.contains("g_alice"));

    let answer = alice.post(&harness, "/account/apps/revoke", &[("csrf", &csrf), ("grant", "g_alice")]).await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/account?done=app-revoked"));
    assert!(harness.revoked.contains("g_alice"), "its access tokens stop at once");
    assert!(oauth.grants_of("u_alice").await.unwrap().is_empty());
    let page = alice.get(&harness, answer.location()).await;
    assert!(!page.body.contains("Notes &lt;b&gt;app"));
    assert!(page.body.contains("The app no longer has access"));
}

async fn the_password_changes_only_with_the_current_one(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let mut other = Browser::default();
    other.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let csrf = browser.account_csrf(&harness).await;
    let new = "a brand new password";

    let wrong = [("csrf", csrf.as_str()), ("current", "not it at all"), ("new", new), ("again", new)];
    let answer = browser.post(&harness, "/account/password", &wrong).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.body.contains("The current password is wrong."));
    let short = [("csrf", csrf.as_str()), ("current", ALICE_PASSWORD), ("new", "short"), ("again", "short")];
    assert_eq!(browser.post(&harness, "/account/password", &short).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(Browser::default().sign_in(&harness, ALICE, ALICE_PASSWORD, "").await.status, StatusCode::SEE_OTHER);

    let right = [("csrf", csrf.as_str()), ("current", ALICE_PASSWORD), ("new", new), ("again", new)];
    let answer = browser.post(&harness, "/account/password", &right).await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/account?done=password"));
    assert_eq!(browser.get(&harness, "/account").await.status, StatusCode::OK, "this browser stays signed in");
    assert_eq!(other.get(&harness, "/account").await.status, StatusCode::SEE_OTHER, "others are signed out");
    assert_eq!(Browser::default().sign_in(&harness, ALICE, ALICE_PASSWORD, "").await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(Browser::default().sign_in(&harness, ALICE, new, "").await.status, StatusCode::SEE_OTHER);
}

async fn signing_out_ends_one_session_or_every_one(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let (mut first, mut second, mut third) = (Browser::default(), Browser::default(), Browser::default());
    for browser in [&mut first, &mut second, &mut third] {
        browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    }
    let mut bob = Browser::default();
    bob.sign_in(&harness, BOB, BOB_PASSWORD, "").await;

    let csrf = first.account_csrf(&harness).await;
    assert_eq!(first.post(&harness, "/signout", &[("csrf", "forged")]).await.status, StatusCode::FORBIDDEN);
    let answer = first.post(&harness, "/signout", &[("csrf", &csrf)]).await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/signin"));
    assert!(!first.signed_in());
    assert_eq!(second.get(&harness, "/account").await.status, StatusCode::OK);

    let csrf = second.account_csrf(&harness).await;
    let answer = second.post(&harness, "/account/signout-everywhere", &[("csrf", &csrf)]).await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/signin"));
    assert!(!second.signed_in());
    assert_eq!(third.get(&harness, "/account").await.status, StatusCode::SEE_OTHER);
    assert_eq!(bob.get(&harness, "/account").await.status, StatusCode::OK, "another person stays");
}

async fn behind_https_cookies_are_host_only_and_secure(backing: Backing) {
    let harness = harness_at(backing, serde_json::json!({}), "https://mcp.example.com").await;
    let mut browser = Browser::default();
    let page = browser.get(&harness, "/signin").await;
    let csrf = page.set_cookies().into_iter().find(|c| c.starts_with("__Host-mirobody_csrf=")).expect("csrf cookie");
    for attribute in ["Path=/;", "HttpOnly", "SameSite=Strict", "Secure"] {
        assert!(csrf.contains(attribute), "{csrf}");
    }
    let answer = browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let session =
        answer.set_cookies().into_iter().find(|c| c.starts_with("__Host-mirobody_session=")).expect("session");
    assert!(session.contains("Secure") && session.contains("HttpOnly") && session.contains("Path=/;"), "{session}");
    assert_eq!(browser.get(&harness, "/account").await.status, StatusCode::OK);
}

async fn an_app_asking_for_access_brings_a_signed_out_person_back_after_signing_in(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    harness.oauth.put_client(&client("c1", "Notes", "https://notes.example/callback")).await.unwrap();
    let authorize = format!(
        "/authorize?response_type=code&client_id=c1&redirect_uri={}&state=s1&code_challenge={}\
         &code_challenge_method=S256",
        encode("https://notes.example/callback"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    let mut browser = Browser::default();
    let answer = browser.get(&harness, &authorize).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let to_sign_in = answer.location().to_owned();
    assert!(to_sign_in.starts_with("/signin?next="), "{to_sign_in}");
    let page = browser.get(&harness, &to_sign_in).await;
    let next_start = page.body.find("name=\"next\" value=\"").expect("a next field") + 19;
    let next = page.body[next_start..].split('"').next().unwrap().replace("&amp;", "&");
    assert_eq!(next, authorize);
    let csrf = page.csrf_field();
    let fields = [("email", ALICE), ("password", ALICE_PASSWORD), ("csrf", csrf.as_str()), ("next", next.as_str())];
    let answer = browser.post(&harness, "/signin", &fields).await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, authorize.as_str()));
    let consent = browser.get(&harness, &authorize).await;
    assert_eq!(consent.status, StatusCode::OK, "{}", consent.body);
    assert!(consent.body.contains("notes.example"));
}

async fn a_personal_url_is_shown_once_and_revoked(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let csrf = browser.account_csrf(&harness).await;
    let page = browser.post(&harness, "/account/personal-url", &[("csrf", &csrf)]).await;
    assert_eq!(page.status, StatusCode::OK);
    let start = page.body.find("http://127.0.0.1:8080/mcp/").expect("the URL");
    let secret: String =
        page.body[start + 26..].chars().take_while(|c| c.is_ascii_alphanumeric() || "-_".contains(*c)).collect();
    assert_eq!(secret.len(), 43);
    let secrets = harness.secrets.as_ref();
    let owner = secrets.secret_owner(&mirobody_auth::hash_secret(&secret)).await.unwrap().expect("stored");
    assert_eq!(owner.user_id, "u_alice");
    let account = browser.get(&harness, "/account").await;
    assert!(!account.body.contains(&secret), "shown only once");
    assert!(account.body.contains("Revoke the URL"));

    let answer = browser.post(&harness, "/account/personal-url/revoke", &[("csrf", &csrf)]).await;
    assert_eq!(answer.location(), "/account?done=url-revoked");
    assert!(!secrets.has_secret("u_alice").await.unwrap());
}

async fn pages_forbid_framing_and_scripts(backing: Backing) {
    let harness = harness(backing, serde_json::json!({"open_signup": true})).await;
    let mut browser = Browser::default();
    let mut answers = vec![browser.get(&harness, "/signin").await, browser.get(&harness, "/signup").await];
    browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    answers.push(browser.get(&harness, "/account").await);
    answers.push(browser.post(&harness, "/account/apps/revoke", &[("csrf", "forged")]).await);
    for answer in answers {
        let policy = answer.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"), "{policy}");
        assert_eq!(answer.headers[header::X_FRAME_OPTIONS], "DENY");
        assert!(!answer.body.contains("<script"));
    }
}

async fn an_account_disabled_after_signing_in_is_signed_out(backing: Backing) {
    let harness = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "").await;
    let csrf = browser.account_csrf(&harness).await;
    harness.accounts.set_account_disabled("u_alice", true).await.unwrap();
    let answer = browser.get(&harness, "/account").await;
    assert_eq!((answer.status, answer.location()), (StatusCode::SEE_OTHER, "/signin?next=%2Faccount"));
    let answer = browser.post(&harness, "/account/personal-url", &[("csrf", &csrf)]).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert!(!harness.secrets.has_secret("u_alice").await.unwrap());
}

// Every test runs over both stores: the in-memory one and SQLite in a temp dir.
async fn the_account_page_lists_who_read_ones_data_and_only_ones_own(backing: Backing) {
    use mirobody_ports::{AccessKind, AccessOutcome};
    let harness = harness(backing, serde_json::json!({})).await;
    let mut browser = Browser::default();
    browser.sign_in(&harness, ALICE, ALICE_PASSWORD, "/account").await;
    let Some(log) = &harness.access_log else {
        // No access log given: no section.
        assert!(!browser.get(&harness, "/account").await.body.contains("Who read your data"));
        return;
    };
    let page = browser.get(&harness, "/account").await;
    assert!(page.body.contains("Who read your data") && page.body.contains("Nobody else has read your data."));
    // Bob read Alice's data twice; Alice read Bob's once; a tool name with markup is escaped.
    log.record("u_bob", Some("u_alice"), AccessKind::Tool, "family_health", AccessOutcome::Ok, 3).await.unwrap();
    log.record("u_bob", Some("u_alice"), AccessKind::Tool, "<b>x</b>", AccessOutcome::Cancelled, 1).await.unwrap();
    log.record("u_alice", Some("u_bob"), AccessKind::Tool, "get_user_health_profile", AccessOutcome::Ok, 1)
        .await
        .unwrap();
    let page = browser.get(&harness, "/account").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("<strong>Bob</strong> used family_health (ok)"), "{}", page.body);
    assert!(page.body.contains("used &lt;b&gt;x&lt;/b&gt; (cancelled)"), "{}", page.body);
    assert!(!page.body.contains("get_user_health_profile"), "Alice's own reads of Bob's data are Bob's");
    assert!(!page.body.contains("<script"), "plain HTML");
}

on_both!(
    the_account_page_lists_who_read_ones_data_and_only_ones_own,
    signing_in_sets_a_guarded_cookie_and_returns_to_a_local_next,
    a_next_off_this_server_goes_to_the_account_page,
    a_wrong_password_and_an_unknown_email_get_the_same_answer,
    a_form_without_its_csrf_token_makes_no_session,
    failures_are_bounded_per_account_and_per_address,
    successes_are_not_counted,
    sign_up_is_there_only_when_open,
    sign_ups_from_one_address_are_bounded,
    the_account_page_needs_a_session_and_a_large_form_is_refused,
    an_app_is_revoked_by_its_owner_only,
    the_password_changes_only_with_the_current_one,
    signing_out_ends_one_session_or_every_one,
    an_app_asking_for_access_brings_a_signed_out_person_back_after_signing_in,
    a_personal_url_is_shown_once_and_revoked,
    behind_https_cookies_are_host_only_and_secure,
    pages_forbid_framing_and_scripts,
    an_account_disabled_after_signing_in_is_signed_out,
);
