//! The repository's worktrees as `git worktree list --porcelain` reports them.

use std::path::{Path, PathBuf};

use super::Git;
use crate::domain::error::Result;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    pub path: PathBuf,
    /// Short branch name; `None` when detached (or bare).
    pub branch: Option<String>,
    pub head: Option<String>,
}

/// Under cuekit's worktree lock: git fails to list a worktree still being created.
pub fn list(repo: &Path) -> Result<Vec<Worktree>> {
    let _lock = super::lock_worktrees(repo)?;
    list_held(repo)
}

/// [`list`] for a caller that holds the worktree lock already.
pub fn list_held(repo: &Path) -> Result<Vec<Worktree>> {
    Ok(parse(&Git::new(repo).run([
        "worktree",
        "list",
        "--porcelain",
        "-z",
    ])?))
}

/// The worktree where `branch` is checked out.
pub fn checked_out(worktrees: &[Worktree], branch: &str) -> Option<PathBuf> {
    worktrees
        .iter()
        .find(|w| w.branch.as_deref() == Some(branch))
        .map(|w| w.path.clone())
}

/// Worktrees on a branch cuekit names for a task (`<prefix>t_<12 hex>`, exactly) that no task
/// record names: left by a crash, a deleted task directory. A branch of any other name is never
/// one of cuekit's, whatever its prefix (a project's `branch_prefix: fea` must not make the
/// user's `feature` worktree an orphan).
pub fn orphans<'a>(
    worktrees: &'a [Worktree],
    prefix: &str,
    known: &[PathBuf],
) -> Vec<&'a Worktree> {
    worktrees
        .iter()
        .filter(|w| {
            w.branch
                .as_deref()
                .and_then(|b| b.strip_prefix(prefix))
                .is_some_and(crate::effects::store::is_task_id)
        })
        .filter(|w| !known.contains(&w.path))
        .collect()
}

/// `-z` porcelain: attributes separated by NUL, worktrees by an empty attribute.
fn parse(text: &str) -> Vec<Worktree> {
    let mut worktrees = Vec::new();
    let mut current: Option<Worktree> = None;
    for field in text.split('\0') {
        if field.is_empty() {
            worktrees.extend(current.take());
            continue;
        }
        let (key, value) = field.split_once(' ').unwrap_or((field, ""));
        match (key, current.as_mut()) {
            ("worktree", _) => {
                worktrees.extend(current.take());
                current = Some(Worktree {
                    path: PathBuf::from(value),
                    branch: None,
                    head: None,
                });
            }
            ("HEAD", Some(w)) => w.head = Some(value.to_string()),
            ("branch", Some(w)) => {
                w.branch = Some(
                    value
                        .strip_prefix("refs/heads/")
                        .unwrap_or(value)
                        .to_string(),
                );
            }
            _ => {}
        }
    }
    worktrees.extend(current);
    worktrees
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_is_parsed_into_worktrees_with_their_branches() {
        let text = "worktree /r\0HEAD aaa\0branch refs/heads/main\0\0worktree /r.wt/t_1\0HEAD bbb\0detached\0\0worktree /x\0HEAD ccc\0branch refs/heads/cuekit/t_0123456789ab\0locked\0\0worktree /y\0HEAD ddd\0branch refs/heads/cuekit/feature\0\0";
        let list = parse(text);
        assert_eq!(list.len(), 4);
        assert_eq!(list[0].branch.as_deref(), Some("main"));
        assert_eq!(list[1].branch, None);
        assert_eq!(
            checked_out(&list, "cuekit/t_0123456789ab"),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(checked_out(&list, "other"), None);
        let known = [PathBuf::from("/elsewhere")];
        // `cuekit/feature` is no task's branch: never an orphan.
        let orphans = orphans(&list, "cuekit/", &known);
        assert_eq!(orphans.len(), 1);
        assert_eq!(orphans[0].path, PathBuf::from("/x"));
        assert!(super::orphans(&list, "cuekit/", &[PathBuf::from("/x")]).is_empty());
    }
}
