//! Conflicts between children, seen before the merge: which worktree tasks are checked, the
//! stored results (`store::conflicts`, one file per task in the registry), and the recheck that
//! runs git only for what changed.
//!
//! A check takes, for each task whose worktree fingerprint moved (`git::fingerprint`, no git
//! process), a tree of its worktree through a scratch index (uncommitted and untracked work
//! included, its own index and files untouched); then merges with `merge-tree` each pair of
//! tasks of one repository whose trees are not the pair's last ones, and each task with the
//! current tip of its target branch (the branch checked out in the repository root, where
//! `cuekit merge` merges by default; a detached root: the task's base branch). When nothing
//! changed, a check runs no git at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::domain::error::Result;
use crate::effects::git::checkout::Checkout;
use crate::effects::git::conflicts::{self as clash, ConflictFile, Side};
use crate::effects::git::{Git, fingerprint};
use crate::effects::store::conflicts::{self as stored, ConflictState, PairCheck, TargetCheck};
use crate::effects::store::{self, WorktreePlacement};
use crate::ops::task::{Found, Task, scan_project_each};

/// One conflict: two tasks, or a task and its target branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub a: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<String>,
    /// The target branch, for a conflict with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub files: Vec<ConflictFile>,
    /// The files' reasons, each once (`content`, `add/add`, …).
    pub reason: String,
}

impl Conflict {
    fn new(a: &str, b: Option<&str>, target: Option<&str>, files: &[ConflictFile]) -> Conflict {
        let mut reasons: Vec<&str> = Vec::new();
        for file in files {
            if !reasons.contains(&file.reason.as_str()) {
                reasons.push(&file.reason);
            }
        }
        Conflict {
            a: a.to_string(),
            b: b.map(String::from),
            target: target.map(String::from),
            files: files.to_vec(),
            reason: reasons.join(", "),
        }
    }

    /// What the other side is, as a mark: `t_…` or `target <branch>`.
    pub fn other(&self) -> String {
        match (&self.b, &self.target) {
            (Some(b), _) => b.clone(),
            (None, Some(target)) => format!("target {target}"),
            (None, None) => String::new(),
        }
    }
}

/// What `cuekit conflicts` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Conflicts {
    /// The tasks checked.
    pub checked: Vec<String>,
    pub conflicts: Vec<Conflict>,
}

/// A conflict the monitor has not announced yet, for task `task_id`.
#[derive(Debug, Clone)]
pub(crate) struct NewConflict {
    pub task_id: String,
    pub conflict: Conflict,
}

/// `cuekit conflicts [--team T]`: this project's worktree tasks (a team's members only, with
/// `team`), checked now against each other and their target.
pub fn conflicts(team: Option<&str>, cwd: &Path) -> Result<Conflicts> {
    let mut tasks = Vec::new();
    scan_project_each(cwd, |found| {
        if let Found::Trusted(task) = found
            && team.is_none_or(|team| task.record.team.as_deref() == Some(team))
        {
            tasks.push(*task);
        }
    })?;
    let tasks = candidates(tasks);
    let conflicts = check(&tasks, team.is_none())?;
    Ok(Conflicts {
        checked: tasks.iter().map(|t| t.record.id.clone()).collect(),
        conflicts,
    })
}

/// The tasks a check looks at: local, in a worktree that is still there, and not merged (a
/// merged task's work is in its target; what else it holds conflicts there, if anywhere). A
/// merged task's stored result is dropped.
pub(crate) fn candidates(tasks: Vec<Task>) -> Vec<Task> {
    tasks
        .into_iter()
        .filter(|task| {
            let Some(worktree) = task.worktree() else {
                return false;
            };
            if task.placement.host.is_some() || !worktree.path.is_dir() {
                return false;
            }
            if store::merge_of(&task.record.id).is_some() {
                stored::forget(&task.record.id);
                return false;
            }
            true
        })
        .collect()
}

/// The stored marks of one task, for its view (a file read; no git).
pub(crate) fn marks(task: &Task) -> Vec<String> {
    if task.worktree().is_none() {
        return Vec::new();
    }
    stored::load(&task.record.id)
        .map(|state| state.marks())
        .unwrap_or_default()
}

/// Checks `tasks` (each repository on its own) and returns every conflict among them. With
/// `whole`, `tasks` are all the repository's candidates: results naming any other task are
/// dropped.
pub(crate) fn check(tasks: &[Task], whole: bool) -> Result<Vec<Conflict>> {
    Ok(check_each(tasks, whole, false)?.0)
}

/// [`check`], and the conflicts not announced before (now marked announced).
pub(crate) fn check_new(tasks: &[Task], whole: bool) -> Result<Vec<NewConflict>> {
    Ok(check_each(tasks, whole, true)?.1)
}

fn check_each(
    tasks: &[Task],
    whole: bool,
    announce: bool,
) -> Result<(Vec<Conflict>, Vec<NewConflict>)> {
    let mut by_repo: BTreeMap<&Path, Vec<&Task>> = BTreeMap::new();
    for task in tasks {
        if let Some(worktree) = task.worktree() {
            by_repo
                .entry(worktree.common_dir.as_path())
                .or_default()
                .push(task);
        }
    }
    let mut all = Vec::new();
    let mut fresh = Vec::new();
    let _lock = stored::lock()?;
    for group in by_repo.into_values() {
        let (conflicts, new) = check_repo(&group, whole, announce)?;
        all.extend(conflicts);
        fresh.extend(new);
    }
    Ok((all, fresh))
}

struct Member<'a> {
    id: &'a str,
    worktree: &'a WorktreePlacement,
    scratch: &'a Path,
    state: ConflictState,
    dirty: bool,
}

fn check_repo(
    group: &[&Task],
    whole: bool,
    announce: bool,
) -> Result<(Vec<Conflict>, Vec<NewConflict>)> {
    let mut members: Vec<Member> = Vec::new();
    for task in group {
        let worktree = task.worktree().expect("grouped by worktree");
        let state = stored::load(&task.record.id).unwrap_or_default();
        let mut member = Member {
            id: &task.record.id,
            worktree,
            scratch: &task.record.task_dir,
            state,
            dirty: false,
        };
        // A worktree that cannot be read now (removed under way) is left out of this check.
        if refresh_tree(&mut member).is_ok() {
            members.push(member);
        }
    }
    let Some(first) = members.first().map(|m| m.worktree) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let git = Git::new(&first.repo_root);
    let ids: BTreeSet<String> = members.iter().map(|m| m.id.to_string()).collect();
    if whole {
        for member in &mut members {
            let before = member.state.pairs.len();
            member.state.pairs.retain(|other, _| ids.contains(other));
            member.dirty |= member.state.pairs.len() != before;
        }
    }
    for a in 0..members.len() {
        for b in a + 1..members.len() {
            pair(&git, &mut members, a, b)?;
        }
    }
    let stored_target = members.iter().find_map(|m| m.state.target.clone());
    let target = target_of(&git, first, stored_target.as_ref())?;
    for member in &mut members {
        check_target(&git, member, target.as_ref())?;
    }
    let mut conflicts = Vec::new();
    for (a, member) in members.iter().enumerate() {
        for other in &members[a + 1..] {
            if let Some(found) = member.state.pairs.get(other.id)
                && !found.files.is_empty()
            {
                conflicts.push(Conflict::new(member.id, Some(other.id), None, &found.files));
            }
        }
    }
    for member in &members {
        if let Some(target) = member.state.target.as_ref().filter(|t| !t.files.is_empty()) {
            conflicts.push(Conflict::new(
                member.id,
                None,
                Some(&target.branch),
                &target.files,
            ));
        }
    }
    let fresh = unannounced(&mut members, &conflicts, announce);
    for member in &members {
        if member.dirty {
            stored::save(member.id, &member.state)?;
        }
    }
    Ok((conflicts, fresh))
}

/// Takes the worktree's tree again only when its fingerprint moved (or it has none).
fn refresh_tree(member: &mut Member) -> Result<()> {
    let checkout = Checkout {
        placed: member.worktree,
        scratch: member.scratch,
    };
    let print = checkout.fingerprint();
    if print.is_some() && print == member.state.fingerprint && !member.state.tree.is_empty() {
        return Ok(());
    }
    let tree = checkout.tree()?;
    member.state.fingerprint = print;
    member.state.tree = tree;
    member.dirty = true;
    Ok(())
}

/// Merges two members' trees unless both are the ones last merged.
fn pair(git: &Git, members: &mut [Member], a: usize, b: usize) -> Result<()> {
    let (left, right) = members.split_at_mut(b);
    let (one, two) = (&mut left[a], &mut right[0]);
    let known = one
        .state
        .pairs
        .get(two.id)
        .is_some_and(|p| p.mine == one.state.tree && p.theirs == two.state.tree)
        && two
            .state
            .pairs
            .get(one.id)
            .is_some_and(|p| p.mine == two.state.tree && p.theirs == one.state.tree);
    if known {
        return Ok(());
    }
    let files = clash::between(
        git,
        Side {
            tree: &one.state.tree,
            base_commit: &one.worktree.base_commit,
        },
        Side {
            tree: &two.state.tree,
            base_commit: &two.worktree.base_commit,
        },
    )?;
    one.state.pairs.insert(
        two.id.to_string(),
        PairCheck {
            mine: one.state.tree.clone(),
            theirs: two.state.tree.clone(),
            files: files.clone(),
        },
    );
    two.state.pairs.insert(
        one.id.to_string(),
        PairCheck {
            mine: two.state.tree.clone(),
            theirs: one.state.tree.clone(),
            files,
        },
    );
    one.dirty = true;
    two.dirty = true;
    Ok(())
}

/// The target branch and its tip now. A stored one whose files (the root's `HEAD`, the ref,
/// `packed-refs`) have the same stat signature is taken as it is, without git; the signature
/// is taken before git reads the tip, so a move during the read shows next time.
fn target_of(
    git: &Git,
    worktree: &WorktreePlacement,
    stored: Option<&TargetCheck>,
) -> Result<Option<TargetCheck>> {
    if let Some(stored) = stored
        && signature(&stored.watched) == stored.signature
    {
        return Ok(Some(stored.clone()));
    }
    let git_dir = PathBuf::from(git.line(["rev-parse", "--absolute-git-dir"])?);
    let branch = match git.line(["symbolic-ref", "--quiet", "--short", "HEAD"]) {
        Ok(branch) => branch,
        Err(_) => match worktree
            .base_full_ref
            .as_deref()
            .and_then(|r| r.strip_prefix("refs/heads/"))
        {
            Some(branch) => branch.to_string(),
            None => return Ok(None),
        },
    };
    let common = &worktree.common_dir;
    let watched = vec![
        git_dir.join("HEAD"),
        common.join("refs/heads").join(&branch),
        common.join("packed-refs"),
    ];
    let signature = signature(&watched);
    let Ok(tip) = git.resolve(&format!("refs/heads/{branch}^{{commit}}")) else {
        return Ok(None);
    };
    Ok(Some(TargetCheck {
        branch,
        tip,
        signature,
        watched,
        mine: String::new(),
        files: Vec::new(),
    }))
}

fn signature(files: &[PathBuf]) -> u64 {
    files.iter().fold(0, |acc, file| {
        acc.rotate_left(17) ^ fingerprint::stat_of(file)
    })
}

fn check_target(git: &Git, member: &mut Member, target: Option<&TargetCheck>) -> Result<()> {
    let Some(target) = target.filter(|t| t.branch != member.worktree.branch) else {
        member.dirty |= member.state.target.take().is_some();
        return Ok(());
    };
    if let Some(done) = &member.state.target
        && done.branch == target.branch
        && done.tip == target.tip
        && done.mine == member.state.tree
    {
        if done.signature != target.signature {
            // The same tip, seen through rewritten files: remembered, so the next look is free.
            member.state.target = Some(TargetCheck {
                signature: target.signature,
                watched: target.watched.clone(),
                ..done.clone()
            });
            member.dirty = true;
        }
        return Ok(());
    }
    let files = clash::with_target(
        git,
        &target.tip,
        Side {
            tree: &member.state.tree,
            base_commit: &member.worktree.base_commit,
        },
    )?;
    member.state.target = Some(TargetCheck {
        mine: member.state.tree.clone(),
        files,
        ..target.clone()
    });
    member.dirty = true;
    Ok(())
}

/// The conflicts no member has announced, each once (a pair on its first task), marked
/// announced on both sides when `announce`; marks of conflicts that went away are dropped
/// either way, so one that comes back is new again.
fn unannounced(members: &mut [Member], conflicts: &[Conflict], announce: bool) -> Vec<NewConflict> {
    let mut live: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for conflict in conflicts {
        live.entry(&conflict.a)
            .or_default()
            .insert(conflict.other());
        if let Some(b) = &conflict.b {
            live.entry(b).or_default().insert(conflict.a.clone());
        }
    }
    let mut fresh = Vec::new();
    for conflict in conflicts {
        let other = conflict.other();
        let seen = |id: &str, mark: &str| {
            members
                .iter()
                .any(|m| m.id == id && m.state.announced.contains(mark))
        };
        let known = seen(&conflict.a, &other)
            || conflict.b.as_deref().is_some_and(|b| seen(b, &conflict.a));
        if !known {
            fresh.push(NewConflict {
                task_id: conflict.a.clone(),
                conflict: conflict.clone(),
            });
        }
    }
    for member in members.iter_mut() {
        let live = live.remove(member.id).unwrap_or_default();
        let now: BTreeSet<String> = if announce {
            live
        } else {
            member
                .state
                .announced
                .intersection(&live)
                .cloned()
                .collect()
        };
        if member.state.announced != now {
            member.state.announced = now;
            member.dirty = true;
        }
    }
    fresh
}
