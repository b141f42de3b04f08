//! Task state on disk: one directory per task under `<cwd>/.cuekit/tasks/<id>/`, its record
//! in `task.json`, and a user-level registry so any command finds a task by id.

mod atomic;
pub mod conflicts;
pub mod intent;
pub mod notified;
pub mod projects;
pub mod race;
mod record;
mod registry;
pub mod schedule;
mod task_folder;
pub mod transitions;

pub use atomic::{
    LINE_LIMIT, SMALL_LIMIT, Staged, append_line, create_private_dir, create_private_leaf,
    for_each_line, names_in, open_own, open_own_for_writing, read_limited, read_small,
    remove_stale_tmps, stage, write_atomic,
};
pub use record::{
    TaskRecord, TmuxPlacement, WorktreeRecord, load, load_task, lock_file, lock_file_try,
    lock_task_file, repair_mirror, save, stage_record, update,
};
pub use registry::{
    Budget, Lifecycle, MergeRecord, PaneStart, Pending, Placement, TaskFacts, WorktreePlacement,
    announced, check_of, data_dir, drop_dir, keep_spec, kept_spec, lifecycle, merge_of, pane_start,
    pending_submits, placement, private_dirs, record_check, record_lifecycle, record_merge,
    record_pane_start, record_report, registered_ids, registry_dir, remove_pending, report_of,
    reports_of, save_announced, stage_placement, state_dir, unregister, write_pending,
};

pub use task_folder::{create_task_folder, prove_tasks_folder};

use std::path::{Path, PathBuf};

pub const TASKS_SUBDIR: &str = ".cuekit/tasks";
pub const RECORD_FILE: &str = "task.json";
pub const LAUNCH_FILE: &str = "launch.sh";
pub use crate::domain::launch::TRANSCRIPT_FILE;
pub const EVENTS_FILE: &str = "events.jsonl";

pub fn task_dir(cwd: &Path, task_id: &str) -> PathBuf {
    cwd.join(TASKS_SUBDIR).join(task_id)
}

/// A fresh task id: `t_` and 12 hex digits (48 random bits).
pub fn new_task_id() -> String {
    let uuid = uuid::Uuid::new_v4().simple().to_string();
    format!("t_{}", &uuid[..12])
}

pub use crate::domain::task::is_task_id;

/// The tasks directory of the project containing `cwd`: the nearest ancestor with one.
pub fn project_tasks_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .map(|dir| dir.join(TASKS_SUBDIR))
        .find(|candidate| candidate.is_dir())
}

/// Where a task's readable transcript is: `transcript.txt` in its task directory.
pub fn transcript_path(record: &TaskRecord) -> PathBuf {
    record.task_dir.join(TRANSCRIPT_FILE)
}

/// Appends one line to the task's `events.jsonl` (see [`append_line`]).
pub fn append_event(task_dir: &Path, line: &[u8]) -> crate::domain::error::Result<()> {
    append_line(&task_dir.join(EVENTS_FILE), line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_documented_shape() {
        let id = new_task_id();
        assert!(is_task_id(&id), "{id}");
        assert_ne!(new_task_id(), id);
        for bad in [
            "t_123",
            "t_0123456789AB",
            "../etc/passwd",
            "t_0123456789abc",
            "x_0123456789ab",
        ] {
            assert!(!is_task_id(bad), "{bad}");
        }
    }
}
