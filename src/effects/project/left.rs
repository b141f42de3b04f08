//! What a sandboxed child left in a folder of yours it could write (its in-place folder, a
//! `sandbox.write` folder), made harmless once it has ended: a repository it planted moved
//! aside where git does not look for one, and the set-user-ID and set-group-ID bits of the
//! files it made stripped. Nothing is deleted. The walk is bounded and enters no link.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The most entries one walk looks at: a folder holding more is tidied as far as that.
pub const WALK_LIMIT: usize = 200_000;

/// What to do in one folder.
pub struct Tidy<'a> {
    /// Move aside every repository found (a `.git`, a folder shaped as a git dir), each renamed
    /// with this tag ([`crate::domain::sandbox::quarantine_name`]); `None`: leave them.
    pub quarantine: Option<&'a str>,
    /// Strip the set-ID bits of regular files changed since then (the task's start).
    pub since: SystemTime,
}

/// What was done.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tidied {
    /// Each repository moved aside: where it was, where it is.
    pub moved: Vec<(PathBuf, PathBuf)>,
    /// Each file whose set-ID bits were stripped.
    pub stripped: Vec<PathBuf>,
    /// Whether the walk stopped at [`WALK_LIMIT`] before it saw everything.
    pub cut_short: bool,
}

/// Claims the tidying of a task's folders once, by making `marker` (in the task's folder, which
/// its child cannot write): `false` when it is there already, made by an earlier claim.
pub fn claim(marker: &Path) -> bool {
    std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(marker)
        .is_ok()
}

/// Walks `root` (not following links, at most [`WALK_LIMIT`] entries) and tidies it.
pub fn tidy(root: &Path, how: &Tidy) -> Tidied {
    let mut tidied = Tidied::default();
    let mut folders = vec![root.to_path_buf()];
    let mut looked = 0usize;
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut below = Vec::new();
        let mut git_dir_parts = 0;
        for entry in entries.flatten() {
            looked += 1;
            if looked > WALK_LIMIT {
                tidied.cut_short = true;
                return tidied;
            }
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if ["HEAD", "objects", "refs"].iter().any(|part| name == *part) {
                git_dir_parts += 1;
            }
            if let (Some(tag), true) = (how.quarantine, name == ".git") {
                let moved = move_aside(&entry.path(), tag);
                // A git dir moved aside is still one for a git run inside it: its HEAD goes
                // aside too, so no git reads it anywhere (nor a later submit's check).
                if let Some((_, aside)) = &moved
                    && kind.is_dir()
                {
                    move_aside(&aside.join("HEAD"), tag);
                }
                tidied.moved.extend(moved);
                continue;
            }
            if kind.is_dir() {
                below.push(entry.path());
            } else if kind.is_file() {
                tidied
                    .stripped
                    .extend(strip_set_ids(&entry.path(), how.since));
            }
        }
        // A folder shaped as a git dir (HEAD, objects/ and refs/ side by side) is one, whatever
        // its name, for a git run inside it: its HEAD moved aside, it is none any more.
        if let (Some(tag), 3) = (how.quarantine, git_dir_parts) {
            tidied.moved.extend(move_aside(&folder.join("HEAD"), tag));
            continue;
        }
        folders.extend(below);
    }
    tidied
}

/// Renames `path` to a free name beside it that git never reads; `None` when it cannot
/// (gone already, or no name free).
fn move_aside(path: &Path, tag: &str) -> Option<(PathBuf, PathBuf)> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let free = (1..=100)
        .map(|n| path.with_file_name(crate::domain::sandbox::quarantine_name(&name, tag, n)))
        .find(|aside| aside.symlink_metadata().is_err())?;
    std::fs::rename(path, &free).ok()?;
    Some((path.to_path_buf(), free))
}

/// Strips the set-user-ID and set-group-ID bits of the regular file at `path` if it has either
/// and changed since `since` (its inode's change time, which no child can set back). The file
/// is opened without following a link and changed through that descriptor; one its owner cannot
/// read (`chmod 4111`) is changed by path once it is proven the same file.
fn strip_set_ids(path: &Path, since: SystemTime) -> Option<PathBuf> {
    let meta = path.symlink_metadata().ok()?;
    let mode = meta.mode();
    if !meta.is_file() || mode & 0o6000 == 0 {
        return None;
    }
    let changed = SystemTime::UNIX_EPOCH
        + std::time::Duration::new(
            u64::try_from(meta.ctime()).ok()?,
            u32::try_from(meta.ctime_nsec()).ok()?,
        );
    if changed < since {
        return None;
    }
    let plain = std::fs::Permissions::from_mode(mode & 0o1777);
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let done = match opened {
        Ok(file) => file
            .metadata()
            .ok()
            .filter(|opened| opened.is_file() && opened.ino() == meta.ino())
            .is_some_and(|_| file.set_permissions(plain).is_ok()),
        Err(_) => path
            .symlink_metadata()
            .ok()
            .filter(|again| again.is_file() && again.ino() == meta.ino())
            .is_some_and(|_| std::fs::set_permissions(path, plain).is_ok()),
    };
    done.then(|| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        path.symlink_metadata().unwrap().mode() & 0o7777
    }

    #[test]
    fn a_planted_repository_is_moved_aside_and_set_ids_are_stripped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tfsmonitor = evil\n").unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        std::fs::write(root.join("sub/deep/.git"), "gitdir: /elsewhere\n").unwrap();
        for part in ["objects", "refs"] {
            std::fs::create_dir_all(root.join("bare").join(part)).unwrap();
        }
        std::fs::write(root.join("bare/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("sub/tool"), "x").unwrap();
        std::fs::set_permissions(
            root.join("sub/tool"),
            std::fs::Permissions::from_mode(0o6755),
        )
        .unwrap();
        std::fs::write(root.join("plain"), "x").unwrap();
        std::fs::set_permissions(root.join("plain"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        // A link to a set-ID file outside is left alone, and so is its target.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("kept"), "x").unwrap();
        std::fs::set_permissions(
            outside.path().join("kept"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path().join("kept"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linked-dir")).unwrap();
        let tidied = tidy(
            root,
            &Tidy {
                quarantine: Some("t_1"),
                since: SystemTime::UNIX_EPOCH,
            },
        );
        assert!(!tidied.cut_short);
        assert!(!root.join(".git").exists() && !root.join("sub/deep/.git").exists());
        assert!(root.join(".git.cuekit-quarantine-t_1/config").is_file());
        assert!(root.join(".git.cuekit-quarantine-t_1/hooks").is_dir());
        assert!(
            root.join(".git.cuekit-quarantine-t_1/HEAD.cuekit-quarantine-t_1")
                .is_file()
        );
        assert!(!root.join(".git.cuekit-quarantine-t_1/HEAD").exists());
        assert!(root.join("sub/deep/.git.cuekit-quarantine-t_1").is_file());
        assert!(!root.join("bare/HEAD").exists());
        assert!(root.join("bare/HEAD.cuekit-quarantine-t_1").is_file());
        assert_eq!(tidied.moved.len(), 3, "{tidied:?}");
        assert_eq!(mode_of(&root.join("sub/tool")), 0o755);
        assert_eq!(mode_of(&root.join("plain")), 0o755);
        assert_eq!(tidied.stripped, vec![root.join("sub/tool")]);
        assert_eq!(mode_of(&outside.path().join("kept")), 0o4755);
        // A second repository planted where the first was moved aside takes the next name.
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let again = tidy(
            root,
            &Tidy {
                quarantine: Some("t_1"),
                since: SystemTime::UNIX_EPOCH,
            },
        );
        assert_eq!(
            again.moved,
            vec![(root.join(".git"), root.join(".git.cuekit-quarantine-t_1-2"))]
        );
    }

    #[test]
    fn only_files_changed_since_the_start_are_stripped_and_nothing_is_moved_unless_asked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("old"), "x").unwrap();
        std::fs::set_permissions(root.join("old"), std::fs::Permissions::from_mode(0o2755))
            .unwrap();
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        let tidied = tidy(
            root,
            &Tidy {
                quarantine: None,
                since: later,
            },
        );
        assert_eq!(tidied, Tidied::default());
        assert!(root.join(".git").is_dir());
        assert_eq!(mode_of(&root.join("old")), 0o2755);
    }
}
