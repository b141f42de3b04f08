//! The stopper (`cuekit __stop`): a detached process that finishes a task's stop once its
//! claimant is done or gone, so a stop outlives the command that asked for it.

use std::time::Duration;

use super::monitor_lock;
use crate::domain::error::{Error, Result};
use crate::effects::process::DEFAULT_GRACE;
use crate::effects::store;
use crate::ops::judge::{STOP_GRACE_VARIABLE, end_processes};
use crate::ops::task::Found;

/// `cuekit __stop <id> [--after PID]`: finishes the task's stop (see `judge::stop_in_background`),
/// once whoever claimed it is done or gone: ends its processes and session, unless the stop
/// was never recorded (its claimant was killed first) or is over.
pub fn run_stopper(task_id: &str, after: Option<u32>) -> Result<()> {
    unsafe { libc::setsid() };
    let Some(placement) = store::placement(task_id)? else {
        return Err(Error::task_not_found(task_id));
    };
    let grace = std::env::var(STOP_GRACE_VARIABLE)
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(DEFAULT_GRACE, Duration::from_millis);
    if let Some(caller) = after {
        // Let the caller inside the task print its answer and exit first (it is part of the
        // task, so it would be ended with it).
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while crate::effects::process::is_alive(caller) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if crate::effects::process::is_alive(caller) {
            // Hung with the claim held until it exits (its ending is on record): it is ended
            // with the task, which frees the claim.
            end_processes(&placement, store::pane_start(task_id).as_ref(), None, grace);
        }
    }
    let claim = monitor_lock::resume_stop(task_id);
    // No claim: the stop is over, unless the caller inside the task could not claim it (it
    // recorded the ending before it started this stopper).
    if claim.is_none() && after.is_none() {
        return Ok(());
    }
    let mut ended = None;
    let pane = match crate::ops::task::found_for(placement.clone()) {
        Found::Trusted(task) if !task.record.status.is_terminal() => {
            if let Some(claim) = claim {
                claim.finish();
            }
            return Ok(());
        }
        Found::Trusted(task) => {
            let pane = task.pane.clone();
            ended = Some(task);
            pane
        }
        // Its record deleted after the ending was written: the registry still says where.
        Found::Unreadable { pane, .. } => pane,
        // A record changed since: nothing is done on its word.
        Found::Untrusted { .. } => {
            if let Some(claim) = claim {
                claim.finish();
            }
            return Ok(());
        }
    };
    let survivors = end_processes(&placement, pane.as_ref(), None, grace);
    if let Some(claim) = claim.filter(|_| survivors.is_empty()) {
        claim.finish();
        // Nothing of it runs now: what its sandboxed child left is made harmless.
        if let Some(task) = &ended {
            crate::ops::sandbox::after_end(task);
        }
    }
    Ok(())
}
