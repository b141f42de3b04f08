use std::path::Path;

use clap::{Args, Subcommand};

use super::render::print_json;
use crate::error::{Error, ErrorCode};
use crate::mcp::{self, Client};

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
    /// Write the Gemini CLI extension (this cuekit as its MCP server, and a context file on
    /// delegating) into DIR, for `gemini extensions link DIR`.
    Extension {
        /// Only Gemini CLI's extension system, for now.
        #[arg(value_parser = ["gemini"])]
        client: String,
        /// Where to write it (default: ~/.local/share/cuekit/extensions/gemini).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

pub fn run(args: &McpArgs, cwd: &Path) -> anyhow::Result<i32> {
    match &args.command {
        None => {
            mcp::serve(cwd)?;
            Ok(0)
        }
        Some(McpCommand::Config { client }) => {
            let client = Client::parse(client).expect("clap checked the name");
            let (exe, auth_env) = (this_binary()?, child_auth_env(cwd));
            // Codex's file is TOML; every other client's is JSON.
            if client == Client::Codex {
                print!("{}", mcp::snippet(client, &exe, &auth_env));
            } else {
                print_json(&mcp::client_config(client, &exe, &auth_env));
            }
            eprintln!("{}", client.where_to_put_it());
            Ok(0)
        }
        Some(McpCommand::Extension { dir, .. }) => {
            let dir = match dir {
                Some(dir) => cwd.join(dir),
                None => crate::store::data_dir()
                    .ok_or_else(|| {
                        Error::new(ErrorCode::Io, "cannot find a home directory")
                            .with_hint("set HOME, or pass --dir")
                    })?
                    .join("extensions/gemini"),
            };
            crate::store::create_private_dir(&dir)?;
            let manifest = mcp::extension::manifest(&this_binary()?, &child_auth_env(cwd));
            let mut bytes = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
            bytes.push(b'\n');
            crate::store::write_atomic(&dir.join(mcp::extension::MANIFEST), &bytes)?;
            crate::store::write_atomic(
                &dir.join(mcp::extension::CONTEXT_FILE),
                mcp::extension::CONTEXT.as_bytes(),
            )?;
            print_json(&serde_json::json!({"dir": dir, "manifest": manifest}));
            eprintln!(
                "link it: gemini extensions link {}",
                crate::launch::single_quote(&dir.to_string_lossy())?
            );
            Ok(0)
        }
    }
}

/// This cuekit binary's real path, which a client's config names.
fn this_binary() -> Result<std::path::PathBuf, Error> {
    let exe = std::env::current_exe().map_err(|err| {
        Error::new(
            ErrorCode::Io,
            format!("cannot find the path of this cuekit binary: {err}"),
        )
    })?;
    Ok(exe.canonicalize().unwrap_or(exe))
}

/// The credential variables of the agents a parent is likely to start: the default agent and
/// every agent installed here, each variable once.
fn child_auth_env(cwd: &Path) -> Vec<&'static str> {
    let config = crate::config::Config::load(cwd).ok();
    let default_agent = config.as_ref().map(|c| c.agent().value);
    let mut names = Vec::new();
    for adapter in crate::adapter::ADAPTERS {
        let bin = config
            .as_ref()
            .and_then(|c| c.bin(adapter.kind()))
            .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
        let wanted = default_agent.as_deref() == Some(adapter.kind())
            || (!adapter.runs_argv && crate::which::find_on_path(&bin).is_some());
        if wanted {
            for name in adapter.auth_env {
                if !names.contains(name) {
                    names.push(*name);
                }
            }
        }
    }
    names
}
