use std::path::{Path, PathBuf};

use clap::Args;

use super::render::print_json;
use crate::ops;

#[derive(Debug, Args)]
pub struct SteerArgs {
    #[arg(value_name = "ID", add = super::task_ids())]
    id: String,
    /// Read the message from a file.
    #[arg(long, short = 'f')]
    file: Option<PathBuf>,
    /// The message (`-` reads it from stdin).
    #[arg(
        value_name = "MESSAGE",
        allow_hyphen_values = true,
        trailing_var_arg = true
    )]
    message: Vec<String>,
}

pub fn run(args: &SteerArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let message = super::read_text(&args.message, args.file.as_ref(), "message")?;
    let receipt = ops::steer(&args.id, cwd, &message)?;
    if json {
        print_json(&receipt);
    } else {
        let blocked = receipt
            .blocked_by
            .map(|a| format!(" [{}]: {}", a.as_str(), a.hint()))
            .unwrap_or_default();
        println!("{}  {}{blocked}", receipt.task_id, receipt.receipt.as_str());
    }
    Ok(receipt.receipt.exit_status())
}
