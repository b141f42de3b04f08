//! `cuekit diff`: a worktree task's work against its base commit.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::git::checkout::Checkout;
use crate::effects::git::{Git, diff};
use crate::effects::store::{TaskRecord, WorktreePlacement};
use crate::ops::task::Task;
use crate::ops::task::route::{Route, route_one};

/// Read back from a host's JSON too (a host's task is diffed there).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskDiff {
    pub task_id: String,
    pub branch: String,
    pub base_ref: String,
    pub base_commit: String,
    pub worktree: PathBuf,
    /// The commit of the task's last passing check, which this diff shows because a plain
    /// merge takes it (even after a later check failed); else the work as it is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_commit: Option<String>,
    pub stat: diff::DiffStat,
    pub files: Vec<diff::FileDiff>,
    /// The submodules the child changed: a commit other than the base's, or files that differ
    /// from their `HEAD` (which no file of the diff shows). A merge refuses them.
    #[serde(default)]
    pub submodules: Vec<String>,
    /// The unified diff, unless only the stat was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

/// A host's task is diffed by its host (`cuekit diff` there: its worktree, its git).
pub fn diff(task_id: &str, cwd: &Path, with_patch: bool) -> Result<TaskDiff> {
    if let Route::Host(host) = route_one(task_id)? {
        let mut words = ["--json", "diff", task_id].map(String::from).to_vec();
        words.extend((!with_patch).then(|| "--stat".to_string()));
        return crate::ops::remote::reply(&host, &words, None, cwd);
    }
    let task = crate::ops::task::open(task_id, cwd)?;
    let worktree = worktree_of(&task)?;
    // What a plain merge takes: the review and the merge never see two different trees.
    let tree = super::checked::shown_tree(&task)?;
    let git = Git::new(&worktree.repo_root);
    let files = diff::files(&git, &worktree.base_commit, &tree)?;
    let submodules = super::submodules::changed(&task, &tree)?;
    let patch = with_patch
        .then(|| diff::patch(&git, &worktree.base_commit, &tree))
        .transpose()?;
    Ok(TaskDiff {
        task_id: task.record.id.clone(),
        branch: worktree.branch.clone(),
        base_ref: worktree.base_ref.clone(),
        base_commit: worktree.base_commit.clone(),
        worktree: worktree.path.clone(),
        checked_commit: super::checked::shown_commit(&task),
        stat: diff::stat(&files),
        files,
        submodules,
        patch,
    })
}

/// The totals of a worktree task's work, for its view.
pub(crate) fn diff_stat(task: &Task) -> Option<diff::DiffStat> {
    let worktree = task.worktree()?;
    let tree = Checkout {
        placed: worktree,
        scratch: &task.record.task_dir,
    }
    .tree_for_view()
    .ok()?;
    diff::totals(&Git::new(&worktree.repo_root), &worktree.base_commit, &tree).ok()
}

/// The totals of a worktree task's result, for a race's pick: its checked commit's when it
/// has one (work added after its check counts for nothing), else the work as it is now.
pub(crate) fn result_stat(task: &Task) -> Option<diff::DiffStat> {
    let Some(commit) = super::checked::commit(task) else {
        return diff_stat(task);
    };
    let worktree = task.worktree()?;
    diff::totals(
        &Git::new(&worktree.repo_root),
        &worktree.base_commit,
        &commit,
    )
    .ok()
}

/// The files a worktree task changed, for its result: what a plain merge takes (its last
/// passing check's commit, when it has one).
pub(crate) fn changed_files(task: &Task) -> Option<Vec<diff::FileDiff>> {
    let worktree = task.worktree()?;
    let tree = super::checked::shown_tree(task).ok()?;
    diff::files(&Git::new(&worktree.repo_root), &worktree.base_commit, &tree).ok()
}

pub(crate) fn worktree_of(task: &Task) -> Result<&WorktreePlacement> {
    task.worktree().ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidState,
            format!("task {} did not run in its own worktree", task.record.id),
        )
        .with_hint("only tasks submitted with --worktree have a branch to diff, merge or remove")
    })
}

/// The tree of a worktree task's work, read on git's safe paths ([`crate::effects::git::checkout`]).
pub(super) fn work_tree(record: &TaskRecord, worktree: &WorktreePlacement) -> Result<String> {
    Checkout {
        placed: worktree,
        scratch: &record.task_dir,
    }
    .tree()
}

/// The files of a task's diff a merge would ask to have reviewed (they run code or set policy),
/// judged by their names alone: for a face to show before it offers the merge. The merge
/// itself judges their modes too, and refuses until the review is confirmed.
pub fn review_by_names(diff: &TaskDiff) -> Vec<String> {
    let changed: Vec<crate::effects::git::review::Changed> = diff
        .files
        .iter()
        .map(|file| crate::effects::git::review::Changed {
            path: file.path.clone(),
            mode: (file.status != "D").then(|| "100644".to_string()),
        })
        .collect();
    crate::effects::git::review::policy_paths(&changed)
}
