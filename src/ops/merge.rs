//! `cuekit merge`: an ended worktree task's branch into a target branch.

use std::path::Path;

use crate::error::{Error, ErrorCode, Result};
use crate::git::merge::{self, Merged, Strategy};
use crate::store::{self, MergeRecord};

pub fn merge(task_id: &str, cwd: &Path, strategy: Strategy, into: Option<&str>) -> Result<Merged> {
    let task = super::task::open(task_id, cwd)?;
    let task = super::judge::refresh(vec![task])?.tasks.remove(0);
    let record = &task.record;
    let worktree = super::diff::worktree_of(&task)?;
    if !record.status.is_terminal() {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("task {} is still running", record.id),
        )
        .with_hint(format!(
            "wait for it (`cuekit wait {0}`) or cancel it (`cuekit cancel {0}`) first",
            record.id
        )));
    }
    let objective: String = record
        .spec
        .objective
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(72)
        .collect();
    let merged = merge::merge(&merge::Request {
        repo_root: &worktree.repo_root,
        task_worktree: &worktree.path,
        branch: &worktree.branch,
        target: into,
        strategy,
        work_message: &format!(
            "cuekit task {}: uncommitted work\n\nObjective: {}",
            record.id, record.spec.objective
        ),
        merge_message: &format!("cuekit task {}: {objective}", record.id),
        scratch: &record.task_dir,
    })?;
    store::record_merge(
        &record.id,
        &MergeRecord {
            target_ref: format!("refs/heads/{}", merged.target),
            head: merged.head.clone(),
            task_tip: merged.task_tip.clone(),
        },
    )?;
    Ok(merged)
}
