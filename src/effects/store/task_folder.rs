//! Where a task's files may live: `<project>/.cuekit/tasks/<id>/`, in folders no other user can
//! rename, replace or write in. cuekit runs the task's `launch.sh` there by its path, and the
//! launch and cuekit write there by path; another user who could write `.cuekit/tasks/` (made
//! first, world-writable) or the project folder (renaming `.cuekit/` away) could swap the
//! task's folder for one of their own — their `launch.sh` would run as this user, and a link
//! they left would take this user's writes. So every folder on the way from `/` must be this
//! user's or root's, and writable by nobody else (sticky folders such as `/tmp` aside: there
//! only an entry's owner may rename it; a folder writable by this user's own group passes too),
//! and the task's folder is made new (never one found there), owner-only.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

use crate::domain::error::{Error, ErrorCode, Result};

/// Refuses `tasks` (a project's `.cuekit/tasks`, already made) with `unsafe_project_data`
/// unless no other user can change any folder from `/` down to it.
pub fn prove_tasks_folder(tasks: &Path) -> Result<()> {
    let me = crate::effects::process::euid();
    let my_group = crate::effects::process::egid();
    let folders: Vec<&Path> = tasks.ancestors().collect();
    // `.cuekit/tasks` and `.cuekit`: this user's own, always.
    let cuekit_own = folders.iter().take(2).copied().collect::<Vec<_>>();
    for folder in folders.iter().rev().copied() {
        let meta = folder
            .symlink_metadata()
            .map_err(|err| Error::io("inspect", folder, err))?;
        if !meta.is_dir() {
            return Err(refused(folder, "it is not a folder (a link, or a file)"));
        }
        // Run by root, a sandboxed child is uid 65534, and the sandbox guide's way to let it
        // write an in-place folder is to give the folder to that uid: such a project folder
        // is taken (a residual the guide names: another process of uid 65534 could rename
        // `.cuekit` away), never `.cuekit` itself or its `tasks`.
        let given_to_the_sandbox = me == 0
            && meta.uid() == crate::domain::sandbox_user::SANDBOX_UID
            && !cuekit_own.contains(&folder);
        if meta.uid() != me && meta.uid() != 0 && !given_to_the_sandbox {
            return Err(refused(
                folder,
                &format!("it belongs to another user (uid {})", meta.uid()),
            ));
        }
        let sticky = meta.mode() & 0o1000 != 0;
        let others = meta.mode() & 0o002 != 0;
        let group = meta.mode() & 0o020 != 0 && meta.gid() != my_group;
        if (others || group) && !sticky {
            return Err(refused(folder, "others can write to it"));
        }
    }
    Ok(())
}

/// Makes the task's folder `dir` owner-only, failing when anything is there already (a folder
/// made first by someone else is never taken for the task's), and proves what was made.
pub fn create_task_folder(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(|err| Error::io("create", dir, err))?;
    let meta = dir
        .symlink_metadata()
        .map_err(|err| Error::io("inspect", dir, err))?;
    if !meta.is_dir() || meta.uid() != crate::effects::process::euid() {
        return Err(refused(dir, "it is not the folder cuekit just made"));
    }
    Ok(())
}

fn refused(path: &Path, why: &str) -> Error {
    Error::new(
        ErrorCode::UnsafeProjectData,
        format!(
            "cuekit keeps no task files under {}: {why}, so another user could swap a task's \
             files (its launch script) for their own",
            path.display()
        ),
    )
    .with_hint(
        "make that folder yours and writable by you alone (`chmod go-w`, or remove a `.cuekit/` \
         another user made), or submit from a project folder of your own",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_tasks_folder_others_can_write_to_is_refused_and_a_private_one_is_not() {
        let root = tempfile::tempdir().unwrap();
        let tasks = root.path().join("p/.cuekit/tasks");
        crate::effects::store::create_private_dir(&tasks).unwrap();
        prove_tasks_folder(&tasks).unwrap();
        create_task_folder(&tasks.join("t_1")).unwrap();
        let again = create_task_folder(&tasks.join("t_1")).unwrap_err();
        assert_eq!(again.code, ErrorCode::Io, "{again:?}");
        for open in [
            &tasks,
            &root.path().join("p/.cuekit"),
            &root.path().join("p"),
        ] {
            std::fs::set_permissions(open, std::fs::Permissions::from_mode(0o777)).unwrap();
            let err = prove_tasks_folder(&tasks).unwrap_err();
            assert_eq!(err.code, ErrorCode::UnsafeProjectData, "{err:?}");
            assert!(err.message.contains("others can write"), "{err:?}");
            std::fs::set_permissions(open, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        // Sticky, as /tmp is: only an entry's owner may rename it.
        std::fs::set_permissions(
            root.path().join("p"),
            std::fs::Permissions::from_mode(0o1777),
        )
        .unwrap();
        prove_tasks_folder(&tasks).unwrap();
    }
}
