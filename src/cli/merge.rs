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
    /// Merge the task's work as it is now, even where it moved on since its passing check
    /// (by default the commit the check ran on goes in).
    #[arg(long)]
    unchecked: bool,
}

pub fn run(args: &MergeArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let strategy = match (args.squash, args.rebase) {
        (true, _) => Strategy::Squash,
        (_, true) => Strategy::Rebase,
        _ => Strategy::Merge,
    };
    let merged = if crate::domain::race::is_race_id(&args.id) {
        if args.unchecked {
            return Err(crate::domain::error::Error::new(
                crate::domain::error::ErrorCode::Usage,
                "--unchecked merges one task's live work: a race merges what its check passed",
            )
            .into());
        }
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
    } else if args.unchecked {
        ops::merge_unchecked(&args.id, cwd, strategy, args.into.as_deref(), args.yes)?
    } else {
        ops::merge(&args.id, cwd, strategy, args.into.as_deref(), args.yes)?
    };
    if json {
        print_json(&merged);
        return Ok(0);
    }
    if let Some(repaired) = &merged.repaired {
        say(repaired);
    }
    if let Some(commit) = &merged.work_commit {
        say(&format!(
            "committed the task's uncommitted work as {}",
            &commit[..commit.len().min(12)]
        ));
    }
    if merged.later_work_left {
        say(&format!(
            "merged the commit its check passed ({}); the work added since stays on the task's \
             branch (check it again, or merge it with --unchecked)",
            merged.task_tip.get(..12).unwrap_or(&merged.task_tip)
        ));
    }
    if !merged.reviewed.is_empty() {
        say(&format!(
            "merged as you said (--yes), with changes to: {}",
            merged.reviewed.join(", ")
        ));
    }
    for warning in &merged.warnings {
        eprintln!("warning: {warning}");
    }
    if merged.already_merged {
        say(&format!(
            "nothing to merge: {} in {} already holds this task's work (still at {})",
            merged.target,
            merged.target_worktree.display(),
            &merged.head[..merged.head.len().min(12)]
        ));
        return Ok(0);
    }
    say(&format!(
        "merged into {} in {} (now at {})",
        merged.target,
        merged.target_worktree.display(),
        &merged.head[..merged.head.len().min(12)]
    ));
    Ok(0)
}
