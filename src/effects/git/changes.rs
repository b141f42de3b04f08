//! Which files a task changed, from `git status` before and after it ran (when its working
//! directory is in a git work tree).

pub use crate::domain::result::ChangedFile;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `git status` of a work tree, with each dirty file's size and modification time, so a file
/// that was already dirty and changed again is still noticed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    root: PathBuf,
    dirty: BTreeMap<String, (String, Option<(u64, SystemTime)>)>,
}

/// Through [`super::Git`], with its guards (the folder may hold a bare repository a cloned
/// repository tracks).
fn git(dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let output = super::Git::new(dir).output(args).ok()?;
    output.status.success().then_some(output.stdout)
}

/// `None` when `dir` is not in a git work tree (or git is missing).
pub fn snapshot(dir: &Path) -> Option<Snapshot> {
    let root = String::from_utf8(git(dir, &["rev-parse", "--show-toplevel"])?).ok()?;
    let root = PathBuf::from(root.trim_end());
    let status = git(
        dir,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    let mut dirty = BTreeMap::new();
    let mut entries = status.split(|b| *b == 0).filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        let entry = String::from_utf8_lossy(entry);
        if entry.len() < 4 {
            continue;
        }
        let (code, path) = (entry[..2].to_string(), entry[3..].to_string());
        if code.starts_with('R') || code.starts_with('C') {
            entries.next(); // the rename's source path
        }
        let stat = std::fs::metadata(root.join(&path))
            .ok()
            .and_then(|m| Some((m.len(), m.modified().ok()?)));
        dirty.insert(path, (code, stat));
    }
    Some(Snapshot { root, dirty })
}

/// cuekit's own task files, which are no task's work.
fn is_cuekit_state(path: &str) -> bool {
    path.split('/').any(|part| part == ".cuekit")
}

/// Files whose state differs between the two snapshots.
pub fn changed_files(before: &Snapshot, after: &Snapshot) -> Vec<ChangedFile> {
    let mut changed: Vec<ChangedFile> = after
        .dirty
        .iter()
        .filter(|(path, _)| !is_cuekit_state(path))
        .filter(|(path, state)| before.dirty.get(*path) != Some(state))
        .map(|(path, (code, _))| ChangedFile {
            path: path.clone(),
            status: code.clone(),
        })
        .collect();
    changed.extend(
        before
            .dirty
            .keys()
            .filter(|path| !after.dirty.contains_key(*path))
            .map(|path| ChangedFile {
                path: path.clone(),
                status: "  ".to_string(),
            }),
    );
    changed.sort_by(|a, b| a.path.cmp(&b.path));
    changed
}

impl Snapshot {
    pub fn root(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git_ok(dir: &Path, args: &[&str]) {
        assert!(
            Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .output()
                .unwrap()
                .status
                .success(),
            "git {args:?}"
        );
    }

    #[test]
    fn sees_new_modified_deleted_and_redirtied_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git_ok(root, &["init", "-q"]);
        for (name, text) in [("kept.txt", "a"), ("edited.txt", "a"), ("gone.txt", "a")] {
            std::fs::write(root.join(name), text).unwrap();
        }
        git_ok(root, &["add", "."]);
        git_ok(
            root,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "init",
            ],
        );
        std::fs::write(root.join("edited.txt"), "dirty before").unwrap();
        let before = snapshot(root).unwrap();
        std::fs::write(root.join("edited.txt"), "dirty before, and changed again").unwrap();
        std::fs::write(root.join("new.txt"), "n").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        std::fs::create_dir_all(root.join("sub/.cuekit/tasks")).unwrap();
        std::fs::write(root.join("sub/.cuekit/tasks/transcript.txt"), "x").unwrap();
        let after = snapshot(root).unwrap();
        let changed = changed_files(&before, &after);
        let summary: Vec<(&str, &str)> = changed
            .iter()
            .map(|c| (c.path.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(
            summary,
            [("edited.txt", " M"), ("gone.txt", " D"), ("new.txt", "??")]
        );
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(snapshot(plain.path()), None);
    }
}
