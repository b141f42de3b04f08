//! Real git for tests: one runner (no system config, a fixed identity) and the repository
//! helpers several test files need.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs git in `dir` and returns its stdout; fails the test on a non-zero exit.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A new repository at `dir` on `main`, with an identity of its own.
pub fn init_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Test"]);
    git(dir, &["config", "user.email", "test@example.com"]);
}

/// A repository at `dir` with one commit on `main`: `shared.txt` holding `shared`, and
/// `.cuekit/` ignored (as a project that delegates to worktree children has).
pub fn project_repo(dir: &Path, shared: &str) {
    init_repo(dir);
    std::fs::write(dir.join("shared.txt"), shared).unwrap();
    std::fs::write(dir.join(".gitignore"), ".cuekit/\n").unwrap();
    commit_all(dir, "init");
}

pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", message]);
}
