//! The scratch checkout a check runs in: the child's work (committed and not, read on git's
//! safe paths by [`Checkout`]) with every protected path as the base has it, written out of
//! git's object store into a folder of cuekit's own data directory (outside the user's
//! repository, so no tool finds a parent project of it). Nothing the child's repository
//! configures runs: git reads the user's repository with cuekit's index, the empty tree's
//! attributes, and writes blobs as they are.

use std::path::PathBuf;

use crate::domain::check::{self, CheckPlan, Ecosystem, ProtectedEdit};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::git::Git;
use crate::effects::git::checkout::Checkout;
use crate::ops::task::Task;

/// A scratch checkout; removed when dropped.
pub(super) struct Scratch {
    /// Holds the tree and its index.
    root: PathBuf,
    /// The child's work, protected paths restored: where the check runs.
    pub tree: PathBuf,
    pub edits: Vec<ProtectedEdit>,
    /// The commit of the work the check reads ([`crate::effects::git::checked`]).
    pub commit: String,
    /// The changed files a merge asks to have reviewed ([`super::settings`]).
    pub review: Vec<String>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        crate::effects::check_run::remove_tree(&self.root);
    }
}

/// `ls-tree -r -z` of `tree`: `(path, "<mode> <type> <object>")`, sorted by path.
fn listing(git: &Git, tree: &str) -> Result<Vec<(String, String)>> {
    let out = git.run([
        "ls-tree",
        "-r",
        "-z",
        "--full-tree",
        "--end-of-options",
        tree,
    ])?;
    let mut entries: Vec<(String, String)> = out
        .split('\0')
        .filter_map(|line| {
            let (info, path) = line.split_once('\t')?;
            Some((path.to_string(), info.to_string()))
        })
        .collect();
    entries.sort();
    Ok(entries)
}

/// The globs protected for `plan`: its own, else the defaults of the ecosystems found at the
/// base's root.
fn globs(plan: &CheckPlan, base: &[(String, String)]) -> Vec<String> {
    if !plan.protect.is_empty() {
        return plan.protect.clone();
    }
    let root = base
        .iter()
        .map(|(path, _)| path.split('/').next().unwrap_or(path));
    check::default_protect(&Ecosystem::detect(root))
}

/// Makes the scratch checkout of `task`'s work for check round `round`.
pub(super) fn make(task: &Task, plan: &CheckPlan, round: u32) -> Result<Scratch> {
    let worktree = crate::ops::work::diff::worktree_of(task)?;
    let checkout = Checkout {
        placed: worktree,
        scratch: &task.record.task_dir,
    };
    let tip = checkout.tip()?;
    let work = checkout.tree_from(&tip)?;
    let commit = crate::effects::git::checked::bind(
        &checkout.root(),
        &work,
        &tip,
        &check::checked_ref(&task.record.id, round),
        &format!(
            "cuekit task {}: the work check round {round} ran on",
            task.record.id
        ),
    )?;
    let git = Git::new(&worktree.repo_root).on_task_tree();
    let base = listing(&git, &worktree.base_commit)?;
    let ours = listing(&git, &work)?;
    let globs = globs(plan, &base);
    let mut edits = check::protected_edits(&globs, &base, &ours);
    let steering = super::settings::steering(&Git::new(&worktree.repo_root), &base, &ours)?;
    edits.extend(steering.edits);

    let (root, tree) = fresh_root(task, &round.to_string())?;
    let scratch = Scratch {
        root: root.clone(),
        tree: tree.clone(),
        edits,
        commit,
        review: steering.review,
    };
    let index = root.join("index");
    let git = Git::over(&worktree.common_dir, &tree, &index);
    git.run(["read-tree", "--end-of-options", &work])?;
    let mut remove = Vec::new();
    for (path, _) in ours.iter().filter(|(p, _)| check::is_protected(&globs, p)) {
        remove.extend_from_slice(path.as_bytes());
        remove.push(0);
    }
    for path in &steering.remove {
        remove.extend_from_slice(path.as_bytes());
        remove.push(0);
    }
    let update = |args: &[&str], input: &[u8]| {
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        git.run_with(&args, &[], input).map(|_| ())
    };
    if !remove.is_empty() {
        update(
            &["update-index", "--force-remove", "-z", "--stdin"],
            &remove,
        )?;
    }
    let mut restore = Vec::new();
    for (path, info) in base.iter().filter(|(p, _)| check::is_protected(&globs, p)) {
        restore.extend_from_slice(format!("{info}\t{path}").as_bytes());
        restore.push(0);
    }
    if !restore.is_empty() {
        update(
            &["update-index", "--replace", "-z", "--index-info"],
            &restore,
        )?;
    }
    git.run(["checkout-index", "--all", "--force"])?;
    let mut scratch = scratch;
    if plan.protect.is_empty()
        && let Some(edit) = base_scripts(&Git::new(&worktree.repo_root), &base, &ours, &tree)?
    {
        scratch.edits.push(edit);
    }
    Ok(scratch)
}

/// `package.json`'s `scripts` as the base has them, the rest as the child left it (a default
/// protection: the test runner's words, not the dependencies), written over the scratch copy.
fn base_scripts(
    git: &Git,
    base: &[(String, String)],
    ours: &[(String, String)],
    tree: &std::path::Path,
) -> Result<Option<ProtectedEdit>> {
    let blob = |list: &[(String, String)]| {
        list.iter()
            .find(|(path, _)| path == check::SCRIPTS_FILE)
            .and_then(|(_, info)| info.strip_prefix("100644 blob "))
            .map(str::to_string)
    };
    let (Some(base), Some(ours)) = (blob(base), blob(ours)) else {
        return Ok(None);
    };
    if base == ours {
        return Ok(None);
    }
    let read = |oid: &str| git.run(["cat-file", "blob", "--end-of-options", oid]);
    let Some(merged) = check::with_base_scripts(&read(&base)?, &read(&ours)?) else {
        return Ok(None);
    };
    crate::effects::store::write_atomic(&tree.join(check::SCRIPTS_FILE), merged.as_bytes())?;
    Ok(Some(ProtectedEdit {
        path: format!("{} (scripts)", check::SCRIPTS_FILE),
        edit: check::EditKind::Changed,
    }))
}

/// A scratch checkout of `tree` as it is (no protection: the base's own files), named
/// `label` in cuekit's data directory: where the base's test count is measured.
pub(super) fn of_tree(task: &Task, tree: &str, label: &str) -> Result<Scratch> {
    let worktree = crate::ops::work::diff::worktree_of(task)?;
    let (root, dir) = fresh_root(task, label)?;
    let scratch = Scratch {
        root: root.clone(),
        tree: dir.clone(),
        edits: Vec::new(),
        review: Vec::new(),
        // The base's tree, run only for its test count: no verdict names it.
        commit: tree.to_string(),
    };
    let git = Git::over(&worktree.common_dir, &dir, &root.join("index"));
    git.run(["read-tree", "--end-of-options", tree])?;
    git.run(["checkout-index", "--all", "--force"])?;
    Ok(scratch)
}

/// Removes the scratch checkouts of `task`'s checks whose runner is gone (`<id>-<label>-<pid>`
/// with that pid dead): what a killed runner left.
pub(super) fn remove_left(task: &Task) {
    let Some(dir) = crate::effects::store::data_dir().map(|data| data.join("checks")) else {
        return;
    };
    let prefix = format!("{}-", task.record.id);
    for name in crate::effects::store::names_in(&dir) {
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let runner = rest
            .rsplit_once('-')
            .filter(|(label, _)| !label.is_empty())
            .and_then(|(_, pid)| pid.parse::<u32>().ok());
        if runner.is_some_and(|pid| !crate::effects::process::is_alive(pid)) {
            crate::effects::check_run::remove_tree(&dir.join(&name));
        }
    }
}

/// A scratch checkout's folder in cuekit's data directory (named by the task, `label` and this
/// process, anything left there before removed) and its empty `tree/`.
fn fresh_root(task: &Task, label: &str) -> Result<(PathBuf, PathBuf)> {
    let data = crate::effects::store::data_dir().ok_or_else(|| {
        Error::new(ErrorCode::Io, "cannot find cuekit's data directory")
            .with_hint("set HOME (or XDG_DATA_HOME)")
    })?;
    let root =
        data.join("checks")
            .join(format!("{}-{label}-{}", task.record.id, std::process::id()));
    crate::effects::check_run::remove_tree(&root);
    let tree = root.join("tree");
    std::fs::create_dir_all(&tree).map_err(|err| Error::io("create", &tree, err))?;
    Ok((root, tree))
}
