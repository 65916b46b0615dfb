//! A care-circle invitation to an email with no account gives a sign-up link, through the real
//! binary: following it (plain HTTP, the CSRF cookie and field as a browser sends them) makes
//! the account of that email, which then sees the invitation and accepts it.

mod common;

use common::{clean_command, fresh_data_dir, request, server_port, start_with, token};
use serde_json::{Value, json};

const EMAIL: &str = "dana@example.com";
const PASSWORD: &str = "dana's long enough password";

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

/// The value of cookie `name` a response head sets.
fn set_cookie(head: &str, name: &str) -> Option<String> {
    head.lines()
        .filter_map(|line| line.strip_prefix("set-cookie: ").or_else(|| line.strip_prefix("Set-Cookie: ")))
        .filter_map(|cookie| cookie.split(';').next()?.trim().strip_prefix(&format!("{name}=")).map(str::to_owned))
        .find(|value| !value.is_empty())
}

/// The value of the page's hidden `csrf` field.
fn csrf_field(body: &str) -> String {
    let start = body.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    body[start..].split('"').next().unwrap().to_owned()
}

/// `text` percent-encoded for a form body.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { char::from(b).to_string() } else { format!("%{b:02X}") })
        .collect()
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[test]
fn an_invitation_by_email_signs_the_invited_person_up() {
    let data_dir = fresh_data_dir("invite-signup");
    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start_with(&data_dir, port, std::process::Stdio::null(), &[]));
    let a = format!("Bearer {alice}");
    let invite = |body: &str| {
        let headers = [("Authorization", a.as_str()), ("Content-Type", "application/json")];
        let (status, _, body) = request(port, "POST", "/circle/invites", &headers, body.as_bytes());
        (status, json_of(&body))
    };

    // A user id gets no link; an unknown email does.
    let (status, by_id) = invite(r#"{"invitee": "bob"}"#);
    assert_eq!((status, by_id.get("signup_url")), (201, None), "{by_id}");
    let (status, invited) = invite(&json!({"invitee": "Dana@Example.com", "nickname": "Alice"}).to_string());
    assert_eq!(status, 201, "{invited}");
    let invite_id = invited["id"].as_i64().unwrap();
    let url = invited["signup_url"].as_str().unwrap_or_else(|| panic!("a signup_url: {invited}"));
    let path = url.strip_prefix(&format!("http://127.0.0.1:{port}")).expect("on this server").to_owned();
    assert!(path.starts_with("/signup/"), "{url}");

    // The page, with the email fixed, then the form sent with its CSRF cookie and field.
    let (status, head, body) = request(port, "GET", &path, &[], b"");
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("dana@example.com") && body.contains("readonly"), "{body}");
    let cookie = format!("mirobody_csrf={}", set_cookie(&head, "mirobody_csrf").expect("a CSRF cookie"));
    let csrf = csrf_field(&body);
    let fields = [
        ("email", "mallory@example.com"),
        ("name", "Dana"),
        ("password", PASSWORD),
        ("again", PASSWORD),
        ("csrf", &csrf),
    ];
    let form: Vec<String> = fields.iter().map(|(name, value)| format!("{name}={}", encode(value))).collect();
    let form = form.join("&");
    let form_headers = [("Cookie", cookie.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let (status, head, body) = request(port, "POST", &path, &form_headers, form.as_bytes());
    assert_eq!(status, 303, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&head, "location"), Some("/account"));
    let session = set_cookie(&head, "mirobody_session").expect("signed in");
    let (status, _, page) =
        request(port, "GET", "/account", &[("Cookie", &format!("mirobody_session={session}"))], b"");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&page).contains(EMAIL));
    // The link works once.
    let (status, _, _) = request(port, "POST", &path, &form_headers, form.as_bytes());
    assert_eq!(status, 410);
    // Inviting Dana again gives no link: she has an account.
    let (status, again) = invite(r#"{"invitee": "dana@example.com"}"#);
    assert_eq!((status, again.get("signup_url")), (201, None), "{again}");

    // The operator's list shows the new account under the invited email, and only that one.
    let listed = clean_command()
        .args(["user", "list"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .output()
        .expect("run user list");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(!listed.contains("mallory"), "{listed}");
    let dana = listed
        .lines()
        .find(|line| line.contains(EMAIL))
        .and_then(|line| line.split_whitespace().find(|word| word.starts_with("u_")))
        .unwrap_or_else(|| panic!("user list shows no id for {EMAIL}: {listed}"))
        .to_owned();

    // Dana sees Alice's invitation and accepts it.
    let d = format!("Bearer {}", token(&data_dir, port, &dana));
    let (status, _, body) = request(port, "GET", "/circle", &[("Authorization", &d)], b"");
    assert_eq!(status, 200);
    let circle = json_of(&body);
    let received = circle["invites_received"].as_array().cloned().unwrap_or_default();
    assert_eq!(received.len(), 1, "the invitation waits for Dana: {circle}");
    assert_eq!(received[0]["id"].as_i64(), Some(invite_id), "{circle}");
    let (status, _, body) =
        request(port, "POST", &format!("/circle/invites/{invite_id}/accept"), &[("Authorization", &d)], b"");
    assert_eq!((status, json_of(&body)["owner"].as_str()), (200, Some("alice")), "{}", String::from_utf8_lossy(&body));
    let (_, _, body) = request(port, "GET", "/circle", &[("Authorization", &a)], b"");
    assert_eq!(json_of(&body)["my_readers"][0]["user_id"], dana.as_str());
}
