//! Pure git argv builders, for the commands whose shape matters (what they may touch, what
//! they must never do). Each is run by [`super::Git`] in the directory the caller chose.

use std::ffi::OsString;
use std::path::Path;

fn words(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

/// A new worktree at `path` on a new branch from an already-resolved commit (never a name that
/// could resolve differently by the time git reads it).
pub fn worktree_add(path: &Path, branch: &str, commit: &str) -> Vec<OsString> {
    let mut args = words(&["worktree", "add", "--quiet", "--no-track", "-b", branch]);
    args.push(path.into());
    args.push(commit.into());
    args
}

/// Initialises one submodule in a new worktree by cloning the main checkout's copy of it: no
/// network, the objects hard-linked, and the exact commit the base records. `protocol.file`
/// is allowed for this one command only: the source is the user's own checkout.
pub fn submodule_from_local(name: &str, local: &Path, path: &str) -> Vec<OsString> {
    let mut url = OsString::from(format!("submodule.{name}.url="));
    url.push(local);
    let mut args = words(&["-c", "protocol.file.allow=always", "-c"]);
    args.push(url);
    args.extend(words(&[
        "submodule",
        "update",
        "--init",
        "--recursive",
        "--",
        path,
    ]));
    args
}

/// Untracked files (ignored ones included) matching gitignore-style `patterns`; a wholly
/// untracked directory is listed once, as `dir/`. (Not `--no-empty-directory`: with it, git
/// 2.47 misses a file matched inside an untracked folder.)
pub fn untracked_matching(patterns: &[String]) -> Vec<OsString> {
    let mut args = words(&["ls-files", "-z", "--others", "--ignored", "--directory"]);
    for pattern in patterns {
        args.push("-x".into());
        args.push(pattern.into());
    }
    args
}

/// Untracked files git ignores (the `.worktreeinclude` rule copies only these).
pub fn ignored_untracked() -> Vec<OsString> {
    words(&[
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
    ])
}

/// Whether anything in a work tree differs from its `HEAD`, untracked files included
/// (ignored ones not).
pub fn status_porcelain() -> Vec<OsString> {
    words(&["status", "--porcelain=v1", "-z", "--untracked-files=all"])
}

/// A three-way merge computed without touching any work tree or index: exit 1 and the
/// conflicted paths when it does not merge cleanly.
pub fn merge_tree(target: &str, task: &str) -> Vec<OsString> {
    words(&[
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        "-z",
        target,
        task,
    ])
}

/// The merge commands cuekit runs in the target branch's worktree.
pub fn merge(commit: &str, message: &str) -> Vec<OsString> {
    words(&["merge", "--no-edit", "--no-ff", "-m", message, commit])
}

pub fn merge_squash(commit: &str) -> Vec<OsString> {
    words(&["merge", "--squash", commit])
}

pub fn merge_ff_only(commit: &str) -> Vec<OsString> {
    words(&["merge", "--ff-only", commit])
}

/// Deletes a branch only if it still points where cuekit inspected it: a commit added since
/// keeps it.
pub fn delete_branch_at(branch: &str, expected: &str) -> Vec<OsString> {
    let mut args = words(&["update-ref", "-d"]);
    args.push(format!("refs/heads/{branch}").into());
    args.push(expected.into());
    args
}

pub fn worktree_remove(path: &Path, force: bool) -> Vec<OsString> {
    let mut args = words(&["worktree", "remove"]);
    if force {
        // Twice: also removes a worktree git has locked.
        args.extend(words(&["--force", "--force"]));
    }
    args.push(path.into());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_starts_from_a_resolved_commit_on_a_new_untracked_branch() {
        assert_eq!(
            worktree_add(Path::new("/r.worktrees/t_1"), "cuekit/t_1", "abc123"),
            words(&[
                "worktree",
                "add",
                "--quiet",
                "--no-track",
                "-b",
                "cuekit/t_1",
                "/r.worktrees/t_1",
                "abc123"
            ])
        );
    }

    #[test]
    fn a_branch_is_deleted_only_at_the_commit_inspected() {
        assert_eq!(
            delete_branch_at("cuekit/t_1", "abc"),
            words(&["update-ref", "-d", "refs/heads/cuekit/t_1", "abc"])
        );
    }

    #[test]
    fn the_submodule_source_is_overridden_for_one_command_only() {
        let args = submodule_from_local("lib", Path::new("/r/lib"), "lib");
        assert_eq!(
            args,
            words(&[
                "-c",
                "protocol.file.allow=always",
                "-c",
                "submodule.lib.url=/r/lib",
                "submodule",
                "update",
                "--init",
                "--recursive",
                "--",
                "lib"
            ])
        );
    }
}
