//! The built-in tools and their backends, tested through the real MCP server over HTTP (the
//! router driven with `oneshot`, no sockets) against SQLite in a temp dir; the backend tests
//! also run against the PostgreSQL and Redis of this machine when
//! `MIROBODY_TEST_POSTGRES_URL` / `MIROBODY_TEST_REDIS_URL` are set.

/// Fixtures: backends in a temp dir, the engine, an HTTP client, an SSE reader.
#[path = "builtins/support.rs"]
mod support;

/// Every tool over HTTP: results, errors, missing backends, resources, the access log, the demo.
#[path = "builtins/tools.rs"]
mod tools;

/// `record_health_data`: values read in a document or told become data, checked, stored once,
/// gone with their file.
#[path = "builtins/recording.rs"]
mod recording;

/// `delete_health_data`: only after the person confirms through elicitation.
#[path = "builtins/deletion.rs"]
mod deletion;

/// Reference ranges and flags: the source's kept and returned, else the catalog's.
#[path = "builtins/ranges.rs"]
mod ranges;

/// HL7's own R4 examples (npm): every resource stored and found, or answered with a reason.
#[path = "builtins/hl7_examples.rs"]
mod hl7_examples;

/// The health tools' `outputSchema`, and every structured result checked against it.
#[path = "builtins/output_schemas.rs"]
mod output_schemas;

/// Bad input for every tool: a clear error, and nothing changed.
#[path = "builtins/bad_input.rs"]
mod bad_input;

/// Property tests: no sequence of calls by one user reaches another's data unless shared.
#[path = "builtins/isolation.rs"]
mod isolation;

/// The backends directly, on SQLite and PostgreSQL (db, memory, secrets, access log) and on
/// the in-process cache and Redis.
#[path = "builtins/backends.rs"]
mod backends;

/// Documents read in a sandboxed child: hostile PDFs, the per-person queue, a restart.
#[path = "builtins/extraction.rs"]
mod extraction;

/// Extracted text against pdftotext and python-docx: real documents, and the faults of issue 45.
#[path = "builtins/text_quality.rs"]
mod text_quality;

/// Per-person quotas (memories, invitations waiting) on SQLite and PostgreSQL, under racing
/// writes.
#[path = "builtins/quotas.rs"]
mod quotas;

/// SIGKILL in the middle of concurrent `remember` calls loses no acknowledged memory.
#[path = "builtins/durability.rs"]
mod durability;

/// Tasks in the SQL store outlive a restart; one running when its process ended reads failed;
/// their outcomes are sealed at rest.
#[path = "builtins/tasks.rs"]
mod tasks;

/// Upload links on SQLite and PostgreSQL: no user id, hashed at rest, single use under racing
/// uploads, expiry, revocation, a bound per person.
#[path = "builtins/upload_links.rs"]
mod upload_links;

/// Uploads that are health data: stored once under racing uploads, imports bounded in time.
#[path = "builtins/upload_imports.rs"]
mod upload_imports;

/// The S3 backend against a real S3 server (moto), set up by the test or reported skipped.
#[path = "builtins/s3.rs"]
mod s3;

/// MCP sessions shared through Redis: records, events, and instances serving one session.
#[path = "builtins/shared_sessions.rs"]
mod shared_sessions;

/// Files on disk are owner-only: the data folder, the database and its WAL, uploads, keys.
#[path = "builtins/private_files.rs"]
mod private_files;

/// TLS to PostgreSQL and Redis: servers of its own with a CA it makes, opened with
/// `sslmode=verify-full` and `rediss://`.
#[path = "builtins/tls.rs"]
mod tls;

/// Who read a person's data: listed to them alone, on both databases.
#[path = "builtins/data_access.rs"]
mod data_access;
/// Units converted, values flagged, names found in Chinese: golden answers in
/// `tests/golden/answers/` (`UPDATE_GOLDEN=1`).
#[path = "builtins/units.rs"]
mod units;

/// `fetch_health_trends`: buckets and summaries made in the database, on SQLite and PostgreSQL.
#[path = "builtins/trends.rs"]
mod trends;

/// Golden declarations of a few built-ins, in `tests/golden/tools/` (`UPDATE_GOLDEN=1`).
#[path = "builtins/golden.rs"]
mod golden;

/// The tool tables in the READMEs, generated from the registry (`UPDATE_DOCS=1`).
#[path = "builtins/tool_docs.rs"]
mod tool_docs;

/// A JSON value shortened for a failure message.
fn short(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 80 { format!("{}…", text.chars().take(80).collect::<String>()) } else { text }
}
