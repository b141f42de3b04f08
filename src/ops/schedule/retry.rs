//! Attempts that end for a passing reason: the fault named from the agent's last words, the
//! task queued again under its policy, and `cuekit retry` on purpose.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::explain::explain_one;
use super::{ensure_running, start_due};
use crate::adapter::{self, Adapter};
use crate::config::Config;
use crate::error::{Error, ErrorCode, Result};
use crate::ops::task::Task;
use crate::ops::view::TaskView;
use crate::status::{Ending, Status};
use crate::store::{self, schedule, schedule::Plan};

/// An ending that names a passing fault is that fault: the agent's final error, or the end of
/// what it printed, says it was rate limited or met a transient error.
pub(crate) fn name_fault(record: &store::TaskRecord, adapter: &Adapter, ending: Ending) -> Ending {
    const NEVER: &[&str] = &[
        "auth_missing",
        "input_error",
        "untrusted_workspace",
        "worktree_setup_failed",
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
    let path = crate::ops::transcript_path(record);
    let Ok(mut file) = store::open_own(&path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut raw = Vec::new();
    let _ = file.take(16 * 1024).read_to_end(&mut raw);
    let height = record.tmux.as_ref().map_or(50, |t| usize::from(t.height));
    crate::transcript::render(&raw, height)
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
    let now = crate::ops::now_rfc3339();
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
            if record.status != Status::Running {
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
        ensure_running();
        Ok(task)
    })())
}

/// The wait named in a hint this module wrote ("it asked to wait 38s").
fn asked_wait(hint: &str) -> Option<Duration> {
    let (_, after) = hint.split_once("asked to wait ")?;
    let words = after.split(')').next()?;
    humantime::parse_duration(words).ok()
}

/// `cuekit retry ID`: a new attempt of an ended task, on purpose, continuing its session. The
/// task keeps its id; it is queued and starts under the limits.
pub fn retry(task_id: &str, cwd: &Path) -> Result<TaskView> {
    let task = crate::ops::task::open(task_id, cwd)?;
    let record = &task.record;
    if !record.status.is_terminal() {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "task {task_id} is {}: only an ended task is retried",
                record.status.as_str()
            ),
        )
        .with_hint("wait for it (`cuekit wait`), or cancel it first"));
    }
    if record.status == Status::Completed {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("task {task_id} completed: there is nothing to retry"),
        )
        .with_hint("submit a follow-up with --resume-from to continue its session"));
    }
    if task.placement.host.is_some() {
        return Err(Error::invalid_input(format!(
            "task {task_id} runs on a host: retry it there"
        )));
    }
    crate::ops::judge::finish_stop(&task)?;
    let config = Config::load(&record.cwd)?;
    let mut plan = schedule::plan(task_id).unwrap_or_else(|| Plan {
        queued_at: record.created_at.clone(),
        attempts: vec![schedule::Attempt {
            started_at: record
                .started_at
                .clone()
                .unwrap_or(record.created_at.clone()),
            ended_at: record.ended_at.clone(),
            reason: record.reason.clone(),
            exit_code: record.exit_code,
        }],
        ..Plan::default()
    });
    if let Some(last) = plan.attempts.last_mut().filter(|a| a.ended_at.is_none()) {
        last.ended_at = record.ended_at.clone();
        last.reason = record.reason.clone();
        last.exit_code = record.exit_code;
    }
    plan.not_before = None;
    plan.closed = false;
    plan.limits = plan.limits.clone().lowered_by(&config.limits());
    // The environment of this call: the one kept at submit is gone with a task that had no
    // policy.
    let env = crate::ops::submit::env_file_text(task_id, &record.spec.agent_kind, &config);
    let env_path = schedule::env_path(task_id).expect("a task id names a path");
    if !env_path.exists() {
        schedule::write_private(&env_path, env.as_bytes())?;
    }
    schedule::save_plan(task_id, &plan)?;
    schedule::enqueue(task_id)?;
    let updated = store::update(&task.placement.task_dir, |record| {
        if !record.status.is_terminal() {
            return Ok(false);
        }
        record.status = Status::Queued;
        record.hint = Some(format!(
            "attempt {} asked for by `cuekit retry`; it starts once a slot is free",
            plan.attempts.len() + 1
        ));
        record.ended_at = None;
        Ok(true)
    })?;
    ensure_running();
    let _ = start_due();
    let record = store::load(&task.placement.task_dir).unwrap_or(updated);
    let mut view = TaskView::from(&record);
    view.queue = explain_one(&record);
    Ok(view)
}
