use std::path::Path;
use std::time::Duration;

use clap::Args;

use super::rm::{exit_status, print_removals};
use crate::domain::status::Status;
use crate::ops::{self, PruneFilter};

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Only tasks that ended at least this long ago (e.g. 7d, 12h).
    #[arg(long, value_parser = super::parse_duration, value_name = "DUR")]
    older_than: Option<Duration>,
    /// Only tasks with this ending (repeatable): completed, failed, cancelled, timed_out.
    #[arg(long = "status", value_name = "S", value_parser = ["completed", "failed", "cancelled", "timed_out"])]
    statuses: Vec<String>,
    /// Also remove worktrees that hold uncommitted or unmerged work (that work is lost).
    #[arg(long)]
    force: bool,
    /// Print exactly what would be removed and kept; change nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: &PruneArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let filter = PruneFilter {
        older_than: args.older_than,
        statuses: args
            .statuses
            .iter()
            .map(|s| match s.as_str() {
                "completed" => Status::Completed,
                "failed" => Status::Failed,
                "cancelled" => Status::Cancelled,
                _ => Status::TimedOut,
            })
            .collect(),
    };
    let removals = ops::prune(cwd, &filter, args.force, args.dry_run)?;
    print_removals(&removals, json);
    Ok(exit_status(&removals))
}
