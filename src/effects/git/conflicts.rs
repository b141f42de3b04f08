//! Whose work would conflict with whose, computed by `git merge-tree --write-tree` on trees
//! cuekit took of each worktree (see [`super::diff::work_tree`]): no work tree, no index and no
//! branch is touched. Two children from one base commit are merged with that commit as the
//! base (`--merge-base`, trees are enough); otherwise each tree is made a commit on its own base
//! (`commit-tree` with a fixed author and date, so one tree on one base is always one commit)
//! and git finds the merge base itself.

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

use super::Git;
use crate::domain::error::Result;

/// One conflicted file and git's word for what clashed there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictFile {
    pub path: String,
    /// Short: `content`, `add/add`, `modify/delete`, `rename/delete`, … (`conflict` when git
    /// gave no message naming the file).
    pub reason: String,
}

/// One side of a merge: a tree cuekit wrote and the commit its work started from.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub tree: &'a str,
    pub base_commit: &'a str,
}

/// `merge-tree` with its informational messages (for the reasons), NUL-separated. With `base`,
/// `ours` and `theirs` may be trees; without it they must be commits.
pub fn merge_tree_args(base: Option<&str>, ours: &str, theirs: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["merge-tree", "--write-tree", "--name-only", "-z"]
        .iter()
        .map(OsString::from)
        .collect();
    if let Some(base) = base {
        args.push(format!("--merge-base={base}").into());
    }
    args.push("--end-of-options".into());
    args.push(ours.into());
    args.push(theirs.into());
    args
}

/// `commit-tree` of `tree` on `parent`; run with [`COMMIT_IDENTITY`] it is deterministic.
pub fn commit_tree_args(tree: &str, parent: &str) -> Vec<OsString> {
    [
        "commit-tree",
        "-p",
        parent,
        "-m",
        "cuekit conflict check",
        "--end-of-options",
        tree,
    ]
    .iter()
    .map(OsString::from)
    .collect()
}

/// Who made the commits of [`commit_tree_args`], and when: fixed, so no user identity is needed
/// and the same tree on the same parent is the same object every time (no new object per check).
pub const COMMIT_IDENTITY: [(&str, &str); 6] = [
    ("GIT_AUTHOR_NAME", "cuekit"),
    ("GIT_AUTHOR_EMAIL", "cuekit@localhost"),
    ("GIT_AUTHOR_DATE", "@0 +0000"),
    ("GIT_COMMITTER_NAME", "cuekit"),
    ("GIT_COMMITTER_EMAIL", "cuekit@localhost"),
    ("GIT_COMMITTER_DATE", "@0 +0000"),
];

/// What `merge-tree -z --name-only` (messages included) printed when it exited 1: the merged
/// tree's id, the conflicted paths, an empty field, then messages, each `<n>\0<path>…\0<type>\0
/// <text>\0`. Each conflicted path gets the first `CONFLICT (…)` type that names it.
pub fn parse_conflicts(stdout: &str) -> Vec<ConflictFile> {
    let mut fields = stdout.split('\0');
    let _tree = fields.next();
    let paths: Vec<&str> = fields.by_ref().take_while(|f| !f.is_empty()).collect();
    let mut reasons: Vec<(String, String)> = Vec::new();
    while let Some(count) = fields.next() {
        let Ok(count) = count.parse::<usize>() else {
            break;
        };
        let named: Vec<&str> = fields.by_ref().take(count).collect();
        let (Some(kind), Some(text)) = (fields.next(), fields.next()) else {
            break;
        };
        // The type is coarse (`CONFLICT (contents)` for an add/add too); the message's own
        // opening words name the kind, so they come first.
        let Some(reason) = short_reason(text).or_else(|| short_reason(kind)) else {
            continue;
        };
        for path in named {
            if !reasons.iter().any(|(p, _)| p == path) {
                reasons.push((path.to_string(), reason.clone()));
            }
        }
    }
    let mut files: Vec<ConflictFile> = Vec::new();
    for path in paths {
        if files.iter().any(|f| f.path == path) {
            continue;
        }
        let reason = reasons
            .iter()
            .find(|(p, _)| p == path)
            .map_or_else(|| "conflict".to_string(), |(_, r)| r.clone());
        files.push(ConflictFile {
            path: path.to_string(),
            reason,
        });
    }
    files
}

/// `CONFLICT (contents)` → `content`, `CONFLICT (add/add): …` → `add/add`; not a conflict →
/// `None`.
fn short_reason(words: &str) -> Option<String> {
    let inner = words.strip_prefix("CONFLICT (")?.split(')').next()?;
    Some(match inner {
        "contents" | "content" => "content".to_string(),
        other => other.to_string(),
    })
}

/// The conflicts of merging two children's trees (none when they merge cleanly).
pub fn between(git: &Git, a: Side, b: Side) -> Result<Vec<ConflictFile>> {
    if a.base_commit == b.base_commit {
        return merge(git, merge_tree_args(Some(a.base_commit), a.tree, b.tree));
    }
    let ours = commit(git, a)?;
    let theirs = commit(git, b)?;
    merge(git, merge_tree_args(None, &ours, &theirs))
}

/// The conflicts of merging a child's tree into `tip`, the target branch's current commit.
pub fn with_target(git: &Git, tip: &str, side: Side) -> Result<Vec<ConflictFile>> {
    let theirs = commit(git, side)?;
    merge(git, merge_tree_args(None, tip, &theirs))
}

fn commit(git: &Git, side: Side) -> Result<String> {
    let env: Vec<(&str, &std::ffi::OsStr)> = COMMIT_IDENTITY
        .iter()
        .map(|(k, v)| (*k, std::ffi::OsStr::new(v)))
        .collect();
    let args = commit_tree_args(side.tree, side.base_commit);
    let out = git.output_with_env(&args, &env)?;
    if !out.status.success() {
        return Err(super::failed(&args, &out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn merge(git: &Git, args: Vec<OsString>) -> Result<Vec<ConflictFile>> {
    let out = git.output(&args)?;
    match out.status.code() {
        Some(0) => Ok(Vec::new()),
        Some(1) => Ok(parse_conflicts(&String::from_utf8_lossy(&out.stdout))),
        _ => Err(super::failed(&args, &out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[OsString]) -> Vec<&str> {
        args.iter().map(|a| a.to_str().unwrap()).collect()
    }

    #[test]
    fn revisions_follow_the_end_of_options_and_a_base_is_one_word() {
        assert_eq!(
            words(&merge_tree_args(Some("b4se"), "-tree1", "tree2")),
            [
                "merge-tree",
                "--write-tree",
                "--name-only",
                "-z",
                "--merge-base=b4se",
                "--end-of-options",
                "-tree1",
                "tree2"
            ]
        );
        assert_eq!(
            words(&merge_tree_args(None, "c1", "c2"))[4..],
            ["--end-of-options", "c1", "c2"]
        );
        let commit = commit_tree_args("-t", "p");
        assert_eq!(words(&commit)[5..], ["--end-of-options", "-t"]);
    }

    #[test]
    fn paths_get_the_reason_of_the_first_conflict_message_naming_them() {
        let out = "f73c\0f.txt\0g.txt\0new.txt\0\0\
                   1\0f.txt\0Auto-merging\0Auto-merging f.txt\n\0\
                   1\0f.txt\0CONFLICT (contents)\0CONFLICT (content): Merge conflict in f.txt\n\0\
                   1\0g.txt\0CONFLICT (modify/delete)\0CONFLICT (modify/delete): g.txt deleted\0\
                   2\0f.txt\0g.txt\0CONFLICT (rename/delete)\0CONFLICT (rename/delete): x\0\
                   1\0new.txt\0CONFLICT (contents)\0CONFLICT (add/add): Merge conflict in new.txt\n\0";
        assert_eq!(
            parse_conflicts(out),
            [
                ConflictFile {
                    path: "f.txt".into(),
                    reason: "content".into()
                },
                ConflictFile {
                    path: "g.txt".into(),
                    reason: "modify/delete".into()
                },
                ConflictFile {
                    path: "new.txt".into(),
                    reason: "add/add".into()
                },
            ]
        );
    }

    #[test]
    fn a_path_no_message_names_is_a_plain_conflict_and_no_output_is_none() {
        assert_eq!(
            parse_conflicts("abc\0a b\0\0"),
            [ConflictFile {
                path: "a b".into(),
                reason: "conflict".into()
            }]
        );
        assert!(parse_conflicts("abc\0").is_empty());
        assert!(parse_conflicts("").is_empty());
    }
}
