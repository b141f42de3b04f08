use std::path::{Path, PathBuf};

use clap::Args;

use super::render::{print_json, say};
use crate::domain::error::{Error, ErrorCode};
use crate::ops;

#[derive(Debug, Args)]
#[command(
    override_usage = "cuekit steer <ID> <MESSAGE>...\n       cuekit steer --team <NAME> <MESSAGE>..."
)]
pub struct SteerArgs {
    /// Send the message to every running interactive member of a team (one receipt each).
    #[arg(long, value_name = "NAME")]
    team: Option<String>,
    /// Read the message from a file.
    #[arg(long, short = 'f')]
    file: Option<PathBuf>,
    /// The task to steer (with --team, the first word of the message).
    #[arg(value_name = "ID", add = super::task_ids())]
    id: Option<String>,
    /// The message (`-` reads it from stdin; text that starts with `-` goes after `--`).
    #[arg(value_name = "MESSAGE")]
    message: Vec<String>,
    /// ACP: end the session once its running turn ends (the task then completes).
    #[arg(long, conflicts_with_all = ["model", "approval_mode", "team"])]
    end: bool,
    /// ACP: switch the session's model (`session/set_model`).
    #[arg(long, value_name = "MODEL", conflicts_with_all = ["approval_mode", "team"])]
    model: Option<String>,
    /// ACP: switch the session's approval mode (`session/set_mode`).
    #[arg(long, value_name = "MODE", conflicts_with = "team")]
    approval_mode: Option<String>,
}

pub fn run(args: &SteerArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let control = match (args.end, &args.model, &args.approval_mode) {
        (true, _, _) => Some(ops::SessionControl::End),
        (_, Some(model), _) => Some(ops::SessionControl::Model(model.clone())),
        (_, _, Some(mode)) => Some(ops::SessionControl::Mode(mode.clone())),
        _ => None,
    };
    if let Some(control) = control {
        let Some(id) = &args.id else {
            return Err(Error::new(ErrorCode::Usage, "name the task").into());
        };
        ops::steer_control(id, cwd, control)?;
        if json {
            print_json(&serde_json::json!({"task_id": id, "ok": true}));
        } else {
            say(&format!("{id}  ok"));
        }
        return Ok(0);
    }
    let receipts = match (&args.team, &args.id) {
        (Some(team), first) => {
            // Without an id to name, the first positional word is the message's.
            let words: Vec<String> = first.iter().chain(&args.message).cloned().collect();
            let message = super::read_text(&words, args.file.as_ref(), "message")?;
            ops::team_steer(team, cwd, &message)?
        }
        (None, Some(id)) => {
            let message = super::read_text(&args.message, args.file.as_ref(), "message")?;
            vec![ops::steer(id, cwd, &message)?]
        }
        (None, None) => {
            return Err(Error::new(ErrorCode::Usage, "name the task to steer")
                .with_hint("cuekit steer <ID> <MESSAGE>, or cuekit steer --team <NAME> <MESSAGE>")
                .into());
        }
    };
    if json {
        match (&args.team, receipts.as_slice()) {
            (None, [receipt]) => print_json(receipt),
            _ => print_json(&receipts),
        }
    } else {
        for receipt in &receipts {
            let blocked = receipt
                .blocked_by
                .map(|a| format!(" [{}]: {}", a.as_str(), a.hint()))
                .unwrap_or_default();
            say(&format!(
                "{}  {}{blocked}",
                receipt.task_id,
                receipt.receipt.as_str()
            ));
        }
    }
    // The worst receipt decides: a script sees a failure if any member did not take it.
    Ok(receipts
        .iter()
        .map(|r| r.receipt.exit_status())
        .max()
        .unwrap_or(0))
}
