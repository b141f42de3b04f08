//! The scheduler: tasks past the limits, waiting on other tasks or on a retry's backoff wait in
//! the queue (`queued`), and start once they may, each exactly once. One decision at a time,
//! user-wide, under `scheduler.lock`: a submit that fits starts its task under it, and the
//! scheduler process (`cuekit __scheduler`, one per user, alive while anything waits) starts the
//! rest on its ticks. A start is claimed (`starting/<id>`) before tmux is asked and the pane is
//! gated until the record says `running`, so a starter killed at any instant leaves either a
//! task that runs once or one that still waits, never two agents.
//!
//! A slot is a live agent: a task holds one from its start until its pane's first process is
//! gone, whatever the child does meanwhile (an interactive child idle at its prompt holds it).
//! Attempts that end for a passing reason (a rate limit, a transient fault, a pane gone with its
//! server) under a retry policy go back to the queue and continue the agent's session.

mod explain;
mod retry;
mod start;
pub(crate) mod stranded;
pub(crate) mod switch;

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use super::task::{Found, Task, found_for};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::report::ReportKind;
use crate::domain::spec::Mode;
use crate::domain::status::{Ending, Status};
use crate::effects::config::Config;
use crate::effects::store::{self, schedule, schedule::Plan};
use crate::effects::tmux::{Tmux, args};
use crate::ops::task::view::QueueView;

pub use explain::{QueueSummary, queue_summary};
pub(crate) use explain::{explain, explain_one};
pub use retry::retry;
pub(crate) use start::gate_paths;

/// A slot taken by a start whose pane is not recorded yet still counts this long.
const STARTING_GRACE: Duration = Duration::from_secs(60);

/// What a submit asks of the scheduler.
#[derive(Debug, Clone, Default)]
pub struct Scheduling {
    pub after: Vec<String>,
    pub after_ended: bool,
    pub priority: i32,
    /// Start now whatever the limits (dependencies still hold).
    pub now: bool,
    /// `--retry N`: further attempts (else the config's policy).
    pub retry: Option<u32>,
    /// A team spec's `max_parallel`.
    pub team_max: Option<u32>,
    /// `--context-from`: a task whose answer goes into this one's prompt (one not ended yet
    /// is waited for, as with `--after`).
    pub context_from: Option<String>,
    /// `--base-from`: a worktree task whose branch tip (its uncommitted work committed first)
    /// this task's worktree starts from, made when this task starts.
    pub base_from: Option<String>,
    /// `--fallback K[:MODEL],…`: the agents a rate-limited task goes on with (else the user's
    /// `retry.fallback`; never a project file's).
    pub fallback: Option<Vec<crate::domain::failover::Fallback>>,
}

/// `--fallback K[:MODEL],…` (MCP `fallback`, a team member's `fallback`) as a list.
pub fn parse_fallback(text: &str) -> Result<Vec<crate::domain::failover::Fallback>> {
    let known: Vec<&str> = crate::domain::adapter::ADAPTERS
        .iter()
        .map(|a| a.kind())
        .collect();
    crate::domain::failover::parse_list(text, &known)
}

/// The plan of a new task, or `None` when nothing about it concerns the scheduler. Every
/// dependency must be a task registered here (an unknown id is refused).
pub(crate) fn plan_for(asked: &Scheduling, config: &Config) -> Result<Option<Plan>> {
    for id in &asked.after {
        if !store::is_task_id(id) {
            return Err(
                Error::invalid_input(format!("--after: '{id}' is not a task id")).with_hint(
                    "task ids look like t_0123456789ab (`cuekit list --all` shows them)",
                ),
            );
        }
        match store::placement(id)? {
            None => {
                return Err(Error::new(
                    ErrorCode::TaskNotFound,
                    format!("--after: no task {id} is known here"),
                )
                .with_hint("a dependency must be submitted first (`cuekit list --all`)"));
            }
            Some(placement) if placement.host.is_some() => {
                return Err(Error::invalid_input(format!(
                    "--after: task {id} runs on host {}; dependencies are followed on this machine only",
                    placement.host.unwrap_or_default()
                )));
            }
            Some(_) => {}
        }
    }
    let retry = match asked.retry {
        Some(0) => None,
        Some(max) => Some(config.retry().map_or_else(
            || schedule::RetryPolicy {
                max,
                on: schedule::RETRYABLE.iter().map(|r| r.to_string()).collect(),
                backoff_first: 30,
                backoff_max: 900,
            },
            |policy| schedule::RetryPolicy { max, ..policy },
        )),
        None => config.retry().filter(|policy| policy.max > 0),
    };
    let limits = config.limits();
    let (fallback, fallback_after) = config.fallback();
    let fallback = asked.fallback.clone().unwrap_or(fallback);
    if asked.after.is_empty()
        && retry.is_none()
        && fallback.is_empty()
        && asked.team_max.is_none()
        && limits.is_empty()
        && asked.context_from.is_none()
        && asked.base_from.is_none()
    {
        return Ok(None);
    }
    let mut after = asked.after.clone();
    after.dedup();
    Ok(Some(Plan {
        priority: asked.priority,
        queued_at: crate::effects::clock::now_rfc3339(),
        after,
        after_ended: asked.after_ended,
        limits,
        team_max: asked.team_max,
        retry,
        attempts: Vec::new(),
        context_from: asked.context_from.clone(),
        base_from: asked.base_from.clone(),
        branch: None,
        closed: false,
        not_before: None,
        fallback_after: (!fallback.is_empty()).then_some(fallback_after.as_secs()),
        fallback,
        fallback_used: 0,
        switch: None,
    }))
}

/// Whether a new task starts now, decided under the decision lock, which the caller holds
/// until the start is on record.
pub(crate) enum Admission {
    Start(Option<std::fs::File>),
    Queue(Box<(Plan, QueueView)>),
}

/// Decides a new task's start: at once when it asks nothing of the scheduler; else under the
/// lock, when its dependencies completed and its caps have room (`now` skips the caps).
pub(crate) fn admit(
    plan: Option<&Plan>,
    agent: &str,
    team: Option<&str>,
    now: bool,
) -> Result<Admission> {
    let Some(plan) = plan else {
        return Ok(Admission::Start(None));
    };
    if plan.after.is_empty() && plan.limits.is_empty() && plan.team_max.is_none() {
        return Ok(Admission::Start(None));
    }
    let lock = schedule::decision_lock()?;
    let queued = |waits: QueueView| Ok(Admission::Queue(Box::new((plan.clone(), waits))));
    let waiting_for = unfinished_dependencies(plan);
    // A task that takes another's work or answer (`--base-from`, `--context-from`) takes them
    // at its start, which only the scheduler's does: the submit read that task unfinished
    // (else it took them itself), and a start here, its dependency met since (ended, or a
    // `done` report), would run it in the project folder without either.
    if !waiting_for.is_empty() || plan.base_from.is_some() || plan.context_from.is_some() {
        return queued(QueueView {
            waiting_for,
            priority: plan.priority,
            ..QueueView::default()
        });
    }
    if !now {
        let usage = Usage::now();
        if let Some(limit) = usage.held_back(plan, agent, team, &Config::user_limits()) {
            return queued(QueueView {
                limit: Some(limit),
                priority: plan.priority,
                ..QueueView::default()
            });
        }
        // Tasks queued before this one that could start go first: a submit never jumps the
        // queue.
        if any_ahead(plan) {
            return queued(QueueView {
                limit: Some("queued tasks before it".to_string()),
                priority: plan.priority,
                ..QueueView::default()
            });
        }
    }
    Ok(Admission::Start(Some(lock)))
}

/// Whether a queued task that could start now comes before a new one of `plan`'s priority.
fn any_ahead(plan: &Plan) -> bool {
    schedule::queued_ids().iter().any(|id| {
        schedule::plan(id).is_some_and(|queued| {
            queued.priority >= plan.priority
                && queued.not_before.is_none()
                && unfinished_dependencies(&queued).is_empty()
        })
    })
}

/// How the dependencies of a plan stand.
enum Dependencies {
    Met,
    Waiting(Vec<String>),
    /// One ended in a way that fails its dependents: its id and its status.
    Failed(String, String),
}

fn dependencies(plan: &Plan) -> Dependencies {
    let mut waiting = Vec::new();
    for id in &plan.after {
        let found = match store::placement(id) {
            Ok(Some(placement)) => found_for(placement),
            _ => return Dependencies::Failed(id.clone(), "removed".into()),
        };
        let Found::Trusted(task) = found else {
            return Dependencies::Failed(id.clone(), "unreadable".into());
        };
        let record = &task.record;
        // A child's `done` report stands for its ending, unless the task has a check: then
        // only a passed check does (the report is the child's word, the verdict cuekit's). The
        // report is the one cuekit took from the task (the registry's), never its record's.
        let reported_done = record.mode != Mode::Batch
            && store::report_of(id).is_some_and(|report| report.kind == ReportKind::Done)
            && record
                .check
                .as_ref()
                .is_none_or(|check| check.phase == crate::domain::check::Phase::Passed);
        match record.status {
            Status::Completed => {}
            _ if reported_done => {}
            status if status.is_terminal() && plan.after_ended => {}
            status if status.is_terminal() => {
                return Dependencies::Failed(id.clone(), status.as_str().to_string());
            }
            _ => waiting.push(id.clone()),
        }
    }
    if waiting.is_empty() {
        Dependencies::Met
    } else {
        Dependencies::Waiting(waiting)
    }
}

fn unfinished_dependencies(plan: &Plan) -> Vec<String> {
    match dependencies(plan) {
        Dependencies::Met => Vec::new(),
        Dependencies::Waiting(ids) => ids,
        Dependencies::Failed(id, _) => vec![id],
    }
}

/// The live agents, counted against the caps.
#[derive(Debug, Default)]
struct Usage {
    total: u32,
    by_agent: HashMap<String, u32>,
    by_team: HashMap<String, u32>,
    /// Slot holders whose pane's first process is gone: their endings are to be recorded.
    gone: Vec<String>,
}

impl Usage {
    fn now() -> Usage {
        let mut usage = Usage::default();
        let now = SystemTime::now();
        for (id, slot, taken) in schedule::slots() {
            // A slot file being written reads empty: it is held all the same (only its
            // holder's ending, or a look that finds its task gone, frees it).
            let slot = slot.unwrap_or(schedule::Slot {
                agent: String::new(),
                team: None,
            });
            let live = match store::pane_start(&id) {
                Some(pane) => super::task::leader_of(Some(&pane)).is_some_and(|l| l.is_alive()),
                None => taken.is_some_and(|taken| {
                    now.duration_since(taken).unwrap_or_default() < STARTING_GRACE
                }),
            };
            if live {
                usage.add(&slot.agent, slot.team.as_deref());
            } else {
                usage.gone.push(id);
            }
        }
        usage
    }

    fn add(&mut self, agent: &str, team: Option<&str>) {
        self.total += 1;
        *self.by_agent.entry(agent.to_string()).or_default() += 1;
        if let Some(team) = team {
            *self.by_team.entry(team.to_string()).or_default() += 1;
        }
    }

    /// The first cap a task of `agent` (in `team`) would pass, as `name count/cap`.
    fn held_back(
        &self,
        plan: &Plan,
        agent: &str,
        team: Option<&str>,
        user: &schedule::Limits,
    ) -> Option<String> {
        let limits = plan.limits.clone().lowered_by(user);
        if let Some(cap) = limits.running
            && self.total >= cap
        {
            return Some(format!("running {}/{cap}", self.total));
        }
        if let Some(cap) = limits.agents.get(agent) {
            let count = self.by_agent.get(agent).copied().unwrap_or(0);
            if count >= *cap {
                return Some(format!("agents.{agent} {count}/{cap}"));
            }
        }
        if let (Some(cap), Some(team)) = (plan.team_max, team) {
            let count = self.by_team.get(team).copied().unwrap_or(0);
            if count >= cap {
                return Some(format!("team {team} max_parallel {count}/{cap}"));
            }
        }
        None
    }
}

/// The slot a task about to start takes.
pub(crate) fn take_slot(task_id: &str, agent: &str, team: Option<&str>) -> Result<()> {
    schedule::take_slot(
        task_id,
        &schedule::Slot {
            agent: agent.to_string(),
            team: team.map(String::from),
        },
    )
}

/// What a look at the queue left.
#[derive(Debug, Clone, Copy, Default)]
pub struct Looked {
    /// Anything still waits.
    pub waiting: bool,
    /// The soonest a retry's backoff is over.
    pub next_due: Option<SystemTime>,
}

/// One look at the queue: records the endings of slot holders that are gone, fails the tasks
/// whose dependency failed, and starts every task that may start now, in priority order.
/// How soon a further attempt held back by its earlier attempt's processes is looked at again.
const LINGER_RECHECK: Duration = Duration::from_millis(500);

pub fn start_due() -> Result<Looked> {
    if !schedule::any_queued() && schedule::claimed_ids().is_empty() {
        return Ok(Looked::default());
    }
    let _lock = schedule::decision_lock()?;
    recover_claims();
    let ids = schedule::queued_ids();
    if ids.is_empty() {
        return Ok(Looked::default());
    }
    let mut usage = Usage::now();
    if !usage.gone.is_empty() {
        record_gone(&usage.gone);
        usage = Usage::now();
    }
    let user = Config::user_limits();
    let mut waiting: Vec<(Task, Plan)> = ids.iter().filter_map(|id| queued_task(id)).collect();
    waiting.sort_by(|(a, pa), (b, pb)| {
        pb.priority
            .cmp(&pa.priority)
            .then_with(|| pa.queued_at.cmp(&pb.queued_at))
            .then_with(|| a.record.id.cmp(&b.record.id))
    });
    let now = SystemTime::now();
    let mut next_due: Option<SystemTime> = None;
    for (task, mut plan) in waiting {
        match dependencies(&plan) {
            Dependencies::Met => {}
            Dependencies::Waiting(_) => continue,
            Dependencies::Failed(id, status) => {
                let _ = end_queued(task, dependency_failed(&id, &status));
                continue;
            }
        }
        if let Some(at) = plan
            .not_before
            .as_deref()
            .and_then(|t| humantime::parse_rfc3339(t).ok())
            .filter(|at| *at > now)
        {
            next_due = Some(next_due.map_or(at, |due| due.min(at)));
            continue;
        }
        // A team whose budget is spent starts no more members.
        if let Some(ending) = crate::ops::judge::budget::exceeded(&task) {
            let _ = end_queued(task, ending);
            continue;
        }
        // No attempt starts while anything of the one before runs.
        if !plan.attempts.is_empty()
            && !crate::effects::process::task_processes(&task.record.id, task.group_leader())
                .is_empty()
        {
            // Looked at again soon: their ending changes nothing the scheduler watches.
            let soon = now + LINGER_RECHECK;
            next_due = Some(next_due.map_or(soon, |due| due.min(soon)));
            continue;
        }
        let agent = task.record.spec.agent_kind.clone();
        let team = task.record.team.clone();
        if usage
            .held_back(&plan, &agent, team.as_deref(), &user)
            .is_some()
        {
            continue;
        }
        match start::start(&task, &mut plan) {
            Ok(true) => usage.add(&agent, team.as_deref()),
            Ok(false) => {}
            // A file that cannot be written now (a full or read-only disk) is a passing fault:
            // the task waits on, and the next look tries again.
            Err(err) if err.code == ErrorCode::Io => {}
            Err(err) => {
                // A start that failed is the attempt's ending: the task never runs half-way.
                let ending = Ending {
                    status: Status::Failed,
                    reason: Some("launch_failed".into()),
                    hint: Some(err.message.clone()),
                    exit_code: None,
                };
                let _ = end_queued(task, ending);
            }
        }
    }
    Ok(Looked {
        waiting: schedule::any_queued(),
        next_due,
    })
}

/// Records the ending of a task that never started this attempt: only while it is `queued`
/// (a task that started meanwhile keeps running, and its ending is the judge's).
fn end_queued(mut task: Task, ending: Ending) -> Result<Task> {
    task.record = store::update(&task.placement.task_dir, |record| {
        if record.status != Status::Queued {
            return Ok(false);
        }
        record.status = ending.status;
        record.reason = ending.reason.clone();
        record.hint = ending.hint.clone();
        record.exit_code = ending.exit_code;
        record.ended_at = Some(crate::effects::clock::now_rfc3339());
        Ok(true)
    })?;
    if task.record.status.is_terminal() {
        schedule::dequeue(&task.record.id);
        schedule::free_slot(&task.record.id);
        // Ended before it started: nothing may start it again.
        schedule::close_plan(&task.record.id);
    }
    Ok(task)
}

/// A queued task the scheduler may start: registered, trusted, `queued` on record, with a plan.
fn queued_task(id: &str) -> Option<(Task, Plan)> {
    // A submit marks its task pending, then queued, then registers it, then drops the pending
    // mark: so the pending marks are read before the registry. Read after, a submit finishing
    // in between would look cut short, and its task would lose its queue mark for good.
    let pending = store::pending_submits()
        .iter()
        .any(|p| p.placement.id == id);
    let placement = match store::placement(id) {
        Ok(Some(placement)) => placement,
        // Not registered (a submit cut short, or removed): nothing to start.
        Ok(None) if !pending => {
            schedule::dequeue(id);
            return None;
        }
        _ => return None,
    };
    let Found::Trusted(task) = found_for(placement) else {
        return None;
    };
    if task.record.status.is_terminal() {
        schedule::dequeue(id);
        return None;
    }
    if task.record.status != Status::Queued {
        return None;
    }
    let plan = schedule::plan(id)?;
    // The plan, in the user's own directory, must agree: an attempt it has started and not
    // seen end is running, whatever a record in the project says.
    if plan.closed || plan.attempts.last().is_some_and(|a| a.ended_at.is_none()) {
        return None;
    }
    Some((*task, plan))
}

/// Records the endings of slot holders whose panes are gone (which frees their slots and
/// queues their retries); a slot of a task no longer running is freed.
fn record_gone(ids: &[String]) {
    let tasks: Vec<Task> = ids
        .iter()
        .filter_map(|id| match store::placement(id) {
            Ok(Some(placement)) => match found_for(placement) {
                Found::Trusted(task) => Some(*task),
                _ => {
                    schedule::free_slot(id);
                    None
                }
            },
            Ok(None) => {
                schedule::free_slot(id);
                None
            }
            Err(_) => None,
        })
        .collect();
    if let Ok(refreshed) = super::judge::refresh(tasks) {
        for task in &refreshed.tasks {
            if task.record.status != Status::Running {
                schedule::free_slot(&task.record.id);
            }
        }
    }
}

/// Starts made by a process that is gone: a task already `running` gets its gate opened; one
/// still `queued` loses the gated pane (which never started the agent) and waits on.
fn recover_claims() {
    for id in schedule::claimed_ids() {
        if schedule::claim(&id).is_some_and(|claim| claim.is_alive()) {
            continue;
        }
        let placement = match store::placement(&id) {
            Ok(Some(placement)) => placement,
            _ => {
                schedule::drop_claim(&id);
                continue;
            }
        };
        let running = matches!(
            store::load_task(&placement.task_dir),
            Ok(record) if record.status != Status::Queued
        );
        if running {
            let _ = schedule::open_gate(&id);
            schedule::dequeue(&id);
        } else {
            let _ =
                Tmux::new(placement.socket.clone()).run(&args::kill_session(&placement.session));
            schedule::free_slot(&id);
        }
        schedule::drop_claim(&id);
    }
}

fn dependency_failed(id: &str, status: &str) -> Ending {
    Ending {
        status: Status::Cancelled,
        reason: Some("dependency_failed".into()),
        hint: Some(format!(
            "it was to start after task {id}, which ended {status}; submit it again \
             (with --after-ended to start after an ending of any kind)"
        )),
        exit_code: None,
    }
}

/// A queued task taken out of the queue before it is removed: recorded `cancelled` under the
/// decision lock, so no start is under way for it (one that started meanwhile is refused
/// removal as running). Any other task is returned as it is.
pub(crate) fn withdraw(task: Task) -> Result<Task> {
    if task.record.status != Status::Queued {
        return Ok(task);
    }
    let _lock = schedule::decision_lock()?;
    let task = end_queued(
        task,
        Ending {
            status: Status::Cancelled,
            reason: Some("removed".into()),
            hint: Some("removed from the queue with `cuekit rm` before it started".into()),
            exit_code: None,
        },
    )?;
    if !task.record.status.is_terminal() {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "task {} started meanwhile; nothing was removed",
                task.record.id
            ),
        )
        .with_hint(format!(
            "cancel it first (`cuekit cancel {}`)",
            task.record.id
        )));
    }
    Ok(task)
}
