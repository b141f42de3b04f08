use std::path::Path;

use clap::Args;

use super::render::{print_json, say};
use crate::ops::{self, Removal, RemovalOutcome};
use crate::ops::{KeepReason, KeptIn};

#[derive(Debug, Args)]
pub struct RmArgs {
    #[arg(required = true, value_name = "ID")]
    ids: Vec<String>,
    /// Also remove worktrees that hold uncommitted or unmerged work (that work is lost).
    #[arg(long)]
    force: bool,
    /// Print what would be removed and kept; change nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: &RmArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let removals = ops::remove(&args.ids, cwd, args.force, args.dry_run)?;
    print_removals(&removals, json);
    Ok(exit_status(&removals))
}

/// Shared with `prune`: `work_kept` (36) when a task was kept for its work or a doubt (never
/// for `--dry-run`, which only tells), else 0.
pub fn exit_status(removals: &[Removal]) -> i32 {
    if removals.iter().any(|r| r.outcome == RemovalOutcome::Kept) {
        crate::domain::error::ErrorCode::WorkKept.exit_status()
    } else {
        0
    }
}

/// Shared with `prune`: one line per task, and why a kept one was kept.
pub fn print_removals(removals: &[Removal], json: bool) {
    if json {
        print_json(removals);
        return;
    }
    if removals.is_empty() {
        println!("nothing to remove");
    }
    for removal in removals {
        let what = match removal.outcome {
            RemovalOutcome::Removed => "removed",
            RemovalOutcome::Kept => "kept",
            RemovalOutcome::WouldRemove => "would remove",
            RemovalOutcome::WouldKeep => "would keep",
        };
        let mut line = format!("{what} {}", removal.task_id);
        if let Some(worktree) = &removal.worktree {
            line.push_str(&format!(" (worktree {}", worktree.display()));
            if let Some(branch) = &removal.branch {
                line.push_str(&format!(", branch {branch}"));
            }
            line.push(')');
        }
        say(&line);
        for reason in &removal.reasons {
            say(&format!("  because of {reason}"));
        }
        for name in &removal.kept_refs {
            say(&format!(
                "  kept its check's commit at {name}: nothing merged it (`git update-ref -d {name}` drops it)"
            ));
        }
    }
    let reasons = removals
        .iter()
        .filter(|r| matches!(r.outcome, RemovalOutcome::Kept | RemovalOutcome::WouldKeep))
        .flat_map(|r| &r.reasons);
    let (doubts, work): (Vec<&KeepReason>, Vec<&KeepReason>) =
        reasons.partition(|reason| matches!(reason, KeepReason::InspectionFailed(_)));
    if !work.is_empty() {
        println!(
            "  hint: merge or commit the work (`cuekit merge <id>`), or pass --force to drop it"
        );
    }
    let hidden = |reason: &&KeepReason| matches!(reason, KeepReason::Unsaved(unsaved) if unsaved.holder == KeptIn::Hidden);
    if work.iter().any(hidden) {
        println!(
            "  hint: files named above are ignored only by rules the task wrote (a .gitignore \
             it added or changed, a line it added to .git/info/exclude): commit what you want in \
             the worktree (`git add -f`), or pass --force to drop them"
        );
    }
    if work
        .iter()
        .any(|reason| matches!(reason, KeepReason::Unsaved(_)) && !hidden(reason))
    {
        println!(
            "  hint: a ref, reflog or submodule named above holds commits or files only there: \
             save what you want from the place named (fetch it as from any repository you did \
             not make), or pass --force to drop it"
        );
    }
    if !doubts.is_empty() {
        println!(
            "  hint: a worktree could not be inspected, so it was kept: repair the repository \
             (or remove the worktree with git), then run this again"
        );
    }
}
