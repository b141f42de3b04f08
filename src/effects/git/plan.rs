//! Pure naming rules for a task's worktree: where it goes and what its branch is called.

use std::path::{Path, PathBuf};

use crate::domain::error::{Error, Result};

/// Default `worktree.dir`: a sibling of the repository, so the child's tree is never inside
/// the parent's (where the parent's tools and `git status` would see it).
pub const DEFAULT_DIR: &str = "{repo}.worktrees/{id}";
pub const DEFAULT_BRANCH_PREFIX: &str = "cuekit/";

/// Where a task's worktree goes: `template` with `{repo}` (the repository root's path) and
/// `{id}` filled in; a relative result is taken from the repository's parent directory.
pub fn worktree_path(template: &str, repo_root: &Path, task_id: &str) -> Result<PathBuf> {
    if !template.contains("{id}") {
        return Err(Error::invalid_input(format!(
            "worktree.dir '{template}' has no {{id}}: every task needs its own folder"
        ))
        .with_hint("use e.g. \"{repo}.worktrees/{id}\""));
    }
    let filled = template
        .replace("{repo}", &repo_root.to_string_lossy())
        .replace("{id}", task_id);
    let path = PathBuf::from(filled);
    let path = if path.is_absolute() {
        path
    } else {
        repo_root.parent().unwrap_or(repo_root).join(path)
    };
    if path.starts_with(repo_root) {
        return Err(Error::invalid_input(format!(
            "worktree.dir puts the task's worktree at {}, inside the repository",
            path.display()
        ))
        .with_hint("choose a folder outside the repository, e.g. \"{repo}.worktrees/{id}\""));
    }
    Ok(path)
}

/// The task's branch: the name asked for, else the prefix and the task id.
pub fn branch_name(asked: Option<&str>, prefix: &str, task_id: &str) -> String {
    asked.map_or_else(|| format!("{prefix}{task_id}"), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_folder_is_a_sibling_of_the_repository() {
        let path = worktree_path(DEFAULT_DIR, Path::new("/src/app"), "t_1").unwrap();
        assert_eq!(path, Path::new("/src/app.worktrees/t_1"));
        let relative = worktree_path("trees/{id}", Path::new("/src/app"), "t_1").unwrap();
        assert_eq!(relative, Path::new("/src/trees/t_1"));
    }

    #[test]
    fn a_folder_without_the_id_or_inside_the_repository_is_refused() {
        assert!(worktree_path("/tmp/x", Path::new("/src/app"), "t_1").is_err());
        assert!(worktree_path("{repo}/wt/{id}", Path::new("/src/app"), "t_1").is_err());
    }

    #[test]
    fn branches_are_named_after_the_task_unless_named() {
        assert_eq!(branch_name(None, "cuekit/", "t_1"), "cuekit/t_1");
        assert_eq!(branch_name(Some("fix-x"), "cuekit/", "t_1"), "fix-x");
    }
}
