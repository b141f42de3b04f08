//! Recording an ending: written under the record's lock, once; a disk that refuses it leaves the
//! ending shown but not recorded, to be written by the next look.

use crate::domain::error::{Error, Result};
use crate::domain::launch::EXIT_CODE_FILE;
use crate::domain::status::{Ending, Status};
use crate::effects::store::{self};
use crate::ops::task::Task;

/// Writes an ending unless another process recorded one first (the first ending wins).
pub(crate) fn record_ending(mut task: Task, ending: Ending) -> Result<Task> {
    let mut ended_queued = false;
    let looked_at = task.record.status;
    let looked_started = task.record.started_at.clone();
    task.record = store::update(&task.placement.task_dir, |record| {
        if record.status.is_terminal() {
            return Ok(false);
        }
        // Judged on a look at an attempt that has been followed by another since: the look
        // saw the earlier attempt's pane gone, which says nothing of the new one.
        if record.status == Status::Running
            && record.started_at != looked_started
            && ending.status != Status::Cancelled
        {
            return Ok(false);
        }
        // Judged on a look at an attempt that has ended since and been queued again (`retry`,
        // a retry policy): the new attempt has not started, and only a cancel ends it now.
        if record.status == Status::Queued
            && looked_at != Status::Queued
            && ending.status != Status::Cancelled
        {
            return Ok(false);
        }
        // Judged with the agent and event stream of an earlier attempt: a look reads the
        // registry's facts before the lifecycle, and a switch to another agent started (and a
        // quick one ended) in between, so the new attempt's exit was read as the old agent's.
        // The next look judges with the facts as they are.
        if ending.status != Status::Cancelled && judged_with_older_facts(&task) {
            return Ok(false);
        }
        ended_queued = record.status == Status::Queued;
        // A launch's exit judged on a look older than the check's last verdict: the verdict
        // as the registry has it now decides (never for the sandbox's or setup's own
        // failures; never what the task.json under the lock says, a mirror a child can write).
        let ending = match (ending.exit_code, ending.reason.as_deref()) {
            (_, Some("sandbox_failed" | "worktree_setup_failed")) | (None, _) => ending,
            (Some(code), _) => {
                let mut believed = record.clone();
                believed.check = crate::ops::task::believed_check(&task.placement);
                // A check of its work runs (the turn before the exit, or a parent's `cuekit
                // check`): that verdict decides, so nothing is written; the look after it judges.
                // (A keep-open child told `/quit` after a pass had its last turn checked
                // again, and exited meanwhile: failed `check_failed` on a pass.)
                if believed
                    .check
                    .as_ref()
                    .is_some_and(|check| check.phase == crate::domain::check::Phase::Checking)
                    && crate::ops::check::verdict_pending(&task)
                {
                    return Ok(false);
                }
                match crate::domain::status::check_ending(&believed, code) {
                    Some(check_failed) => check_failed,
                    // Judged check_failed on a verdict that has passed since: nothing is
                    // written, the next look judges the exit on the verdict as it is.
                    None if ending.reason.as_deref() == Some("check_failed") => {
                        return Ok(false);
                    }
                    None => ending,
                }
            }
        };
        // Ended of itself (a stop tidies once its processes are gone): what its sandboxed
        // child left in your folders is made harmless before anyone reads the ending.
        if ending.status.is_terminal() {
            record.warnings.extend(crate::ops::sandbox::tidy_after(
                &task.placement,
                record.started_at.as_deref(),
            ));
        }
        record.status = ending.status;
        record.reason = ending.reason;
        record.hint = ending.hint;
        record.exit_code = ending.exit_code;
        record.ended_at = Some(crate::effects::clock::now_rfc3339());
        // The sentinel's temp file, if the pane died between writing and renaming it.
        let _ = std::fs::remove_file(record.task_dir.join(format!("{EXIT_CODE_FILE}.tmp")));
        Ok(true)
    })?;
    if task.record.started_at != looked_started {
        // Another attempt runs now: the task handed back is that attempt's, pane and all.
        task.pane = store::pane_start(&task.record.id);
    }
    if !task.record.status.is_terminal() {
        // Not ended after all (a check's verdict changed since the look): the next look decides.
        return Ok(task);
    }
    // Ended: its slot is free and it never starts again (a cancelled queued task).
    crate::effects::store::schedule::dequeue(&task.record.id);
    crate::effects::store::schedule::free_slot(&task.record.id);
    if ended_queued {
        crate::effects::store::schedule::close_plan(&task.record.id);
    }
    Ok(task)
}

/// Whether the registry names another agent, or another kind of output, for `task` than the
/// look that judged it read (a failover or hand-off started a new attempt since).
fn judged_with_older_facts(task: &Task) -> bool {
    let Some(looked) = task.placement.facts.as_ref() else {
        return false;
    };
    let Ok(Some(now)) = store::placement(&task.placement.id) else {
        return false;
    };
    now.facts.is_some_and(|facts| {
        facts.agent != looked.agent || facts.event_stream != looked.event_stream
    })
}

/// Records the ending; when it cannot be written (a full or read-only disk) the task is still
/// shown as judged, with a warning, instead of failing the look at every other task. Nothing
/// is lost: the next look judges it again and records it. Returns whether it was recorded.
pub(super) fn record_or_show(task: Task, ending: Ending) -> (Task, bool) {
    let mut shown = task.clone();
    match record_ending(task, ending.clone()) {
        Ok(task) => (task, true),
        Err(err) => {
            shown.record.status = ending.status;
            shown.record.reason = ending.reason;
            shown.record.hint = ending.hint;
            shown.record.exit_code = ending.exit_code;
            shown.record.ended_at = Some(crate::effects::clock::now_rfc3339());
            (unrecorded(shown, &err), false)
        }
    }
}

pub(super) fn unrecorded(mut task: Task, err: &Error) -> Task {
    task.record.warnings.push(format!(
        "not recorded yet ({}): the next look records it",
        err.message
    ));
    task
}

pub(crate) fn timed_out() -> Ending {
    Ending {
        status: Status::TimedOut,
        reason: Some("timeout".into()),
        hint: Some(
            "the task ran past its --timeout and was stopped; raise the timeout or split the task"
                .into(),
        ),
        exit_code: None,
    }
}

pub(crate) fn cancelled() -> Ending {
    Ending {
        status: Status::Cancelled,
        reason: Some("cancelled".into()),
        hint: Some("cancelled by the parent with `cuekit cancel`".into()),
        exit_code: None,
    }
}

/// Records the cancels noted while there was no room (`cancel`'s `stop_without_room`), once there
/// is: called by every look before it judges, so the ended pane reads `cancelled`. A task that
/// ended on record meanwhile keeps its ending (the first ending wins).
pub(super) fn record_noted_cancels(tasks: &[Task]) {
    for task in tasks {
        let id = &task.record.id;
        if !store::intent::cancel_noted(id) {
            continue;
        }
        if task.record.status.is_terminal() || record_ending(task.clone(), cancelled()).is_ok() {
            store::intent::clear_cancel(id);
        }
    }
}
