//! A stop asked for now (a cancel, an attempt stuck on a passing fault, a stop a killed caller
//! left): the task looked at once more, its ending recorded, its processes ended.

use std::time::Duration;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::status::{Ending, Status};
use crate::effects::store::{self};
use crate::ops::background::monitor_lock;
use crate::ops::task::Task;

use super::ending::record_ending;
use super::look::refresh_with;
use super::stop::{end_processes, inside, stop_in_background, stopped_by_cuekit};
use crate::effects::process::DEFAULT_GRACE;

/// Ends an attempt stuck on a passing fault (an interactive child idle on a quota error): its
/// ending is recorded first, or under its retry policy the task is queued again, and then its
/// processes are ended (the next attempt starts only once they are gone).
pub(crate) fn end_stuck(task: Task, ending: Ending) -> Result<()> {
    match crate::ops::judge::attempt::requeue(&task, &ending) {
        Some(requeued) => {
            let task = requeued?;
            end_processes(&task.placement, task.pane.as_ref(), None, DEFAULT_GRACE);
            Ok(())
        }
        None => stop(task, ending, DEFAULT_GRACE).map(|_| ()),
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
    let looked_started = task.record.started_at.clone();
    let refreshed = refresh_with(vec![task], false, None)?;
    let pane_pid = refreshed
        .pane(&refreshed.tasks[0])
        .ok()
        .flatten()
        .filter(|pane| !pane.dead)
        .map(|pane| pane.pane_pid);
    let task = refreshed.tasks.into_iter().next().expect("one task in");
    // Asked of an attempt another has followed since (a stuck attempt's end, seen late): not
    // this stop's to end. A cancel ends whatever attempt runs.
    if task.record.started_at != looked_started && ending.status != Status::Cancelled {
        return Ok(task);
    }
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
        crate::ops::sandbox::after_end(&task);
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
