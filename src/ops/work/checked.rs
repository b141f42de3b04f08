//! What a checked task's result is: the commit its passing check ran on, never the checkout
//! as it is now. Work the child (or a process it left) added after that check is not part of
//! the checked result: views say "changed since its check", and `result`, `diff`, `merge` and
//! a race's pick read the checked commit.

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::git::checkout::Checkout;
use crate::effects::git::{Git, checked};
use crate::effects::store;
use crate::ops::task::Task;

/// The commit `task`'s passing check ran on, if it has one and the repository holds it (the
/// registry's check state is the one believed).
pub(crate) fn commit(task: &Task) -> Option<String> {
    let worktree = task.worktree()?;
    let state = check_state(task)?;
    let commit = state.checked_commit()?;
    checked::existing(&Git::new(&worktree.repo_root), commit)
}

/// What a plain `merge` (or a `--base-from`) of `task` takes: `None` for a task without a
/// check, or one whose pass names no commit (an older cuekit's verdict): its work as it is;
/// else the commit of its last passing verdict — even after a re-check you asked for once the
/// task ended failed, the commit that passed is the only checked work there is. A pass that a
/// failure begun while the task ran follows (its own final check) is refused, as is a checked
/// task that never passed: only `merge --unchecked` takes work no standing pass names.
pub(crate) fn taken_commit(task: &Task) -> Result<Option<String>> {
    let Some(worktree) = task.worktree() else {
        return Ok(None);
    };
    let Some(state) = check_state(task) else {
        return Ok(None);
    };
    let id = &task.record.id;
    if let Some(pass) = state.last_pass()
        && !pass_stands(task, &state, pass)
    {
        return Err(Error::new(
            ErrorCode::CheckFailed,
            format!(
                "task {id}'s last check failed ({}): its pass of round {} was recorded while \
                 the task ran, and a check of the task's own failed after it; a plain merge \
                 takes a pass only when no failure from the task's run follows it",
                state.summary(),
                pass.round
            ),
        )
        .with_hint(format!(
            "check it again (`cuekit check {id}`), or take the work as it is with \
             `cuekit merge {id} --unchecked`"
        )));
    }
    match state.last_pass() {
        Some(verdict) => Ok(verdict
            .commit
            .as_deref()
            .and_then(|commit| checked::existing(&Git::new(&worktree.repo_root), commit))),
        None => Err(Error::new(
            ErrorCode::CheckFailed,
            format!(
                "task {id}'s check never passed ({}): only work a passing check names is taken",
                state.summary()
            ),
        )
        .with_hint(format!(
            "check it again once fixed (`cuekit check {id}`), or take the work as it is with \
             `cuekit merge {id} --unchecked`"
        ))),
    }
}

/// Whether `pass` is one a plain merge may take: no failure begun while the task ran follows
/// it. A pass recorded mid-run may have been timed by the child (a process it left, escaped
/// from the task, checking its work at a moment of its choosing), so the task's own failing
/// check after it stands; a failed re-check you ask for after the task ended does not undo
/// the pass before it.
fn pass_stands(
    task: &Task,
    state: &crate::domain::check::CheckState,
    pass: &crate::domain::check::Verdict,
) -> bool {
    let time = |text: &str| humantime::parse_rfc3339_weak(text).ok();
    let ended = task.record.ended_at.as_deref().and_then(time);
    let after = state
        .verdicts
        .iter()
        .skip_while(|verdict| !std::ptr::eq(*verdict, pass))
        .skip(1);
    !after.into_iter().any(|verdict| {
        !verdict.passed
            && match (ended, time(&verdict.started_at)) {
                (Some(ended), Some(started)) => started < ended,
                _ => true,
            }
    })
}

/// The tree of `task`'s result: its checked commit's, else its work as it is now.
pub(crate) fn result_tree(task: &Task) -> Result<String> {
    let worktree = crate::ops::work::diff::worktree_of(task)?;
    if let Some(commit) = commit(task) {
        return Git::new(&worktree.repo_root).line(["rev-parse", &format!("{commit}^{{tree}}")]);
    }
    Checkout {
        placed: worktree,
        scratch: &task.record.task_dir,
    }
    .tree()
}

/// The commit `diff` and `result` show: what a plain `merge` takes ([`taken_commit`]), so that
/// the review never shows another tree than the merge lands — after a failed re-check too, the
/// last passing verdict's commit. `None`: the work as it is (no check, or one that never
/// passed, which a plain merge refuses).
pub(crate) fn shown_commit(task: &Task) -> Option<String> {
    taken_commit(task).ok().flatten()
}

/// The tree `diff` and `result` show: [`shown_commit`]'s, else the work as it is now.
pub(crate) fn shown_tree(task: &Task) -> Result<String> {
    let worktree = crate::ops::work::diff::worktree_of(task)?;
    if let Some(commit) = shown_commit(task) {
        return Git::new(&worktree.repo_root).line(["rev-parse", &format!("{commit}^{{tree}}")]);
    }
    Checkout {
        placed: worktree,
        scratch: &task.record.task_dir,
    }
    .tree()
}

/// Whether `task`'s work moved on since its passing check (for a view: the live tree is
/// read the views' cheap way, [`Checkout::tree_for_view`]). `false` without a checked commit,
/// or when the work cannot be read.
pub(crate) fn changed_since(task: &Task) -> bool {
    let Some(worktree) = task.worktree() else {
        return false;
    };
    // The recorded id is enough here: one that names nothing reads as unchanged.
    let state = check_state(task);
    let Some(commit) = state.as_ref().and_then(|s| s.checked_commit()) else {
        return false;
    };
    if !worktree.path.is_dir() {
        return false;
    }
    let live = Checkout {
        placed: worktree,
        scratch: &task.record.task_dir,
    }
    .tree_for_view();
    let checked = Git::new(&worktree.repo_root).line(["rev-parse", &format!("{commit}^{{tree}}")]);
    matches!((live, checked), (Ok(live), Ok(checked)) if live != checked)
}

/// `task`'s check as the registry keeps it (the one believed), else as its record says (a task
/// of an older cuekit).
fn check_state(task: &Task) -> Option<crate::domain::check::CheckState> {
    store::check_of(&task.record.id).or_else(|| task.record.check.clone())
}
