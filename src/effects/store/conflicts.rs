//! What the last conflict check found for one task (`tasks/<id>.conflicts` in the owner-only
//! registry, never in a project's `.cuekit/`): the tree taken of its worktree and the
//! worktree's fingerprint then, each pair checked (with both trees, so a pair is checked again
//! only when one side's work changed), its check against the target branch, and which
//! conflicts the monitor has announced. `status`, `list` and `top` read their mark from here;
//! they never compute one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::domain::error::Result;
use crate::effects::git::conflicts::ConflictFile;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictState {
    /// The worktree's fingerprint when `tree` was taken (`None`: too big to fingerprint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<u64>,
    pub tree: String,
    /// The other task → what merging the two gave.
    #[serde(default)]
    pub pairs: BTreeMap<String, PairCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetCheck>,
    /// The conflicts announced (`t_…` or `target <branch>`), while they last.
    #[serde(default)]
    pub announced: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairCheck {
    /// This task's tree and the other's, when checked.
    pub mine: String,
    pub theirs: String,
    /// Empty: they merge cleanly.
    pub files: Vec<ConflictFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetCheck {
    pub branch: String,
    /// The target's commit when checked.
    pub tip: String,
    /// A stat signature of the files that name the target and its tip (the root's `HEAD`, the
    /// branch's ref file, `packed-refs`), and those files.
    pub signature: u64,
    pub watched: Vec<std::path::PathBuf>,
    pub mine: String,
    pub files: Vec<ConflictFile>,
}

impl ConflictState {
    /// The task's conflicts as marks: the other tasks' ids, then `target <branch>`.
    pub fn marks(&self) -> Vec<String> {
        let mut marks: Vec<String> = self
            .pairs
            .iter()
            .filter(|(_, pair)| !pair.files.is_empty())
            .map(|(id, _)| id.clone())
            .collect();
        if let Some(target) = self.target.as_ref().filter(|t| !t.files.is_empty()) {
            marks.push(format!("target {}", target.branch));
        }
        marks
    }
}

fn path(task_id: &str) -> Option<std::path::PathBuf> {
    super::is_task_id(task_id)
        .then(|| super::registry_dir().map(|dir| dir.join(format!("{task_id}.conflicts"))))
        .flatten()
}

/// The last check's state for `task_id`, if one was stored.
pub fn load(task_id: &str) -> Option<ConflictState> {
    serde_json::from_slice(&super::read_small(&path(task_id)?).ok()?).ok()
}

pub fn save(task_id: &str, state: &ConflictState) -> Result<()> {
    let Some(path) = path(task_id) else {
        return Ok(());
    };
    let bytes = serde_json::to_vec(state).expect("serializes");
    super::registry::stage_own(&path, &bytes)?.commit()
}

/// Held while a check reads and writes the stored results (the monitor's and a command's
/// check never interleave, so an announcement is never lost to an older write).
pub fn lock() -> Result<Option<std::fs::File>> {
    let Some(dir) = super::data_dir().filter(|dir| dir.is_dir()) else {
        return Ok(None);
    };
    super::lock_file(&dir.join("conflicts.lock")).map(Some)
}

/// Drops the stored check of a task that is no longer checked (`store::unregister` removes
/// the same file with the rest of a task's registry files).
pub fn forget(task_id: &str) {
    if let Some(path) = path(task_id) {
        let _ = std::fs::remove_file(path);
    }
}
