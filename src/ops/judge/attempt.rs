//! What becomes of an attempt's ending: the passing fault the agent's last words name
//! (`rate_limited`, `transient`), and, under the task's retry policy, the task back in the
//! queue for its next attempt. The judge calls this before it records an ending.

use std::time::{Duration, SystemTime};

use crate::domain::adapter::{self, Adapter};
use crate::domain::error::Result;
use crate::domain::failover;
use crate::domain::status::{Ending, Status};
use crate::effects::store::{self, schedule};
use crate::ops::schedule::switch;
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
    text.push_str(&attempt_transcript_end(record));
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
    transcript_end_from(record, 0)
}

/// The last lines of what the running attempt printed (16 KiB at most): the transcript from
/// where the attempt's pane started (its plan names it), never an earlier attempt's words.
pub(crate) fn attempt_transcript_end(record: &store::TaskRecord) -> String {
    let from = schedule::plan(&record.id)
        .and_then(|plan| plan.attempts.last().cloned())
        .filter(|attempt| attempt.ended_at.is_none())
        .and_then(|attempt| attempt.transcript_from)
        .unwrap_or(0);
    transcript_end_from(record, from)
}

/// The last 16 KiB at most of the transcript after byte `from`, rendered.
fn transcript_end_from(record: &store::TaskRecord, from: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let path = crate::effects::store::transcript_path(record);
    let Ok(mut file) = store::open_own(&path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024).max(from)));
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
    // A failover or hand-off decided for this attempt (the plan holds it), its record not
    // `queued` yet (its process was killed, or a hand-off is ending the attempt): carried out
    // as decided, whatever the ending.
    if store::lifecycle(id).is_none_or(|now| now.started_at == task.record.started_at)
        && let Some(finished) = switch::finish_pending(task, &plan)
    {
        return finished.transpose();
    }
    let reason = ending.reason.as_deref()?;
    if ending.status != Status::Failed {
        return None;
    }
    // A look at an attempt another has followed since: not this attempt's ending to count
    // (`record_ending` then writes nothing either).
    if store::lifecycle(id).is_some_and(|now| now.started_at != task.record.started_at) {
        return None;
    }
    let retry_left = plan.retry.as_ref().is_some_and(|policy| {
        policy.on.iter().any(|on| on == reason)
            && attempts_on_agent(&plan, &task.record.spec.agent_kind) <= policy.max as usize
    });
    if let Some(decided) = fail_over(task, &plan, ending, reason, retry_left) {
        return decided;
    }
    let policy = plan.retry.clone()?;
    if !retry_left {
        return None;
    }
    let started = plan.attempts.len().max(1);
    let now = crate::effects::clock::now_rfc3339();
    if plan.attempts.is_empty() {
        plan.attempts.push(schedule::Attempt {
            started_at: task.record.created_at.clone(),
            ended_at: None,
            reason: None,
            exit_code: None,
            ..Default::default()
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
    let of = failover::attempts_max(Some(policy.max), plan.fallback.len()).unwrap_or(next);
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

/// The attempts made on `agent` since the task last changed agents (at least 1).
fn attempts_on_agent(plan: &schedule::Plan, agent: &str) -> usize {
    plan.attempts
        .iter()
        .rev()
        .take_while(|a| a.agent.as_deref().is_none_or(|a| a == agent))
        .count()
        .max(1)
}

/// A rate-limited attempt of a task with a fallback left: the next attempt on the next agent
/// (`Some`), or the task's ending when that agent may not take it (fails closed). `None`: the
/// retry policy decides as before.
fn fail_over(
    task: &Task,
    plan: &schedule::Plan,
    ending: &Ending,
    reason: &str,
    retry_left: bool,
) -> Option<Option<Result<Task>>> {
    let reset = ending.hint.as_deref().and_then(asked_wait);
    let facts = failover::Facts {
        reason,
        reset,
        retry_left,
        fallback_after: plan
            .fallback_after
            .map_or(failover::DEFAULT_AFTER, Duration::from_secs),
        fallbacks: &plan.fallback,
        used: plan.fallback_used,
    };
    let agent = task.record.spec.agent_kind.clone();
    match failover::decide(&facts, |next| switch::may_take(task, next)) {
        failover::Decision::NotMine | failover::Decision::Retry => None,
        failover::Decision::Refused(index) => {
            let next = &plan.fallback[index];
            let ending = Ending {
                hint: Some(format!(
                    "{agent} was {}; its fallback {next} did not take over: the task asks for                      approvals in a sandbox, which is verified for {} only (fails closed).                      `cuekit retry <id>` tries {agent} again",
                    reason.replace('_', " "),
                    crate::ops::sandbox::VERIFIED_AGENTS.join(", ")
                )),
                ..ending.clone()
            };
            Some(Some(super::ending::record_ending(task.clone(), ending)))
        }
        failover::Decision::Failover(index) => {
            let mut plan = plan.clone();
            plan.fallback_used = index + 1;
            let next = plan.fallback[index].clone();
            let done = plan.attempts.len().max(1);
            let of =
                failover::attempts_max(plan.retry.as_ref().map(|r| r.max), plan.fallback.len())
                    .map(|of| format!(" of {of}"))
                    .unwrap_or_default();
            let resets = reset
                .map(|wait| format!(" (it asked to wait {})", humantime::format_duration(wait)))
                .unwrap_or_default();
            let hint = format!(
                "attempt {done}{of} ended {reason} on {agent}{resets}; attempt {} goes on with                  {next} in the same work dir, told a recap",
                done + 1
            );
            let ended = switch::Ended {
                reason,
                exit_code: ending.exit_code,
                reset,
            };
            Some(switch::queue_switch(task, plan, &ended, &next, None, &hint).transpose())
        }
    }
}

/// The wait named in a hint this module wrote ("it asked to wait 38s").
fn asked_wait(hint: &str) -> Option<Duration> {
    let (_, after) = hint.split_once("asked to wait ")?;
    let words = after.split(')').next()?;
    humantime::parse_duration(words).ok()
}
