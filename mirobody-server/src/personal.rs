//! What a person takes out and deletes, for the routes, the CLI and the account page alike:
//! everything they hold as one FHIR R4 Bundle, written page by page, and the erasing of their
//! whole account (rows, objects in storage, grants revoked at once).
//!
//! The export never holds a person's data in memory: it reads [`EXPORT_PAGE`] resources at a
//! time and sends each page's JSON before reading the next, so its memory is one page's
//! whatever the account's size. Their files come as `DocumentReference`s with signed links
//! that work for [`LINK_LIFETIME`].

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use futures::stream::{self, Stream};
use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_health::{PersonalData, ResourceCursor};
use mirobody_mcp::http::McpHttp;
use mirobody_store::{ErasedPerson, OpenedBackends};
use serde_json::{Value, json};

/// Resources read and sent at a time.
pub(crate) const EXPORT_PAGE: u32 = 500;
/// How long the links to a person's files in an export work.
pub(crate) const LINK_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// Where the export stands between two chunks.
enum Step {
    Head,
    Resources(Option<ResourceCursor>),
    Files,
    Done,
}

/// `user`'s FHIR R4 Bundle (type `collection`): a Patient for them, every resource they hold
/// as it was imported, their files as `DocumentReference`s; as chunks of JSON text.
pub(crate) fn export_stream(
    backends: Arc<OpenedBackends>,
    user: String,
) -> impl Stream<Item = Result<Bytes, BackendError>> + Send + 'static {
    stream::unfold(Step::Head, move |step| {
        let backends = Arc::clone(&backends);
        let user = user.clone();
        async move {
            match step {
                Step::Head => {
                    let patient = patient(&backends, &user).await;
                    let full_url = crate::export_entry::full_url(&format!("Patient/{user}"));
                    let head = format!(
                        "{{\"resourceType\":\"Bundle\",\"type\":\"collection\",\"timestamp\":{},\"entry\":[{}",
                        json!(mirobody_health::text::rfc3339(mirobody_core::clock::now_ms())),
                        json!({"fullUrl": full_url, "resource": patient}),
                    );
                    Some((Ok(Bytes::from(head)), Step::Resources(None)))
                }
                Step::Resources(after) => {
                    let store: &dyn PersonalData = backends.sql().as_ref();
                    match store.stored_resources(&user, after, EXPORT_PAGE).await {
                        Err(e) => Some((Err(e), Step::Done)),
                        Ok(page) if page.is_empty() => Some((Ok(Bytes::new()), Step::Files)),
                        Ok(page) => {
                            let next = page.last().map(|r| r.cursor);
                            let mut text = String::new();
                            for resource in page {
                                text.push(',');
                                text.push_str(&crate::export_entry::entry(&resource).to_string());
                            }
                            Some((Ok(Bytes::from(text)), Step::Resources(next)))
                        }
                    }
                }
                Step::Files => match documents(&backends, &user).await {
                    Ok(text) => Some((Ok(Bytes::from(text + "]}")), Step::Done)),
                    Err(e) => Some((Err(e), Step::Done)),
                },
                Step::Done => None,
            }
        }
    })
}

/// `mirobody-server export`: `user`'s export written to `out`, a new file, chunk by chunk; the
/// exit code. A failed export removes its partial file.
pub(crate) async fn run_export(backends: &Arc<OpenedBackends>, user: &str, out: &std::path::Path) -> u8 {
    use futures::StreamExt;
    use std::io::Write;
    let file = match std::fs::OpenOptions::new().write(true).create_new(true).open(out) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("mirobody-server: cannot make {}: {e}", out.display());
            return 1;
        }
    };
    let mut writer = std::io::BufWriter::new(file);
    let mut chunks = std::pin::pin!(export_stream(Arc::clone(backends), user.to_owned()));
    let mut failed = None;
    while let Some(chunk) = chunks.next().await {
        match chunk.map(|bytes| writer.write_all(&bytes)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failed = Some(e.to_string()),
            Err(e) => failed = Some(e.to_string()),
        }
        if failed.is_some() {
            break;
        }
    }
    let flushed = writer.flush();
    if let Some(why) = failed.or_else(|| flushed.err().map(|e| e.to_string())) {
        let _ = std::fs::remove_file(out);
        eprintln!("mirobody-server: the export failed: {why}");
        return 1;
    }
    println!("exported {user} to {}", out.display());
    0
}

/// `mirobody-server delete`: one thing of `user`'s, or their account; the exit code (2 for a
/// request that is not one).
pub(crate) async fn run_delete(
    backends: &OpenedBackends,
    mcp: &McpHttp,
    kind: &str,
    id: Option<&str>,
    user: &str,
    confirm: Option<&str>,
) -> u8 {
    if kind == "account" {
        if confirm != Some(user) {
            eprintln!("mirobody-server: to delete {user}'s account and everything in it, add --confirm {user}");
            return 2;
        }
        // Its sessions in memory are in the running servers; with shared sessions their records
        // and index are in Redis, ended from here and dropped by every server that hears it.
        return match erase_account(backends, None, Some(mcp), user).await {
            Ok(erased) => {
                println!(
                    "deleted the account {user}: {} stored objects, {} grants",
                    erased.objects.len(),
                    erased.grants.len()
                );
                0
            }
            Err(e) => {
                eprintln!("mirobody-server: {e}");
                1
            }
        };
    }
    let Some(kind) = mirobody_tools::erasure::DeleteKind::parse(kind) else {
        eprintln!("mirobody-server: what to delete is file, value, import or account, not '{kind}'");
        return 2;
    };
    let store: &dyn PersonalData = backends.sql().as_ref();
    let storage = backends.storage();
    match mirobody_tools::erasure::delete_one(store, storage.as_deref(), user, kind, id.unwrap_or_default()).await {
        Ok(true) => {
            println!("deleted {user}'s {} {}", kind.as_str(), id.unwrap_or_default());
            0
        }
        Ok(false) => {
            eprintln!("mirobody-server: {user} has no {} '{}'", kind.as_str(), id.unwrap_or_default());
            1
        }
        Err(e) => {
            eprintln!("mirobody-server: {e}");
            2
        }
    }
}

// A Patient for the person: their id, and their name and email when their account has them.
async fn patient(backends: &OpenedBackends, user: &str) -> Value {
    let mut patient = json!({"resourceType": "Patient", "id": user});
    if let Ok(Some(account)) = backends.accounts().account(user).await {
        patient["telecom"] = json!([{"system": "email", "value": account.email}]);
        if let Some(name) = account.display_name {
            patient["name"] = json!([{"text": name}]);
        }
    }
    patient
}

// The person's files as DocumentReferences, each entry led by a comma.
async fn documents(backends: &OpenedBackends, user: &str) -> BackendResult<String> {
    use mirobody_health::HealthStore;
    let files = backends.sql().files(user).await?;
    let storage = backends.storage();
    let mut text = String::new();
    for file in files {
        let mut attachment = json!({
            "contentType": file.mime_type,
            "title": file.filename,
            "size": file.size,
            "creation": file.uploaded_at,
        });
        if let Some(storage) = &storage {
            attachment["url"] = json!(storage.signed_url(&file.file_key, LINK_LIFETIME).await?);
        }
        let document = json!({
            "resourceType": "DocumentReference",
            "id": file.file_key,
            "status": "current",
            "date": file.uploaded_at,
            "description": file.filename,
            "content": [{"attachment": attachment}],
        });
        let full_url = crate::export_entry::full_url(&format!("DocumentReference/{}", file.file_key));
        text.push(',');
        text.push_str(&json!({"fullUrl": full_url, "resource": document}).to_string());
    }
    Ok(text)
}

/// Erases `user` and everything they hold: their MCP sessions on `mcp` (this instance's, and
/// with shared sessions every instance's and their records in Redis), every row
/// (`SqlStore::erase_person`), their files' objects in storage, and their OAuth grants in
/// `revoked` (this instance refuses their access tokens at once; the others within their next
/// poll).
pub(crate) async fn erase_account(
    backends: &OpenedBackends,
    revoked: Option<&mirobody_auth::RevokedGrants>,
    mcp: Option<&McpHttp>,
    user: &str,
) -> BackendResult<ErasedPerson> {
    // First, so that nothing running in a session writes after its rows are gone.
    let sessions = match mcp {
        Some(mcp) => mcp.end_sessions_of(user).await.map_err(|e| e.to_string()),
        None => Ok(0),
    };
    let erased = backends.sql().erase_person(user).await?;
    if let Some(revoked) = revoked {
        revoked.extend(erased.grants.iter().map(String::as_str));
    }
    if let Some(storage) = backends.storage() {
        let failed = mirobody_tools::erasure::remove_objects(storage.as_ref(), &erased.objects).await;
        if failed > 0 {
            return Err(BackendError::new(format!(
                "The account's data is deleted but {failed} stored objects are not; run the deletion again."
            )));
        }
    }
    let sessions = sessions.map_err(|e| {
        BackendError::new(format!(
            "The account's data is deleted but its MCP sessions on other instances are not ended \
             ({e}); run the deletion again."
        ))
    })?;
    tracing::info!(user, files = erased.objects.len(), sessions, "account erased");
    Ok(erased)
}
