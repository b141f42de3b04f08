//! Creating a task's worktree: every check first (a repository, a base that resolves, a free
//! branch name and folder), then `git worktree add`, submodules and included files. A failure
//! half-way removes what this creation made, and nothing else.

use std::path::{Path, PathBuf};

use super::include::{Includes, bring_over};
use super::{Git, args, plan};
use crate::error::{Error, Result};

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
    pub base_commit: String,
    /// The caller's directory relative to the repository root: the agent starts there too.
    pub subdir: PathBuf,
    /// The repository's git common dir, where cuekit's worktree lock lives.
    pub common_dir: PathBuf,
}

impl Plan {
    /// Where the agent starts: the caller's subdirectory if the new tree has it.
    pub fn agent_dir(&self) -> PathBuf {
        let dir = self.path.join(&self.subdir);
        if dir.is_dir() { dir } else { self.path.clone() }
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
    let branch = plan::branch_name(request.branch, request.branch_prefix, request.task_id);
    // A name built from the built-in prefix and a fresh random id is valid and free; checking
    // it would cost two git processes on every submit (and `worktree add -b` refuses an
    // existing branch before creating anything anyway).
    let generated =
        request.branch.is_none() && request.branch_prefix == plan::DEFAULT_BRANCH_PREFIX;
    if !generated {
        check_branch(&git, &branch)?;
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
    Ok(Plan {
        repo_root,
        path,
        branch,
        base_ref,
        base_commit,
        subdir,
        common_dir,
    })
}

/// A valid branch name that does not exist yet.
fn check_branch(git: &Git, branch: &str) -> Result<()> {
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
    if git.yes([
        "show-ref",
        "--verify",
        "--quiet",
        &format!("refs/heads/{branch}"),
    ])? {
        return Err(
            Error::invalid_input(format!("the branch '{branch}' already exists")).with_hint(
                "name another with --branch (cuekit never reuses or resets an existing branch)",
            ),
        );
    }
    Ok(())
}

/// Creates the planned worktree with its submodules and included files; on failure removes
/// what it made.
pub fn create(plan: &Plan, includes: &Includes) -> Result<()> {
    let git = Git::new(&plan.repo_root);
    if let Some(parent) = plan.path.parent() {
        std::fs::create_dir_all(parent).map_err(|err| Error::io("create", parent, err))?;
    }
    {
        let _lock = super::lock_in(&plan.common_dir)?;
        git.run(args::worktree_add(
            &plan.path,
            &plan.branch,
            &plan.base_commit,
        ))?;
    }
    let populated =
        init_submodules(plan).and_then(|()| bring_over(&plan.repo_root, &plan.path, includes));
    if let Err(err) = populated {
        remove_created(plan);
        return Err(err);
    }
    Ok(())
}

/// Undoes [`create`]: this worktree (just made, holding nothing of anyone's) and its branch,
/// only while the branch is still at the base commit.
pub fn remove_created(plan: &Plan) {
    let git = Git::new(&plan.repo_root);
    let _lock = super::lock_in(&plan.common_dir);
    if git.run(args::worktree_remove(&plan.path, true)).is_err() {
        let _ = std::fs::remove_dir_all(&plan.path);
        let _ = git.run(["worktree", "prune"]);
    }
    let _ = git.run(args::delete_branch_at(&plan.branch, &plan.base_commit));
}

/// Submodules the base records, initialised from the main checkout's copies where it has them
/// (no network, objects shared), else from their URLs.
fn init_submodules(plan: &Plan) -> Result<()> {
    if !plan.path.join(".gitmodules").is_file() {
        return Ok(());
    }
    let tree = Git::new(&plan.path);
    let listed = tree
        .output([
            "config",
            "--file",
            ".gitmodules",
            "-z",
            "--get-regexp",
            r"^submodule\..*\.path$",
        ])?
        .stdout;
    for entry in String::from_utf8_lossy(&listed).split('\0') {
        let Some((key, path)) = entry.split_once('\n') else {
            continue;
        };
        let Some(name) = key
            .strip_prefix("submodule.")
            .and_then(|k| k.strip_suffix(".path"))
        else {
            continue;
        };
        let local = plan.repo_root.join(path);
        if local.join(".git").exists() {
            tree.run(args::submodule_from_local(name, &local, path))?;
            // The clone's remote is the local copy; give it the submodule's real URL back.
            let url_key = format!("submodule.{name}.url");
            let url = Git::new(&plan.repo_root)
                .line(["config", "--get", &url_key])
                .or_else(|_| tree.line(["config", "--file", ".gitmodules", "--get", &url_key]));
            if let Ok(url) = url {
                Git::new(plan.path.join(path)).run(["remote", "set-url", "origin", &url])?;
            }
        } else {
            tree.run(["submodule", "update", "--init", "--recursive", "--", path])?;
        }
    }
    Ok(())
}
