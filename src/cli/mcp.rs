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
}

pub fn run(args: &McpArgs, cwd: &Path) -> anyhow::Result<i32> {
    match &args.command {
        None => {
            mcp::serve(cwd)?;
            Ok(0)
        }
        Some(McpCommand::Config { client }) => {
            let client = Client::parse(client).expect("clap checked the name");
            let exe = std::env::current_exe().map_err(|err| {
                Error::new(
                    ErrorCode::Io,
                    format!("cannot find the path of this cuekit binary: {err}"),
                )
            })?;
            let exe = exe.canonicalize().unwrap_or(exe);
            print_json(&mcp::client_config(client, &exe));
            eprintln!("{}", client.where_to_put_it());
            Ok(0)
        }
    }
}
