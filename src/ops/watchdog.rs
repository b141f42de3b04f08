//! Enforces `--timeout` while nobody is watching: a detached `cuekit __watchdog <task id>`
//! started by submit, which judges the task once a second until it has ended. It works from the
//! registry, so the timeout holds even when the task's directory was deleted.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use super::task::Found;
use crate::error::{Error, ErrorCode, Result};

pub(super) fn spawn(task_id: &str) -> Result<()> {
    let exe = std::env::current_exe().map_err(|err| {
        Error::new(
            ErrorCode::Io,
            format!("cannot find the cuekit binary: {err}"),
        )
    })?;
    Command::new(exe)
        .arg("__watchdog")
        .arg(task_id)
        .env_remove(crate::process::TASK_ID_VARIABLE)
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

pub fn run_watchdog(task_id: &str) -> Result<()> {
    loop {
        match super::task::find(task_id, Path::new("/"))? {
            Found::Trusted(task) => {
                if super::judge::refresh(vec![*task])?.tasks[0]
                    .record
                    .status
                    .is_terminal()
                {
                    return Ok(());
                }
            }
            Found::Unreadable {
                placement, pane, ..
            } => {
                // No record to judge (its directory was deleted): the deadline still holds.
                if placement
                    .deadline()
                    .is_some_and(|deadline| SystemTime::now() >= deadline)
                {
                    super::judge::end_processes(
                        &placement,
                        pane.as_ref(),
                        None,
                        super::judge::DEFAULT_GRACE,
                    );
                    return Ok(());
                }
            }
            Found::Untrusted { .. } => return Ok(()),
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
