use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, SystemTime};

use clap::Args;

use super::render::{print_json, task_line};
use crate::domain::error::ErrorCode;
use crate::ops::{self, WaitNews, WaitRequest, WaitTick, WaitUntil};

#[derive(Debug, Args)]
pub struct WaitArgs {
    #[arg(required_unless_present = "team", value_name = "ID", add = super::task_ids())]
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
    /// `turn` (default): return when each task has ended or its child's turn has (it idles at
    /// its prompt, its answer ready for `cuekit result`), saying on stderr what a child on a
    /// dialog waits for; `ended`: only when the tasks have ended; `input-required`: also when
    /// a child waits on a human (a login, trust or permission screen, or idle at its prompt);
    /// `report`: also when a child makes a `cuekit report` after the wait began.
    #[arg(long, value_parser = ["turn", "ended", "input-required", "report"])]
    until: Option<String>,
}

pub fn run(args: &WaitArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let task_ids = match &args.team {
        Some(team) => ops::team_ids(team)?,
        None => args.ids.clone(),
    };
    let request = WaitRequest {
        task_ids,
        any: args.any,
        timeout: args.timeout,
        until: match args.until.as_deref() {
            Some("input-required") => WaitUntil::InputRequired,
            Some("report") => WaitUntil::Report,
            Some("ended") => WaitUntil::Ended,
            _ => WaitUntil::Turn,
        },
    };
    // The live line goes to stderr, and only to a person watching it.
    let live = !json && std::io::stderr().is_terminal();
    let mut shown = false;
    let mut watch = |news: WaitNews| match news {
        WaitNews::Tick(tick) if live => {
            eprint!("\r{}\x1b[K", live_line(tick, SystemTime::now()));
            shown = true;
        }
        WaitNews::Tick(_) => {}
        WaitNews::HostUnreachable(err) => {
            super::render::say_err(&format!("cuekit: {}; still waiting", err.message));
        }
        WaitNews::WaitsOnHuman(view) => {
            if shown {
                eprint!("\r\x1b[K");
            }
            super::render::say_err(&waits_on_human_line(view));
        }
    };
    let outcome = ops::wait_watching(&request, cwd, &mut watch);
    if shown {
        // The line disappears when the wait returns, whichever way.
        eprint!("\r\x1b[K");
    }
    let outcome = outcome?;
    // Time ran out while the tasks' host was away: that, not a timeout, is what happened.
    if let Some(err) = outcome.unreachable {
        return Err(err.into());
    }
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
        .all(|task| task.status == crate::domain::status::Status::Completed);
    Ok(if outcome.timed_out {
        ErrorCode::WaitTimeout.exit_status()
    } else if ended_ok {
        0
    } else {
        ErrorCode::TaskFailed.exit_status()
    })
}

/// `cuekit: t_… waits on a human (permission_prompt): <hint>; still waiting for its turn to end`
fn waits_on_human_line(view: &crate::ops::TaskView) -> String {
    format!(
        "cuekit: {} waits on a human ({}): {}; still waiting for its turn to end",
        view.id,
        view.reason.as_deref().unwrap_or("input_required"),
        view.hint
            .as_deref()
            .unwrap_or("`cuekit attach` it and answer")
    )
}

/// `waiting 42s · 2 running, 1 ended · last activity 3s ago`
fn live_line(tick: &WaitTick, now: SystemTime) -> String {
    let activity = tick
        .last_activity
        .map(|at| {
            format!(
                " · last activity {} ago",
                crate::domain::display::age::compact(at, now)
            )
        })
        .unwrap_or_default();
    format!(
        "waiting {} · {} running, {} ended{activity}",
        humantime::format_duration(Duration::from_secs(tick.elapsed.as_secs())),
        tick.running,
        tick.ended
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_line_says_elapsed_counts_and_activity() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let tick = WaitTick {
            elapsed: Duration::from_secs(75),
            running: 2,
            ended: 1,
            last_activity: Some(now - Duration::from_secs(3)),
        };
        assert_eq!(
            live_line(&tick, now),
            "waiting 1m 15s · 2 running, 1 ended · last activity 3s ago"
        );
    }
}
