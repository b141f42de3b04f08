use std::path::Path;
use std::time::Duration;

use clap::Args;

use super::render::{print_json, task_line};
use crate::error::ErrorCode;
use crate::ops::{self, WaitRequest, WaitUntil};

#[derive(Debug, Args)]
pub struct WaitArgs {
    #[arg(required_unless_present = "team", value_name = "ID")]
    ids: Vec<String>,
    /// Wait on every member of a team.
    #[arg(long, value_name = "NAME", conflicts_with = "ids")]
    team: Option<String>,
    /// Return as soon as one task ends.
    #[arg(long)]
    any: bool,
    /// Give up after this long (exit status 21).
    #[arg(long, value_parser = super::parse_duration)]
    timeout: Option<Duration>,
    /// `ended` (default); `input-required`: also return when a child waits on a human
    /// (a login, trust or permission screen, or idle at its prompt after a turn); `report`:
    /// also return when a child makes a `cuekit report` after the wait began.
    #[arg(long, default_value = "ended", value_parser = ["ended", "input-required", "report"])]
    until: String,
}

pub fn run(args: &WaitArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let task_ids = match &args.team {
        Some(team) => ops::team_ids(team)?,
        None => args.ids.clone(),
    };
    let outcome = ops::wait(
        &WaitRequest {
            task_ids,
            any: args.any,
            timeout: args.timeout,
            until: match args.until.as_str() {
                "input-required" => WaitUntil::InputRequired,
                "report" => WaitUntil::Report,
                _ => WaitUntil::Ended,
            },
        },
        cwd,
    )?;
    if json {
        print_json(&serde_json::json!({"timed_out": outcome.timed_out, "tasks": outcome.tasks}));
    } else {
        for task in &outcome.tasks {
            println!("{}", task_line(task));
        }
    }
    let ended_ok = outcome
        .tasks
        .iter()
        .filter(|task| task.status.is_terminal())
        .all(|task| task.status == crate::status::Status::Completed);
    Ok(if outcome.timed_out {
        ErrorCode::WaitTimeout.exit_status()
    } else if ended_ok {
        0
    } else {
        ErrorCode::TaskFailed.exit_status()
    })
}
