//! `cuekit retry`: a new attempt of an ended task, on purpose, under the same id. (An attempt
//! that ends for a passing reason under a retry policy is queued again by `ops::attempt`.)

use std::path::Path;

use super::explain::explain_one;
use super::start_due;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::status::Status;
use crate::effects::config::Config;
use crate::effects::store::{self, schedule, schedule::Plan};
use crate::ops::task::view::TaskView;

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
            ..Default::default()
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
    let adapter = crate::domain::adapter::lookup(&record.spec.agent_kind)?;
    let env =
        crate::ops::submit::prepare::env_file_text(task_id, adapter, &config, task.in_bubblewrap());
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
    crate::ops::background::monitor_lock::ensure_scheduler();
    let _ = start_due();
    let record = crate::ops::task::reread(&task.placement).unwrap_or(updated);
    let mut view = TaskView::from(&record);
    view.queue = explain_one(&record);
    Ok(view)
}
