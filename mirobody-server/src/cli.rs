//! The command line: `serve` (the default), `stdio`, and `tools` to inspect and call the
//! registry without a client; the operator's commands, and `user` (in [`users`]) for the
//! accounts people sign in with.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use mirobody_core::{Format, Registry, ToolContext, UserInfo};

pub mod backup;
pub mod users;

pub use users::UserCommand;

/// The mirobody MCP server.
#[derive(Debug, Parser)]
#[command(name = "mirobody-server", version, about)]
pub struct Cli {
    /// A YAML configuration file.
    #[arg(long, global = true, env = "MIROBODY_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where to listen, as ADDR:PORT (overrides the config's `bind`).
    #[arg(long, global = true)]
    pub bind: Option<std::net::SocketAddr>,
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// A subcommand.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over Streamable HTTP at <uri_prefix>/mcp.
    Serve,
    /// Speak MCP over stdin/stdout, for desktop clients; logs go to stderr.
    Stdio {
        /// Act as this user (the local operator vouches for it).
        #[arg(long)]
        user: Option<String>,
    },
    /// Inspect or call the tool registry.
    Tools {
        /// What to do with it.
        #[command(subcommand)]
        action: ToolsCommand,
    },
    /// Load a demo user (care circle, observations, files, memories) into the database and
    /// print a token and a personal MCP URL to try every tool with.
    Demo,
    /// Import a person's health data from a file, as `POST /fhir` does; prints what was
    /// stored, and exits 1 when anything was refused. `import FILE` tells the format by the
    /// content (an Apple Health export.zip or export.xml, FHIR JSON or NDJSON, else CSV), as
    /// uploads do; `import FORMAT FILE` names it.
    Import {
        /// [FORMAT] FILE: fhir (a Bundle or one resource, JSON), ndjson (FHIR Bulk Data, one
        /// resource a line), csv (a wearable's export with
        /// columns time, indicator, value and unit) or apple (the Health app's export.zip or
        /// export.xml), then the file.
        #[arg(num_args = 1..=2, required = true, value_names = ["FORMAT", "FILE"])]
        args: Vec<String>,
        /// Whose data it is.
        #[arg(long)]
        user: String,
    },
    /// Write everything a person holds as one FHIR R4 Bundle (JSON): a Patient, every
    /// resource as imported, their files as DocumentReferences with links that work for a day.
    Export {
        /// Whose data.
        #[arg(long)]
        user: String,
        /// The file to write (made new; an existing one is refused).
        #[arg(long)]
        out: PathBuf,
    },
    /// Delete, for good, one thing a person holds (`file KEY`, `value ID`, `import ID`) or
    /// their whole account with everything in it (`account`, with --confirm USER).
    Delete {
        /// What: file, value, import or account.
        kind: String,
        /// The file's key or the value's id (`Observation/abc`); none for an account.
        id: Option<String>,
        /// Whose.
        #[arg(long)]
        user: String,
        /// For an account: the user id again, to confirm.
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Manage a person's care circle: who reads their health data.
    Circle {
        /// What to do.
        #[command(subcommand)]
        action: CircleCommand,
    },
    /// Manage the accounts people sign in with (email and password).
    User {
        /// What to do.
        #[command(subcommand)]
        action: UserCommand,
    },
    /// Replace the key the authorization server signs access tokens with. The old key moves
    /// to `<key file stem>.previous.pem`, where servers keep verifying what it signed until
    /// those tokens expire; restart every instance (they share the files) to sign with the
    /// new one. A second rotation drops the key before the previous one.
    RotateSigningKey,
    /// Make or end a person's links to the upload page.
    UploadLink {
        /// What to do.
        #[command(subcommand)]
        action: UploadLinkCommand,
    },
    /// Copy the database, the uploaded files and a manifest into an empty folder while the
    /// server runs (SQLite; with PostgreSQL it prints the `pg_dump` command to use instead).
    Backup {
        /// The folder to write (made if missing; must be empty).
        dest: PathBuf,
        /// Copy the key files too (the token and OAuth signing keys, the file URL key): the
        /// backup then lets anyone holding it mint tokens. Without it, the manifest names them.
        #[arg(long)]
        with_keys: bool,
    },
    /// Bring a backup back into an empty data folder (`backends.data_dir`), checking every
    /// file against the manifest; then start the server on it.
    Restore {
        /// The backup's folder.
        backup: PathBuf,
    },
    /// Mint an access token for a user, signed with the configured HS256 key (the embedded
    /// default generates one). For trying the server; production tokens come from your
    /// authorization server.
    Token {
        /// The user id (the token's subject).
        #[arg(long)]
        user: String,
        /// Seconds until it expires.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
        /// A scope the token carries (repeat for more), such as `mcp:personal_url`, which
        /// `POST`/`DELETE /personal/mcp` needs.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
    },
    /// Manage a user's personal MCP URL (the secret in it is shown once and stored as a hash).
    Secret {
        /// create, rotate or revoke.
        action: SecretAction,
        /// The user.
        #[arg(long)]
        user: String,
        /// Bind the URL to an agent, for per-agent tool lists.
        #[arg(long)]
        agent: Option<String>,
        /// With create or rotate: the URL stops working after this many seconds (60 to
        /// 31536000, 365 days). Without it, it lasts until rotated or revoked.
        #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(60..=31_536_000))]
        expires_in: Option<u64>,
    },
}

/// The format of an import file.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ImportFormat {
    /// FHIR R4 JSON: a Bundle (batch, transaction, collection, searchset) or one resource.
    Fhir,
    /// FHIR Bulk Data: one resource per line (NDJSON).
    Ndjson,
    /// CSV with a header row naming time, indicator, value and (optionally) unit.
    Csv,
    /// The iPhone Health app's export: `export.zip`, or the `export.xml` in it, read as a
    /// stream.
    Apple,
}

impl ImportFormat {
    /// The format `import`'s arguments name (`[FORMAT] FILE`), and the file; `None` for the
    /// format when only the file is given (it is told by the content).
    pub fn from_args(args: &[String]) -> Result<(Option<Self>, PathBuf), String> {
        match args {
            [file] => Ok((None, PathBuf::from(file))),
            [format, file] => {
                let format = <Self as clap::ValueEnum>::from_str(format, true)
                    .map_err(|_| format!("unknown import format {format:?}: fhir, ndjson, csv or apple"))?;
                Ok((Some(format), PathBuf::from(file)))
            }
            _ => Err("import takes [FORMAT] FILE".to_owned()),
        }
    }

    /// The format of `file` by its content, as uploads tell it
    /// ([`mirobody_health::formats::detect`]): an Apple Health export, FHIR JSON or NDJSON, else
    /// CSV (whose import says which columns it lacks).
    pub fn detect(file: &std::path::Path) -> std::io::Result<Self> {
        use mirobody_health::formats::DataFormat;
        let mut opened = std::fs::File::open(file)?;
        Ok(match mirobody_health::formats::detect(&mut opened)? {
            DataFormat::AppleZip | DataFormat::AppleXml => Self::Apple,
            DataFormat::FhirNdjson => Self::Ndjson,
            DataFormat::FhirBundle | DataFormat::FhirResource => Self::Fhir,
            DataFormat::Other if is_zip(&mut opened)? => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a zip that is not an Apple Health export (no apple_health_export/ in it)",
                ));
            }
            _ => Self::Csv,
        })
    }
}

fn is_zip(file: &mut std::fs::File) -> std::io::Result<bool> {
    let mut magic = [0u8; 4];
    let read = file.read(&mut magic)?;
    Ok(read == 4 && &magic == b"PK\x03\x04")
}

/// A `circle` subcommand; the operator acts for `--user`.
#[derive(Debug, Subcommand)]
pub enum CircleCommand {
    /// Who read the person's health data and when, newest first: one line per read (entry id,
    /// time, reader, tool, outcome).
    Reads {
        /// The person whose data was read.
        #[arg(long)]
        user: String,
        /// How many entries, at most 100.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
        /// Only entries older than this one (the id of the last line of the previous page).
        #[arg(long)]
        before: Option<i64>,
    },
    /// Both ways, with the invitations waiting, as JSON.
    List {
        /// The person.
        #[arg(long)]
        user: String,
    },
    /// Invite someone (a user id or an email) to read the person's health data.
    Invite {
        /// The person who shares.
        #[arg(long)]
        user: String,
        /// Who may read it once they accept.
        invitee: String,
        /// The name the invitee will know the person by.
        #[arg(long)]
        nickname: Option<String>,
    },
    /// Accept an invitation addressed to the person.
    Accept {
        /// The person invited.
        #[arg(long)]
        user: String,
        /// The invitation's id (see `circle list`).
        id: i64,
        /// The name to know the one who shares by.
        #[arg(long)]
        nickname: Option<String>,
    },
    /// Withdraw or decline an invitation.
    Decline {
        /// The person (who made it or to whom it was made).
        #[arg(long)]
        user: String,
        /// The invitation's id.
        id: i64,
    },
    /// End the sharing between the person and another, whichever way it goes.
    Revoke {
        /// The person.
        #[arg(long)]
        user: String,
        /// The other person.
        other: String,
    },
}

/// An `upload-link` subcommand; the operator acts for `--user`.
#[derive(Debug, Subcommand)]
pub enum UploadLinkCommand {
    /// Make a link (printed once; it stores `uploads.link_uses` files within
    /// `uploads.link_ttl_secs`).
    Create {
        /// The person whose uploads it makes.
        #[arg(long)]
        user: String,
    },
    /// End every link of the person's that still works.
    Revoke {
        /// The person.
        #[arg(long)]
        user: String,
    },
}

/// Runs an `upload-link` subcommand, writing the link or the count revoked to `out`; the
/// process exit code (2 when the store refused).
pub async fn run_upload_link(
    links: &mirobody_tools::upload_links::UploadLinks,
    action: UploadLinkCommand,
    out: &mut impl std::io::Write,
) -> std::io::Result<i32> {
    let done = match action {
        UploadLinkCommand::Create { user } => links.mint(&user).await.map(|link| link.url),
        UploadLinkCommand::Revoke { user } => links.revoke_all(&user).await.map(|n| format!("{n} revoked")),
    };
    match done {
        Ok(line) => writeln!(out, "{line}").map(|()| 0),
        Err(e) => writeln!(out, "{e}").map(|()| 2),
    }
}

/// Runs `import`, writing what happened to `out`; the process exit code (1 when anything was
/// refused, 2 when the file cannot be read). With no `format`, it is told by the content
/// ([`ImportFormat::detect`]). A report's document sent inline (`presentedForm`) is stored as
/// the person's file through `uploader`, as `POST /fhir` stores it.
pub async fn run_import(
    sql: &dyn mirobody_health::HealthData,
    uploader: &mirobody_tools::uploads::Uploader,
    format: Option<ImportFormat>,
    file: &std::path::Path,
    user: &str,
    out: &mut impl std::io::Write,
) -> std::io::Result<i32> {
    let format = match format.map_or_else(|| ImportFormat::detect(file), Ok) {
        Ok(format) => format,
        Err(e) => {
            writeln!(out, "cannot read {}: {e}", file.display())?;
            return Ok(2);
        }
    };
    if let ImportFormat::Apple = format {
        return run_apple_import(sql, file, user, out).await;
    }
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => {
            writeln!(out, "cannot read {}: {e}", file.display())?;
            return Ok(2);
        }
    };
    let response = match format {
        ImportFormat::Csv => mirobody_health::import::import_csv(sql, user, &text).await,
        ImportFormat::Ndjson => mirobody_health::formats::import_ndjson(sql, user, text.as_bytes()).await,
        ImportFormat::Fhir | ImportFormat::Apple => match serde_json::from_str(&text) {
            Ok(body) => mirobody_health::import::import_fhir(sql, user, &body).await,
            Err(e) => {
                writeln!(out, "{} is not JSON: {e}", file.display())?;
                return Ok(2);
            }
        },
    };
    let code = write_summary(&response, out)?;
    for stored in uploader.store_report_forms(user, &response.report_forms).await {
        match stored {
            Ok(file) => writeln!(out, "  a report's document stored as file {} ({})", file.file_key, file.filename)?,
            Err(why) => writeln!(out, "  a report's document was not stored: {why}")?,
        }
    }
    Ok(code)
}

/// `import` of an Apple Health export, streamed from the file.
async fn run_apple_import(
    sql: &dyn mirobody_health::HealthData,
    file: &std::path::Path,
    user: &str,
    out: &mut impl std::io::Write,
) -> std::io::Result<i32> {
    let opened = match std::fs::File::open(file) {
        Ok(opened) => opened,
        Err(e) => {
            writeln!(out, "cannot read {}: {e}", file.display())?;
            return Ok(2);
        }
    };
    let reader = std::io::BufReader::with_capacity(1 << 16, opened);
    let Some(response) = mirobody_health::apple::import_apple_health_auto(sql, user, reader).await else {
        writeln!(out, "{} is not an Apple Health export (export.zip or export.xml)", file.display())?;
        return Ok(2);
    };
    write_summary(&response, out)
}

fn write_summary(
    response: &mirobody_health::import::ImportResponse,
    out: &mut impl std::io::Write,
) -> std::io::Result<i32> {
    let summary = &response.summary;
    writeln!(
        out,
        "{} stored, {} already there, {} skipped (types not imported), {} refused",
        summary.created,
        summary.unchanged,
        summary.skipped,
        summary.invalid.len()
    )?;
    if summary.updated + summary.removed > 0 {
        writeln!(out, "{} updated to a newer version, {} removed", summary.updated, summary.removed)?;
    }
    if let Some(id) = summary.import_id {
        writeln!(out, "import {id}")?;
    }
    for (name, c) in &summary.by_type {
        let mut line = format!("  {name}: {} read, {} stored, {} already there", c.records, c.created, c.unchanged);
        for (n, what) in [
            (c.folded, "in daily totals or nights"),
            (c.other_source, "of another source that day, left out"),
            (c.duplicates, "copies of a correlation's member"),
            (c.not_ended, "days or nights not ended at the export"),
            (c.skipped, "skipped (not imported)"),
            (c.invalid, "unreadable"),
        ] {
            if n > 0 {
                line.push_str(&format!(", {n} {what}"));
            }
        }
        writeln!(out, "{line}")?;
    }
    for reason in &summary.invalid {
        writeln!(out, "  {reason}")?;
    }
    // A lone resource of a type not imported answers 422, yet nothing was refused: the exit
    // code follows the summary printed above.
    let failed = response.status >= 400 && summary.skipped == 0;
    Ok(i32::from(!summary.invalid.is_empty() || failed))
}

/// Lists who read `user`'s health data and when (`circle reads`): one line per read, newest
/// first, at most `limit` (itself at most `MAX_READS_PAGE`), before the entry `before`; the
/// process exit code (2 when the log could not be read).
pub async fn run_circle_reads(
    log: &dyn mirobody_ports::AccessLog,
    user: &str,
    limit: u32,
    before: Option<i64>,
    out: &mut impl std::io::Write,
) -> std::io::Result<i32> {
    let reads = match log.reads_of(user, before, limit).await {
        Ok(reads) => reads,
        Err(e) => {
            writeln!(out, "{e}")?;
            return Ok(2);
        }
    };
    if reads.is_empty() {
        writeln!(out, "nobody else read {user}'s data")?;
    }
    for read in &reads {
        let reader = match &read.reader_name {
            Some(name) => format!("{} ({name})", read.reader),
            None => read.reader.clone(),
        };
        let at = mirobody_health::text::rfc3339(read.at_ms);
        writeln!(out, "{}\t{at}\t{reader}\t{}\t{}", read.id, read.name, read.outcome)?;
    }
    Ok(0)
}

/// Runs a `circle` subcommand, writing the outcome to `out`; the process exit code (1 when
/// there was nothing to act on, 2 when the store refused).
///
/// An invitation to an email with no account, with `oauth` on, prints the sign-up link to
/// hand over too (as `POST /circle/invites` answers it).
pub async fn run_circle(
    sql: &dyn mirobody_health::HealthData,
    oauth: Option<&mirobody_oauth::OAuthServer>,
    action: CircleCommand,
    out: &mut impl std::io::Write,
) -> std::io::Result<i32> {
    let result = match action {
        CircleCommand::List { user } => sql.circle(&user).await.map(|c| (pretty(&serde_json::json!(c)), true)),
        // The access log is not the circle's store: `run_circle_reads` lists it.
        CircleCommand::Reads { .. } => {
            Ok(("`circle reads` lists the access log: see run_circle_reads".to_owned(), false))
        }
        CircleCommand::Invite { user, invitee, nickname } => {
            match sql.invite_to_circle(&user, &invitee, nickname.as_deref()).await {
                Ok(id) => {
                    let link = match oauth.filter(|_| invitee.contains('@')) {
                        Some(oauth) => match oauth.invite_link(&invitee, &user).await {
                            Ok(Some(url)) => format!("\nsign-up link (hand it to {invitee}): {url}"),
                            Ok(None) => String::new(),
                            Err(e) => format!("\nno sign-up link: {e}"),
                        },
                        None => String::new(),
                    };
                    Ok((format!("invitation {id}{link}"), true))
                }
                Err(e) => Err(e),
            }
        }
        CircleCommand::Accept { user, id, nickname } => {
            sql.accept_invite(&user, id, nickname.as_deref()).await.map(|owner| match owner {
                Some(owner) => (format!("{user} now reads {owner}'s health data"), true),
                None => (format!("no invitation {id} is waiting for {user}"), false),
            })
        }
        CircleCommand::Decline { user, id } => sql.drop_invite(&user, id).await.map(|dropped| match dropped {
            true => (format!("invitation {id} dropped"), true),
            false => (format!("no invitation {id} of {user}'s"), false),
        }),
        CircleCommand::Revoke { user, other } => sql.leave_circle(&user, &other).await.map(|revoked| match revoked {
            true => (format!("{user} and {other} no longer share"), true),
            false => (format!("{user} and {other} did not share"), false),
        }),
    };
    match result {
        Ok((message, done)) => {
            writeln!(out, "{message}")?;
            Ok(i32::from(!done))
        }
        Err(e) => {
            writeln!(out, "{e}")?;
            Ok(2)
        }
    }
}

/// What to do with a personal MCP URL.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum SecretAction {
    /// Make one (fails if the user has one: rotate instead).
    Create,
    /// Replace it: the old URL stops working.
    Rotate,
    /// Delete it.
    Revoke,
}

/// A `tools` subcommand.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// One line per tool: name, whether it needs auth, description.
    List,
    /// The MCP tools/list entries, or one tool's.
    Schema {
        /// A tool name.
        name: Option<String>,
    },
    /// Function descriptors for a model provider.
    Functions {
        /// mcp, openai, responses, gemini or anthropic.
        #[arg(default_value = "openai")]
        format: Format,
    },
    /// Calls a tool and prints its MCP result; exits 1 when the call fails.
    Call {
        /// The tool.
        name: String,
        /// The arguments as a JSON object (read from stdin when absent and stdin is a pipe).
        arguments: Option<String>,
        /// Call as this user.
        #[arg(long)]
        user: Option<String>,
    },
}

/// Runs a `tools` subcommand with no backends, writing to `out`; the process exit code.
pub async fn run_tools(
    registry: &Registry,
    action: ToolsCommand,
    out: &mut impl std::io::Write,
) -> std::io::Result<i32> {
    run_tools_with(registry, &ToolContext::new(), action, out).await
}

/// Runs a `tools` subcommand, calling tools with `ctx`'s backends; the process exit code.
pub async fn run_tools_with(
    registry: &Registry,
    ctx: &ToolContext<'_>,
    action: ToolsCommand,
    out: &mut impl std::io::Write,
) -> std::io::Result<i32> {
    match action {
        ToolsCommand::List => {
            for tool in registry.tools() {
                let first_line = tool.spec().description().lines().next().unwrap_or_default();
                let auth = if tool.is_auth() { "auth" } else { "-" };
                writeln!(out, "{:<24} {:<4}  {}", tool.name(), auth, first_line)?;
            }
            Ok(0)
        }
        ToolsCommand::Schema { name: None } => {
            let tools: serde_json::Value = serde_json::from_str(registry.mcp_tools_json(true)).unwrap_or_default();
            writeln!(out, "{}", pretty(&serde_json::json!({ "tools": tools })))?;
            Ok(0)
        }
        ToolsCommand::Schema { name: Some(name) } => match registry.get(&name) {
            Some(tool) => {
                writeln!(out, "{}", pretty(&tool.spec().render(Format::Mcp)))?;
                Ok(0)
            }
            None => {
                writeln!(out, "unknown tool '{name}'; `tools list` shows the tools")?;
                Ok(2)
            }
        },
        ToolsCommand::Functions { format } => {
            writeln!(out, "{}", pretty(registry.functions(format)))?;
            Ok(0)
        }
        ToolsCommand::Call { name, arguments, user } => {
            let text = match arguments {
                Some(text) => text,
                None if !std::io::stdin().is_terminal() => {
                    let mut text = String::new();
                    std::io::stdin().read_to_string(&mut text)?;
                    text
                }
                None => String::new(),
            };
            let arguments = if text.trim().is_empty() {
                serde_json::Value::Null
            } else {
                match serde_json::from_str(&text) {
                    Ok(value) => value,
                    Err(e) => {
                        writeln!(out, "the arguments are not valid JSON: {e}")?;
                        return Ok(2);
                    }
                }
            };
            let user = user.map(UserInfo::authenticated).unwrap_or_default();
            let result = registry.run(&name, arguments, &user, ctx).await;
            writeln!(out, "{}", pretty(&serde_json::to_value(&result).unwrap_or_default()))?;
            Ok(i32::from(result.is_error()))
        }
    }
}

/// Why [`mint_token`] could not mint a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MintError {
    /// No `auth.hs256_secret` is configured, so there is no key to sign with.
    #[error("no auth.hs256_secret is configured, so this server cannot mint tokens")]
    NoSecret,
    /// The claims could not be signed with the key.
    #[error("{0}")]
    Sign(#[source] jsonwebtoken::errors::Error),
}

/// Mints an HS256 access token for `user_id`, for the endpoint's audience, carrying `scopes`
/// (as a space-separated `scope` claim, left out when there are none).
pub fn mint_token(
    auth: &mirobody_auth::AuthConfig,
    endpoint: &mirobody_auth::McpEndpoint,
    user_id: &str,
    ttl_secs: u64,
    scopes: &[String],
) -> Result<String, MintError> {
    let key = auth.hs256_secret.as_ref().ok_or(MintError::NoSecret)?;
    let now = jsonwebtoken::get_current_timestamp();
    let mut claims = serde_json::json!({
        "sub": user_id,
        "aud": endpoint.mcp_url(),
        "iat": now,
        "exp": now + ttl_secs.max(1),
        "token_type": "access_token",
    });
    if let Some(issuer) = &auth.issuer {
        claims["iss"] = serde_json::json!(issuer);
    }
    let scopes: Vec<&str> = scopes.iter().flat_map(|s| s.split_whitespace()).collect();
    if !scopes.is_empty() {
        claims["scope"] = serde_json::json!(scopes.join(" "));
    }
    let key = jsonwebtoken::EncodingKey::from_secret(mirobody_auth::ExposeSecret::expose_secret(key).as_bytes())
        .map_err(MintError::Sign)?;
    jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).map_err(MintError::Sign)
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The URLs `mirobody-server demo` prints.
#[derive(Clone, Copy, Debug)]
pub struct DemoUrls<'a> {
    /// The demo user's personal MCP URL.
    pub personal: &'a str,
    /// The MCP endpoint.
    pub mcp: &'a str,
    /// A link to the upload page, as the `upload_link` tool makes (empty when none could be
    /// made).
    pub upload: &'a str,
}

/// What `mirobody-server demo` prints: the demo data, a token, a personal URL and an upload
/// link, and the commands that call each tool with them.
pub fn demo_instructions(info: &mirobody_tools::demo::DemoInfo, token: &str, urls: &DemoUrls<'_>) -> String {
    let (personal_url, mcp_url) = (urls.personal, urls.mcp);
    let mut out = String::new();
    let state = if info.already_loaded { "already loaded" } else { "loaded" };
    out.push_str(&format!("Demo user '{}' {state}:\n", info.user_id));
    for (id, nickname, shares) in &info.members {
        let sharing = if *shares { "shares health data" } else { "does not share" };
        out.push_str(&format!("  care circle: {nickname} ({id}), {sharing}\n"));
    }
    out.push_str(&format!(
        "  {} observations, {} files, {} memories\n\n",
        info.observations,
        info.files.len(),
        info.memories
    ));
    out.push_str(&format!("Access token (24 hours):\n  {token}\n\n"));
    out.push_str(&format!(
        "Personal MCP URL (no header needed; shown once, stored only as a hash):\n  {personal_url}\n\n"
    ));
    if !urls.upload.is_empty() {
        out.push_str(&format!(
            "Upload page for the demo user (one file by default, for a short while; start the server first;\n\
             another with: mirobody-server upload-link create --user {}):\n  {}\n\n",
            info.user_id, urls.upload
        ));
    }
    out.push_str("Try it (start the server first: cargo run --release -p mirobody-server):\n");
    out.push_str(&format!("  export TOKEN={token} SID=\n"));
    out.push_str(&format!(
        "  mcp() {{ curl -s -D /tmp/mcp-headers -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' -H \"authorization: Bearer $TOKEN\" -H \"mcp-session-id: $SID\" {mcp_url} -d \"$1\"; echo; }}\n"
    ));
    out.push_str("  mcp '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"curl\",\"version\":\"1\"}}}'\n");
    out.push_str("  export SID=$(awk 'tolower($1)==\"mcp-session-id:\"{print $2}' /tmp/mcp-headers | tr -d '\\r')\n");
    for (tool, args) in [
        ("whoami", "{}"),
        ("family_health", "{\"count\":5}"),
        ("family_health", "{\"member\":\"Mom\",\"count\":3}"),
        ("get_user_health_profile", "{}"),
        ("fetch_health_data", "{\"indicators\":[\"BP\"],\"member\":\"Mom\"}"),
        ("list_files", "{}"),
        ("recall_memory", "{\"query\":\"sleep\"}"),
        ("remember", "{\"text\":\"Prefers morning walks\",\"kind\":\"preference\"}"),
    ] {
        out.push_str(&format!(
            "  mcp '{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\",\"arguments\":{args}}}}}'\n"
        ));
    }
    out.push_str("Or point an MCP client (Claude, Cursor, the MCP Inspector) at the personal URL above.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minting_without_a_secret_says_so() {
        let endpoint = mirobody_auth::McpEndpoint::new("http://localhost:8080", "");
        let refused = mint_token(&mirobody_auth::AuthConfig::default(), &endpoint, "ada", 60, &[]);
        assert!(matches!(refused, Err(MintError::NoSecret)), "{refused:?}");
        let auth = mirobody_auth::AuthConfig {
            hs256_secret: Some("0123456789abcdef0123456789abcdef".to_owned().into()),
            ..Default::default()
        };
        let token = mint_token(&auth, &endpoint, "ada", 60, &["read".to_owned()]).unwrap();
        assert_eq!(token.split('.').count(), 3, "{token}");
    }
}
