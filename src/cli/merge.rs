use std::path::Path;

use clap::Args;

use super::render::{print_json, say};
use crate::ops;
use crate::ops::MergeStrategy as Strategy;

#[derive(Debug, Args)]
pub struct MergeArgs {
    #[arg(value_name = "ID")]
    id: String,
    /// One commit on the target holding the task's whole change.
    #[arg(long, conflicts_with = "rebase")]
    squash: bool,
    /// Replay the task's commits onto the target (in the task's worktree), then fast-forward.
    #[arg(long)]
    rebase: bool,
    /// The branch to merge into (default: the branch checked out where the task was submitted).
    #[arg(long, value_name = "BRANCH")]
    into: Option<String>,
    /// Merge even though the work changes files that run code or set policy
    /// (`.gitattributes`, CI workflows, build scripts, `.cuekit*`…): read them first.
    #[arg(long)]
    yes: bool,
    /// For a race (ID is `r_…`): merge this candidate instead of the winner.
    #[arg(long, value_name = "ID")]
    candidate: Option<String>,
}

pub fn run(args: &MergeArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let strategy = match (args.squash, args.rebase) {
        (true, _) => Strategy::Squash,
        (_, true) => Strategy::Rebase,
        _ => Strategy::Merge,
    };
    let merged = if crate::domain::race::is_race_id(&args.id) {
        ops::merge_race(
            &args.id,
            args.candidate.as_deref(),
            cwd,
            strategy,
            args.into.as_deref(),
            args.yes,
        )?
    } else if args.candidate.is_some() {
        return Err(crate::domain::error::Error::new(
            crate::domain::error::ErrorCode::Usage,
            "--candidate names a candidate of a race: give the race's id (r_…)",
        )
        .into());
    } else {
        ops::merge(&args.id, cwd, strategy, args.into.as_deref(), args.yes)?
    };
    if json {
        print_json(&merged);
        return Ok(0);
    }
    if let Some(commit) = &merged.work_commit {
        say(&format!(
            "committed the task's uncommitted work as {}",
            &commit[..commit.len().min(12)]
        ));
    }
    if !merged.reviewed.is_empty() {
        say(&format!(
            "merged as you said (--yes), with changes to: {}",
            merged.reviewed.join(", ")
        ));
    }
    say(&format!(
        "merged into {} in {} (now at {})",
        merged.target,
        merged.target_worktree.display(),
        &merged.head[..merged.head.len().min(12)]
    ));
    Ok(0)
}
