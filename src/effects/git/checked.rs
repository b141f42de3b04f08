//! The commit a check ran on: the task's work as the check read it (its committed tip, with
//! the checkout's files of that moment on top), written as a commit of the user's repository
//! and kept at a ref of its own (`refs/cuekit/checked/<id>/<round>`), so that what passed is
//! what `result`, `diff` and `merge` take, whatever the checkout holds later.
//!
//! The tree was written by cuekit's own index of the checkout ([`super::checkout`]); the
//! commit is `commit-tree` and the ref `update-ref`: no index, work tree or branch of anyone
//! is touched.

use std::ffi::OsStr;

use super::Git;
use crate::domain::error::Result;

/// Who a commit is by when the user's git names nobody (`user.name`/`user.email` unset).
const FALLBACK_NAME: &str = "cuekit";
const FALLBACK_EMAIL: &str = "cuekit@localhost";

/// `commit-tree TREE -p PARENT… -m MESSAGE` in `root`, by the user's identity, else (git
/// knows none) by cuekit's.
pub fn commit_tree(root: &Git, tree: &str, parents: &[&str], message: &str) -> Result<String> {
    let mut args = vec!["commit-tree", tree];
    for parent in parents {
        args.extend(["-p", parent]);
    }
    args.extend(["-m", message]);
    match root.line(&args) {
        Ok(commit) => Ok(commit),
        Err(err)
            if err.message.contains("tell me who you are") || err.message.contains("ident") =>
        {
            let env: Vec<(&str, &OsStr)> = [
                ("GIT_AUTHOR_NAME", FALLBACK_NAME),
                ("GIT_AUTHOR_EMAIL", FALLBACK_EMAIL),
                ("GIT_COMMITTER_NAME", FALLBACK_NAME),
                ("GIT_COMMITTER_EMAIL", FALLBACK_EMAIL),
            ]
            .into_iter()
            .map(|(k, v)| (k, OsStr::new(v)))
            .collect();
            let output = root.output_with_env(&args, &env)?;
            if !output.status.success() {
                let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
                return Err(super::failed(&args, &output));
            }
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
        }
        Err(err) => Err(err),
    }
}

/// Binds a check to the work it read: `tree` (the work) on `tip` (its committed part) as a
/// commit — `tip` itself when the checkout added nothing —, kept at `name`. Returns the
/// commit.
pub fn bind(root: &Git, tree: &str, tip: &str, name: &str, message: &str) -> Result<String> {
    let tip_tree = root.line(["rev-parse", "--verify", &format!("{tip}^{{tree}}")])?;
    let commit = if tip_tree == tree {
        tip.to_string()
    } else {
        commit_tree(root, tree, &[tip], message)?
    };
    root.run([
        "update-ref",
        "-m",
        "cuekit: a check's commit",
        name,
        &commit,
    ])?;
    Ok(commit)
}

/// The commit `commit` names in `root` if it is there and a commit (a verdict's record is
/// believed only as far as the repository bears it out).
pub fn existing(root: &Git, commit: &str) -> Option<String> {
    root.resolve(&format!("{commit}^{{commit}}")).ok()
}

/// Drops the refs of a removed task's check commits (`refs/cuekit/checked/<id>/…`) that hold
/// nothing of their own: each whose commit `merged_head` (the target's head after the task's
/// merge) contains, or every one with `force`. A check commit nothing merged may hold files the
/// checkout no longer has: its ref stays, and is returned for the caller to name.
pub fn forget(
    root: &Git,
    task_id: &str,
    merged_head: Option<&str>,
    force: bool,
) -> Result<Vec<String>> {
    let prefix = crate::domain::check::checked_refs(task_id);
    let listed = root.run(["for-each-ref", "--format=%(refname) %(objectname)", &prefix])?;
    let mut kept = Vec::new();
    for line in listed.lines() {
        let Some((name, commit)) = line.split_once(' ') else {
            continue;
        };
        let saved = force
            || match merged_head {
                Some(head) => root.yes(["merge-base", "--is-ancestor", commit, head])?,
                None => false,
            };
        if saved {
            root.run(["update-ref", "-d", name, commit])?;
        } else {
            kept.push(name.to_string());
        }
    }
    Ok(kept)
}
