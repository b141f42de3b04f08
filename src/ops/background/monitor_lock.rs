//! Lock files that say who is at work in the background. The user's scheduler: one lock file,
//! held by the running `cuekit __scheduler`. A server's monitor: a lock file per
//! server, held by the running monitor for its whole life (kept apart from the monitor itself
//! so that the judge can start one without depending on it). A task's stop: `stopping/<id>`,
//! from before a stop's ending is recorded until nothing of the task runs, locked by whoever is
//! ending its processes; a stop whose claimant was killed (its lock free) is an abandoned one,
//! which the next look hands to a detached stopper.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::domain::transition::screen_hash;
use crate::effects::store;
use crate::effects::tmux::Socket;

/// Starts the user's scheduler (`cuekit __scheduler`) unless one runs or nothing waits. An open, a non-blocking lock
/// attempt and a directory read when something waits; two directory reads when nothing does.
pub(crate) fn ensure_scheduler() {
    // A start whose starter died leaves a claim (and a gated pane) that the scheduler's next
    // look recovers, queue or not.
    if !store::schedule::any_queued() && store::schedule::claimed_ids().is_empty() {
        return;
    }
    let Some(path) = store::schedule::runner_lock_path() else {
        return;
    };
    let Ok(lock) = store::lock_file_try(&path) else {
        return;
    };
    let Some(lock) = lock else {
        return;
    };
    drop(lock);
    spawn_detached(&["__scheduler"]);
}

/// Starts `cuekit WORDS…` in the background: out of any task (no task id), in `/`, its own
/// process group, with no terminal. Whoever it is takes its lock, or exits.
fn spawn_detached(words: &[&str]) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let args: Vec<std::ffi::OsString> = words.iter().map(Into::into).collect();
    let _ = crate::effects::spawn::detached(
        &exe,
        &args,
        &[(crate::effects::process::TASK_ID_VARIABLE, None)],
        Some(Path::new("/")),
    );
}

/// Starts the server's monitor unless one runs. Costs an open and a non-blocking lock attempt.
pub(crate) fn ensure_running(socket: &Socket) {
    let Some(path) = lock_path(socket) else {
        return;
    };
    let Ok(lock) = open_lock(&path) else {
        return;
    };
    if lock.try_lock().is_err() {
        return;
    }
    // Free: let go of it for the monitor, which takes it (a racing caller's monitor that loses
    // the lock exits at once).
    drop(lock);
    spawn_detached(&["__monitor", &socket.0]);
}

/// Counts one tick of a background worker (a monitor's look at its server, the scheduler's look
/// at the queue): one byte appended to `<lock>.ticks` beside its lock file, owner-only, no link
/// followed. The file's size is the number of ticks taken, so whoever reads it (a test waiting
/// for "N more ticks, and nothing happened") needs no clock. Past [`TICKS_KEPT`] bytes it
/// starts again from empty.
pub(crate) fn record_tick(lock: &Path) {
    let ticks = lock.with_extension("ticks");
    if std::fs::symlink_metadata(&ticks).is_ok_and(|meta| meta.len() >= TICKS_KEPT) {
        let _ = std::fs::remove_file(&ticks);
    }
    let _ = store::append_line(&ticks, b"");
}

/// The most bytes (ticks) a `.ticks` file holds: about twelve days of a monitor's ticks at 1 s.
const TICKS_KEPT: u64 = 1 << 20;

pub(super) fn lock_path(socket: &Socket) -> Option<PathBuf> {
    let name = format!("{:016x}.lock", screen_hash(&socket.0));
    Some(store::data_dir()?.join("monitors").join(name))
}

pub(super) fn open_lock(path: &Path) -> crate::domain::error::Result<File> {
    // `monitors/` in an existing data directory: one removed meanwhile is not made anew.
    if let Some(dir) = path.parent() {
        store::create_private_leaf(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|err| crate::domain::error::Error::io("open", path, err))
}

/// A task's stop, claimed: the lock on its `stopping/<id>` file. Dropped, the lock goes and the
/// file stays (the stop is not over: the next look resumes it); [`StopClaim::finish`] ends it.
pub(crate) struct StopClaim {
    file: File,
    path: PathBuf,
}

impl StopClaim {
    /// The stop is over (or there was nothing to stop): the file goes, under the lock, so nobody
    /// takes a finished stop for an abandoned one.
    pub fn finish(self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// Holds the lock until this process exits: for a stop that goes on once it has answered.
    pub fn keep_until_exit(self) {
        std::mem::forget(self.file);
    }
}

fn stop_path(task_id: &str) -> Option<PathBuf> {
    // A task id names a file here: nothing else may.
    if !store::is_task_id(task_id) {
        return None;
    }
    Some(store::data_dir()?.join("stopping").join(task_id))
}

/// Whether a stop of the task was begun and is not over. One `stat`.
pub(crate) fn is_stopping(task_id: &str) -> bool {
    stop_path(task_id).is_some_and(|path| path.exists())
}

/// Claims the task's stop, beginning one unless it was begun, and waiting for whoever is at it.
pub(crate) fn claim_stop(task_id: &str) -> crate::domain::error::Result<StopClaim> {
    claim(task_id, true).map(|claim| claim.expect("a blocking claim is had"))
}

/// [`claim_stop`], unless someone is at it now: then `None`.
pub(crate) fn try_claim_stop(task_id: &str) -> crate::domain::error::Result<Option<StopClaim>> {
    claim(task_id, false)
}

fn claim(task_id: &str, wait: bool) -> crate::domain::error::Result<Option<StopClaim>> {
    use crate::domain::error::Error;
    let path = stop_path(task_id)
        .ok_or_else(|| Error::new(crate::domain::error::ErrorCode::Io, "no home directory"))?;
    if let Some(dir) = path.parent() {
        store::create_private_leaf(dir)?;
    }
    loop {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|err| Error::io("open", &path, err))?;
        if wait {
            file.lock().map_err(|err| Error::io("lock", &path, err))?;
        } else if file.try_lock().is_err() {
            return Ok(None);
        }
        // Finished (and removed) by the one before us while we waited: begin anew.
        if let Some(claim) = held(file, &path) {
            return Ok(Some(claim));
        }
    }
}

/// The task's stop, if one was begun and nobody is at it (its claimant was killed).
pub(crate) fn abandoned_stop(task_id: &str) -> Option<StopClaim> {
    let path = stop_path(task_id)?;
    let file = std::fs::OpenOptions::new().write(true).open(&path).ok()?;
    file.try_lock().ok()?;
    held(file, &path)
}

/// The task's stop, waiting for whoever is at it; `None` once it is over.
pub(crate) fn resume_stop(task_id: &str) -> Option<StopClaim> {
    let path = stop_path(task_id)?;
    let file = std::fs::OpenOptions::new().write(true).open(&path).ok()?;
    file.lock().ok()?;
    held(file, &path)
}

/// A locked file that is still the one at `path` (not removed, nor replaced, meanwhile).
fn held(file: File, path: &Path) -> Option<StopClaim> {
    let (Ok(locked), Ok(now)) = (file.metadata(), std::fs::metadata(path)) else {
        return None;
    };
    (locked.dev() == now.dev() && locked.ino() == now.ino()).then(|| StopClaim {
        file,
        path: path.to_path_buf(),
    })
}
