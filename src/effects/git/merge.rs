//! Merging a task's branch where the target branch is checked out (never by switching
//! branches in the task's worktree). The merge is built with `merge-tree --write-tree` and
//! `commit-tree` before any work tree, index or branch is touched, so a conflicting merge
//! changes nothing; it lands by [`super::land`] (the branch by `update-ref`, then the
//! checkout), so a kill never leaves a merge half-done in the user's checkout.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::checkout::Checkout;
use super::{Git, args, review, worktrees};
use crate::domain::error::{Error, ErrorCode, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// A merge commit on the target (`--no-ff`), so the task's work stays one visible unit.
    Merge,
    /// One new commit on the target with the task's whole change.
    Squash,
    /// The task's commits replayed onto the target in its own worktree, then fast-forwarded.
    Rebase,
}

pub struct Request<'a> {
    /// The task's checkout as the registry placed it, read on git's safe paths only.
    pub task: Checkout<'a>,
    /// `None`: the branch checked out in the repository root.
    pub target: Option<&'a str>,
    pub strategy: Strategy,
    /// For the commit of the task's uncommitted work.
    pub work_message: &'a str,
    /// For the merge or squash commit.
    pub merge_message: &'a str,
    /// Merge even when the work changes files that run code or set policy ([`review`]).
    pub reviewed: bool,
    /// The commit the task's passing check ran on: what is merged, whatever the checkout
    /// holds now (`None`: the work as it is now).
    pub checked: Option<&'a str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Merged {
    pub target: String,
    pub target_worktree: PathBuf,
    pub strategy: Strategy,
    /// The commit cuekit made of the task's uncommitted work, if there was any.
    pub work_commit: Option<String>,
    /// The task's commit that went in: its branch's tip, or the checked commit when the
    /// work moved on since its check.
    pub task_tip: String,
    /// The target branch's new head.
    pub head: String,
    /// Files that run code or set policy which the work changed, merged after `--yes`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reviewed: Vec<String>,
    /// The commit the task's passing check ran on, which is what went in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_commit: Option<String>,
    /// The task's work moved on since its check: that later work was not merged (it stays
    /// in the task's checkout and branch).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub later_work_left: bool,
    /// What an interrupted merge had left in the target worktree, put right first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repaired: Option<String>,
    /// The target already held this work (merged before): nothing moved.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already_merged: bool,
    /// What went wrong after the merge landed (its record not written): the merge stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Under cuekit's worktree lock, so two merges into one target never interleave (and no
/// cleanup removes the task's worktree half-way).
pub fn merge(request: &Request) -> Result<Merged> {
    let placed = request.task.placed;
    let _lock = super::lock_in(&placed.common_dir)?;
    let root = request.task.root();
    let target = match request.target {
        Some(target) => target.to_string(),
        None => root
            .line(["symbolic-ref", "--quiet", "--short", "HEAD"])
            .map_err(|_| {
                Error::new(
                    ErrorCode::InvalidState,
                    format!(
                        "{} is on a detached HEAD: there is no branch to merge into",
                        placed.repo_root.display()
                    ),
                )
                .with_hint("name the target branch with --into")
            })?,
    };
    if target == placed.branch && !placed.own_repo() {
        return Err(
            Error::invalid_input(format!("'{target}' is the task's own branch"))
                .with_hint("name another branch with --into"),
        );
    }
    if request.strategy == Strategy::Rebase && placed.own_repo() {
        return Err(Error::invalid_input(
            "a sandboxed task's repository is its own: cuekit does not rebase in it",
        )
        .with_hint("merge without --rebase (or --squash)"));
    }
    let target_worktree =
        worktrees::checked_out(&worktrees::list_held(&placed.repo_root)?, &target).ok_or_else(
            || {
                Error::new(
            ErrorCode::InvalidState,
            format!("the branch '{target}' is not checked out in any worktree"),
        )
        .with_hint(format!(
            "check it out where the merge should happen (`git switch {target}`), then merge again"
        ))
            },
        )?;
    let there = Git::new(&target_worktree);
    let repaired = super::land::repair(&there)?;
    refuse_dirty(&there, &target_worktree)?;
    let work_ref = placed.work_ref();
    let old_tip = request.task.fresh_tip()?;
    let (work_commit, tip, later_work_left) = what_goes_in(request, &root, &old_tip)?;
    if later_work_left && request.strategy == Strategy::Rebase {
        return Err(Error::new(
            ErrorCode::InvalidState,
            "the task's work moved on since its check: a rebase would replay the later work too",
        )
        .with_hint("merge without --rebase (the checked commit goes in), or run its check again"));
    }
    let target_head = root.resolve(&format!("refs/heads/{target}^{{commit}}"))?;
    let tree = match merged_tree(&root, &target_head, &tip)? {
        Ok(tree) => tree,
        Err(files) => return Err(conflict_error(&placed.branch, &target, &files)),
    };
    let reviewed = review::policy_paths(&changed(&root, &placed.base_commit, &tip)?);
    if !reviewed.is_empty() && !request.reviewed {
        return Err(review::needed(&reviewed));
    }
    if let Some(commit) = &work_commit {
        root.run(["update-ref", &work_ref, commit, &old_tip])?;
        follow_index(&request.task);
    }
    let merged = apply(
        request,
        &there,
        &Landing {
            target: &target,
            target_head: &target_head,
            tip: &tip,
            tree: &tree,
        },
    );
    if let Err(err) = merged {
        if let Some(commit) = &work_commit {
            restore_branch(&request.task, commit, &old_tip);
        }
        return Err(err);
    }
    let head = there.line(["rev-parse", "HEAD"])?;
    Ok(Merged {
        already_merged: head == target_head,
        target,
        strategy: request.strategy,
        work_commit,
        task_tip: tip,
        head,
        target_worktree,
        reviewed,
        checked_commit: request.checked.map(str::to_string),
        later_work_left,
        repaired,
        warnings: Vec::new(),
    })
}

/// What a merge takes: `(work_commit, tip, later_work_left)`. Without a checked commit, the
/// work as it is now (its uncommitted part committed on `old_tip`). With one, that commit:
/// it becomes the branch's (as the commit of the uncommitted work) when the work is still
/// exactly what was checked; otherwise it goes in alone and the later work stays on the
/// branch.
fn what_goes_in(
    request: &Request,
    root: &Git,
    old_tip: &str,
) -> Result<(Option<String>, String, bool)> {
    let tree_of = |rev: &str| root.line(["rev-parse", &format!("{rev}^{{tree}}")]);
    let task_tree = request.task.tree_from(old_tip)?;
    if let Some(checked) = request.checked {
        if checked == old_tip {
            return Ok((None, checked.to_string(), task_tree != tree_of(old_tip)?));
        }
        let on_tip = root
            .line(["rev-parse", &format!("{checked}^")])
            .ok()
            .as_deref()
            == Some(old_tip);
        if on_tip && tree_of(checked)? == task_tree {
            return Ok((Some(checked.to_string()), checked.to_string(), false));
        }
        return Ok((None, checked.to_string(), true));
    }
    let work_commit = if task_tree != tree_of(old_tip)? {
        Some(super::checked::commit_tree(
            root,
            &task_tree,
            &[old_tip],
            request.work_message,
        )?)
    } else {
        None
    };
    let tip = work_commit.clone().unwrap_or_else(|| old_tip.to_string());
    Ok((work_commit, tip, false))
}

/// The paths that differ between two commits, with their new modes.
fn changed(root: &Git, from: &str, to: &str) -> Result<Vec<review::Changed>> {
    let raw = root.run(["diff-tree", "-r", "-z", "--no-renames", "--raw", from, to])?;
    Ok(review::parse_raw(&raw))
}

/// A git worktree's own index follows its branch once cuekit committed its files onto it
/// (the files untouched); a task repository's is the child's and stays as it is.
fn follow_index(task: &Checkout) {
    if !task.placed.own_repo()
        && let Ok(git) = task.own_git()
    {
        let _ = git.run(["reset", "--quiet"]);
    }
}

/// Commits a task's uncommitted work (tracked and untracked, as `diff` sees it) onto its
/// work ref, under cuekit's worktree lock; returns the tip, which is then all of its work.
/// Another task can then start from that tip (`--base-from`).
pub fn commit_work(task: &Checkout, message: &str) -> Result<String> {
    let _lock = super::lock_in(&task.placed.common_dir)?;
    let root = task.root();
    let old_tip = task.fresh_tip()?;
    if !task.placed.path.is_dir() {
        return Ok(old_tip);
    }
    let tree = task.tree_from(&old_tip)?;
    if tree == root.line(["rev-parse", &format!("{old_tip}^{{tree}}")])? {
        return Ok(old_tip);
    }
    let commit = root.line(["commit-tree", &tree, "-p", &old_tip, "-m", message])?;
    root.run(["update-ref", &task.placed.work_ref(), &commit, &old_tip])?;
    follow_index(task);
    Ok(commit)
}

/// Tracked changes or an unfinished merge in the target's worktree: nothing may be touched.
fn refuse_dirty(there: &Git, path: &Path) -> Result<()> {
    let status = there.run(["status", "--porcelain=v1", "-z", "--untracked-files=no"])?;
    let busy = ["MERGE_HEAD", "REBASE_HEAD", "CHERRY_PICK_HEAD"]
        .iter()
        .any(|head| {
            there
                .yes(["rev-parse", "--quiet", "--verify", head])
                .unwrap_or(true)
        });
    if !status.is_empty() || busy {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "the target worktree {} has uncommitted changes or an unfinished merge",
                path.display()
            ),
        )
        .with_hint("commit or stash them there first; nothing was changed"));
    }
    Ok(())
}

/// The tree of merging `tip` into `target_head`, or the conflicted files when it does not
/// merge cleanly.
fn merged_tree(
    git: &Git,
    target_head: &str,
    tip: &str,
) -> Result<std::result::Result<String, Vec<String>>> {
    let output = git.output(args::merge_tree(target_head, tip))?;
    let text = String::from_utf8_lossy(&output.stdout);
    // The merged tree's id, then the conflicted paths, then an empty field.
    let mut fields = text.split('\0');
    match output.status.code() {
        Some(0) => Ok(Ok(fields.next().unwrap_or_default().trim().to_string())),
        Some(1) => Ok(Err(fields
            .skip(1)
            .take_while(|f| !f.is_empty())
            .map(String::from)
            .collect())),
        _ => Err(super::failed(&args::merge_tree(target_head, tip), &output)),
    }
}

fn conflict_error(branch: &str, target: &str, files: &[String]) -> Error {
    Error::new(
        ErrorCode::MergeConflict,
        format!(
            "merging '{branch}' into '{target}' conflicts in: {}",
            files.join(", ")
        ),
    )
    .with_hint(format!(
        "nothing was changed; resolve in the task's worktree (`git merge {target}`, fix, commit), then merge again"
    ))
}

/// A merge built and ready to land: the target branch, its head it was built on, the task's
/// commit and the merged tree.
struct Landing<'a> {
    target: &'a str,
    target_head: &'a str,
    tip: &'a str,
    tree: &'a str,
}

fn apply(request: &Request, there: &Git, landing: &Landing) -> Result<()> {
    let root = request.task.root();
    let Landing {
        target,
        target_head,
        tip,
        tree,
    } = *landing;
    let why = format!("cuekit merge: {}", request.merge_message);
    match request.strategy {
        Strategy::Merge => {
            if root.yes(["merge-base", "--is-ancestor", tip, target_head])? {
                return Ok(());
            }
            let commit = super::checked::commit_tree(
                &root,
                tree,
                &[target_head, tip],
                request.merge_message,
            )?;
            super::land::land(there, target, target_head, &commit, &why)
        }
        Strategy::Squash => {
            if root.line(["rev-parse", &format!("{target_head}^{{tree}}")])? == tree {
                return Ok(());
            }
            let commit =
                super::checked::commit_tree(&root, tree, &[target_head], request.merge_message)?;
            super::land::land(there, target, target_head, &commit, &why)
        }
        Strategy::Rebase => {
            if !request.task.placed.path.is_dir() {
                return Err(Error::new(
                    ErrorCode::InvalidState,
                    "the task's worktree is gone: a rebase needs it",
                )
                .with_hint("merge without --rebase"));
            }
            let task = request.task.own_git()?;
            if let Err(err) = task.run(["rebase", "--quiet", target_head]) {
                let _ = task.run(["rebase", "--abort"]);
                return Err(Error::new(ErrorCode::MergeConflict, err.message).with_hint(
                    "nothing was changed; rebase by hand in the task's worktree, or merge without --rebase",
                ));
            }
            let rebased =
                root.resolve(&format!("{}^{{commit}}", request.task.placed.work_ref()))?;
            if rebased == target_head {
                return Ok(());
            }
            super::land::land(there, target, target_head, &rebased, &why)
        }
    }
}

/// Puts the task's work ref back where it was when cuekit's own commit of its work did not go
/// in.
fn restore_branch(task: &Checkout, commit: &str, old_tip: &str) {
    let moved = task
        .root()
        .run(["update-ref", &task.placed.work_ref(), old_tip, commit]);
    if moved.is_ok() {
        follow_index(task);
    }
}
