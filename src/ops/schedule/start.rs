//! A queued task's start: claimed, its pane gated until the record says `running`, and for
//! a further attempt, a script that continues the agent's session.

use std::path::{Path, PathBuf};

use super::take_slot;
use crate::domain::adapter::session_name::new_attempt_session;
use crate::domain::adapter::{self, Adapter};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::launch::StartGate;
use crate::domain::spec::Mode;
use crate::domain::status::Status;
use crate::effects::config::Config;
use crate::effects::store::{self, schedule, schedule::Plan};
use crate::effects::tmux::{Tmux, args};
use crate::ops::task::Task;

/// What a resumed attempt is told, instead of its prompt again (which would redo the work).
pub const CONTINUE_MESSAGE: &str = "You were interrupted (the run was cut short before it finished). \
Continue the task where you left off; do not redo work that is already done.";

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

/// Starts attempt k of a queued task. Returns `false` when it was no longer queued (a cancel
/// won the race: the pane made meanwhile is ended, the agent never ran).
pub(super) fn start(task: &Task, plan: &mut Plan) -> Result<bool> {
    let mut task = task.clone();
    let id = task.record.id.clone();
    // What the start is built from is the spec kept at submit, never the record's (a child of
    // an earlier attempt may have rewritten it: its approval mode, its argv).
    let agent = task.record.spec.agent_kind.clone();
    task.record.spec = store::kept_spec(&id)?;
    task.record.spec.agent_kind = agent;
    schedule::write_claim(&id)?;
    schedule::close_gate(&id);
    take_slot(
        &id,
        &task.record.spec.agent_kind,
        task.record.team.as_deref(),
    )?;
    let abandon = |err: Error| {
        schedule::free_slot(&id);
        schedule::drop_claim(&id);
        err
    };
    let attempt = plan.attempts.len() + 1;
    let config = Config::load(&task.record.cwd).map_err(abandon)?;
    if attempt > 1 {
        match plan.switch.take() {
            Some(switch) => prepare_switch(&task, &switch, &config).map_err(abandon)?,
            None => prepare_again(&task, &config).map_err(abandon)?,
        }
    } else {
        if let Some(from) = &plan.base_from {
            make_worktree(&mut task, from, plan.branch.as_deref(), &config).map_err(abandon)?;
        }
        if let Some(from) = &plan.context_from {
            take_context(&task, from, &config).map_err(abandon)?;
        } else if plan.base_from.is_some() && sandboxed(&task) {
            // The sandbox shows the worktree made only now.
            let spec = task.record.spec.clone();
            rescript(&task, &spec, &config, |_| {}).map_err(abandon)?;
        }
    }
    let task = &task;
    let record = &task.record;
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
    schedule::write_private(
        &schedule::pane_env_path(&id).expect("a task id names a path"),
        &env,
    )
    .map_err(abandon)?;
    let socket = task.placement.socket.clone();
    let tmux = Tmux::new(socket.clone());
    let session = &task.placement.session;
    // An earlier attempt's session (its pane dead) makes room for this one.
    let _ = tmux.run(&args::kill_session(session));
    // What earlier attempts printed ends here: this attempt is judged on what follows.
    let transcript_from = std::fs::metadata(record.task_dir.join(store::TRANSCRIPT_FILE))
        .map_or(0, |meta| meta.len());
    let script = schedule::launch_path(&id).expect("a task id names a path");
    let height = record
        .tmux
        .as_ref()
        .map_or(config.height().value, |t| t.height);
    let answer = crate::ops::submit::prepare::spawn_pane(
        &task.placement,
        &agent_dir(task),
        &config,
        height,
        &script,
        &record.task_dir.join(store::TRANSCRIPT_FILE),
    )
    .and_then(|launch| launch.finish())
    .map_err(abandon)?;
    if let Some(pane) = crate::ops::submit::prepare::parse_new_pane(&answer) {
        let _ = store::record_pane_start(&id, &pane);
    }
    let started_at = crate::effects::clock::now_rfc3339();
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
        agent: Some(task.record.spec.agent_kind.clone()),
        model: task.record.spec.model.clone(),
        transcript_from: Some(transcript_from),
        ..Default::default()
    });
    plan.not_before = None;
    // The record says running: a lost plan write costs an attempt's count, never a second run.
    let _ = schedule::save_plan(&id, plan);
    schedule::open_gate(&id)?;
    schedule::dequeue(&id);
    schedule::drop_claim(&id);
    crate::ops::background::monitor_lock::ensure_running(&socket);
    Ok(true)
}

/// The worktree of a task that starts from another's work (`--base-from`): its checked commit,
/// or its branch tip with its uncommitted work committed onto it
/// ([`crate::ops::submit::prepare::base_from`]), made now; the registry and the record then
/// name it.
fn make_worktree(task: &mut Task, from: &str, branch: Option<&str>, config: &Config) -> Result<()> {
    config.refuse_untrusted_worktree()?;
    let source = crate::ops::task::open(from, Path::new("/"))?;
    let Some(source_tree) = source.worktree().cloned() else {
        return Err(Error::invalid_input(format!(
            "--base-from: task {from} has no worktree of its own"
        )));
    };
    let base = crate::ops::submit::prepare::base_from(&source, &source_tree)?;
    let id = task.record.id.clone();
    let planned = crate::effects::git::create::plan(&crate::effects::git::create::Request {
        cwd: &task.record.cwd,
        task_id: &id,
        base: Some(&base),
        branch,
        dir_template: &config.worktree_dir().value,
        branch_prefix: &config.branch_prefix().value,
        own_repo: task.in_bubblewrap(),
    })?;
    {
        let _marked = crate::effects::git::Submitting::mark(&id);
        crate::effects::git::create::create(
            &planned,
            &crate::ops::submit::prepare::includes(config, planned.own_repo.is_some()),
        )?;
    }
    // The user's excludes before the child runs, as a submit keeps them (`ignore_rules`).
    if let Err(err) = crate::effects::git::ignore_rules::keep_user_excludes(
        &planned.repo_root,
        &planned.common_dir,
        &task.record.task_dir,
    ) {
        crate::effects::git::create::remove_created(&planned);
        return Err(err);
    }
    let placed = planned.placement();
    let mut placement = task.placement.clone();
    if let Some(facts) = placement.facts.as_mut() {
        facts.worktree = Some(placed.clone());
    }
    let recorded = store::stage_placement(&placement)
        .and_then(|staged| staged.commit())
        .and_then(|()| {
            store::update(&task.record.task_dir, |record| {
                record.worktree = Some((&placed).into());
                Ok(true)
            })
        });
    match recorded {
        Ok(record) => {
            task.placement = placement;
            task.record = record;
            Ok(())
        }
        Err(err) => {
            crate::effects::git::create::remove_created(&planned);
            Err(err)
        }
    }
}

fn sandboxed(task: &Task) -> bool {
    task.placement
        .facts
        .as_ref()
        .is_some_and(|facts| facts.sandbox.is_some())
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
    set_aside(dir, n);
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
            let _ = std::fs::rename(dir.join(crate::domain::launch::PROMPT_FILE), &original);
        }
    }
    let resumed = spec.resume_session.is_some();
    // Starting over, an agent that refuses a session id already used (Claude Code, Qwen Code)
    // gets a session of this attempt's own, recorded as the task's.
    let fresh = (!resumed && record.agent_session_id.is_some())
        .then(|| new_attempt_session(adapter.kind(), &record.id, n + 1))
        .filter(|chosen| *chosen != record.id);
    if let Some(fresh) = &fresh {
        spec.session_id = Some(fresh.clone());
    }
    if let Some(fresh) = fresh.as_deref() {
        super::switch::record_session(&record.id, Some(fresh), record.event_stream)?;
    }
    rescript(task, &spec, config, |record| {
        if resumed {
            record.resumed_from = Some(record.id.clone());
        }
        if fresh.is_some() {
            record.agent_session_id = fresh;
        }
    })
}

/// The earlier attempt's ending files removed, its result and events kept as `attempt-N.*`.
fn set_aside(dir: &Path, n: usize) {
    for name in [
        crate::domain::launch::EXIT_CODE_FILE,
        crate::domain::launch::SETUP_FAILED_FILE,
        crate::domain::launch::AGENT_EXIT_FILE,
    ] {
        let _ = std::fs::remove_file(dir.join(name));
    }
    for name in [crate::ops::result::outcome::RESULT_FILE, store::EVENTS_FILE] {
        let _ = std::fs::rename(dir.join(name), dir.join(format!("attempt-{n}.{name}")));
    }
}

/// The files of an attempt on another agent (a failover, a hand-off): its prompt is the recap
/// (the objective once, the previous agent's notes), its session a new one of its agent's, its
/// sandbox re-planned for it, its check the task's (fix rounds where the new agent can take
/// them in batch).
fn prepare_switch(task: &Task, switch: &schedule::Switch, config: &Config) -> Result<()> {
    let record = &task.record;
    let dir = &record.task_dir;
    let n = schedule::plan(&record.id).map_or(1, |plan| plan.attempts.len());
    // Read before the earlier attempt's result is set aside.
    let recap = super::switch::recap_of(task, switch);
    super::switch::replan_env(task, switch, config)?;
    set_aside(dir, n);
    let _ = std::fs::rename(
        dir.join(crate::domain::launch::PROMPT_FILE),
        dir.join(format!(
            "attempt-{n}.{}",
            crate::domain::launch::PROMPT_FILE
        )),
    );
    let adapter = adapter::lookup(&record.spec.agent_kind)?;
    let mut spec = record.spec.clone();
    spec.objective = recap;
    spec.context = None;
    spec.resume_session = None;
    // A session of this attempt's own where the agent refuses an id used before (the task may
    // come back to an agent it ran before).
    let chosen = new_attempt_session(adapter.kind(), &record.id, n + 1);
    spec.session_id = Some(chosen.clone());
    crate::ops::submit::fail_closed(&mut spec, adapter);
    let bin = config
        .bin(adapter.kind())
        .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
    let client =
        std::env::current_exe().map_err(|err| Error::io("find", Path::new("cuekit"), err))?;
    let probe = adapter.launch(
        &spec,
        record.mode,
        &bin,
        &adapter::shell_word_for_bin(&client.to_string_lossy())?,
    )?;
    let session = probe.command.contains("--session-id").then_some(chosen);
    let mut task = task.clone();
    if let Some(facts) = task.placement.facts.as_mut() {
        facts.agent_session_id = session.clone();
        if session.is_none()
            && let Some(check) = facts.check.as_mut()
        {
            // No session of this agent's to give a fix round to: the check runs once.
            check.rounds = 0;
        }
    }
    super::switch::record_session(&record.id, session.as_deref(), probe.event_stream)?;
    if let Some(facts) = task.placement.facts.as_mut() {
        facts.event_stream = Some(probe.event_stream);
    }
    let event_stream = probe.event_stream;
    let (agent, model) = (spec.agent_kind.clone(), spec.model.clone());
    rescript(&task, &spec, config, |record| {
        record.resumed_from = None;
        record.agent_session_id = session;
        record.spec.agent_kind = agent;
        record.spec.model = model;
        record.event_stream = event_stream;
    })
}

/// A first start whose prompt takes an ended task's answer (`--context-from`): known only now.
fn take_context(task: &Task, from: &str, config: &Config) -> Result<()> {
    let mut spec = task.record.spec.clone();
    spec.context = Some(crate::ops::submit::prepare::with_answer_of(
        spec.context.as_deref(),
        from,
    )?);
    let context = spec.context.clone();
    store::keep_spec(&task.record.id, &spec)?;
    rescript(task, &spec, config, |record| record.spec.context = context)
}

/// Writes the prompt and the script of the task's next start from `spec`, and the command into
/// its record (with `also`).
fn rescript(
    task: &Task,
    spec: &crate::domain::spec::TaskSpec,
    config: &Config,
    also: impl FnOnce(&mut store::TaskRecord),
) -> Result<()> {
    let record = &task.record;
    let dir = &record.task_dir;
    let adapter = adapter::lookup(&record.spec.agent_kind)?;
    if !adapter.runs_argv {
        let prompt_file = dir.join(crate::domain::launch::PROMPT_FILE);
        crate::ops::submit::prepare::write_private(
            &prompt_file,
            crate::domain::spec::render_prompt(spec).as_bytes(),
        )?;
        if task.in_bubblewrap() {
            crate::effects::owner::show_prompt(dir, &prompt_file)?;
        }
    }
    let bin = config
        .bin(adapter.kind())
        .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
    let client =
        std::env::current_exe().map_err(|err| Error::io("find", Path::new("cuekit"), err))?;
    let launch = adapter.launch(
        spec,
        record.mode,
        &bin,
        &adapter::shell_word_for_bin(&client.to_string_lossy())?,
    )?;
    let policy = task.sandbox_policy();
    let start_dir = agent_dir(task);
    let subject = crate::ops::sandbox::Subject {
        id: &record.id,
        task_dir: dir,
        work_dir: task.worktree().map_or(&record.cwd, |w| &w.path),
        start_dir: &start_dir,
        worktree: task.worktree(),
        adapter,
        mode: record.mode,
        bin: &bin,
        tmux_socket: Path::new(&task.placement.socket.0),
        server_first: true,
    };
    let (launch, _) = crate::ops::sandbox::wrap(launch, &policy, &subject, None)?;
    // A checked task's attempt runs inside its check loop, as its first did.
    let facts = task.placement.facts.as_ref();
    let command = match facts
        .and_then(|facts| facts.check.as_ref())
        .filter(|_| record.mode == crate::domain::spec::Mode::Batch)
    {
        Some(plan) => crate::ops::check::around(
            &launch.command,
            plan,
            &record.id,
            dir,
            adapter,
            spec,
            &bin,
            facts.and_then(|facts| facts.agent_session_id.as_deref()),
            &adapter::shell_word_for_bin(&client.to_string_lossy())?,
            &|launch| Ok(crate::ops::sandbox::wrap(launch, &policy, &subject, None)?.0),
        )?,
        None => launch.command.clone(),
    };
    let gate = gate_paths(&record.id)?;
    let script = crate::ops::submit::prepare::launch_script(
        &record.id,
        dir,
        &command,
        adapter,
        record.mode,
        launch.event_stream,
        gate.gate(),
        None,
    )?;
    let path = schedule::launch_path(&record.id).expect("a task id names a path");
    schedule::write_private(&path, script.as_bytes())?;
    store::update(dir, |record| {
        record.launch_command = command.clone();
        also(record);
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
    crate::ops::result::agent_session(record)
}
