//! The submodules a task changed, named for `diff`, `result` and the web diff, and refused by
//! a merge: a merge would carry a gitlink to a commit only the task's checkout holds (and a
//! submodule's uncommitted files not at all). Carrying submodule commits can come later.

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::git::checkout::Checkout;
use crate::effects::git::inventory;
use crate::ops::task::Task;

/// The submodules `task` changed, its work being `tree` (see
/// [`inventory::changed_submodules`]).
pub(crate) fn changed(task: &Task, tree: &str) -> Result<Vec<String>> {
    let worktree = super::diff::worktree_of(task)?;
    inventory::changed_submodules(
        &Checkout {
            placed: worktree,
            scratch: &task.record.task_dir,
        },
        tree,
    )
}

/// For `result`: the submodules a worktree task changed, `None` when it has no worktree or its
/// work cannot be read.
pub(crate) fn changed_of(task: &Task) -> Option<Vec<String>> {
    let worktree = task.worktree()?;
    let tree = super::diff::work_tree(&task.record, worktree).ok()?;
    changed(task, &tree).ok()
}

/// A merge's check, before anything changes: `submodule_work` naming the submodules the task
/// changed.
pub(crate) fn refuse_changed(task: &Task) -> Result<()> {
    let worktree = super::diff::worktree_of(task)?;
    let tree = super::diff::work_tree(&task.record, worktree)?;
    let names = changed(task, &tree)?;
    if names.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::SubmoduleWork,
        format!(
            "task {} changed submodule(s) {}: a merge cannot carry their commits or files; \
             nothing was changed",
            task.record.id,
            names.join(", ")
        ),
    )
    .with_hint(format!(
        "push or copy the submodule's work into its own repository, then merge by hand from {} \
         (`cuekit diff {}` shows the rest of the work)",
        worktree.path.display(),
        task.record.id
    )))
}
