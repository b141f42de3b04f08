//! Every project cuekit has tasks in, as the registry knows them: the `.cuekit/` folders that
//! hold task records, prompts and transcripts. A sandbox hides each of them, wherever it lies
//! (a project under `/srv` or `/opt` is outside every root a sandbox hides by itself).

use std::path::{Path, PathBuf};

/// The records folder (`<project>/.cuekit`) a task folder (`.cuekit/tasks/<id>`) lies in.
pub fn records_dir_of(task_dir: &Path) -> Option<PathBuf> {
    task_dir
        .ancestors()
        .nth(2)
        .filter(|dir| dir.ends_with(".cuekit"))
        .map(Path::to_path_buf)
}

/// The `.cuekit/` folder of every local task the registry holds, and of every submit under
/// way (its pending entry), as the kernel names them, each once; those no longer there are
/// left out. A task on another host has its folder there, not here.
pub fn task_records_dirs() -> Vec<PathBuf> {
    existing_once(local_placements().filter_map(|placement| records_dir_of(&placement.task_dir)))
}

/// The checkout of every local task the registry holds, and of every submit under way, as the
/// kernel names them, each once; those no longer there are left out. A sandbox hides each but
/// its own: another task's uncommitted work is none of its child's.
pub fn task_checkouts() -> Vec<PathBuf> {
    existing_once(
        local_placements()
            .filter_map(|placement| placement.facts?.worktree.map(|worktree| worktree.path)),
    )
}

/// The placement of every task of this machine's the registry holds, and of every submit
/// under way (its pending entry).
fn local_placements() -> impl Iterator<Item = super::Placement> {
    super::registered_ids()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|id| super::placement(&id).ok().flatten())
        .chain(
            super::pending_submits()
                .into_iter()
                .map(|pending| pending.placement),
        )
        .filter(|placement| placement.host.is_none())
}

/// `dirs` as the kernel names them, each once, those no longer there left out.
fn existing_once(dirs: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = dirs
        .filter_map(|dir| dir.canonicalize().ok())
        .filter(|dir| dir.is_dir())
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_folder_names_its_projects_records() {
        assert_eq!(
            records_dir_of(Path::new("/srv/p/.cuekit/tasks/t_000000000001")),
            Some(PathBuf::from("/srv/p/.cuekit"))
        );
        assert_eq!(records_dir_of(Path::new("/srv/p/tasks/t_1")), None);
    }
}
