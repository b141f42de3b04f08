//! What a queued task waits for and how far a task's attempts went, as views show it.

use serde::Serialize;

use super::{Usage, unfinished_dependencies};
use crate::domain::status::Status;
use crate::effects::config::Config;
use crate::effects::store::{self, schedule, schedule::Plan};
use crate::ops::task::view::{QueueView, TaskView};

/// What each queued task waits for; with `attempts`, also how far every task's attempts went
/// (a file look per task, so not for long listings).
pub(crate) fn explain(views: &mut [TaskView], attempts: bool) {
    let planned = |v: &TaskView| {
        v.status == Status::Queued
            || (attempts && schedule::plan_path(&v.id).is_some_and(|p| p.exists()))
    };
    if !views.iter().any(planned) {
        return;
    }
    let order = queue_order();
    let usage = Usage::now();
    let user = Config::user_limits();
    for view in views.iter_mut().filter(|v| planned(v)) {
        let Some(plan) = schedule::plan(&view.id) else {
            continue;
        };
        let mut shown = QueueView {
            priority: plan.priority,
            attempt: plan.attempts.len(),
            attempts_max: crate::domain::failover::attempts_max(
                plan.retry.as_ref().map(|r| r.max),
                plan.fallback.len(),
            ),
            attempts: plan.attempts.clone(),
            ..QueueView::default()
        };
        shown.line = attempt_line(&plan, &view.agent_kind, shown.attempts_max);
        if view.status == Status::Queued {
            shown.place = order.iter().position(|id| *id == view.id).map(|p| p + 1);
            shown.waiting_for = unfinished_dependencies(&plan);
            shown.not_before = plan.not_before.clone();
            if shown.waiting_for.is_empty() {
                shown.limit = usage.held_back(&plan, &view.agent_kind, view.team.as_deref(), &user);
            }
        }
        view.queue = Some(Box::new(shown));
    }
}

/// The running attempt (or the one a queued task waits to start) as a line, with the agent
/// and ending of the attempt before it.
fn attempt_line(plan: &Plan, agent: &str, of: Option<usize>) -> Option<String> {
    let last = plan.attempts.last()?;
    let (number, agent, before) = if last.ended_at.is_some() {
        let next = plan.switch.as_ref().map_or(agent, |s| s.agent.as_str());
        (plan.attempts.len() + 1, next, Some(last))
    } else {
        let before = plan
            .attempts
            .len()
            .checked_sub(2)
            .map(|i| &plan.attempts[i]);
        (
            plan.attempts.len(),
            last.agent.as_deref().unwrap_or(agent),
            before,
        )
    };
    let after =
        before.and_then(|b| Some((b.agent.as_deref().unwrap_or(agent), b.reason.as_deref()?)));
    Some(crate::domain::failover::attempt_line(
        number,
        of,
        agent,
        after,
        before.and_then(|b| b.resets.as_deref()),
    ))
}

pub(crate) fn explain_one(record: &store::TaskRecord) -> Option<Box<QueueView>> {
    let mut views = [TaskView::from(record)];
    explain(&mut views, true);
    let [view] = views;
    view.queue
}

/// The queued ids in the order they start (priority, then submit time).
fn queue_order() -> Vec<String> {
    let mut queued: Vec<(String, Plan)> = schedule::queued_ids()
        .into_iter()
        .filter_map(|id| Some((id.clone(), schedule::plan(&id)?)))
        .collect();
    queued.sort_by(|(a, pa), (b, pb)| {
        pb.priority
            .cmp(&pa.priority)
            .then_with(|| pa.queued_at.cmp(&pb.queued_at))
            .then_with(|| a.cmp(b))
    });
    queued.into_iter().map(|(id, _)| id).collect()
}

/// What waits in the queue, for `cuekit doctor`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct QueueSummary {
    pub waiting: usize,
    pub for_dependencies: usize,
    pub for_backoff: usize,
    /// Whether the scheduler process runs (it is started by the next cuekit call otherwise).
    pub scheduler_running: bool,
}

pub fn queue_summary() -> QueueSummary {
    let mut summary = QueueSummary::default();
    for id in schedule::queued_ids() {
        summary.waiting += 1;
        let Some(plan) = schedule::plan(&id) else {
            continue;
        };
        if !unfinished_dependencies(&plan).is_empty() {
            summary.for_dependencies += 1;
        } else if plan.not_before.is_some() {
            summary.for_backoff += 1;
        }
    }
    summary.scheduler_running = schedule::runner_lock_path()
        .is_some_and(|path| matches!(store::lock_file_try(&path), Ok(None)));
    summary
}
