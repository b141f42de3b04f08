//! What a sandboxed child of root's writes, handed to the sandbox's uid
//! (`domain::sandbox_user`): its checkout and git dir when they are made, its report drop and
//! state folders, a check's scratch checkout. Only when cuekit runs as root; for anybody else
//! every function here does nothing, the child being that user. Links are never followed: a
//! link is changed itself (`lchown`), and a tree is walked without entering one.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::domain::error::{Error, Result};
use crate::domain::sandbox_user::{RunAs, SANDBOX_GID, SANDBOX_UID};

/// Whether cuekit runs as root (its effective uid).
pub fn is_root() -> bool {
    crate::effects::process::euid() == 0
}

/// The identity a sandboxed child takes here: the sandbox's uid when cuekit is root (`Err`
/// when `setpriv`, which drops to it, is not installed), `None` otherwise.
pub fn sandbox_identity() -> std::result::Result<Option<RunAs>, &'static str> {
    if !is_root() {
        return Ok(None);
    }
    crate::effects::which::find_on_path("setpriv")
        .or_else(|| Some(Path::new("/usr/bin/setpriv").to_path_buf()).filter(|p| p.is_file()))
        .map(|setpriv| Some(RunAs::unprivileged(setpriv)))
        .ok_or(
            "cuekit runs as root and setpriv (util-linux) is not installed: the sandboxed child \
             would run as root",
        )
}

/// `path` itself (not what a directory holds) to the sandbox's uid, when cuekit is root.
pub fn hand_over(path: &Path) -> Result<()> {
    if !is_root() {
        return Ok(());
    }
    std::os::unix::fs::lchown(path, Some(SANDBOX_UID), Some(SANDBOX_GID))
        .map_err(|err| Error::io("hand over", path, err))
}

/// `root` and everything under it to the sandbox's uid, when cuekit is root: for a tree cuekit
/// has just made (a checkout, a git dir, a scratch checkout), before any child ran in it. A
/// file with more than one link is left as it is: its inode is shared with a file elsewhere (a
/// submodule's objects are hard-linked from your checkout's), which the child must not own.
pub fn hand_over_tree(root: &Path) -> Result<()> {
    if !is_root() {
        return Ok(());
    }
    let mut pending = vec![root.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path).map_err(|err| Error::io("read", &path, err))?;
        if meta.is_file() && meta.nlink() > 1 {
            continue;
        }
        hand_over(&path)?;
        if !meta.is_dir() {
            continue;
        }
        let entries = std::fs::read_dir(&path).map_err(|err| Error::io("read", &path, err))?;
        pending.extend(entries.flatten().map(|entry| entry.path()));
    }
    Ok(())
}

/// A task's prompt shown to its sandboxed child of root's: the file handed to the sandbox's uid
/// and the task folder it lies in passable and listable (`0755`; the folders above it,
/// `.cuekit/` and `tasks/`, stay the user's alone, so nobody outside the sandbox passes them).
/// Every other file there stays root's own, unreadable to the child.
pub fn show_prompt(task_dir: &Path, prompt: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if !is_root() {
        return Ok(());
    }
    hand_over(prompt)?;
    std::fs::set_permissions(task_dir, std::fs::Permissions::from_mode(0o755))
        .map_err(|err| Error::io("chmod", task_dir, err))
}

/// Who reads a task's git dir for cuekit: the sandbox's identity when cuekit is root and the
/// git dir is the sandbox's (git refuses a repository of another owner, and upload-pack then
/// reads only what the child itself could); `None`: cuekit's own user.
pub fn reader_of(git_dir: &Path) -> Option<RunAs> {
    let owner = std::fs::symlink_metadata(git_dir).ok()?.uid();
    if owner != SANDBOX_UID {
        return None;
    }
    sandbox_identity().ok().flatten()
}
