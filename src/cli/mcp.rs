use std::path::Path;

use clap::{Args, Subcommand};

use super::render::print_json;
use crate::domain::parent::{self as mcp, Client};
use crate::ops::parent_setup;

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: Option<McpCommand>,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Print the JSON that registers this cuekit with an MCP client.
    Config {
        /// The client to print the snippet for.
        #[arg(long, default_value = "generic", value_parser = Client::NAMES)]
        client: String,
    },
    /// Merge the registration into the client's own config file (kept as
    /// `<file>.cuekit-backup`), or for Claude Code run `claude mcp add-json`.
    Install {
        #[arg(long, value_parser = ["gemini", "claude", "codex", "qwen", "opencode", "copilot"])]
        client: String,
        /// The user's file (default), or the project's (gemini, claude, qwen, opencode).
        #[arg(long, default_value = "user", value_parser = ["user", "project"])]
        scope: String,
        /// Replace a different `cuekit` entry.
        #[arg(long)]
        force: bool,
    },
    /// Write a package for the parent's own extension system (this cuekit as its MCP server,
    /// and a text on delegating) into DIR: a Gemini CLI extension (`gemini extensions link
    /// DIR`) or a Claude Code plugin (`claude --plugin-dir DIR`).
    Extension {
        #[arg(value_parser = ["gemini", "claude"])]
        client: String,
        /// Where to write it (default: ~/.local/share/cuekit/extensions/<client>).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

pub fn run(args: &McpArgs, cwd: &Path) -> anyhow::Result<i32> {
    match &args.command {
        None => {
            crate::mcp::serve(cwd)?;
            Ok(0)
        }
        Some(McpCommand::Config { client }) => {
            let client = Client::parse(client).expect("clap checked the name");
            let (exe, auth_env) = (
                parent_setup::this_binary()?,
                parent_setup::child_auth_env(cwd),
            );
            // Codex's file is TOML; every other client's is JSON.
            if client == Client::Codex {
                print!("{}", mcp::snippet(client, &exe, &auth_env));
            } else {
                print_json(&mcp::client_config(client, &exe, &auth_env));
            }
            eprintln!("{}", client.where_to_put_it());
            Ok(0)
        }
        Some(McpCommand::Install {
            client,
            scope,
            force,
        }) => {
            let client = Client::parse(client).expect("clap checked the name");
            let done = parent_setup::install(client, scope == "project", *force, cwd)?;
            print_json(&done);
            Ok(0)
        }
        Some(McpCommand::Extension { client, dir }) => {
            let kind = Client::parse(client).expect("clap checked the name");
            let (dir, names) = parent_setup::write_extension(kind, dir.as_deref(), cwd)?;
            print_json(&serde_json::json!({"dir": dir, "files": names}));
            let dir_word = crate::domain::launch::single_quote(&dir.to_string_lossy())?;
            eprintln!(
                "{}",
                if kind == Client::Claude {
                    format!("load it: claude --plugin-dir {dir_word}")
                } else {
                    format!("link it: gemini extensions link {dir_word}")
                }
            );
            Ok(0)
        }
    }
}
