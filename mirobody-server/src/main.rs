//! The `mirobody-server` binary: `serve` (default), `stdio`, `tools`.

use std::process::ExitCode;

use clap::Parser;
use mirobody_core::UserInfo;
use mirobody_server::cli::{Cli, Command};
use mirobody_server::config::Config;
use mirobody_server::mcp::Backends;
use mirobody_server::{app, cli, stdio};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
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
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mirobody-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command.unwrap_or(Command::Serve), config)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("mirobody-server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, config: Config) -> Result<u8, Box<dyn std::error::Error>> {
    match command {
        Command::Serve => {
            let service = app::service(&config, Backends::default())?;
            let router = app::router(&config, service);
            let listener = tokio::net::TcpListener::bind(config.bind).await?;
            tracing::info!(address = %listener.local_addr()?, path = %config.mcp_path(), "serving MCP");
            mirobody_server::serve(listener, router).await?;
            tracing::info!("stopped");
            Ok(0)
        }
        Command::Stdio { user } => {
            let service = app::service(&config, Backends::default())?;
            let user = user.map(UserInfo::authenticated).unwrap_or_default();
            stdio::serve(service, user, tokio::io::stdin(), tokio::io::stdout(), config.max_body_bytes).await?;
            Ok(0)
        }
        Command::Tools { action } => {
            let registry = app::registry()?;
            let code = cli::run_tools(&registry, action, &mut std::io::stdout()).await?;
            Ok(u8::try_from(code).unwrap_or(1))
        }
    }
}
