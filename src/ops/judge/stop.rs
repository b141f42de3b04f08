//! Stopping a task: its ending recorded first, then its processes ended — here, or by a detached
//! stopper (`cuekit __stop`) that outlives the caller; a stop a killed caller left is finished.

use std::time::Duration;

use crate::domain::status::{Ending, Status};
use crate::effects::store::{self, TaskRecord};
use crate::effects::tmux::{Tmux, args};
use crate::ops::background::monitor_lock;
use crate::ops::task::Task;

use super::ending::{record_ending, unrecorded};

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
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = vec!["__stop".into(), (&task.record.id).into()];
    if let Some(pid) = after {
        args.extend(["--after".into(), pid.to_string().into()]);
    }
    let mut env = vec![(crate::effects::process::TASK_ID_VARIABLE, None)];
    if let Some(grace) = grace {
        env.push((
            STOP_GRACE_VARIABLE,
            Some(grace.as_millis().to_string().into()),
        ));
    }
    // A group of its own: neither the task's group nor the caller's.
    let _ = crate::effects::spawn::detached(&exe, &args, &env, None);
}
