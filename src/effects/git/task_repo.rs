//! A sandboxed task's repository of its own. Its checkout's git dir belongs to the task
//! (`~/.local/share/cuekit/repos/<id>.git`), its branch is made at the recorded base, and it
//! borrows the user's objects read-only through `objects/info/alternates`: nothing of the
//! user's `.git` is written by the child, which may commit, branch and rewrite its own history
//! freely. The user's repository keeps a pin at the base (`refs/cuekit/base/<id>`) so its gc
//! never prunes what the alternates lend; the task's committed work comes back by a fetch from
//! the recorded git dir into `refs/cuekit/tasks/<id>` ([`super::checkout`]).

use std::path::{Path, PathBuf};

use super::include::{Includes, bring_over};
use super::{Git, args};
use crate::domain::error::{Error, Result};
use crate::effects::store::WorktreePlacement;

/// The ref in the user's repository that pins a task's base commit.
pub fn base_pin(task_id: &str) -> String {
    format!("refs/cuekit/base/{task_id}")
}

/// The ref in the user's repository its committed work is fetched into.
pub fn tip_ref(task_id: &str) -> String {
    format!("refs/cuekit/tasks/{task_id}")
}

/// Where a task's own git dir lives: in cuekit's data dir, outside every checkout.
pub fn git_dir(task_id: &str) -> Option<PathBuf> {
    crate::effects::store::is_task_id(task_id)
        .then(|| {
            crate::effects::store::data_dir()
                .map(|dir| dir.join("repos").join(format!("{task_id}.git")))
        })
        .flatten()
}

/// Where a task repository goes, as its creation planned it.
pub struct Layout<'a> {
    /// The user's checkout it starts from.
    pub repo_root: &'a Path,
    /// The user's git common dir, whose objects it borrows.
    pub common_dir: &'a Path,
    /// Its checkout.
    pub path: &'a Path,
    pub branch: &'a str,
    pub base_commit: &'a str,
}

/// Makes the planned checkout as a repository of the task's own, with its submodules and
/// included files; on failure removes what it made.
pub fn create(plan: &Layout, task_id: &str, git_dir: &Path, includes: &Includes) -> Result<()> {
    let made = make(plan, task_id, git_dir).and_then(|()| {
        super::submodules::init(plan.path, plan.repo_root)?;
        bring_over(plan.repo_root, plan.path, includes)?;
        // A sandboxed child of root's runs as the sandbox's uid: its repository is its own.
        crate::effects::owner::hand_over_tree(plan.path)?;
        crate::effects::owner::hand_over_tree(git_dir)
    });
    if let Err(err) = made {
        remove(plan.repo_root, plan.path, git_dir, task_id);
        return Err(err);
    }
    Ok(())
}

fn make(plan: &Layout, task_id: &str, git_dir: &Path) -> Result<()> {
    let root = Git::new(plan.repo_root);
    // Pinned first: from here on the user's gc keeps the base, whatever happens next.
    root.run(["update-ref", &base_pin(task_id), plan.base_commit, ""])?;
    if let Some(parent) = git_dir.parent() {
        crate::effects::store::create_private_dir(parent)?;
    }
    if let Some(parent) = plan.path.parent() {
        std::fs::create_dir_all(parent).map_err(|err| Error::io("create", parent, err))?;
        super::private::narrow_to_owner(parent)?;
    }
    // No template: no hook or info file of anybody's, only what git itself needs.
    let mut init = vec!["init".into(), "--quiet".into(), "--template=".into()];
    init.push(format!("--initial-branch={}", plan.branch).into());
    init.push(format!("--separate-git-dir={}", git_dir.display()).into());
    init.push(plan.path.as_os_str().to_owned());
    Git::new(plan.path.parent().unwrap_or(plan.repo_root)).run(&init)?;
    let alternates = git_dir.join("objects/info/alternates");
    let objects = plan.common_dir.join("objects");
    std::fs::create_dir_all(git_dir.join("objects/info"))
        .and_then(|()| std::fs::write(&alternates, format!("{}\n", objects.display())))
        .map_err(|err| Error::io("write", &alternates, err))?;
    let own = Git::at_git_dir(git_dir);
    own.run(args::branch_at(plan.branch, plan.base_commit))?;
    let index = git_dir.join("index");
    Git::over(git_dir, plan.path, &index).run(["read-tree", "--reset", "-u", "HEAD"])?;
    Ok(())
}

/// Removes a task's repository: its checkout, its git dir and the refs it left in the user's
/// repository (the pin and the fetched work). What the child wrote is removed without
/// following a link.
pub fn remove(repo_root: &Path, checkout: &Path, git_dir: &Path, task_id: &str) {
    let _ = std::fs::remove_dir_all(checkout);
    let _ = std::fs::remove_dir_all(git_dir);
    let root = Git::new(repo_root);
    for name in [base_pin(task_id), tip_ref(task_id)] {
        let _ = root.run(["update-ref", "-d", &name]);
    }
}

/// [`remove`] for a placement (the task's id is in its tip ref).
pub fn remove_placed(placed: &WorktreePlacement) {
    let (Some(git_dir), Some(id)) = (
        placed.git_dir.as_ref(),
        placed
            .tip_ref
            .as_deref()
            .and_then(|r| r.strip_prefix("refs/cuekit/tasks/")),
    ) else {
        return;
    };
    remove(&placed.repo_root, &placed.path, git_dir, id);
}
