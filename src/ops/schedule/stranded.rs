//! A `queued` task with no queue mark, which the scheduler would never start (so `wait` would
//! never return). Every writer marks a task before its record says `queued` (a switch to
//! another agent writes its plan and mark first: [`super::switch`]), so this is a mark lost
//! some other way (an older cuekit killed half-way, a mark deleted by hand); every look's
//! upkeep ([`crate::ops::judge::look_after`]) puts it back, and `doctor` names such a task.

use std::time::{Duration, SystemTime};

use crate::domain::status::Status;
use crate::effects::store::{self, schedule};
use crate::ops::task::Task;

/// A record changed this recently may still be in the hands of the process queuing it.
const SETTLE: Duration = Duration::from_secs(2);

/// Whether `task` is queued on record with no queue mark and no start under way, its record
/// unchanged for a moment (so no live decision is half-way).
pub(crate) fn is_stranded(task: &Task) -> bool {
    let id = &task.record.id;
    task.placement.host.is_none()
        && task.record.status == Status::Queued
        && !schedule::is_queued(id)
        && schedule::claim(id).is_none()
        && schedule::plan(id).is_some_and(|plan| !plan.closed)
        && std::fs::metadata(task.placement.task_dir.join(store::RECORD_FILE))
            .and_then(|meta| meta.modified())
            .is_ok_and(|at| {
                SystemTime::now()
                    .duration_since(at)
                    .is_ok_and(|age| age >= SETTLE)
            })
}

/// Finishes a stranded task's queuing (see the module): an attempt the plan never saw end is
/// ended as the registry's lifecycle says, what is left of it is ended, and the task is
/// marked queued for the scheduler.
pub(crate) fn repair(task: &Task) {
    if !is_stranded(task) {
        return;
    }
    let id = &task.record.id;
    let Some(mut plan) = schedule::plan(id) else {
        return;
    };
    if plan.attempts.last().is_none_or(|a| a.ended_at.is_none()) {
        let reason = task
            .record
            .reason
            .clone()
            .unwrap_or_else(|| "stopped".into());
        end_attempt(&mut plan, task, &task.record.spec.agent_kind, &reason);
        if schedule::save_plan(id, &plan).is_err() {
            return;
        }
    }
    if schedule::enqueue(id).is_err() {
        return;
    }
    schedule::free_slot(id);
    schedule::close_gate(id);
    // Nothing of the attempt before may run beside the next.
    crate::ops::judge::end_processes(
        &task.placement,
        task.pane.as_ref(),
        None,
        crate::effects::process::DEFAULT_GRACE,
    );
    crate::ops::background::monitor_lock::ensure_scheduler();
}

/// The plan's last attempt (one is made for a task that had none) ended as the record says.
fn end_attempt(plan: &mut schedule::Plan, task: &Task, agent: &str, reason: &str) {
    if plan.attempts.is_empty() {
        plan.attempts.push(schedule::Attempt {
            started_at: task.record.created_at.clone(),
            ..Default::default()
        });
    }
    if let Some(last) = plan.attempts.last_mut() {
        last.ended_at = Some(crate::effects::clock::now_rfc3339());
        last.reason = Some(reason.to_string());
        last.exit_code = task.record.exit_code;
        last.agent.get_or_insert_with(|| agent.to_string());
    }
}

/// The ids of the stranded tasks among `tasks` (for `doctor`).
pub(crate) fn stranded_ids(tasks: &[Task]) -> Vec<String> {
    tasks
        .iter()
        .filter(|task| is_stranded(task))
        .map(|task| task.record.id.clone())
        .collect()
}
