//! A private repository's task checkouts stay private: the folder holding them
//! (`{repo}.worktrees`) keeps from others what the repository's own folder keeps from them.
//! A repository kept `0700` would otherwise have its checkouts `0755` beside it, readable by
//! every local user (and, run by root, writable by any process of the sandbox's uid 65534).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::domain::error::{Error, Result};

/// Narrows `folder`'s mode to what `repo_root`'s grants its group and others (never widens
/// it). A folder of another user's is left as it is (`place` refuses it).
pub fn narrow_like(folder: &Path, repo_root: &Path) -> Result<()> {
    match repo_root.metadata() {
        Ok(repo) => narrow(folder, repo.mode() & 0o077),
        Err(_) => Ok(()),
    }
}

/// Narrows `folder`'s mode to the owner's alone: the folder of sandboxed tasks' checkouts.
/// What a child leaves there (a program it made setuid to its uid: the sandbox's mounts are
/// `nosuid`, but the file stays on the disk) is then out of every other user's reach, whatever
/// the repository's own mode.
pub fn narrow_to_owner(folder: &Path) -> Result<()> {
    narrow(folder, 0)
}

/// Takes from `folder`'s group and other bits what `allowed` does not grant.
fn narrow(folder: &Path, allowed: u32) -> Result<()> {
    let Ok(own) = folder.symlink_metadata() else {
        return Ok(());
    };
    if !own.is_dir() || own.uid() != crate::effects::process::euid() {
        return Ok(());
    }
    let mode = own.mode() & 0o7777;
    let narrowed = mode & !(0o077 & !allowed);
    if narrowed == mode {
        return Ok(());
    }
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(narrowed))
        .map_err(|err| Error::io("restrict", folder, err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkouts_folder_of_a_private_repository_is_private() {
        let root = tempfile::tempdir().unwrap();
        let (repo, folder) = (root.path().join("repo"), root.path().join("repo.worktrees"));
        std::fs::create_dir(&repo).unwrap();
        std::fs::create_dir(&folder).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&repo, std::fs::Permissions::from_mode(0o750)).unwrap();
        narrow_like(&folder, &repo).unwrap();
        assert_eq!(folder.metadata().unwrap().mode() & 0o777, 0o750);
        std::fs::set_permissions(&repo, std::fs::Permissions::from_mode(0o700)).unwrap();
        narrow_like(&folder, &repo).unwrap();
        assert_eq!(folder.metadata().unwrap().mode() & 0o777, 0o700);
        // Never widened.
        std::fs::set_permissions(&repo, std::fs::Permissions::from_mode(0o777)).unwrap();
        narrow_like(&folder, &repo).unwrap();
        assert_eq!(folder.metadata().unwrap().mode() & 0o777, 0o700);
    }
}
