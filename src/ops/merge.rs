//! `cuekit merge`: an ended worktree task's branch into a target branch.

use std::path::Path;

use crate::error::{Error, ErrorCode, Result};
use crate::git::merge::{self, Merged, Strategy};
use crate::store;

pub fn merge(task_id: &str, cwd: &Path, strategy: Strategy, into: Option<&str>) -> Result<Merged> {
    let task = super::task::open(task_id, cwd)?;
    let record = super::judge::refresh(vec![task])?.tasks.remove(0).record;
    let worktree = super::diff::worktree_of(&record)?;
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
    store::update(&record.task_dir, |record| {
        if let Some(worktree) = record.worktree.as_mut() {
            worktree.merged_tip = Some(merged.task_tip.clone());
        }
        Ok(true)
    })?;
    Ok(merged)
}
