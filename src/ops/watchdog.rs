//! Enforces `--timeout` while nobody is watching: a detached `cuekit __watchdog <task dir>`
//! started by submit, which refreshes the task once a second until it has ended.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::{Error, ErrorCode, Result};
use crate::store;

pub(super) fn spawn(task_dir: &Path) -> Result<()> {
    let exe = std::env::current_exe().map_err(|err| {
        Error::new(
            ErrorCode::Io,
            format!("cannot find the cuekit binary: {err}"),
        )
    })?;
    Command::new(exe)
        .arg("__watchdog")
        .arg(task_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group, so cancelling the task (or Ctrl-C in the parent's shell)
        // never takes the watchdog with it.
        .process_group(0)
        .spawn()
        .map_err(|err| {
            Error::new(
                ErrorCode::Io,
                format!("cannot start the timeout watchdog: {err}"),
            )
        })?;
    Ok(())
}

pub fn run_watchdog(task_dir: &Path) -> Result<()> {
    loop {
        let record = store::load(task_dir)?;
        let record = super::refresh::refresh(vec![record])?.records.remove(0);
        if record.status.is_terminal() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
