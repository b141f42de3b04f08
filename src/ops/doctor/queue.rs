//! The queue: what waits, and whether the scheduler serves it.

use super::{Check, Level};

/// What waits in the queue, and whether the scheduler serves it (after a reboot the next
/// cuekit call starts it; `doctor` is one).
pub(super) fn queue_check() -> Option<Check> {
    let summary = crate::ops::queue_summary();
    if summary.waiting == 0 {
        return None;
    }
    let limits = summary.waiting - summary.for_dependencies - summary.for_backoff;
    let message = format!(
        "{} task(s) wait: {} for a dependency, {} for a retry's backoff, {} for a slot under the limits; scheduler {}",
        summary.waiting,
        summary.for_dependencies,
        summary.for_backoff,
        limits,
        if summary.scheduler_running {
            "running"
        } else {
            "not running"
        }
    );
    Some(if summary.scheduler_running {
        Check::new("queue", Level::Ok, message)
    } else {
        Check::new("queue", Level::Warn, message).next(
            "run `cuekit list --all` (any cuekit call that looks at tasks starts the scheduler)",
        )
    })
}

/// Tasks `queued` on record with no queue mark (a failover decision or a hand-off killed
/// half-way): the scheduler would never start them; a look finishes their queuing.
pub(super) fn stranded_check() -> Option<Check> {
    let tasks: Vec<crate::ops::task::Task> = crate::ops::task::scan_registry()
        .ok()?
        .into_iter()
        .filter_map(|found| match found {
            crate::ops::task::Found::Trusted(task) => Some(*task),
            _ => None,
        })
        .collect();
    let ids = crate::ops::schedule::stranded::stranded_ids(&tasks);
    if ids.is_empty() {
        return None;
    }
    Some(
        Check::new(
            "queue",
            Level::Warn,
            format!(
                "{} task(s) queued with no place in the queue (a decision killed half-way): {}",
                ids.len(),
                ids.join(", ")
            ),
        )
        .next("run `cuekit status ID` (or `cuekit list`): a look puts the task back in the queue"),
    )
}
