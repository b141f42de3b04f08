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
        let (placement, pane) = match super::task::find(task_id, Path::new("/"))? {
            Found::Trusted(task) => {
                let task = super::judge::refresh(vec![*task])?.tasks.remove(0);
                // Done once it has ended and nothing of it is left: processes that outlived a
                // killed server still fall to the deadline below.
                if task.record.status.is_terminal()
                    && (task.record.exit_code.is_some()
                        || crate::process::task_processes(&task.record.id, task.group_leader())
                            .is_empty())
                {
                    return Ok(());
                }
                (task.placement, task.pane)
            }
            // No record to judge (its directory was deleted): the deadline still holds.
            Found::Unreadable {
                placement, pane, ..
            } => (placement, pane),
            Found::Untrusted { .. } => return Ok(()),
        };
        if placement
            .deadline()
            .is_some_and(|deadline| SystemTime::now() >= deadline)
        {
            super::judge::end_processes(
                &placement,
                pane.as_ref(),
                None,
                crate::process::DEFAULT_GRACE,
            );
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
