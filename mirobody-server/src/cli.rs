//! The command line: `serve` (the default), `stdio`, and `tools` to inspect and call the
//! registry without a client.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use mirobody_core::{Format, Registry, ToolContext, UserInfo};

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

/// Runs a `tools` subcommand, writing to `out`; the process exit code.
pub async fn run_tools(
    registry: &Registry,
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
            let result = registry.run(&name, arguments, &user, &ToolContext::new()).await;
            writeln!(out, "{}", pretty(&serde_json::to_value(&result).unwrap_or_default()))?;
            Ok(i32::from(result.is_error()))
        }
    }
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}
