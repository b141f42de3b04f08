//! A task's work against its base commit: the tree [`super::checkout`] takes of its commits
//! and its uncommitted and untracked changes, compared in the user's repository.

use serde::Serialize;

use super::Git;
use crate::domain::error::Result;

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
