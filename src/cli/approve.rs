//! `cuekit approve`: answers the permission request an ACP task waits on, or the permission
//! dialog an interactive (Gemini) child shows, by the option's digit in its pane.

use std::path::Path;

use clap::Args;

use super::render::{print_json, say};
use crate::domain::acp::control::Answer;
use crate::ops;

#[derive(Debug, Args)]
pub struct ApproveArgs {
    #[arg(value_name = "ID", add = super::task_ids())]
    id: String,
    /// Allow this once (the default).
    #[arg(long, conflicts_with_all = ["allow_always", "reject", "option"])]
    allow: bool,
    /// Allow this tool for the rest of the session.
    #[arg(long, conflicts_with_all = ["reject", "option"])]
    allow_always: bool,
    /// Refuse it.
    #[arg(long, conflicts_with = "option")]
    reject: bool,
    /// One of the request's options, by its id (`cuekit status` lists them); for an
    /// interactive child's dialog, the option's number as the screen shows it.
    #[arg(long, value_name = "OPTION")]
    option: Option<String>,
}

pub fn run(args: &ApproveArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let answer = match (&args.option, args.allow_always, args.reject) {
        (Some(option), _, _) => Answer::Option(option.clone()),
        (None, true, _) => Answer::AllowAlways,
        (None, _, true) => Answer::Reject,
        _ => Answer::Allow,
    };
    let approval = ops::approve(&args.id, cwd, answer)?;
    if json {
        print_json(&approval);
    } else {
        say(&format!(
            "{}  {} ({})",
            approval.task_id, approval.option.name, approval.option.kind
        ));
        if let Some(dialog) = &approval.dialog {
            say(&format!(
                "typed {} into its dialog; the dialog closed after {} ms",
                dialog.key, dialog.closed_after_ms
            ));
        }
    }
    Ok(0)
}
