//! `cuekit check ID`: run a task's check now and record the verdict; and `__check
//! --from-launch`, the same check run by a batch task's own launch when its agent exited 0.

use std::path::Path;

use clap::Args;

use super::render::{print_json, say, say_err};
use crate::domain::check::{CHECK_FAILED_EXIT, FIX_ROUND_EXIT};
use crate::domain::error::{Error, ErrorCode};
use crate::ops::{self, CheckOutcome};

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[arg(value_name = "ID", add = super::task_ids())]
    id: String,
}

#[derive(Debug, Args)]
pub struct LaunchCheckArgs {
    /// Run by the task's launch: a failure with rounds left gives the child a fix round.
    #[arg(long, required = true)]
    from_launch: bool,
    task_id: String,
}

/// One line of the verdict, in cuekit's words and closed-set values.
fn line(outcome: &CheckOutcome) -> String {
    let verdict = &outcome.verdict;
    let how = match (
        verdict.passed,
        verdict.timed_out,
        verdict.exit_code,
        &verdict.error,
    ) {
        (true, ..) => "passed".to_string(),
        (_, false, Some(0), Some(error)) => format!("failed: exit code 0, not counted: {error}"),
        (_, _, _, Some(error)) => format!("could not run: {error}"),
        (_, true, ..) => "failed: ran past its time limit".to_string(),
        (_, _, Some(code), _) => format!("failed with exit code {code}"),
        _ => "failed: killed by a signal".to_string(),
    };
    let mut line = format!(
        "cuekit: {} check round {} of {} {how} ({})",
        outcome.task_id,
        verdict.round,
        outcome.check.rounds + 1,
        verdict.log
    );
    if !verdict.protected_edits.is_empty() {
        line.push_str(&format!(
            "; protected paths restored from the base: {}",
            verdict.protected_paths().join(", ")
        ));
    }
    if !verdict.review_paths.is_empty() {
        line.push_str(&format!(
            "; changed, for review: {}",
            verdict.review_paths.join(", ")
        ));
    }
    if let (Some(ran), Some(base)) = (verdict.tests_ran, verdict.base_tests_ran) {
        line.push_str(&format!("; tests: {ran} ran (the base: {base})"));
    }
    if outcome.fix_round {
        line.push_str("; the child gets a fix round");
    }
    line
}

pub fn run(args: &CheckArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let outcome = ops::check_now(&args.id, cwd)?;
    if json {
        print_json(&outcome);
    } else {
        say(&line(&outcome));
    }
    if outcome.verdict.passed {
        return Ok(0);
    }
    if json {
        return Ok(ErrorCode::CheckFailed.exit_status());
    }
    Err(Error::new(
        ErrorCode::CheckFailed,
        format!("the check of {} failed", outcome.task_id),
    )
    .with_hint(format!("its output is in {}", outcome.verdict.log))
    .into())
}

/// In the task's pane: the verdict on stderr (stdout may be the event filter's), and the
/// status the launch's loop reads: 0 passed, a fix round, or failed.
pub fn from_launch(args: &LaunchCheckArgs, cwd: &Path) -> i32 {
    debug_assert!(args.from_launch);
    match ops::check_from_launch(&args.task_id, cwd) {
        Ok(outcome) => {
            say_err(&line(&outcome));
            match (outcome.verdict.passed, outcome.fix_round) {
                (true, _) => 0,
                (false, true) => FIX_ROUND_EXIT,
                (false, false) => CHECK_FAILED_EXIT,
            }
        }
        Err(err) => {
            say_err(&format!("cuekit: the check could not run: {}", err.message));
            CHECK_FAILED_EXIT
        }
    }
}
