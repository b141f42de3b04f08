//! Where a task's checkout may live: in a folder nobody else can rename entries of. The folder
//! holding the checkouts (`{repo}.worktrees` by default, a sibling of the repository) is made
//! by cuekit when missing; one that is already there may be another user's, made first in a
//! shared folder such as `/tmp` — its owner could then swap a task's checkout for a tree of
//! their own, which `diff` would show and `merge` land as the task's work. So the folder must
//! be this user's (or root's) and not writable by others — or sticky, and then the checkout
//! itself must be this user's.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use crate::domain::error::{Error, ErrorCode, Result};

/// Makes `folder` (the checkouts' folder) when missing, readable by all and writable by this
/// user alone whatever the umask, its parents as usual.
pub fn make_folder(folder: &Path) -> Result<()> {
    if folder.symlink_metadata().is_err() {
        if let Some(parent) = folder.parent() {
            std::fs::create_dir_all(parent).map_err(|err| Error::io("create", parent, err))?;
        }
        match std::fs::DirBuilder::new().mode(0o755).create(folder) {
            Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(Error::io("create", folder, err));
            }
            _ => {
                let _ = std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o755));
            }
        }
    }
    prove(folder, None)
}

/// Refuses a checkout at `checkout` unless [`prove`] holds for its folder (and, in a sticky
/// folder, for the checkout itself). A checkout already gone passes: nothing is read from it.
pub fn prove_checkout(checkout: &Path) -> Result<()> {
    match checkout.parent() {
        Some(folder) => prove(folder, Some(checkout)),
        None => Ok(()),
    }
}

fn prove(folder: &Path, checkout: Option<&Path>) -> Result<()> {
    let meta = folder
        .symlink_metadata()
        .map_err(|err| Error::io("inspect", folder, err))?;
    if !meta.is_dir() {
        return Err(refused(folder, "it is not a folder (a link, or a file)"));
    }
    let me = crate::effects::process::euid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(refused(
            folder,
            &format!("it belongs to another user (uid {})", meta.uid()),
        ));
    }
    // The sticky bit: only an entry's owner may rename or remove it.
    let sticky = meta.mode() & 0o1000 != 0;
    if meta.mode() & 0o022 != 0 && !sticky {
        return Err(refused(folder, "others can write to it"));
    }
    if sticky && let Some(checkout) = checkout {
        match checkout.symlink_metadata() {
            Ok(own) if own.is_dir() && (own.uid() == me || me == 0) => {}
            Ok(_) => {
                return Err(refused(
                    checkout,
                    "it sits in a shared folder and is not a folder of yours",
                ));
            }
            Err(_) => {}
        }
    }
    Ok(())
}

fn refused(path: &Path, why: &str) -> Error {
    Error::new(
        ErrorCode::UnsafeProjectData,
        format!(
            "cuekit keeps no task checkout in {}: {why}",
            path.display()
        ),
    )
    .with_hint(
        "remove or chmod that folder (`chmod go-w`), or set `worktree.dir` in your config to a folder of yours",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_others_can_write_to_is_refused_and_one_cuekit_makes_is_not() {
        let root = tempfile::tempdir().unwrap();
        let shared = root.path().join("shared.worktrees");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = make_folder(&shared).unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsafeProjectData, "{err:?}");
        assert!(err.message.contains("others can write"), "{err:?}");
        let made = root.path().join("deep/repo.worktrees");
        make_folder(&made).unwrap();
        assert_eq!(made.metadata().unwrap().mode() & 0o777, 0o755);
        prove_checkout(&made.join("t_1")).unwrap();
    }

    #[test]
    fn a_link_in_place_of_the_folder_is_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("elsewhere")).unwrap();
        let link = root.path().join("repo.worktrees");
        std::os::unix::fs::symlink(root.path().join("elsewhere"), &link).unwrap();
        let err = prove_checkout(&link.join("t_1")).unwrap_err();
        assert!(err.message.contains("not a folder"), "{err:?}");
    }
}
