//! What becomes of an attempt's ending: the passing fault the agent's last words name
//! (`rate_limited`, `transient`), and, under the task's retry policy, the task back in the
//! queue for its next attempt. The judge calls this before it records an ending.

use std::time::{Duration, SystemTime};

use crate::domain::adapter::{self, Adapter};
use crate::domain::error::Result;
use crate::domain::status::{Ending, Status};
use crate::effects::store::{self, schedule};
use crate::ops::task::Task;

/// An ending that names a passing fault is that fault: the agent's final error, or the end of
/// what it printed, says it was rate limited or met a transient error.
pub(crate) fn name_fault(record: &store::TaskRecord, adapter: &Adapter, ending: Ending) -> Ending {
    const NEVER: &[&str] = &[
        "auth_missing",
        "input_error",
        "untrusted_workspace",
        "worktree_setup_failed",
        "check_failed",
        "config_error",
        "sandbox_error",
    ];
    if ending.status != Status::Failed
        || ending
            .reason
            .as_deref()
            .is_some_and(|reason| NEVER.contains(&reason) || reason == "pane_disappeared")
    {
        return ending;
    }
    let mut text = ending.hint.clone().unwrap_or_default();
    text.push('\n');
    text.push_str(&transcript_end(record));
    let Some((reason, wait)) = adapter::faults::classify(adapter.faults, &text) else {
        return ending;
    };
    let hint = match wait {
        Some(wait) => format!(
            "the agent was {} (it asked to wait {}); `cuekit retry <id>` starts it again, \
             or submit with --retry N",
            reason.replace('_', " "),
            humantime::format_duration(wait)
        ),
        None => format!(
            "the agent met a passing fault ({}); `cuekit retry <id>` starts it again, or submit \
             with --retry N",
            reason.replace('_', " ")
        ),
    };
    Ending {
        reason: Some(reason.to_string()),
        hint: Some(hint),
        ..ending
    }
}

/// The last lines of the task's transcript as text (16 KiB of it at most).
pub(crate) fn transcript_end(record: &store::TaskRecord) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let path = crate::effects::store::transcript_path(record);
    let Ok(mut file) = store::open_own(&path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut raw = Vec::new();
    let _ = file.take(16 * 1024).read_to_end(&mut raw);
    let height = record.tmux.as_ref().map_or(50, |t| usize::from(t.height));
    crate::domain::transcript::render(&raw, height)
}

/// For an attempt that ended for a reason its retry policy retries, with attempts left: the
/// ending goes into the plan and the task back into the queue (`queued`, the reason and the
/// next start in its hint). `None`: the ending is the task's.
pub(crate) fn requeue(task: &Task, ending: &Ending) -> Option<Result<Task>> {
    let id = &task.record.id;
    let mut plan = schedule::plan(id)?;
    let policy = plan.retry.clone()?;
    let reason = ending.reason.as_deref()?;
    if ending.status != Status::Failed || !policy.on.iter().any(|on| on == reason) {
        return None;
    }
    let started = plan.attempts.len().max(1);
    if started > policy.max as usize {
        return None;
    }
    // A look at an attempt another has followed since: not this attempt's ending to count
    // (`record_ending` then writes nothing either).
    if store::lifecycle(id).is_some_and(|now| now.started_at != task.record.started_at) {
        return None;
    }
    let now = crate::effects::clock::now_rfc3339();
    if plan.attempts.is_empty() {
        plan.attempts.push(schedule::Attempt {
            started_at: task.record.created_at.clone(),
            ended_at: None,
            reason: None,
            exit_code: None,
        });
    }
    if let Some(last) = plan.attempts.last_mut().filter(|a| a.ended_at.is_none()) {
        last.ended_at = Some(now.clone());
        last.reason = Some(reason.to_string());
        last.exit_code = ending.exit_code;
    }
    let hinted = ending.hint.as_deref().and_then(asked_wait);
    let wait = policy.backoff(started + 1, hinted);
    let at = SystemTime::now() + wait;
    plan.not_before = Some(humantime::format_rfc3339_seconds(at).to_string());
    let next = started + 1;
    let of = policy.max as usize + 1;
    Some((|| {
        schedule::save_plan(id, &plan)?;
        schedule::enqueue(id)?;
        let mut task = task.clone();
        task.record = store::update(&task.placement.task_dir, |record| {
            if record.status != Status::Running || record.started_at != task.record.started_at {
                return Ok(false);
            }
            record.status = Status::Queued;
            record.reason = Some(reason.to_string());
            record.exit_code = ending.exit_code;
            record.hint = Some(format!(
                "attempt {} of {of} ended {reason}; attempt {next} starts at {} (in {}), \
                 continuing its session",
                started,
                plan.not_before.as_deref().unwrap_or_default(),
                humantime::format_duration(wait)
            ));
            Ok(true)
        })?;
        schedule::free_slot(id);
        schedule::close_gate(id);
        crate::ops::background::monitor_lock::ensure_scheduler();
        Ok(task)
    })())
}

/// The wait named in a hint this module wrote ("it asked to wait 38s").
fn asked_wait(hint: &str) -> Option<Duration> {
    let (_, after) = hint.split_once("asked to wait ")?;
    let words = after.split(')').next()?;
    humantime::parse_duration(words).ok()
}
