//! Creating a task's worktree: every check first (a repository, a base that resolves, a free
//! branch name and folder), then `git worktree add`, submodules and included files. A failure
//! half-way removes what this creation made, and nothing else.

use std::path::{Path, PathBuf};

use super::include::{Includes, bring_over};
use super::{Git, args, plan};
use crate::domain::error::{Error, Result};
use crate::effects::store::WorktreePlacement;

/// What a new worktree needs, as the caller asked.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The caller's directory, inside the repository.
    pub cwd: &'a Path,
    pub task_id: &'a str,
    pub base: Option<&'a str>,
    pub branch: Option<&'a str>,
    pub dir_template: &'a str,
    pub branch_prefix: &'a str,
    /// A repository of the task's own (a sandboxed task), else a git worktree.
    pub own_repo: bool,
}

/// A worktree that can be created: every name checked, the base resolved to a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Top of the caller's work tree (the checkout the task was submitted from).
    pub repo_root: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    /// The base as the caller named it (their branch when they named none).
    pub base_ref: String,
    /// The ref `base_ref` names, in full, when it names one (not a bare commit).
    pub base_full_ref: Option<String>,
    pub base_commit: String,
    /// The caller's directory relative to the repository root: the agent starts there too.
    pub subdir: PathBuf,
    /// The repository's git common dir, where cuekit's worktree lock lives.
    pub common_dir: PathBuf,
    /// For a repository of the task's own: its git dir and the task's id.
    pub own_repo: Option<(PathBuf, String)>,
}

impl Plan {
    /// Where the agent starts: the caller's subdirectory if the new tree has it.
    pub fn agent_dir(&self) -> PathBuf {
        let dir = self.path.join(&self.subdir);
        if dir.is_dir() { dir } else { self.path.clone() }
    }

    /// What the registry keeps of the worktree: all that cleanup, diff and merge act on.
    pub fn placement(&self) -> WorktreePlacement {
        WorktreePlacement {
            repo_root: self.repo_root.clone(),
            path: self.path.clone(),
            branch: self.branch.clone(),
            base_ref: self.base_ref.clone(),
            base_full_ref: self.base_full_ref.clone(),
            base_commit: self.base_commit.clone(),
            common_dir: self.common_dir.clone(),
            git_dir: self.own_repo.as_ref().map(|(dir, _)| dir.clone()),
            tip_ref: self
                .own_repo
                .as_ref()
                .map(|(_, id)| super::task_repo::tip_ref(id)),
        }
    }
}

/// Checks everything a creation needs; creates nothing.
pub fn plan(request: &Request) -> Result<Plan> {
    // One git call for both: every call costs a process start on each submit.
    let found = Git::new(request.cwd)
        .run([
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
        ])
        .ok();
    let mut lines = found.as_deref().unwrap_or("").lines().map(PathBuf::from);
    let (Some(repo_root), Some(common_dir)) = (lines.next(), lines.next()) else {
        return Err(Error::invalid_input(format!(
            "{} is not in a git repository: --worktree needs one",
            request.cwd.display()
        ))
        .with_hint(
            "run from inside a git checkout (or `git init`), or submit without --worktree",
        ));
    };
    let git = Git::new(&repo_root);
    for (flag, named) in [("--base", request.base), ("--branch", request.branch)] {
        if let Some(name) = named
            && crate::effects::project::names::option_value(flag, name).is_err()
        {
            return Err(Error::invalid_input(format!(
                "{flag} '{name}' is not a git name (it must not start with '-')"
            ))
            .with_hint("name a branch, tag or commit"));
        }
    }
    let base_ref = match request.base {
        Some(base) => base.to_string(),
        None => git
            .line(["symbolic-ref", "--quiet", "--short", "HEAD"])
            .unwrap_or_else(|_| "HEAD".to_string()),
    };
    let base_commit = git
        .resolve(&format!("{base_ref}^{{commit}}"))
        .map_err(|_| {
            Error::invalid_input(format!(
                "the base '{base_ref}' does not resolve to a commit"
            ))
            .with_hint(if request.base.is_some() {
                "name an existing branch, tag or commit with --base"
            } else {
                "the repository has no commit yet: commit something first"
            })
        })?;
    // The full name of what the base names, so no branch made later can stand for it.
    let base_full_ref = git
        .line(["rev-parse", "--symbolic-full-name", &base_ref])
        .ok()
        .filter(|full| full.starts_with("refs/"));
    let branch = plan::branch_name(request.branch, request.branch_prefix, request.task_id);

    // A name built from the built-in prefix and a fresh random id is valid and free; checking
    // it would cost two git processes on every submit (and `worktree add -b` refuses an
    // existing branch before creating anything anyway).
    // A task repository's branch lives only there: the user's branches are no concern.
    let generated =
        request.branch.is_none() && request.branch_prefix == plan::DEFAULT_BRANCH_PREFIX;
    if !generated {
        check_branch(&git, &branch, !request.own_repo)?;
    }
    if branch == base_ref {
        return Err(Error::invalid_input(format!(
            "the task's branch '{branch}' would have the base's own name"
        ))
        .with_hint("name the new branch differently with --branch (it would shadow the base)"));
    }
    let path = plan::worktree_path(request.dir_template, &repo_root, request.task_id)?;
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(
            Error::invalid_input(format!("{} already exists", path.display()))
                .with_hint("remove it, or set worktree.dir to a free location"),
        );
    }
    let subdir = request
        .cwd
        .strip_prefix(&repo_root)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let own_repo = match request.own_repo {
        false => None,
        true => {
            let dir = super::task_repo::git_dir(request.task_id).ok_or_else(|| {
                Error::invalid_input("no data directory for the task's repository")
                    .with_hint("set HOME")
            })?;
            if std::fs::symlink_metadata(&dir).is_ok() {
                return Err(
                    Error::invalid_input(format!("{} already exists", dir.display()))
                        .with_hint("remove it: it is a left-over task repository"),
                );
            }
            Some((dir, request.task_id.to_string()))
        }
    };
    Ok(Plan {
        repo_root,
        path,
        branch,
        base_ref,
        base_full_ref,
        base_commit,
        subdir,
        common_dir,
        own_repo,
    })
}

/// A valid branch name that does not exist yet (in the user's repository, when `free_here`).
fn check_branch(git: &Git, branch: &str, free_here: bool) -> Result<()> {
    // git answers a bad name with status 128, not 1.
    if !git
        .output(["check-ref-format", "--branch", branch])?
        .status
        .success()
    {
        return Err(
            Error::invalid_input(format!("'{branch}' is not a valid branch name"))
                .with_hint("see `git check-ref-format --help`"),
        );
    }
    if free_here
        && git.yes([
            "show-ref",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])?
    {
        return Err(
            Error::invalid_input(format!("the branch '{branch}' already exists")).with_hint(
                "name another with --branch (cuekit never reuses or resets an existing branch)",
            ),
        );
    }
    Ok(())
}

/// Creates the planned worktree (or task repository) with its submodules and included files;
/// on failure removes what it made.
pub fn create(plan: &Plan, includes: &Includes) -> Result<()> {
    if let Some((git_dir, id)) = &plan.own_repo {
        let layout = super::task_repo::Layout {
            repo_root: &plan.repo_root,
            common_dir: &plan.common_dir,
            path: &plan.path,
            branch: &plan.branch,
            base_commit: &plan.base_commit,
        };
        return super::task_repo::create(&layout, id, git_dir, includes);
    }
    let git = Git::new(&plan.repo_root);
    if let Some(parent) = plan.path.parent() {
        super::place::make_folder(parent)?;
        super::private::narrow_like(parent, &plan.repo_root)?;
    }
    {
        let lock = super::lock_in(&plan.common_dir)?;
        let add = args::worktree_add(&plan.path, &plan.branch, &plan.base_commit);
        let branch_before = git.resolve(&format!("refs/heads/{}", plan.branch)).is_ok();
        let path_before = plan.path.symlink_metadata().is_ok();
        if let Err(err) = git.run_holding(&add, &lock) {
            // git makes the branch before the checkout: a checkout that failed (a full disk)
            // leaves a branch no record names, and perhaps half a worktree. What this `add`
            // made goes; what was there before it is never touched.
            if !path_before {
                let _ = git.run(args::worktree_remove(&plan.path, true));
                let _ = std::fs::remove_dir_all(&plan.path);
                let _ = git.run(["worktree", "prune"]);
            }
            if !branch_before {
                let _ = git.run(args::delete_branch_at(&plan.branch, &plan.base_commit));
            }
            return Err(err);
        }
    }
    let populated = super::place::prove_checkout(&plan.path)
        .and_then(|()| super::submodules::init(&plan.path, &plan.repo_root))
        .and_then(|()| bring_over(&plan.repo_root, &plan.path, includes));
    if let Err(err) = populated {
        remove_created(plan);
        return Err(err);
    }
    Ok(())
}

/// Undoes what a submit that was cut short may have made (see `ops::reap`): the worktree only
/// if git lists one at that path on that branch, the branch only while it is still at the base
/// commit. Nothing else at that path is touched: the submit may have died before creating it.
pub fn remove_abandoned(placed: &WorktreePlacement) {
    if placed.own_repo() {
        return super::task_repo::remove_placed(placed);
    }
    let git = Git::new(&placed.repo_root);
    let Ok(_lock) = super::lock_in(&placed.common_dir) else {
        return;
    };
    let ours = super::worktrees::list_held(&placed.repo_root).is_ok_and(|listed| {
        listed
            .iter()
            .any(|w| w.path == placed.path && w.branch.as_deref() == Some(placed.branch.as_str()))
    });
    if ours {
        let _ = git.run(args::worktree_remove(&placed.path, true));
    }
    let _ = git.run(args::delete_branch_at(&placed.branch, &placed.base_commit));
}

/// Undoes [`create`]: this worktree (just made, holding nothing of anyone's) and its branch,
/// only while the branch is still at the base commit.
pub fn remove_created(plan: &Plan) {
    if let Some((git_dir, id)) = &plan.own_repo {
        return super::task_repo::remove(&plan.repo_root, &plan.path, git_dir, id);
    }
    let git = Git::new(&plan.repo_root);
    let _lock = super::lock_in(&plan.common_dir);
    if git.run(args::worktree_remove(&plan.path, true)).is_err() {
        let _ = std::fs::remove_dir_all(&plan.path);
        let _ = git.run(["worktree", "prune"]);
    }
    let _ = git.run(args::delete_branch_at(&plan.branch, &plan.base_commit));
}
