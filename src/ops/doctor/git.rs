//! git: a version that reads task repositories safely, and worktrees no task knows.

use std::path::{Path, PathBuf};

use crate::domain::adapter::VERSION_TIMEOUT;
use crate::effects::config::Config;
use crate::effects::store;

use super::tmux::parse_version;
use super::{Check, Level};

/// Oldest git `--worktree` tasks work with: `merge-tree --write-tree` finds conflicts without
/// touching a work tree.
pub(super) const MIN_GIT: (u32, u32) = (2, 38);

/// The git that reads an untrusted task repository safely (docs/guides/sandbox.md).
pub(super) const SAFE_GIT: (u32, u32, u32) = (2, 45, 1);

/// `git version 2.45.1` as (2, 45, 1); a missing part is 0.
pub(super) fn patch_level(text: &str) -> (u32, u32, u32) {
    let start = text
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(text.len());
    let mut parts = text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .map(|part| part.parse().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

pub(super) fn git_check() -> Check {
    let version = crate::effects::bounded::Bounded::new("git", VERSION_TIMEOUT)
        .arg("--version")
        .run()
        .ok()
        .filter(|out| out.success())
        .map(|out| {
            String::from_utf8_lossy(&out.stdout.bytes())
                .trim()
                .to_string()
        });
    match version {
        None => Check::new("git", Level::Warn, "git is not installed")
            .next("install git to run tasks in their own worktrees (--worktree)"),
        Some(text) => match parse_version(&text) {
            Some(found) if found >= MIN_GIT && patch_level(&text) >= SAFE_GIT => {
                Check::new("git", Level::Ok, text)
            }
            Some(found) if found >= MIN_GIT => Check::new(
                "git",
                Level::Warn,
                format!(
                    "{text}: reading a sandboxed task's work safely needs git 2.45.1 or newer \
                     (the fetch fixes of CVE-2024-32004 and its kin; GIT_ATTR_SOURCE, 2.40, keeps \
                     the child's .gitattributes from choosing one of your filters)"
                ),
            )
            .next(
                "upgrade git; a distribution's backport of those fixes (Debian 12's 2.39.5) \
                 covers the fetch, not the attributes",
            ),
            _ => Check::new(
                "git",
                Level::Warn,
                format!("{text}: --worktree needs git 2.38 or newer"),
            )
            .next("upgrade git to run tasks in their own worktrees"),
        },
    }
}

/// Worktrees on cuekit's branches that no task record knows; `--fix` removes only those the
/// cleanup rules let go (clean, merged into the checkout's HEAD, nothing running inside).
pub(super) fn worktree_check(cwd: &Path, config: &Config, fix: bool) -> Option<Check> {
    use crate::effects::git::{cleanup, worktrees};
    let root = crate::effects::git::toplevel(cwd)?;
    let name = "task worktrees";
    let listed = match worktrees::list(&root) {
        Ok(listed) => listed,
        Err(err) => return Some(Check::new(name, Level::Warn, err.message)),
    };
    // Known: every worktree the registry gave a task, and (keeping more is the safe side)
    // every one a record names, so `--fix` never removes a worktree something still claims.
    let placements: Vec<store::Placement> = store::registered_ids()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|id| store::placement(&id).ok()?)
        .collect();
    let registered = placements
        .iter()
        .filter_map(|p| Some(p.facts.as_ref()?.worktree.as_ref()?.path.clone()));
    let known: Vec<PathBuf> = placements
        .iter()
        .map(|placement| placement.task_dir.clone())
        .chain(
            store::project_tasks_root(cwd)
                .and_then(|tasks| std::fs::read_dir(tasks).ok())
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path()),
        )
        .filter_map(|dir: PathBuf| store::load(&dir).ok()?.worktree.map(|w| w.path))
        .chain(registered)
        .collect();
    // The user's prefix (or the built-in), never a project file's: what `--fix` removes is
    // decided by the user's own settings.
    let prefix = config.user_branch_prefix();
    let orphans = worktrees::orphans(&listed, &prefix, &known);
    if orphans.is_empty() {
        return Some(Check::new(
            name,
            Level::Ok,
            "every cuekit worktree belongs to a task",
        ));
    }
    let head = crate::effects::git::Git::new(&root)
        .line(["rev-parse", "HEAD"])
        .unwrap_or_default();
    let common_dir = crate::effects::git::Git::new(&root)
        .line(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join(".git"));
    // cuekit's index of an orphan lives in the data dir while it is looked at.
    let scratch = store::data_dir().map(|dir| dir.join("doctor"));
    if let Some(dir) = &scratch {
        let _ = store::create_private_dir(dir);
    }
    let mut lines = Vec::new();
    let mut fixed = Vec::new();
    for orphan in orphans {
        let branch = orphan.branch.clone().unwrap_or_default();
        let placed = store::WorktreePlacement {
            repo_root: root.clone(),
            path: orphan.path.clone(),
            branch: branch.clone(),
            base_ref: head.clone(),
            base_full_ref: None,
            base_commit: head.clone(),
            common_dir: common_dir.clone(),
            git_dir: None,
            tip_ref: None,
        };
        let target = cleanup::Target {
            task: crate::effects::git::checkout::Checkout {
                placed: &placed,
                scratch: scratch.as_deref().unwrap_or(&root),
            },
            merged: None,
        };
        let outcome = if fix {
            cleanup::remove(&target, false).map(|c| match c {
                cleanup::Cleanup::Removed { .. } => Vec::new(),
                cleanup::Cleanup::Kept { reasons, .. } => reasons,
            })
        } else {
            Ok(cleanup::inspect(&target).keep)
        };
        let described = format!("{} ({branch})", orphan.path.display());
        match outcome {
            Ok(reasons) if reasons.is_empty() && fix => fixed.push(described),
            Ok(reasons) if reasons.is_empty() => lines.push(format!("{described}: safe to remove")),
            Ok(reasons) => {
                let why: Vec<String> = reasons.iter().map(ToString::to_string).collect();
                lines.push(format!("{described}: kept, {}", why.join("; ")));
            }
            Err(err) => lines.push(format!("{described}: kept, {}", err.message)),
        }
    }
    let mut check = if lines.is_empty() {
        Check::new(name, Level::Ok, "no orphaned cuekit worktree left")
    } else {
        Check::new(
            name,
            Level::Warn,
            format!("worktrees no task knows about: {}", lines.join("; ")),
        )
        .next("`cuekit doctor --fix` removes the safe ones; look into the kept ones, then `git worktree remove`")
    };
    if !fixed.is_empty() {
        check.fixed = Some(format!("removed {}", fixed.join(", ")));
    }
    Some(check)
}
