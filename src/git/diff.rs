//! A task's work against its base commit: commits on its branch plus uncommitted and untracked
//! changes in its worktree. The worktree is read through a scratch index (a copy of its own),
//! so neither its index nor its files are touched.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Git;
use crate::error::{Error, Result};

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FileDiff {
    pub path: String,
    /// git's letter: `A` added, `M` modified, `D` deleted, `T` type changed.
    pub status: String,
    /// `None` for a binary file.
    pub insertions: Option<u64>,
    pub deletions: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DiffStat {
    pub files: usize,
    pub insertions: u64,
    pub deletions: u64,
}

impl std::fmt::Display for DiffStat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} file{} changed, +{} -{}",
            self.files,
            if self.files == 1 { "" } else { "s" },
            self.insertions,
            self.deletions
        )
    }
}

/// What to diff: the task's worktree if it is still there, else only its branch.
pub struct Subject<'a> {
    pub repo_root: &'a Path,
    pub worktree: &'a Path,
    pub branch: &'a str,
    /// Where the scratch index may be written (removed afterwards).
    pub scratch: &'a Path,
}

/// The tree of the task's work: a tree id, written from the worktree's files (or the branch
/// tip when the worktree is gone).
pub fn work_tree(subject: &Subject) -> Result<String> {
    if !subject.worktree.is_dir() {
        return Git::new(subject.repo_root)
            .line(["rev-parse", &format!("{}^{{tree}}", subject.branch)]);
    }
    let git = Git::new(subject.worktree);
    let index = scratch_index(&git, subject.scratch)?;
    let env = [("GIT_INDEX_FILE", index.as_os_str())];
    let tree = git
        .output_with_env(["add", "--all", "--", "."], &env)
        .and_then(|out| {
            if out.status.success() {
                git.output_with_env(["write-tree"], &env)
            } else {
                Err(super::failed(&["add".into(), "--all".into()], &out))
            }
        });
    let _ = std::fs::remove_file(&index);
    let tree = tree?;
    if !tree.status.success() {
        return Err(super::failed(&["write-tree".into()], &tree));
    }
    Ok(String::from_utf8_lossy(&tree.stdout).trim().to_string())
}

/// A copy of the worktree's index, so `git add` reuses its stat cache and leaves it alone.
fn scratch_index(git: &Git, scratch: &Path) -> Result<PathBuf> {
    let index = scratch.join(format!("diff-index.{}", std::process::id()));
    let own = match own_index(git.dir()) {
        Some(own) => own,
        None => PathBuf::from(git.line([
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "index",
        ])?),
    };
    match std::fs::copy(&own, &index) {
        Ok(_) => Ok(index),
        Err(_) => {
            // No index yet: start from the worktree's HEAD.
            let env = [("GIT_INDEX_FILE", index.as_os_str())];
            let out = git.output_with_env(["read-tree", "HEAD"], &env)?;
            if out.status.success() {
                Ok(index)
            } else {
                Err(Error::io(
                    "prepare",
                    &index,
                    std::io::Error::other(String::from_utf8_lossy(&out.stderr).into_owned()),
                ))
            }
        }
    }
}

/// A linked worktree's index, from its `.git` file (`gitdir: …`), without starting git: `list`
/// reads it for every worktree task.
pub(crate) fn own_index(worktree: &Path) -> Option<PathBuf> {
    let link = std::fs::read_to_string(worktree.join(".git")).ok()?;
    let dir = PathBuf::from(link.strip_prefix("gitdir: ")?.trim_end());
    dir.is_absolute().then(|| dir.join("index"))
}

/// The totals between the base commit and `tree` (one git call: `status` and `list` show it
/// for every worktree task).
pub fn totals(git: &Git, base_commit: &str, tree: &str) -> Result<DiffStat> {
    let numstat = diff_tree(git, "--numstat", base_commit, tree)?;
    let counts = parse_numstat(&numstat);
    Ok(DiffStat {
        files: counts.len(),
        insertions: counts.iter().filter_map(|(_, (added, _))| *added).sum(),
        deletions: counts.iter().filter_map(|(_, (_, deleted))| *deleted).sum(),
    })
}

/// Files changed between the base commit and `tree`, with line counts.
pub fn files(git: &Git, base_commit: &str, tree: &str) -> Result<Vec<FileDiff>> {
    let statuses = diff_tree(git, "--name-status", base_commit, tree)?;
    let numstat = diff_tree(git, "--numstat", base_commit, tree)?;
    Ok(parse(&statuses, &numstat))
}

/// `git diff-tree -r -z --no-renames <format> <base> <tree>`.
fn diff_tree(git: &Git, format: &str, base_commit: &str, tree: &str) -> Result<String> {
    git.run([
        "diff-tree",
        "-r",
        "-z",
        "--no-renames",
        format,
        base_commit,
        tree,
    ])
}

/// `--name-status -z` and `--numstat -z` outputs, zipped by path.
/// Line counts per path; `None` for a binary file.
type Counts = (Option<u64>, Option<u64>);

/// `--numstat -z` output.
fn parse_numstat(numstat: &str) -> Vec<(String, Counts)> {
    numstat
        .split('\0')
        .filter(|e| !e.is_empty())
        .filter_map(|entry| {
            let mut parts = entry.splitn(3, '\t');
            let (added, deleted, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some((path.to_string(), (added.parse().ok(), deleted.parse().ok())))
        })
        .collect()
}

fn parse(statuses: &str, numstat: &str) -> Vec<FileDiff> {
    let counts: std::collections::HashMap<String, Counts> =
        parse_numstat(numstat).into_iter().collect();
    let mut fields = statuses.split('\0').filter(|e| !e.is_empty());
    let mut files = Vec::new();
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let (insertions, deletions) = counts.get(path).copied().unwrap_or((None, None));
        files.push(FileDiff {
            path: path.to_string(),
            status: status.to_string(),
            insertions,
            deletions,
        });
    }
    files
}

pub fn stat(files: &[FileDiff]) -> DiffStat {
    DiffStat {
        files: files.len(),
        insertions: files.iter().filter_map(|f| f.insertions).sum(),
        deletions: files.iter().filter_map(|f| f.deletions).sum(),
    }
}

/// The unified patch between the base commit and `tree`.
pub fn patch(git: &Git, base_commit: &str, tree: &str) -> Result<String> {
    git.run([
        "diff-tree",
        "-r",
        "-p",
        "--binary",
        "--no-renames",
        base_commit,
        tree,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_counts_are_zipped_by_path() {
        let files = parse("M\0a.txt\0A\0bin.png\0", "1\t2\ta.txt\0-\t-\tbin.png\0");
        assert_eq!(
            files,
            [
                FileDiff {
                    path: "a.txt".into(),
                    status: "M".into(),
                    insertions: Some(1),
                    deletions: Some(2)
                },
                FileDiff {
                    path: "bin.png".into(),
                    status: "A".into(),
                    insertions: None,
                    deletions: None
                }
            ]
        );
        assert_eq!(
            stat(&files),
            DiffStat {
                files: 2,
                insertions: 1,
                deletions: 2
            }
        );
    }
}
