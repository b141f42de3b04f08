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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::task::{Found, Task, found_for};
use super::view::TaskView;
use crate::adapter::{self, Adapter};
use crate::config::Config;
use crate::error::{Error, ErrorCode, Result};
use crate::launch::StartGate;
use crate::report::ReportKind;
use crate::spec::Mode;
use crate::status::{Ending, Status};
use crate::store::{self, schedule, schedule::Plan};
use crate::tmux::{Tmux, args};

/// How often the scheduler process looks: a freed slot is taken within this.
const TICK: Duration = Duration::from_millis(400);
/// A slot taken by a start whose pane is not recorded yet still counts this long.
const STARTING_GRACE: Duration = Duration::from_secs(60);
/// What a resumed attempt is told, instead of its prompt again (which would redo the work).
pub const CONTINUE_MESSAGE: &str = "You were interrupted (the run was cut short before it finished). \
Continue the task where you left off; do not redo work that is already done.";

/// What a queued task waits for, as `status`, `list` and MCP show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueView {
    /// 1 is next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<usize>,
    /// Dependencies that have not completed yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<String>,
    /// The cap that holds it back, with its count (`agents.gemini 4/4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<String>,
    #[serde(default)]
    pub priority: i32,
    /// Attempts started so far, and the most there may be.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts_max: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<schedule::Attempt>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The registry paths a scheduled start's pane is gated by.
pub(crate) struct GatePaths {
    go: PathBuf,
    claim: PathBuf,
}

impl GatePaths {
    pub fn gate(&self) -> StartGate<'_> {
        StartGate {
            registered: &self.go,
            pending: &self.claim,
        }
    }
}

pub(crate) fn gate_paths(task_id: &str) -> Result<GatePaths> {
    match (schedule::go_path(task_id), schedule::claim_path(task_id)) {
        (Some(go), Some(claim)) => Ok(GatePaths { go, claim }),
        _ => Err(Error::new(
            ErrorCode::Io,
            "cannot find a home directory for cuekit's scheduler",
        )
        .with_hint("set HOME (or XDG_DATA_HOME)")),
    }
}

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
}

impl Scheduling {
    /// Whether a task so asked for has a plan at all (limits alone are checked at admission).
    pub fn asks_anything(&self) -> bool {
        !self.after.is_empty() || self.retry.is_some() || self.team_max.is_some()
    }
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
    if asked.after.is_empty() && retry.is_none() && asked.team_max.is_none() && limits.is_empty() {
        return Ok(None);
    }
    let mut after = asked.after.clone();
    after.dedup();
    Ok(Some(Plan {
        priority: asked.priority,
        queued_at: super::now_rfc3339(),
        after,
        after_ended: asked.after_ended,
        limits,
        team_max: asked.team_max,
        retry,
        attempts: Vec::new(),
        not_before: None,
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
    if !waiting_for.is_empty() {
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
        let reported_done = record.mode != Mode::Batch
            && record
                .last_report
                .as_ref()
                .is_some_and(|report| report.kind == ReportKind::Done);
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
            let Some(slot) = slot else {
                schedule::free_slot(&id);
                continue;
            };
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

/// One look at the queue: records the endings of slot holders that are gone, fails the tasks
/// whose dependency failed, and starts every task that may start now, in priority order.
/// Returns whether anything still waits.
pub fn start_due() -> Result<bool> {
    if !schedule::any_queued() && schedule::claimed_ids().is_empty() {
        return Ok(false);
    }
    let _lock = schedule::decision_lock()?;
    recover_claims();
    let ids = schedule::queued_ids();
    if ids.is_empty() {
        return Ok(false);
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
    for (task, mut plan) in waiting {
        match dependencies(&plan) {
            Dependencies::Met => {}
            Dependencies::Waiting(_) => continue,
            Dependencies::Failed(id, status) => {
                let _ = end_queued(task, dependency_failed(&id, &status));
                continue;
            }
        }
        if plan
            .not_before
            .as_deref()
            .and_then(|t| humantime::parse_rfc3339(t).ok())
            .is_some_and(|t| t > now)
        {
            continue;
        }
        // No attempt starts while anything of the one before runs.
        if !plan.attempts.is_empty()
            && !crate::process::task_processes(&task.record.id, task.group_leader()).is_empty()
        {
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
        match start(&task, &mut plan) {
            Ok(true) => usage.add(&agent, team.as_deref()),
            Ok(false) => {}
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
    Ok(schedule::any_queued())
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
        record.ended_at = Some(super::now_rfc3339());
        Ok(true)
    })?;
    if task.record.status.is_terminal() {
        schedule::dequeue(&task.record.id);
        schedule::free_slot(&task.record.id);
    }
    Ok(task)
}

/// A queued task the scheduler may start: registered, trusted, `queued` on record, with a plan.
fn queued_task(id: &str) -> Option<(Task, Plan)> {
    let placement = match store::placement(id) {
        Ok(Some(placement)) => placement,
        // Not registered (a submit cut short, or removed): nothing to start.
        Ok(None)
            if store::pending_submits()
                .iter()
                .all(|p| p.placement.id != id) =>
        {
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
            store::load(&placement.task_dir),
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

/// Starts attempt k of a queued task. Returns `false` when it was no longer queued (a cancel
/// won the race: the pane made meanwhile is ended, the agent never ran).
fn start(task: &Task, plan: &mut Plan) -> Result<bool> {
    let id = task.record.id.clone();
    let record = &task.record;
    schedule::write_claim(&id)?;
    schedule::close_gate(&id);
    take_slot(&id, &record.spec.agent_kind, record.team.as_deref())?;
    let abandon = |err: Error| {
        schedule::free_slot(&id);
        schedule::drop_claim(&id);
        err
    };
    let attempt = plan.attempts.len() + 1;
    let config = Config::load(&record.cwd).map_err(abandon)?;
    if attempt > 1 {
        prepare_again(task, &config).map_err(abandon)?;
    }
    let env = schedule::env_path(&id)
        .and_then(|path| store::read_small(&path).ok())
        .ok_or_else(|| {
            abandon(
                Error::new(
                    ErrorCode::StoreCorrupt,
                    format!("task {id}: its environment, kept for its start, is gone"),
                )
                .with_hint("submit the task again"),
            )
        })?;
    write_private(&record.task_dir.join(crate::launch::ENV_FILE), &env).map_err(abandon)?;
    let socket = task.placement.socket.clone();
    let tmux = Tmux::new(socket.clone());
    let session = &task.placement.session;
    // An earlier attempt's session (its pane dead) makes room for this one.
    let _ = tmux.run(&args::kill_session(session));
    let script = schedule::launch_path(&id).expect("a task id names a path");
    let height = record
        .tmux
        .as_ref()
        .map_or(config.height().value, |t| t.height);
    let answer = tmux
        .spawn(&args::new_task_session(&args::NewTaskSession {
            session,
            cwd: &agent_dir(task),
            width: config.width().value,
            height,
            history_limit: config.history_limit().value,
            script: &script,
            transcript: &record.task_dir.join(store::TRANSCRIPT_FILE),
        }))
        .and_then(|launch| launch.finish())
        .map_err(abandon)?;
    if let Some(pane) = super::submit::parse_new_pane(&answer) {
        let _ = store::record_pane_start(&id, &pane);
    }
    let started_at = super::now_rfc3339();
    let mut started = false;
    store::update(&task.placement.task_dir, |record| {
        if record.status != Status::Queued {
            return Ok(false);
        }
        record.status = Status::Running;
        record.reason = None;
        record.hint = None;
        record.exit_code = None;
        record.ended_at = None;
        record.started_at = Some(started_at.clone());
        started = true;
        Ok(true)
    })
    .map_err(|err| {
        let _ = tmux.run(&args::kill_session(session));
        abandon(err)
    })?;
    if !started {
        let _ = tmux.run(&args::kill_session(session));
        schedule::free_slot(&id);
        schedule::dequeue(&id);
        schedule::drop_claim(&id);
        return Ok(false);
    }
    plan.attempts.push(schedule::Attempt {
        started_at,
        ended_at: None,
        reason: None,
        exit_code: None,
    });
    plan.not_before = None;
    // The record says running: a lost plan write costs an attempt's count, never a second run.
    let _ = schedule::save_plan(&id, plan);
    schedule::open_gate(&id)?;
    schedule::dequeue(&id);
    schedule::drop_claim(&id);
    super::monitor_lock::ensure_running(&socket);
    Ok(true)
}

/// Where the agent starts: the submit's directory, or the same place in the task's worktree.
fn agent_dir(task: &Task) -> PathBuf {
    let cwd = &task.record.cwd;
    let Some(worktree) = task.worktree() else {
        return cwd.clone();
    };
    let dir = cwd
        .strip_prefix(&worktree.repo_root)
        .map(|sub| worktree.path.join(sub))
        .unwrap_or_else(|_| worktree.path.clone());
    if dir.is_dir() {
        dir
    } else {
        worktree.path.clone()
    }
}

/// The files of a further attempt: the earlier attempt's ending is set aside, and its script
/// continues the agent's session where the adapter can (with a fixed message, never the prompt
/// again); where it cannot, the task starts over.
fn prepare_again(task: &Task, config: &Config) -> Result<()> {
    let record = &task.record;
    let dir = &record.task_dir;
    let n = schedule::plan(&record.id).map_or(1, |plan| plan.attempts.len());
    for name in [
        crate::launch::EXIT_CODE_FILE,
        crate::launch::SETUP_FAILED_FILE,
        crate::launch::AGENT_EXIT_FILE,
    ] {
        let _ = std::fs::remove_file(dir.join(name));
    }
    for name in [super::outcome::RESULT_FILE, store::EVENTS_FILE] {
        let _ = std::fs::rename(dir.join(name), dir.join(format!("attempt-{n}.{name}")));
    }
    let adapter = adapter::lookup(&record.spec.agent_kind)?;
    let mut spec = record.spec.clone();
    let session = resumable(record, adapter);
    if let Some(session) = session {
        spec.resume_session = Some(session);
        spec.session_id = None;
        spec.objective = CONTINUE_MESSAGE.to_string();
        spec.context = None;
        spec.constraints.clear();
        spec.role_instructions = None;
        spec.report_hint = false;
        let original = dir.join("prompt.original.txt");
        if !original.exists() {
            let _ = std::fs::rename(dir.join(crate::launch::PROMPT_FILE), &original);
        }
        write_private(
            &dir.join(crate::launch::PROMPT_FILE),
            crate::spec::render_prompt(&spec).as_bytes(),
        )?;
    }
    let bin = config
        .bin(adapter.kind())
        .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
    let client =
        std::env::current_exe().map_err(|err| Error::io("find", Path::new("cuekit"), err))?;
    let launch = adapter.launch(
        &spec,
        record.mode,
        &bin,
        &adapter::shell_word_for_bin(&client.to_string_lossy())?,
    )?;
    let gate = gate_paths(&record.id)?;
    let script = super::submit::launch_script(
        &record.id,
        dir,
        &launch.command,
        adapter,
        record.mode,
        launch.event_stream,
        gate.gate(),
        None,
    )?;
    let path = schedule::launch_path(&record.id).expect("a task id names a path");
    schedule::write_private(&path, script.as_bytes())?;
    store::update(dir, |record| {
        record.launch_command = launch.command.clone();
        if spec.resume_session.is_some() {
            record.resumed_from = Some(record.id.clone());
        }
        Ok(true)
    })?;
    Ok(())
}

/// The agent session a further attempt continues: the adapter's resume (Gemini `--resume`,
/// agy `--conversation`, an ACP agent's `session/load`), when the first attempt left one.
fn resumable(record: &store::TaskRecord, adapter: &Adapter) -> Option<String> {
    let can = match record.mode {
        // The client loads the session where the agent offers `session/load`.
        Mode::Acp => adapter.acp.is_some(),
        _ => adapter.resume_hint.is_some() || adapter.kind() == "gemini",
    };
    if !can {
        return None;
    }
    super::result::agent_session(record)
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|err| Error::io("write", path, err))
}

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
fn transcript_end(record: &store::TaskRecord) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let path = super::transcript_path(record);
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
    let now = super::now_rfc3339();
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

/// `cuekit retry ID`: a new attempt of an ended task, on purpose, continuing its session. The
/// task keeps its id; it is queued and starts under the limits.
pub fn retry(task_id: &str, cwd: &Path) -> Result<TaskView> {
    let task = super::task::open(task_id, cwd)?;
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
    super::judge::finish_stop(&task)?;
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
    plan.limits = plan.limits.clone().lowered_by(&config.limits());
    // The environment of this call: the one kept at submit is gone with a task that had no
    // policy.
    let env = super::submit::env_file_text(task_id, &record.spec.agent_kind, &config);
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
            attempts_max: plan.retry.as_ref().map(|r| r.max as usize + 1),
            attempts: plan.attempts.clone(),
            ..QueueView::default()
        };
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

fn explain_one(record: &store::TaskRecord) -> Option<Box<QueueView>> {
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

/// Starts the scheduler process unless one runs or nothing waits. An open, a non-blocking lock
/// attempt and a directory read when something waits; one directory read when nothing does.
pub(crate) fn ensure_running() {
    if !schedule::any_queued() {
        return;
    }
    let Some(path) = schedule::runner_lock_path() else {
        return;
    };
    let Ok(lock) = store::lock_file_try(&path) else {
        return;
    };
    let Some(lock) = lock else {
        return;
    };
    drop(lock);
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    use std::os::unix::process::CommandExt;
    let _ = std::process::Command::new(exe)
        .arg("__scheduler")
        .env_remove(crate::process::TASK_ID_VARIABLE)
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn();
}

/// `cuekit __scheduler`: looks at the queue every tick until nothing waits; one per user.
pub fn run_scheduler() -> Result<()> {
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::setsid();
    }
    let Some(path) = schedule::runner_lock_path() else {
        return Ok(());
    };
    let Some(_lock) = store::lock_file_try(&path)? else {
        return Ok(());
    };
    let data = store::data_dir();
    let served = data.as_deref().and_then(dir_identity);
    loop {
        // The user's data is gone (a throw-away HOME removed): nothing left to serve.
        if served.is_none() || data.as_deref().and_then(dir_identity) != served {
            return Ok(());
        }
        // A tick that fails (a full disk) is tried again on the next one.
        if let Ok(false) = start_due() {
            return Ok(());
        }
        std::thread::sleep(TICK);
    }
}

fn dir_identity(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).ok()?;
    Some((meta.dev(), meta.ino()))
}
