use std::fs::File;
use std::path::Path;

use super::{RECORD_FILE, write_atomic};
use crate::domain::error::{Error, ErrorCode, Result};
pub use crate::domain::task::{TaskRecord, TmuxPlacement, WorktreeRecord};

impl From<&crate::effects::store::WorktreePlacement> for WorktreeRecord {
    fn from(placed: &crate::effects::store::WorktreePlacement) -> WorktreeRecord {
        WorktreeRecord {
            repo_root: placed.repo_root.clone(),
            path: placed.path.clone(),
            branch: placed.branch.clone(),
            base_ref: placed.base_ref.clone(),
            base_commit: placed.base_commit.clone(),
        }
    }
}

pub fn load(task_dir: &Path) -> Result<TaskRecord> {
    let path = task_dir.join(RECORD_FILE);
    let bytes = super::atomic::read_small(&path).map_err(|err| Error::io("read", &path, err))?;
    serde_json::from_slice(&bytes).map_err(|err| {
        Error::new(
            ErrorCode::StoreCorrupt,
            format!("{} is not a valid task record: {err}", path.display()),
        )
        .with_hint("the file was edited or damaged; move it aside and run `cuekit doctor`")
    })
}

/// The record in a task directory cuekit registered (the directory as its registry placement
/// names it), its status, ending and reason the registry's ([`super::Lifecycle`]): what a
/// child wrote into `task.json` over them is not read.
pub fn load_task(task_dir: &Path) -> Result<TaskRecord> {
    let mut record = load(task_dir)?;
    if let Some(lifecycle) = registered_id(task_dir).and_then(super::lifecycle) {
        lifecycle.apply(&mut record);
    }
    Ok(record)
}

/// The task id a task directory is named after (`.cuekit/tasks/<id>`, as submit makes it):
/// never the id a record inside says.
fn registered_id(task_dir: &Path) -> Option<&str> {
    task_dir
        .file_name()?
        .to_str()
        .filter(|name| super::is_task_id(name))
}

pub fn save(record: &TaskRecord) -> Result<()> {
    write_atomic(&record.task_dir.join(RECORD_FILE), &to_bytes(record))
}

/// `task.json` written and synced but not yet in place (see [`super::Staged`]).
pub fn stage_record(record: &TaskRecord) -> Result<super::Staged> {
    super::stage(&record.task_dir.join(RECORD_FILE), &to_bytes(record))
}

fn to_bytes(record: &TaskRecord) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(record).expect("a task record always serializes");
    bytes.push(b'\n');
    bytes
}

/// Read-modify-write of a registered task's record under an exclusive lock, so concurrent
/// cuekit processes (a cancel racing a status refresh) never lose each other's update.
/// `change` sees the registry's lifecycle over the record ([`load_task`]) and returns whether
/// it changed anything; then a changed lifecycle is recorded in the registry first, and the
/// record is written as its mirror (which also undoes what a child wrote over the mirror).
pub fn update(
    task_dir: &Path,
    change: impl FnOnce(&mut TaskRecord) -> Result<bool>,
) -> Result<TaskRecord> {
    let _lock = lock_task_file(&task_dir.join("task.lock"))?;
    let mut record = load_task(task_dir)?;
    let before = super::Lifecycle::of(&record);
    if change(&mut record)? {
        let after = super::Lifecycle::of(&record);
        if after != before
            && let Some(id) = registered_id(task_dir)
        {
            super::record_lifecycle(id, &after)?;
        }
        // A writer killed between its temp file and the rename left one behind.
        super::remove_stale_tmps(task_dir);
        save(&record)?;
    }
    Ok(record)
}

/// Writes `task.json` again when its lifecycle is not the registry's: the ending went to the
/// registry but the record's own disk was full, or a child wrote over the mirror. A record that
/// cannot be read is left alone (there is nothing whole to write back). Errors only when the
/// write is refused, so the caller can try again later.
pub fn repair_mirror(task_dir: &Path) -> Result<()> {
    let Some(registered) = registered_id(task_dir).and_then(super::lifecycle) else {
        return Ok(());
    };
    match load(task_dir) {
        Ok(mirror) if super::Lifecycle::of(&mirror) != registered => {
            update(task_dir, |_| Ok(true)).map(drop)
        }
        _ => Ok(()),
    }
}

/// The lock on `path` if nobody holds it (`None` if someone does).
pub fn lock_file_try(path: &Path) -> Result<Option<File>> {
    let file = open_lock(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(err)) => Err(Error::io("lock", path, err)),
    }
}

/// An exclusive lock on `path` (created if missing) across processes, held until the returned
/// file is dropped.
pub fn lock_file(path: &Path) -> Result<File> {
    let file = open_lock(path)?;
    file.lock().map_err(|err| Error::io("lock", path, err))?;
    Ok(file)
}

/// How long a lock in a task's folder is waited for: cuekit's own holders keep it for a
/// moment (a check for its run), and a child, which can write there, could hold it for good.
const TASK_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// [`lock_file`] for a lock in a task's folder: given up after [`TASK_LOCK_WAIT`] with an
/// error, so a lock a child holds never hangs a cancel, a listing or the monitor.
pub fn lock_task_file(path: &Path) -> Result<File> {
    let file = open_lock(path)?;
    let deadline = std::time::Instant::now() + TASK_LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let held = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("held by another process for {}s", TASK_LOCK_WAIT.as_secs()),
                );
                return Err(Error::io("lock", path, held));
            }
            Err(std::fs::TryLockError::Error(err)) => return Err(Error::io("lock", path, err)),
        }
    }
}

/// A lock file opened as cuekit's own ([`super::atomic::open_own_for_writing`]): a link or a
/// FIFO a child left in its task folder is replaced, never followed or waited on.
fn open_lock(path: &Path) -> Result<File> {
    super::atomic::open_own_for_writing(path, false).map_err(|err| Error::io("open", path, err))
}
