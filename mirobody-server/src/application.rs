//! The `mirobody-server` program as a library: [`Application`] is what the binary's `main`
//! runs, and what an operator's own binary runs with its own tools.

use std::process::ExitCode;

use clap::Parser;
use mirobody_core::{Tool, UserInfo};
use mirobody_mcp::stdio;

use crate::cli::{Cli, Command, SecretAction};
use crate::config::{Config, LogFormat};
use crate::shutdown::Shutdown;
use crate::{app, cli};

/// The whole `mirobody-server` program (`serve`, `stdio`, `tools`, the operator's commands,
/// and the sandboxed `extract` child), with the tools a deployment adds. A tool named like a
/// built-in replaces it (the registry logs the replacement at start); `tools.disabled` in the
/// configuration switches built-ins off.
///
/// An operator's own binary:
///
/// ```no_run
/// use mirobody_core::{Args, Param, Tool, ToolContext, ToolResult, Type, UserInfo};
///
/// fn main() -> std::process::ExitCode {
///     let echo = Tool::new("echo", "Echo text back, in capitals.")
///         .param(Param::required("text", Type::String, "What to echo."))
///         .sync_handler(|args: Args, _: &UserInfo, _: &ToolContext<'_>| args.str_or("text", "").to_uppercase());
///     mirobody_server::Application::new().tool(echo).run()
/// }
/// ```
#[derive(Debug, Default)]
#[must_use = "an Application does nothing until run"]
pub struct Application {
    tools: Vec<Tool>,
}

impl Application {
    /// The program with the built-in tools and every tool registered in the binary
    /// (`#[tool]`, `register_tool!`).
    pub fn new() -> Application {
        Application::default()
    }

    /// Adds `tool`, replacing a built-in or registered tool of the same name.
    pub fn tool(mut self, tool: Tool) -> Application {
        self.tools.push(tool);
        self
    }

    /// Runs the program on this process's command line and environment, as `mirobody-server`
    /// does; the process's exit code. Call it first in `main`: the sandboxed document reader
    /// the server starts is this same binary, run with `extract`, and must begin before
    /// anything else.
    pub fn run(self) -> ExitCode {
        // The sandboxed document reader the server starts for each upload's text: it must run
        // before anything else here (no config, no log, no runtime), under the limits it sets.
        if std::env::args_os().nth(1).is_some_and(|first| first == "extract") {
            let rest: Vec<String> = std::env::args_os().skip(2).map(|arg| arg.to_string_lossy().into_owned()).collect();
            return mirobody_tools::extract::child_main(&rest);
        }
        let cli = Cli::parse();
        let mut config = match Config::load(cli.config.as_deref(), std::env::vars()) {
            Ok(config) => config,
            Err(e) => {
                eprintln!("mirobody-server: {e}");
                return ExitCode::from(2);
            }
        };
        if let Some(bind) = cli.bind {
            config.bind = bind;
        }
        // Logs always go to stderr: stdout belongs to the stdio transport and to `tools` output.
        let traces = match crate::telemetry::init(&config, |name| std::env::var(name).ok()) {
            Ok(traces) => traces,
            Err(e) => {
                eprintln!("mirobody-server: {e}");
                return ExitCode::from(2);
            }
        };

        let runtime = match config.runtime() {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("mirobody-server: cannot start the runtime: {e}");
                return ExitCode::FAILURE;
            }
        };
        let shutdown = Shutdown::new(config.serve.shutdown_grace);
        let outcome = runtime.block_on(run(cli.command.unwrap_or(Command::Serve), config, &self.tools, &shutdown));
        // Not dropped: a drop would wait for every blocking thread, however long one is stuck.
        shutdown.end_runtime(runtime);
        if let Some(traces) = traces {
            traces.shutdown();
        }
        match outcome {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("mirobody-server: {e}");
                ExitCode::FAILURE
            }
        }
    }
}

async fn run(
    command: Command,
    mut config: Config,
    tools: &[Tool],
    shutdown: &Shutdown,
) -> Result<u8, Box<dyn std::error::Error>> {
    // Listening first, so that the default public URL names the port really bound.
    let listener = if matches!(command, Command::Serve) { Some(listen(&mut config).await?) } else { None };
    // Before `resolved`, which makes keys in the data folder: `restore` needs it empty.
    if let Command::Backup { .. } | Command::Restore { .. } = command {
        return cli::backup::run(command, &config).await;
    }
    let config = app::resolved(&config)?;
    match command {
        Command::Serve => {
            let listener = listener.expect("bound above for serve");
            // Installed before the server is built, whose engine resolves its handles in it.
            let metrics = match config.metrics.enabled() {
                true => Some(crate::metrics::Metrics::install(&config.metrics)?),
                false => None,
            };
            let metrics_listener = crate::metrics::bind(&config.metrics).await?;
            let server = app::build_with(&config, tools).await?;
            server.text_reader.start();
            if let Some(metrics) = &metrics {
                metrics.watch(&server);
            }
            if let (Some(metrics), Some((listener, address))) = (&metrics, metrics_listener) {
                tracing::info!(%address, "serving metrics");
                let metrics = metrics.clone();
                // Scraped until the runtime ends, after the requests in flight.
                tokio::spawn(async move {
                    if let Err(error) = metrics.serve(listener, std::future::pending()).await {
                        tracing::error!(%error, "the metrics listener stopped");
                    }
                });
            }
            tracing::info!(
                address = %listener.local_addr()?,
                path = %config.mcp_path(),
                database = %config.backends.database_url(),
                workers = config.worker_count(),
                "serving MCP"
            );
            let options = config.serve.clone();
            // Last, so that what start-up still runs (the line above, the database connections
            // going back to their pool) does not fault back in.
            if config.release_startup_memory {
                server.backends.settle().await;
                release_startup_pages();
            }
            // With JSON logs every line carries the request's ids; in text they come with
            // debug logging only, so a server logging at INFO pays nothing per request.
            let level = match config.log_format {
                LogFormat::Json => tracing::Level::INFO,
                LogFormat::Text => tracing::Level::DEBUG,
            };
            // `/metrics` on the main listener only behind its token.
            let on_main = metrics.filter(|_| config.metrics.token.is_some());
            let app = crate::metrics::MetricsRoute::new(server.app, on_main);
            let app = crate::request_id::RequestIds::new(app, level).traced(crate::telemetry::exporting());
            mirobody_mcp::serve_until(listener, app, server.engine.clone(), options, shutdown.signal()).await?;
            if shutdown.within(server.backends.close()).await.is_none() {
                tracing::warn!("the backends did not close within the shutdown grace; stopping without them");
            }
            tracing::info!("stopped");
            Ok(0)
        }
        Command::Stdio { user } => {
            let server = app::build_with(&config, tools).await?;
            server.text_reader.start();
            let user = user.map(UserInfo::authenticated).unwrap_or_default();
            if config.release_startup_memory {
                release_startup_pages();
            }
            stdio::serve(server.engine, user, tokio::io::stdin(), tokio::io::stdout(), config.http.max_body_bytes)
                .await?;
            server.backends.close().await;
            Ok(0)
        }
        Command::Tools { action } => {
            let server = app::build_with(&config, tools).await?;
            let ctx = server.tool_backends.context(None);
            let code = cli::run_tools_with(server.engine.registry(), &ctx, action, &mut std::io::stdout()).await?;
            server.backends.close().await;
            Ok(u8::try_from(code).unwrap_or(1))
        }
        Command::Token { user, ttl, scopes } => {
            println!("{}", cli::mint_token(&config.auth, &app::endpoint(&config), &user, ttl, &scopes)?);
            Ok(0)
        }
        Command::Secret { action, user, agent, expires_in } => {
            if matches!(action, SecretAction::Revoke) && expires_in.is_some() {
                return Err("--expires-in applies to create and rotate, not revoke".into());
            }
            let server = app::build_with(&config, tools).await?;
            let store = server.backends.secrets();
            let endpoint = &server.endpoint;
            let agent = agent.as_deref();
            let expires_in = expires_in.map(std::time::Duration::from_secs);
            match action {
                SecretAction::Create => {
                    let url = mirobody_auth::create_secret(store.as_ref(), endpoint, &user, agent, expires_in).await?;
                    println!("{}", url.expose());
                }
                SecretAction::Rotate => {
                    let url = mirobody_auth::rotate_secret(store.as_ref(), endpoint, &user, agent, expires_in).await?;
                    println!("{}", url.expose());
                }
                SecretAction::Revoke => {
                    let revoked = mirobody_auth::revoke_secret(store.as_ref(), &user).await?;
                    println!("{}", if revoked { "revoked" } else { "no personal MCP URL to revoke" });
                }
            }
            server.backends.close().await;
            Ok(0)
        }
        Command::Import { args, user } => {
            let (format, file) = match cli::ImportFormat::from_args(&args) {
                Ok(parsed) => parsed,
                Err(e) => {
                    eprintln!("{e}");
                    return Ok(2);
                }
            };
            let server = app::build_with(&config, tools).await?;
            let uploader = mirobody_tools::uploads::Uploader::new(
                std::sync::Arc::clone(&server.backends),
                config.uploads.limits(),
            );
            let health = server.backends.health();
            let code =
                cli::run_import(health.as_ref(), &uploader, format, &file, &user, &mut std::io::stdout()).await?;
            server.backends.close().await;
            Ok(u8::try_from(code).unwrap_or(1))
        }
        Command::Circle { action: cli::CircleCommand::Reads { user, limit, before } } => {
            let backends = mirobody_store::open(&config.backends).await?;
            let log = backends.access_log();
            let code = cli::run_circle_reads(log.as_ref(), &user, limit, before, &mut std::io::stdout()).await?;
            backends.close().await;
            Ok(u8::try_from(code).unwrap_or(1))
        }
        Command::Export { user, out } => {
            let server = app::build_with(&config, tools).await?;
            let code = crate::personal::run_export(&server.backends, &user, &out).await;
            server.backends.close().await;
            Ok(code)
        }
        Command::Delete { kind, id, user, confirm } => {
            let server = app::build_with(&config, tools).await?;
            let code = crate::personal::run_delete(
                &server.backends,
                &server.mcp,
                &kind,
                id.as_deref(),
                &user,
                confirm.as_deref(),
            )
            .await;
            server.backends.close().await;
            Ok(code)
        }
        Command::Circle { action } => {
            let server = app::build_with(&config, tools).await?;
            let health = server.backends.health();
            let code = cli::run_circle(health.as_ref(), server.oauth.as_ref(), action, &mut std::io::stdout()).await?;
            server.backends.close().await;
            Ok(u8::try_from(code).unwrap_or(1))
        }
        Command::RotateSigningKey => {
            let current = app::oauth_key_path(&config);
            let previous = app::previous_oauth_key_path(&current);
            let key = mirobody_oauth::SigningKey::rotate(&current, &previous)?;
            println!("signing with key {} from {}", key.kid(), current.display());
            println!("the previous key, kept to verify its tokens: {}", previous.display());
            println!("restart every instance sharing these files to sign with the new key");
            Ok(0)
        }
        Command::User { action } => {
            let backends = mirobody_store::open(&config.backends).await?;
            let (accounts, web_sessions, oauth) = (backends.accounts(), backends.web_sessions(), backends.oauth());
            let stores = cli::users::UserStores {
                accounts: accounts.as_ref(),
                web_sessions: web_sessions.as_ref(),
                oauth: oauth.as_ref(),
            };
            let done = cli::users::run_user(stores, action, &mut std::io::stdin().lock(), &mut std::io::stdout()).await;
            backends.close().await;
            match done {
                Ok(()) => Ok(0),
                Err(e) => {
                    eprintln!("mirobody-server: {e}");
                    Ok(u8::try_from(e.exit_code()).unwrap_or(1))
                }
            }
        }
        Command::UploadLink { action } => {
            let server = app::build_with(&config, tools).await?;
            let code = cli::run_upload_link(&server.upload_links, action, &mut std::io::stdout()).await?;
            server.backends.close().await;
            Ok(u8::try_from(code).unwrap_or(1))
        }
        Command::Backup { .. } | Command::Restore { .. } => unreachable!("run above"),
        Command::Demo => {
            let server = app::build_with(&config, tools).await?;
            let info = mirobody_tools::demo::load_demo(&server.backends).await?;
            let token = cli::mint_token(&config.auth, &server.endpoint, &info.user_id, 24 * 3600, &[])?;
            let store = server.backends.secrets();
            let url = mirobody_auth::rotate_secret(store.as_ref(), &server.endpoint, &info.user_id, None, None).await?;
            let upload = match server.upload_links.mint(&info.user_id).await {
                Ok(link) => link.url,
                Err(e) => {
                    eprintln!("no upload link: {e}");
                    String::new()
                }
            };
            let urls = cli::DemoUrls { personal: url.expose(), mcp: &server.endpoint.mcp_url(), upload: &upload };
            print!("{}", cli::demo_instructions(&info, &token, &urls));
            server.backends.close().await;
            Ok(0)
        }
    }
}

/// Gives back the pages of the program that only start-up used (`startup_pages`), once start-up is
/// over. Says so at the debug level only: formatting an info line would bring back the
/// formatting code that was just given back.
fn release_startup_pages() {
    match crate::startup_pages::release_startup_pages() {
        Ok(bytes) => tracing::debug!(advised_kib = bytes / 1024, "start-up pages given back"),
        Err(e) => tracing::debug!(error = %e, "start-up pages kept"),
    }
}

/// The socket to serve on: the one a service manager handed over (systemd socket activation:
/// `LISTEN_FDS`, fd 3), else `config.bind`, bound here (port 0 picks a free one). Either way
/// `config.bind` ends as the address really bound, which the log line reports.
async fn listen(config: &mut Config) -> std::io::Result<tokio::net::TcpListener> {
    let listener = match listenfd::ListenFd::from_env().take_tcp_listener(0)? {
        Some(inherited) => {
            // Handed over without close-on-exec; the sandboxed document reader must not
            // inherit the server's socket.
            #[cfg(unix)]
            nix::fcntl::fcntl(&inherited, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))?;
            inherited.set_nonblocking(true)?;
            tokio::net::TcpListener::from_std(inherited)?
        }
        None => tokio::net::TcpListener::bind(config.bind).await?,
    };
    config.bind = listener.local_addr()?;
    Ok(listener)
}
