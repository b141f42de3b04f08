//! Whether a server's monitor runs, and starting one: a lock file per server (held by the
//! running monitor for its whole life) decides. Kept apart from the monitor itself so that the
//! judge can start one after recording an ending without depending on the monitor.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::store;
use crate::tmux::Socket;
use crate::transition::screen_hash;

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
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let _ = std::process::Command::new(exe)
        .arg("__monitor")
        .arg(&socket.0)
        .env_remove(crate::process::TASK_ID_VARIABLE)
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn();
}

pub(super) fn lock_path(socket: &Socket) -> Option<PathBuf> {
    let name = format!("{:016x}.lock", screen_hash(&socket.0));
    Some(store::data_dir()?.join("monitors").join(name))
}

pub(super) fn open_lock(path: &Path) -> crate::error::Result<File> {
    // `monitors/` in an existing data directory: one removed meanwhile is not made anew.
    if let Some(dir) = path.parent() {
        store::create_private_leaf(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|err| crate::error::Error::io("open", path, err))
}
