//! The operator's `user` commands through the real binary, checked on what signing in reads:
//! the stored account, its password hash, its web sessions and its apps' grants.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::{clean_command, fresh_data_dir};
use mirobody_ports::{Grant, WebSession};
use mirobody_store::{BackendConfig, OpenedBackends, open};

/// The exit code, stdout and stderr of `mirobody-server <args>`, with `stdin` as its input.
fn run(data_dir: &Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = clean_command()
        .args(args)
        .env("MIROBODY_BACKENDS__DATA_DIR", data_dir)
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

async fn store(data_dir: &Path) -> OpenedBackends {
    open(&BackendConfig::embedded(data_dir)).await.expect("the test opens the server's database")
}

/// The `user list` lines, split into their columns.
fn listed(data_dir: &Path) -> Vec<Vec<String>> {
    let (code, out, err) = run(data_dir, &["user", "list"], "");
    assert_eq!(code, 0, "{err}");
    out.lines().map(|line| line.split('\t').map(str::to_owned).collect()).collect()
}

#[tokio::test]
async fn accounts_from_the_command_line() {
    let data_dir = fresh_data_dir("cli-users");

    // A password from stdin; the email is trimmed and lower-cased; a name and a chosen id.
    let (code, out, err) = run(
        &data_dir,
        &["user", "add", "--email", "  Ada@Example.COM ", "--name", "Ada", "--id", "demo-user", "--password-stdin"],
        "correct horse battery\n",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ada@example.com") && out.contains("demo-user"), "{out}");
    assert!(!out.contains("Password (shown once)"), "a password given is not printed: {out}");
    let backends = store(&data_dir).await;
    let ada = backends.accounts().account_by_email("ada@example.com").await.unwrap().expect("stored");
    assert_eq!((ada.id.as_str(), ada.display_name.as_deref(), ada.disabled), ("demo-user", Some("Ada"), false));
    assert!(mirobody_oauth::verify_password("correct horse battery", ada.password_hash.as_deref()));
    backends.close().await;

    // A generated password is printed once, and is the one stored; the id is random.
    let (code, out, err) = run(&data_dir, &["user", "add", "--email", "bob@example.com"], "");
    assert_eq!(code, 0, "{err}");
    let password = out
        .lines()
        .find_map(|line| line.strip_prefix("Password (shown once): "))
        .unwrap_or_else(|| panic!("no password printed: {out}"))
        .to_owned();
    assert_eq!(password.chars().count(), 20, "{password}");
    let backends = store(&data_dir).await;
    let bob = backends.accounts().account_by_email("bob@example.com").await.unwrap().expect("stored");
    assert!(bob.id.starts_with("u_") && bob.id.len() == 18, "{}", bob.id);
    assert!(mirobody_oauth::verify_password(&password, bob.password_hash.as_deref()));
    backends.close().await;

    // Refusals: a taken email (in any case), a bad email, a short password; none stores anything.
    let (code, _, err) = run(&data_dir, &["user", "add", "--email", "ADA@example.com"], "");
    assert_ne!(code, 0);
    assert!(err.contains("already exists"), "{err}");
    let (code, _, err) = run(&data_dir, &["user", "add", "--email", "not-an-email"], "");
    assert_ne!(code, 0);
    assert!(err.contains("not an email address"), "{err}");
    let (code, _, err) =
        run(&data_dir, &["user", "add", "--email", "carol@example.com", "--password-stdin"], "short\n");
    assert_ne!(code, 0);
    assert!(err.contains("at least"), "{err}");
    let (code, _, err) = run(&data_dir, &["user", "add", "--email", "dan@example.com", "--id", "demo-user"], "");
    assert_ne!(code, 0);
    assert!(err.contains("already has an account"), "{err}");
    let emails: Vec<String> = listed(&data_dir).into_iter().map(|columns| columns[0].clone()).collect();
    assert_eq!(emails, ["ada@example.com", "bob@example.com"], "only the two accounts made");

    // list: email, id, name, state, created (RFC 3339).
    let rows = listed(&data_dir);
    assert_eq!(rows[0][..4], ["ada@example.com", "demo-user", "Ada", "enabled"]);
    assert_eq!(rows[1][2], "-", "no name");
    assert!(time::OffsetDateTime::parse(&rows[0][4], &time::format_description::well_known::Rfc3339).is_ok());

    // disable ends Ada's web sessions and revokes her apps' grants, and nobody else's.
    let backends = store(&data_dir).await;
    let session = WebSession { account_id: ada.id.clone(), created_at_ms: 1, expires_at_ms: i64::MAX };
    let other = WebSession { account_id: bob.id.clone(), ..session.clone() };
    backends.web_sessions().create_web_session(&[1; 32], &session).await.unwrap();
    backends.web_sessions().create_web_session(&[2; 32], &other).await.unwrap();
    let grant = |id: &str, account_id: &str| Grant {
        id: id.into(),
        account_id: account_id.into(),
        client_id: "client".into(),
        scopes: vec!["health:read".into()],
        resource: "http://127.0.0.1/mcp".into(),
        created_at_ms: 1,
        last_used_at_ms: None,
        revoked_at_ms: None,
    };
    backends.oauth().create_grant(&grant("g-ada", &ada.id)).await.unwrap();
    backends.oauth().create_grant(&grant("g-bob", &bob.id)).await.unwrap();
    backends.close().await;

    let (code, out, err) = run(&data_dir, &["user", "disable", "Ada@example.com"], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 web sessions ended") && out.contains("1 app grants revoked"), "{out}");
    assert_eq!(listed(&data_dir)[0][3], "disabled");
    let backends = store(&data_dir).await;
    assert_eq!(backends.web_sessions().web_session(&[1; 32], 2).await.unwrap(), None);
    assert!(backends.web_sessions().web_session(&[2; 32], 2).await.unwrap().is_some(), "Bob's session stays");
    assert!(backends.oauth().grants_of(&ada.id).await.unwrap().is_empty());
    assert_eq!(backends.oauth().grants_of(&bob.id).await.unwrap().len(), 1, "Bob's grant stays");
    backends.close().await;

    let (code, _, err) = run(&data_dir, &["user", "enable", "ada@example.com"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(listed(&data_dir)[0][3], "enabled");

    // reset: the new password works, the old one no longer does, and sessions end.
    let backends = store(&data_dir).await;
    backends.web_sessions().create_web_session(&[3; 32], &session).await.unwrap();
    backends.close().await;
    let (code, out, err) =
        run(&data_dir, &["user", "reset", "ada@example.com", "--password-stdin"], "a brand new password\n");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 web sessions ended"), "{out}");
    let backends = store(&data_dir).await;
    let ada = backends.accounts().account(&ada.id).await.unwrap().unwrap();
    assert!(mirobody_oauth::verify_password("a brand new password", ada.password_hash.as_deref()));
    assert!(!mirobody_oauth::verify_password("correct horse battery", ada.password_hash.as_deref()));
    assert_eq!(backends.web_sessions().web_session(&[3; 32], 2).await.unwrap(), None);
    backends.close().await;
    let (code, _, err) = run(&data_dir, &["user", "reset", "ada@example.com", "--password-stdin"], "tiny\n");
    assert_ne!(code, 0);
    assert!(err.contains("at least"), "{err}");

    // An unknown email is an error for each command that names one.
    for command in ["disable", "enable", "reset"] {
        let (code, _, err) = run(&data_dir, &["user", command, "nobody@example.com"], "");
        assert_ne!(code, 0, "{command}");
        assert!(err.contains("no account has the email nobody@example.com"), "{command}: {err}");
    }
    let _ = std::fs::remove_dir_all(&data_dir);
}
