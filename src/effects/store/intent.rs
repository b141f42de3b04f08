//! An ending cuekit meant to record but could not (a full disk under the task's folder):
//! `tasks/<id>.cancel` in the registry, so the next look records it once there is room, before
//! it judges the pane the cancel ended.

use std::path::PathBuf;

use crate::domain::error::{Error, Result};

fn path(task_id: &str) -> Option<PathBuf> {
    super::is_task_id(task_id)
        .then(|| super::registry_dir().map(|dir| dir.join(format!("{task_id}.cancel"))))
        .flatten()
}

/// Notes that `task_id` was cancelled (an empty file: it needs no room for content).
pub fn note_cancel(task_id: &str) -> Result<()> {
    let path = path(task_id).ok_or_else(|| Error::invalid_input("not a task id"))?;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map(drop)
        .map_err(|err| Error::io("write", &path, err))
}

/// Whether a cancel of `task_id` waits to be recorded. One `stat`.
pub fn cancel_noted(task_id: &str) -> bool {
    path(task_id).is_some_and(|path| std::fs::symlink_metadata(path).is_ok())
}

/// The cancel is on record (or moot): the note goes.
pub fn clear_cancel(task_id: &str) {
    if let Some(path) = path(task_id) {
        let _ = std::fs::remove_file(path);
    }
}
