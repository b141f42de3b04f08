//! `cuekit merge`: an ended worktree task's branch into a target branch.

use std::path::Path;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::git::checkout::Checkout;
use crate::effects::git::merge::{self, Merged, Strategy};
use crate::effects::store::{self, MergeRecord};

/// The branch a task's work was merged into, from the registry's merge record (none: never
/// merged by cuekit). A registry read only: no git, no tmux.
pub fn merged_into(task_id: &str) -> Option<String> {
    store::merge_of(task_id).map(|record| {
        record
            .target_ref
            .strip_prefix("refs/heads/")
            .unwrap_or(&record.target_ref)
            .to_string()
    })
}

/// `reviewed`: the user read the work's changes to files that run code or set policy
/// (`--yes`); without it such a merge is refused before anything changes. A task whose check
/// passed has the commit that check ran on merged, whatever its checkout holds now.
pub fn merge(
    task_id: &str,
    cwd: &Path,
    strategy: Strategy,
    into: Option<&str>,
    reviewed: bool,
) -> Result<Merged> {
    merge_with(task_id, cwd, strategy, into, reviewed, true)
}

/// [`merge`] of the work as it is now, later than its check or not (`merge --unchecked`).
pub fn merge_unchecked(
    task_id: &str,
    cwd: &Path,
    strategy: Strategy,
    into: Option<&str>,
    reviewed: bool,
) -> Result<Merged> {
    merge_with(task_id, cwd, strategy, into, reviewed, false)
}

fn merge_with(
    task_id: &str,
    cwd: &Path,
    strategy: Strategy,
    into: Option<&str>,
    reviewed: bool,
    checked: bool,
) -> Result<Merged> {
    let task = crate::ops::task::open(task_id, cwd)?;
    let task = crate::ops::judge::refresh(vec![task])?.tasks.remove(0);
    let record = &task.record;
    let worktree = crate::ops::work::diff::worktree_of(&task)?;
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
    // A submodule's work cannot go with it (issue 43): refused, naming them.
    super::submodules::refuse_changed(&task)?;
    let objective: String = record
        .spec
        .objective
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(72)
        .collect();
    let checked = match checked {
        true => crate::ops::work::checked::taken_commit(&task)?,
        false => None,
    };
    let mut merged = merge::merge(&merge::Request {
        checked: checked.as_deref(),
        task: Checkout {
            placed: worktree,
            scratch: &record.task_dir,
        },
        target: into,
        reviewed,
        strategy,
        work_message: &format!(
            "cuekit task {}: uncommitted work\n\nObjective: {}",
            record.id, record.spec.objective
        ),
        merge_message: &format!("cuekit task {}: {objective}", record.id),
    })?;
    let recorded = store::record_merge(
        &record.id,
        &MergeRecord {
            target_ref: format!("refs/heads/{}", merged.target),
            head: merged.head.clone(),
            task_tip: merged.task_tip.clone(),
        },
    );
    // The merge has landed: an error now would say it failed. Its record is what lets `rm`
    // drop the branch of a squash merge; without it the branch is kept (the safe side), and the
    // next `merge` of the task ("nothing to merge") writes it.
    if let Err(err) = recorded {
        merged.warnings.push(format!(
            "merged, but its record could not be written ({}): `rm` keeps the task's branch \
             until `cuekit merge {}` is run again once there is room",
            err.message, record.id
        ));
    }
    Ok(merged)
}
