//! Pure: which of a task's changed paths run code or set policy once merged — git's own
//! attributes and submodules, cuekit's files, CI, hook managers, environment loaders and build
//! scripts. `cuekit merge` lists them and merges only with `--yes`: a child's work is read
//! before it can make the user's next `git status`, build or CI run its code.

use crate::error::{Error, ErrorCode};

/// File names that matter in any folder.
const NAMES: &[&str] = &[
    ".gitattributes",
    ".gitmodules",
    ".envrc",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    "build.rs",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "justfile",
    "Justfile",
    "package.json",
    "setup.py",
    "conftest.py",
    ".gitlab-ci.yml",
];

/// Folders whose every file matters, from the repository's root.
const FOLDERS: &[&str] = &[
    ".github/workflows/",
    ".husky/",
    ".githooks/",
    ".cargo/",
    ".vscode/",
    ".devcontainer/",
    ".circleci/",
];

/// The paths of `changed` that run code or set policy, in order.
pub fn policy_paths(changed: &[String]) -> Vec<String> {
    changed
        .iter()
        .filter(|path| matters(path))
        .cloned()
        .collect()
}

fn matters(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    NAMES.contains(&name)
        || path.starts_with(".cuekit")
        || FOLDERS.iter().any(|folder| path.starts_with(folder))
}

/// The error a merge gives before it touches anything when such paths changed.
pub fn needed(paths: &[String]) -> Error {
    Error::new(
        ErrorCode::MergeReview,
        format!(
            "the task's work changes files that run code or set policy: {}",
            paths.join(", ")
        ),
    )
    .with_hint("read them (`cuekit diff ID`), then merge again with --yes; nothing was changed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_run_code_or_set_policy_are_picked_out() {
        let changed: Vec<String> = [
            "src/lib.rs",
            ".gitattributes",
            "vendor/x/.gitattributes",
            ".cuekit.yaml",
            ".cuekit/agents/reviewer.md",
            ".github/workflows/ci.yml",
            ".github/README.md",
            "crates/a/build.rs",
            "web/package.json",
            "docs/Makefile.md",
            ".envrc",
            ".husky/pre-commit",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            policy_paths(&changed),
            [
                ".gitattributes",
                "vendor/x/.gitattributes",
                ".cuekit.yaml",
                ".cuekit/agents/reviewer.md",
                ".github/workflows/ci.yml",
                "crates/a/build.rs",
                "web/package.json",
                ".envrc",
                ".husky/pre-commit",
            ]
        );
        assert!(policy_paths(&["src/main.rs".to_string()]).is_empty());
    }
}
