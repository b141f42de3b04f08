//! User-level registry: one small file per task id holding the task directory, so a task is
//! found by id from any working directory. One file per id means parallel submits never
//! contend on a shared index.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// `~/.local/share/cuekit/tasks` (or under `XDG_DATA_HOME`).
pub fn registry_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "cuekit").map(|dirs| dirs.data_dir().join("tasks"))
}

fn require_registry_dir() -> Result<PathBuf> {
    registry_dir().ok_or_else(|| {
        Error::new(
            crate::error::ErrorCode::Io,
            "cannot find a home directory for cuekit's registry",
        )
        .with_hint("set HOME (or XDG_DATA_HOME)")
    })
}

pub fn register(task_id: &str, task_dir: &Path) -> Result<()> {
    stage_registration(task_id, task_dir)?.commit()
}

pub fn stage_registration(task_id: &str, task_dir: &Path) -> Result<super::Staged> {
    let dir = require_registry_dir()?;
    std::fs::create_dir_all(&dir).map_err(|err| Error::io("create", &dir, err))?;
    super::stage(&dir.join(task_id), task_dir.as_os_str().as_encoded_bytes())
}

/// Forgets a removed task; an entry already gone is fine.
pub fn unregister(task_id: &str) -> Result<()> {
    let path = require_registry_dir()?.join(task_id);
    match std::fs::remove_file(&path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("remove", &path, err))
        }
        _ => Ok(()),
    }
}

/// The task directory of `task_id`, from the registry or else from the current project.
pub fn resolve(task_id: &str, cwd: &Path) -> Result<PathBuf> {
    if !super::is_task_id(task_id) {
        return Err(Error::task_not_found(task_id)
            .with_hint("task ids look like t_0123456789ab; run `cuekit list --all`"));
    }
    let from_registry = registry_dir()
        .and_then(|dir| std::fs::read(dir.join(task_id)).ok())
        .map(path_from_bytes);
    let from_project = super::project_tasks_root(cwd).map(|root| root.join(task_id));
    from_registry
        .into_iter()
        .chain(from_project)
        .find(|dir| dir.join(super::RECORD_FILE).is_file())
        .ok_or_else(|| Error::task_not_found(task_id))
}

/// Every registered task directory that still exists.
pub fn registered_tasks() -> Result<Vec<PathBuf>> {
    let dir = require_registry_dir()?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io("read", &dir, err)),
    };
    Ok(entries
        .flatten()
        .filter(|entry| super::is_task_id(&entry.file_name().to_string_lossy()))
        .filter_map(|entry| std::fs::read(entry.path()).ok())
        .map(path_from_bytes)
        .filter(|task_dir| task_dir.join(super::RECORD_FILE).is_file())
        .collect())
}

fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(bytes))
}
