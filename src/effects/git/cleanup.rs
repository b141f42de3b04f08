//! Removing a task's worktree and branch, failing closed: a worktree with uncommitted or
//! untracked changes, commits not merged into its base, or a live process inside it is kept
//! (unless forced), and any inspection that fails keeps it too. The worktree goes before its
//! branch, the branch only at the commit inspected, under cuekit's worktree lock
//! ([`super::lock_worktrees`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::checkout::Checkout;
use super::{Git, args};
use crate::domain::error::{Error, Result};
use crate::effects::store::MergeRecord;
use crate::effects::store::WorktreePlacement;

/// A task's worktree and branch, as cuekit's registry knows them.
pub struct Target<'a> {
    /// The checkout, read on git's safe paths only.
    pub task: Checkout<'a>,
    /// cuekit's last merge of the branch (a squash or rebase leaves no ancestry to find).
    pub merged: Option<&'a MergeRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason", content = "detail")]
pub enum KeepReason {
    UncommittedChanges,
    UnmergedCommits(usize),
    LiveProcess(Vec<u32>),
    InspectionFailed(String),
    /// Work the checkout's git dir or its submodules hold that nothing kept holds
    /// ([`super::inventory`]).
    Unsaved(super::inventory::Unsaved),
}

impl std::fmt::Display for KeepReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepReason::UncommittedChanges => write!(f, "uncommitted or untracked changes"),
            KeepReason::UnmergedCommits(n) => write!(f, "{n} commit(s) not merged into its base"),
            KeepReason::LiveProcess(pids) => write!(f, "live process(es) inside: {pids:?}"),
            KeepReason::InspectionFailed(why) => write!(f, "could not be inspected: {why}"),
            KeepReason::Unsaved(unsaved) => write!(f, "{unsaved}"),
        }
    }
}

/// What was found out; an `Err` is a doubt.
pub struct Facts {
    pub dirty: Result<bool>,
    pub unmerged: Result<usize>,
    pub live: Result<Vec<u32>>,
    /// What else the task's git dir and submodules hold ([`super::inventory`]).
    pub inventory: Result<Vec<super::inventory::Unsaved>>,
}

/// Pure: why a worktree must stay. Empty means it may go.
pub fn keep_reasons(facts: &Facts) -> Vec<KeepReason> {
    let mut reasons = Vec::new();
    match &facts.dirty {
        Ok(true) => reasons.push(KeepReason::UncommittedChanges),
        Ok(false) => {}
        Err(err) => reasons.push(KeepReason::InspectionFailed(err.message.clone())),
    }
    match &facts.unmerged {
        Ok(0) => {}
        Ok(n) => reasons.push(KeepReason::UnmergedCommits(*n)),
        Err(err) => reasons.push(KeepReason::InspectionFailed(err.message.clone())),
    }
    match &facts.live {
        Ok(pids) if pids.is_empty() => {}
        Ok(pids) => reasons.push(KeepReason::LiveProcess(pids.clone())),
        Err(err) => reasons.push(KeepReason::InspectionFailed(err.message.clone())),
    }
    match &facts.inventory {
        Ok(found) => reasons.extend(found.iter().cloned().map(KeepReason::Unsaved)),
        Err(err) => reasons.push(KeepReason::InspectionFailed(err.message.clone())),
    }
    reasons
}

#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    pub keep: Vec<KeepReason>,
    /// The branch's tip when inspected; `None` if the branch is gone.
    #[serde(skip)]
    pub branch_tip: Option<String>,
}

pub fn inspect(target: &Target) -> Inspection {
    let root = target.task.root();
    let placed = target.task.placed;
    let tip = target.task.fresh_tip();
    // A task repository whose commits cannot be read (a git dir the child broke) is a doubt,
    // never "nothing to keep": its checkout may hold work.
    let unreadable = match &tip {
        Err(err) if placed.own_repo() && placed.path.exists() => Some(err.clone()),
        _ => None,
    };
    let branch_tip = tip.ok();
    let still_merged = target.merged.filter(|merge| {
        root.yes([
            "merge-base",
            "--is-ancestor",
            "--end-of-options",
            &merge.head,
            &merge.target_ref,
        ])
        .unwrap_or(false)
    });
    // The checkout's files as a tree, taken once for its own changes and its submodules'.
    let tree = match (&branch_tip, &unreadable) {
        (Some(tip), None) if placed.path.exists() => Some(target.task.tree_from(tip)),
        _ => None,
    };
    let facts = Facts {
        dirty: match (&branch_tip, unreadable) {
            (_, Some(err)) => Err(err),
            (Some(tip), None) => dirty(target, tip, tree.as_ref(), still_merged),
            (None, None) => Ok(false),
        },
        unmerged: match &branch_tip {
            Some(tip) => unmerged(&root, tip, target, still_merged),
            None => Ok(0),
        },
        live: live_processes(&target.task.placed.path),
        inventory: take_inventory(target, branch_tip.as_deref(), tree.as_ref(), still_merged),
    };
    Inspection {
        keep: keep_reasons(&facts),
        branch_tip,
    }
}

/// The file in the task directory that says a removal was decided at a tip and has begun.
/// A removal cut short (killed with its git, half-way through deleting the checkout) leaves a
/// checkout with files missing, which alone reads as changes; with this, the next removal
/// finishes it as long as the checkout holds nothing the tip does not (files only deleted).
const REMOVING: &str = "removing";

/// The tip a removal of this checkout began at, if one was cut short.
fn removal_begun_at(target: &Target) -> Option<String> {
    let bytes = crate::effects::store::read_small(&target.task.scratch.join(REMOVING)).ok()?;
    String::from_utf8(bytes).ok()
}

/// Whether the checkout's tree differs from the tip's only by files gone.
fn only_deletions(root: &Git, tip_tree: &str, tree: &str) -> Result<bool> {
    let added_or_changed = root.run([
        "diff-tree",
        "-r",
        "--no-renames",
        "--name-only",
        "--diff-filter=d",
        tip_tree,
        tree,
    ])?;
    Ok(added_or_changed.trim().is_empty())
}

/// Work in the checkout that is neither in its tip nor in what cuekit merged of it (a task
/// repository's merged leftovers live only in the user's repository).
fn dirty(
    target: &Target,
    tip: &str,
    tree: Option<&Result<String>>,
    merged: Option<&MergeRecord>,
) -> Result<bool> {
    let Some(tree) = tree else {
        return Ok(false);
    };
    let tree = tree.clone()?;
    let root = target.task.root();
    let tree_of = |commit: &str| root.line(["rev-parse", &format!("{commit}^{{tree}}")]);
    let tip_tree = tree_of(tip)?;
    if tree == tip_tree {
        return Ok(false);
    }
    // A removal of this very tip cut short: what it deleted is no loss, anything else is.
    if removal_begun_at(target).as_deref() == Some(tip) && only_deletions(&root, &tip_tree, &tree)?
    {
        return Ok(false);
    }
    Ok(match merged {
        Some(merge) => tree != tree_of(&merge.task_tip)?,
        None => true,
    })
}

/// The inventory of what else the task holds ([`super::inventory`]), against what a removal
/// keeps: the base (its commit and its branch now), the task's tip (judged by [`unmerged`])
/// and cuekit's merge of it while that still stands.
fn take_inventory(
    target: &Target,
    tip: Option<&str>,
    tree: Option<&Result<String>>,
    merged: Option<&MergeRecord>,
) -> Result<Vec<super::inventory::Unsaved>> {
    let placed = target.task.placed;
    let mut kept = vec![placed.base_commit.clone()];
    kept.extend(tip.map(str::to_string));
    kept.extend(merged.map(|merge| merge.task_tip.clone()));
    kept.extend(placed.base_full_ref.as_deref().and_then(|full| {
        target
            .task
            .root()
            .resolve(&format!("{full}^{{commit}}"))
            .ok()
    }));
    let tree = match tree {
        Some(Ok(tree)) => Some(tree.as_str()),
        // The checkout's own doubt is [`dirty`]'s to report.
        Some(Err(_)) => return Ok(Vec::new()),
        None => None,
    };
    let mut found = super::inventory::take(
        &target.task,
        tree,
        &super::inventory::Kept { commits: &kept },
    )?;
    if let (Some(tip), Some(_)) = (tip, tree) {
        found.extend(hidden_work(&target.task, tip)?);
    }
    Ok(found)
}

/// The checkout's untracked files that only its own ignore rules hide
/// ([`super::ignore_rules`]), as one inventory entry: git's own rules, which the child can
/// write, never decide what a removal drops.
fn hidden_work(checkout: &Checkout, tip: &str) -> Result<Option<super::inventory::Unsaved>> {
    let files = super::ignore_rules::hidden(checkout, tip)?;
    Ok((!files.is_empty()).then(|| super::inventory::Unsaved {
        holder: super::inventory::Holder::Hidden,
        name: super::ignore_rules::named(&files),
        place: checkout.placed.path.clone(),
        commits: None,
    }))
}

/// Commits on the branch that neither its base nor cuekit's last merge of it holds. The merge
/// counts only while its result is still on the target: one undone there (`git reset`) no
/// longer vouches for the task's commits.
fn unmerged(
    root: &Git,
    tip: &str,
    target: &Target,
    still_merged: Option<&MergeRecord>,
) -> Result<usize> {
    let placed = target.task.placed;
    let base = placed
        .base_full_ref
        .as_deref()
        .and_then(|full| root.resolve(&format!("{full}^{{commit}}")).ok())
        .unwrap_or_else(|| placed.base_commit.clone());
    let mut rev_list = vec!["rev-list", "--count", tip, "--not", &base];
    if let Some(merge) = still_merged {
        rev_list.push(&merge.task_tip);
    }
    let count = root.line(rev_list)?;
    count.parse().map_err(|_| {
        crate::domain::error::Error::new(
            crate::domain::error::ErrorCode::Io,
            format!("git rev-list answered '{count}'"),
        )
    })
}

/// Processes whose working directory is inside the worktree (Linux `/proc`; elsewhere the
/// question cannot be answered, which keeps the worktree).
fn live_processes(worktree: &Path) -> Result<Vec<u32>> {
    if !worktree.exists() {
        return Ok(Vec::new());
    }
    let proc = Path::new("/proc");
    let entries = std::fs::read_dir(proc)
        .map_err(|err| crate::domain::error::Error::io("read", proc, err))?;
    Ok(entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd"))
                .is_ok_and(|cwd| cwd.starts_with(worktree))
        })
        .collect())
}

/// How long a race's tidy waits for the processes in a loser's checkout to go: a candidate is
/// judged ended on the exit code its launch writes a moment before its shell exits there (much
/// more than a moment on a loaded machine), and that shell must not keep the checkout.
const LEAVING_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// [`live_processes`] once those about to end have, within [`LEAVING_GRACE`]: what still works
/// there then (a server the child left) keeps the checkout.
fn still_working(worktree: &Path) -> Result<Vec<u32>> {
    let deadline = std::time::Instant::now() + LEAVING_GRACE;
    loop {
        let pids = live_processes(worktree)?;
        if pids.is_empty() || std::time::Instant::now() >= deadline {
            return Ok(pids);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Cleanup {
    Removed {
        worktree: PathBuf,
        branch: Option<String>,
    },
    Kept {
        worktree: PathBuf,
        reasons: Vec<KeepReason>,
    },
}

/// Inspects under the lock and removes the worktree, then the branch; `force` overrides the
/// keep reasons (never a failed lock or a failed removal). A task repository goes whole: its
/// checkout, its git dir, and the pin and work ref it left in the user's repository.
pub fn remove(target: &Target, force: bool) -> Result<Cleanup> {
    let placed = target.task.placed;
    let root = target.task.root();
    let _lock = super::lock_in(&placed.common_dir)?;
    let inspection = inspect(target);
    if !inspection.keep.is_empty() && !force {
        return Ok(Cleanup::Kept {
            worktree: placed.path.clone(),
            reasons: inspection.keep,
        });
    }
    let journal = target.task.scratch.join(REMOVING);
    // Resumed: the inspection above found nothing but files this removal deleted.
    let resumed =
        inspection.branch_tip.is_some() && removal_begun_at(target) == inspection.branch_tip;
    if let Some(tip) = &inspection.branch_tip {
        crate::effects::store::write_atomic(&journal, tip.as_bytes())?;
    }
    if placed.own_repo() {
        super::task_repo::remove_placed(placed);
    } else if placed.path.exists() {
        remove_worktree(&root, &placed.path, force || resumed)?;
    } else {
        root.run(["worktree", "prune"])?;
    }
    // The `<repo>.worktrees` folder goes with its last worktree (only if empty).
    if let Some(parent) = placed.path.parent() {
        let _ = std::fs::remove_dir(parent);
    }
    let branch = match &inspection.branch_tip {
        Some(_) if placed.own_repo() => Some(placed.work_ref()),
        Some(tip) => {
            root.run(args::delete_branch_at(&placed.branch, tip))?;
            Some(placed.branch.clone())
        }
        None => None,
    };
    let _ = std::fs::remove_file(&journal);
    Ok(Cleanup::Removed {
        worktree: placed.path.clone(),
        branch,
    })
}

/// `git worktree remove`, for a checkout its inspection let go. git refuses a checkout whose
/// `.git` file is gone (a removal cut short deletes it first): that one's folder is removed
/// here (no link followed) and git forgets it by `worktree prune`.
fn remove_worktree(root: &Git, path: &Path, force: bool) -> Result<()> {
    if std::fs::symlink_metadata(path.join(".git")).is_err() {
        std::fs::remove_dir_all(path).map_err(|err| Error::io("remove", path, err))?;
        return root.run(["worktree", "prune"]).map(drop);
    }
    match root.run(args::worktree_remove(path, force)) {
        // git refuses any worktree holding a submodule; the inventory above found nothing
        // of the submodules' own that would be lost.
        Err(err) if !force && err.message.contains("containing submodules") => {
            root.run(args::worktree_remove(path, true)).map(drop)
        }
        done => done.map(drop),
    }
}

/// Why the checkout of a submit that was cut short must stay (its child may have run before the
/// submit died): the work [`inspect`] finds, against its base alone. Read with an index of
/// cuekit's in the data dir (the task's folder is gone by then). A checkout that cannot be
/// inspected is one the submit left half-made, where no child ran: it goes.
pub fn abandoned_work(placed: &WorktreePlacement) -> Vec<KeepReason> {
    if !placed.path.exists() {
        return Vec::new();
    }
    let name = placed.path.file_name().unwrap_or_default();
    let Some(scratch) = crate::effects::store::data_dir().map(|dir| dir.join("reap").join(name))
    else {
        return Vec::new();
    };
    if std::fs::create_dir_all(&scratch).is_err() {
        return Vec::new();
    }
    let target = Target {
        task: Checkout {
            placed,
            scratch: &scratch,
        },
        merged: None,
    };
    let mut keep = inspect(&target).keep;
    let _ = std::fs::remove_dir_all(&scratch);
    keep.retain(|reason| !matches!(reason, KeepReason::InspectionFailed(_)));
    keep
}

/// [`remove_checkout`] for work kept at `kept` (a race's ref of a loser): the checkout goes
/// only when its inventory ([`super::inventory`]) finds nothing that `kept` and the base do not
/// hold — its files, its git dir's refs and reflogs, its submodules — and no process works in
/// it. What it found is returned, and then nothing was removed.
pub fn remove_saved_checkout(
    checkout: &Checkout,
    kept: &str,
) -> Result<Vec<super::inventory::Unsaved>> {
    let placed = checkout.placed;
    // A process still working there (a build, a server the child started) keeps it, as it
    // keeps a worktree from `rm`.
    let working: Vec<super::inventory::Unsaved> = still_working(&placed.path)?
        .into_iter()
        .map(|pid| super::inventory::Unsaved {
            holder: super::inventory::Holder::Process,
            name: pid.to_string(),
            place: placed.path.clone(),
            commits: None,
        })
        .collect();
    if !working.is_empty() {
        return Ok(working);
    }
    let found = {
        let _lock = super::lock_in(&placed.common_dir)?;
        let tree = match placed.path.is_dir() {
            true => Some(checkout.tree_from(kept)?),
            false => None,
        };
        let root = checkout.root();
        if let Some(tree) = &tree
            && *tree != root.line(["rev-parse", &format!("{kept}^{{tree}}")])?
        {
            // Files changed since the work was kept: they are not in it.
            return Ok(vec![super::inventory::Unsaved {
                holder: super::inventory::Holder::Files,
                name: ".".to_string(),
                place: placed.path.clone(),
                commits: None,
            }]);
        }
        if tree.is_some()
            && let Some(hidden) = hidden_work(checkout, kept)?
        {
            return Ok(vec![hidden]);
        }
        let commits = [kept.to_string(), placed.base_commit.clone()];
        super::inventory::take(
            checkout,
            tree.as_deref(),
            &super::inventory::Kept { commits: &commits },
        )?
    };
    if found.is_empty() {
        remove_checkout(placed)?;
    }
    Ok(found)
}

/// Removes a task's checkout and nothing else, whatever it holds: its branch (or, for a task
/// in a repository of its own, the work ref fetched into the user's repository) stays, so its
/// committed work can still be merged or diffed. For work a caller has kept already (a race's
/// losers, their work committed and kept at a ref of their race).
pub fn remove_checkout(placed: &WorktreePlacement) -> Result<()> {
    let root = Git::new(&placed.repo_root);
    let _lock = super::lock_in(&placed.common_dir)?;
    if placed.own_repo() {
        // What the child wrote is removed without following a link.
        for dir in [Some(&placed.path), placed.git_dir.as_ref()]
            .into_iter()
            .flatten()
        {
            match std::fs::remove_dir_all(dir) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io("remove", dir, err));
                }
                _ => {}
            }
        }
    } else if placed.path.exists() {
        root.run(args::worktree_remove(&placed.path, true))?;
    } else {
        root.run(["worktree", "prune"])?;
    }
    if let Some(parent) = placed.path.parent() {
        let _ = std::fs::remove_dir(parent);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::error::{Error, ErrorCode};

    #[test]
    fn any_doubt_or_unsaved_work_keeps_the_worktree() {
        let clean = Facts {
            dirty: Ok(false),
            unmerged: Ok(0),
            live: Ok(vec![]),
            inventory: Ok(vec![]),
        };
        assert!(keep_reasons(&clean).is_empty());
        let busy = Facts {
            dirty: Ok(true),
            unmerged: Ok(2),
            live: Ok(vec![42]),
            inventory: Ok(vec![]),
        };
        assert_eq!(
            keep_reasons(&busy),
            [
                KeepReason::UncommittedChanges,
                KeepReason::UnmergedCommits(2),
                KeepReason::LiveProcess(vec![42])
            ]
        );
        let unknown = Facts {
            dirty: Err(Error::new(ErrorCode::Io, "git failed")),
            unmerged: Ok(0),
            live: Ok(vec![]),
            inventory: Ok(vec![]),
        };
        assert_eq!(
            keep_reasons(&unknown),
            [KeepReason::InspectionFailed("git failed".into())]
        );
    }
}
