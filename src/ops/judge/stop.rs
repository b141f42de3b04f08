//! Stopping a task: its ending recorded first, then its processes ended — here, or by a detached
//! stopper (`cuekit __stop`) that outlives the caller; a stop a killed caller left is finished.

use std::time::Duration;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::status::{Ending, Status};
use crate::effects::store::{self, TaskRecord};
use crate::effects::tmux::{Tmux, args};
use crate::ops::background::monitor_lock;
use crate::ops::task::Task;

use crate::effects::process::DEFAULT_GRACE;

use super::ending::{record_ending, unrecorded};
use super::look::refresh_with;

/// Records `ending` of a task that must be stopped (its timeout, its budget) and has its
/// processes ended by a detached stopper (unless `in_background` is false: the caller ends
/// them). Claimed before it is recorded, so a look killed in between leaves a stop someone
/// finishes; someone at it already (a cancel) ends it anyway. Stopped only once the ending is
/// on record (see `stop`): it runs on until the ending can be written, and says why.
pub(super) fn stop_due(task: Task, ending: Ending, in_background: bool) -> Task {
    let claim = match monitor_lock::try_claim_stop(&task.record.id) {
        Ok(Some(claim)) => claim,
        Ok(None) => return task,
        Err(err) => return unrecorded(task, &err),
    };
    let running = task.clone();
    match record_ending(task, ending) {
        Ok(task) => {
            // Left for the stopper (or, when this look is `stop`'s, for it).
            drop(claim);
            if in_background {
                stop_in_background(&task, None, None);
            }
            task
        }
        Err(err) => {
            claim.finish();
            unrecorded(running, &err)
        }
    }
}

/// Stops a task: judges it first (a task that already ended keeps its real ending), records
/// `ending` if it still runs, then ends its processes and its session. Recording first is what
/// keeps an agent that exits 0 on SIGTERM (Gemini) from reading as completed.
///
/// The stop is claimed before the ending is recorded and finished once nothing of the task runs
/// (see [`monitor_lock::claim_stop`]); a detached stopper waits on the claim meanwhile, so a
/// caller killed at any instant after recording (SIGKILL, a parent's timeout, a closed
/// terminal) still has its task stopped.
pub(crate) fn stop(task: Task, ending: Ending, grace: Duration) -> Result<Task> {
    let refreshed = refresh_with(vec![task], false, None)?;
    let pane_pid = refreshed
        .pane(&refreshed.tasks[0])
        .ok()
        .flatten()
        .filter(|pane| !pane.dead)
        .map(|pane| pane.pane_pid);
    let task = refreshed.tasks.into_iter().next().expect("one task in");
    let inside = inside(&task);
    // Without a claim (cuekit's data directory cannot be written) it stops as it can.
    let claim = monitor_lock::claim_stop(&task.record.id).ok();
    if claim.is_some() && !inside {
        stop_in_background(&task, None, Some(grace));
    }
    let task = if task.record.status.is_terminal() {
        task
    } else {
        record_ending(task, ending)?
    };
    if inside {
        // Run from the task's own pane: ending the tree here would end this process half-way,
        // so a detached stopper does it once this process has answered and exited.
        stop_in_background(&task, Some(std::process::id()), Some(grace));
        if let Some(claim) = claim {
            claim.keep_until_exit();
        }
        return Ok(task);
    }
    let survivors = end_processes(&task.placement, task.pane.as_ref(), pane_pid, grace);
    if let Some(claim) = claim.filter(|_| survivors.is_empty()) {
        claim.finish();
    }
    Ok(task)
}

/// A stop whose ending is on record but whose claimant was killed is handed to a detached
/// stopper; one killed before it recorded anything stopped nothing, and is forgotten. So is a
/// cancel or timeout on record with no claim (written by an older cuekit, or with cuekit's data
/// directory unwritable) whose pane process still runs. A `stat` per task, a read in /proc per
/// such ending.
pub(super) fn resume_abandoned_stops(tasks: &[Task]) {
    for task in tasks {
        let id = &task.record.id;
        let claim = if monitor_lock::is_stopping(id) {
            monitor_lock::abandoned_stop(id)
        } else if stopped_by_cuekit(&task.record)
            && task.group_leader().is_some_and(|leader| leader.is_alive())
        {
            monitor_lock::try_claim_stop(id).ok().flatten()
        } else {
            None
        };
        let Some(claim) = claim else {
            continue;
        };
        // Read under the claim: nobody is between claiming and recording now.
        match store::load_task(&task.placement.task_dir) {
            Ok(record) if !record.status.is_terminal() => claim.finish(),
            _ => {
                drop(claim);
                stop_in_background(task, None, None);
            }
        }
    }
}

/// Finishes a stop that is not over, waiting for whoever is at it: an error when processes
/// outlive it (kept as a stop not over).
pub(crate) fn finish_stop(task: &Task) -> Result<()> {
    let Some(claim) = monitor_lock::resume_stop(&task.record.id) else {
        return Ok(());
    };
    let survivors = end_processes(&task.placement, task.pane.as_ref(), None, DEFAULT_GRACE);
    if survivors.is_empty() {
        claim.finish();
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::InvalidState,
        format!(
            "task {} is still stopping: processes {survivors:?} outlived SIGKILL",
            task.record.id
        ),
    )
    .with_hint("a process in uninterruptible sleep ends once its I/O does; try again then"))
}

/// An ending cuekit writes before it ends the task's processes.
pub(super) fn stopped_by_cuekit(record: &TaskRecord) -> bool {
    matches!(record.status, Status::Cancelled | Status::TimedOut) && record.exit_code.is_none()
}

/// Whether the task's ending is on record but its processes are still being ended.
pub(crate) fn is_stopping(task: &Task) -> bool {
    task.record.status.is_terminal() && monitor_lock::is_stopping(&task.record.id)
}

/// Ends every process of a task and its session, from what the registry recorded, whether or
/// not its server, pane or directory still exist. Returns the pids that survived.
pub(crate) fn end_processes(
    placement: &store::Placement,
    pane: Option<&store::PaneStart>,
    live_pane_pid: Option<u32>,
    grace: Duration,
) -> Vec<u32> {
    let mut targets =
        crate::effects::process::task_processes(&placement.id, crate::ops::task::leader_of(pane));
    // The pid is only trusted while its pane is alive; a dead pane's pid may be reused.
    targets.extend(live_pane_pid);
    let survivors = crate::effects::process::terminate(targets, grace);
    // Gone already is fine: another cancel may have raced us.
    let _ = Tmux::new(placement.socket.clone()).run(&args::kill_session(&placement.session));
    survivors
}

/// Whether this process runs inside the task (its pane's process tree).
pub(super) fn inside(task: &Task) -> bool {
    std::env::var(crate::effects::process::TASK_ID_VARIABLE).is_ok_and(|id| id == task.record.id)
        || task.group_leader().is_some_and(|leader| {
            (unsafe { libc::getpgrp() } as u32) == leader.pid
                || crate::effects::process::descends_from(std::process::id(), leader.pid)
        })
}

/// The grace a detached stopper gives the task's processes, from the cancel that started it.
pub(crate) const STOP_GRACE_VARIABLE: &str = "CUEKIT_STOP_GRACE_MS";

/// Ends a task's processes from a detached `cuekit __stop <id>`, for callers that must not wait
/// for it (a listing), that are themselves inside the task (`after`: the stopper first waits
/// for that process to exit), or that may be killed before they are done (the stopper waits on
/// their claim, and goes on where they left off).
pub(crate) fn stop_in_background(task: &Task, after: Option<u32>, grace: Option<Duration>) {
    use std::os::unix::process::CommandExt;
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut command = std::process::Command::new(exe);
    command.arg("__stop").arg(&task.record.id);
    if let Some(pid) = after {
        command.arg("--after").arg(pid.to_string());
    }
    if let Some(grace) = grace {
        command.env(STOP_GRACE_VARIABLE, grace.as_millis().to_string());
    }
    let _ = command
        .env_remove(crate::effects::process::TASK_ID_VARIABLE)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // A session of its own: neither the task's group nor the caller's.
        .process_group(0)
        .spawn();
}
