//! Running a task's check and recording its verdict: by the task's own launch when its agent
//! exited 0 (`cuekit __check --from-launch`, which may give the child a fix round), or by
//! the parent (`cuekit check ID`, which records the verdict and nothing more).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::{count, scratch};
use crate::domain::check::{self, CheckPlan, CheckState, Phase, Verdict};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::check_run::{self, CheckRun};
use crate::effects::store;
use crate::ops::task::Task;

/// A check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct CheckOutcome {
    pub task_id: String,
    pub verdict: Verdict,
    /// Where the task's check stands now (its rounds, phase and every verdict).
    pub check: CheckState,
    /// The child gets a fix round (its message is in the task's `checks/fix.txt`).
    pub fix_round: bool,
    /// The fix round's message.
    #[serde(skip)]
    pub message: Option<String>,
}

/// The check a task's launch runs once its agent exited 0: the verdict, and on a failure
/// with rounds left, the fix message for the next round.
pub fn check_from_launch(task_id: &str, cwd: &Path) -> Result<CheckOutcome> {
    let task = crate::ops::task::open(task_id, cwd)?;
    let plan = plan_of(&task)?;
    // An interactive task's check is its monitor's: nothing in its pane (its child included)
    // may decide when it runs.
    if task.record.mode == crate::domain::spec::Mode::Interactive {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("task {task_id} is interactive: its monitor runs its check"),
        )
        .with_hint("`cuekit check ID` runs a check now"));
    }
    check(&task, &plan, true)
}

/// `cuekit check ID`: runs the task's check now and records the verdict. A running task's
/// phase stays as it was: only its own trigger decides whether it passed (a child that ran
/// this at a good moment decides nothing).
pub fn check_now(task_id: &str, cwd: &Path) -> Result<CheckOutcome> {
    let task = crate::ops::task::open(task_id, cwd)?;
    refuse_inside(&task)?;
    let plan = plan_of(&task)?;
    check(&task, &plan, false)
}

/// Refuses `cuekit check` run inside the task's own process tree, in every mode: a child that
/// checked itself mid-work would have a pass recorded on a tree it then changes, and a plain
/// merge takes the last passing commit — the child would pick what is merged by timing.
fn refuse_inside(task: &Task) -> Result<()> {
    let id = &task.record.id;
    if crate::ops::task::task_of_process(std::process::id()).as_deref() == Some(id.as_str()) {
        return Err(Error::new(
            ErrorCode::InsideTask,
            format!(
                "this runs inside task {id}'s own pane: a child never checks its own work (its \
                 check runs when it ends)"
            ),
        )
        .with_hint("the parent (or you) runs `cuekit check ID`, from outside the task"));
    }
    Ok(())
}

pub(super) fn plan_of(task: &Task) -> Result<CheckPlan> {
    task.placement
        .facts
        .as_ref()
        .and_then(|facts| facts.check.clone())
        .ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidState,
                format!("task {} has no check", task.record.id),
            )
            .with_hint("a check is given at submit: `cuekit submit --worktree --check CMD …`")
        })
}

/// Records where the check stands: the registry's copy (the one believed), then the record's.
fn save(task: &Task, state: &CheckState) -> Result<()> {
    store::record_check(&task.record.id, state)?;
    store::update(&task.placement.task_dir, |record| {
        record.check = Some(state.clone());
        Ok(true)
    })?;
    Ok(())
}

/// A slot under the cap of checks running at once on this machine (`limits.checks`, the
/// user's own), held while the returned lock lives.
fn slot(cap: u32) -> Result<std::fs::File> {
    let dir = store::data_dir()
        .map(|dir| dir.join("checks"))
        .ok_or_else(|| Error::new(ErrorCode::Io, "cannot find cuekit's data directory"))?;
    std::fs::create_dir_all(&dir).map_err(|err| Error::io("create", &dir, err))?;
    loop {
        for n in 0..cap {
            if let Some(lock) = store::lock_file_try(&dir.join(format!("slot-{n}.lock")))? {
                return Ok(lock);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `task`'s check state between two runs of its check, read under its check lock: a runner
/// holds the lock for as long as it lives and writes its verdict before it lets go, so a state
/// read first and the lock tried after could be a `checking` its runner ended in between.
/// `None` while a check runs (an unknown answer about the lock counts as running).
pub(super) fn state_between_runs(task: &Task) -> Option<Option<CheckState>> {
    match store::lock_file_try(&check_lock(task)) {
        Ok(Some(_held)) => Some(store::check_of(&task.record.id)),
        _ => None,
    }
}

/// For a removal: `task`'s check lock, held so that no check of it starts until the removal is
/// over (one that starts then finds the task gone); refused with `invalid_state` while a
/// check of it runs (a parent's `cuekit check`), which the removal would cut off. `None` for a
/// task without a check.
pub(crate) fn hold_for_removal(task: &Task) -> Result<Option<std::fs::File>> {
    if plan_of(task).is_err() {
        return Ok(None);
    }
    let id = &task.record.id;
    match store::lock_file_try(&check_lock(task)) {
        Ok(Some(lock)) => Ok(Some(lock)),
        Ok(None) => Err(Error::new(
            ErrorCode::InvalidState,
            format!("task {id}'s check is running; nothing was removed"),
        )
        .with_hint(format!(
            "wait for the check to end (`cuekit status {id}` shows it), then remove the task"
        ))),
        // Its folder already gone (a concurrent removal): nothing to hold.
        Err(_) => Ok(None),
    }
}

/// Whether a runner holds `task`'s check lock this moment, for an ending: the verdict of a
/// check that runs decides it. An unknown answer (a lock file that cannot be opened) is no: an
/// ending is never held back on a doubt.
pub(crate) fn verdict_pending(task: &Task) -> bool {
    matches!(store::lock_file_try(&check_lock(task)), Ok(None))
}

fn check_lock(task: &Task) -> std::path::PathBuf {
    task.placement.task_dir.join("check.lock")
}

pub(super) fn check(task: &Task, plan: &CheckPlan, from_launch: bool) -> Result<CheckOutcome> {
    let id = &task.record.id;
    let started_at = crate::effects::clock::now_rfc3339();
    let _slot = slot(crate::effects::config::Config::user_check_slots())?;
    // One check of a task at a time, whatever the cap: each reads and writes its state.
    let _task = store::lock_task_file(&check_lock(task))?;
    // Removed while this waited for its lock: nothing to check, nothing to record.
    if store::placement(id)?.is_none() {
        return Err(Error::new(
            ErrorCode::TaskNotFound,
            format!("task {id} was removed before its check could start"),
        )
        .with_hint("`cuekit list --all` shows the tasks there are"));
    }
    let mut state = store::check_of(id).unwrap_or_else(|| CheckState::new(plan.rounds));
    let before = state.phase;
    let round = state.next_round();
    state.phase = Phase::Checking;
    save(task, &state)?;
    let dir = task.placement.task_dir.join("checks");
    std::fs::create_dir_all(&dir).map_err(|err| Error::io("create", &dir, err))?;
    let log = dir.join(format!("{round}.log"));
    let _ = std::fs::remove_file(&log);
    // Nothing the child left running may rewrite the scratch checkout while the check runs.
    let ended = super::leftovers::end_before_check(task, from_launch);
    if !ended.is_empty() {
        let _ = store::append_line(
            &log,
            format!(
                "cuekit: ended {} process(es) the task left running, before its check: {ended:?}",
                ended.len()
            )
            .as_bytes(),
        );
    }
    let (mut verdict, tail) = run_round(task, plan, round, &log);
    verdict.started_at = started_at;
    state.verdicts.push(verdict.clone());
    let fix_round = from_launch && !verdict.passed && state.may_fix();
    let running = !crate::ops::task::reread(&task.placement)
        .map_or(task.record.status, |record| record.status)
        .is_terminal();
    state.phase = match (verdict.passed, fix_round) {
        _ if !from_launch && running => before,
        (true, _) => Phase::Passed,
        (false, true) => Phase::Working,
        (false, false) => Phase::Failed,
    };
    let message = fix_round.then(|| check::fix_message(plan, &verdict, &check::output_tail(&tail)));
    if let Some(message) = &message {
        state.fix_rounds += 1;
        store::write_atomic(
            &task.placement.task_dir.join(check::FIX_FILE),
            message.as_bytes(),
        )?;
    }
    save(task, &state)?;
    Ok(CheckOutcome {
        task_id: id.clone(),
        verdict,
        check: state,
        fix_round,
        message,
    })
}

/// A round's verdict before anything ran: failed, at its last command.
fn unfinished(plan: &CheckPlan, round: u32, log: &Path) -> Verdict {
    Verdict {
        round,
        passed: false,
        command: plan.run.last().cloned().unwrap_or_default(),
        exit_code: None,
        timed_out: false,
        error: None,
        log: log.to_string_lossy().into_owned(),
        started_at: String::new(),
        protected_edits: Vec::new(),
        review_paths: Vec::new(),
        tests_ran: None,
        base_tests_ran: None,
        at: String::new(),
        commit: None,
    }
}

/// What a check runner killed mid-check (`kill -9`, a monitor or `__check` that died) left:
/// its commands' processes, wherever they went (each carries `CUEKIT_CHECK=<id>.…`), and its
/// scratch checkouts are ended and removed, under the task's check lock (so no new check starts
/// meanwhile). The phase moves on: `failed`, with a verdict saying so — but for a running
/// interactive child, whose monitor checks its work again (`turn::abandoned`).
pub(crate) fn reap_killed_runner(task: &Task) {
    let id = &task.record.id;
    let Ok(Some(_lock)) = store::lock_file_try(&check_lock(task)) else {
        return;
    };
    let Some(mut state) = store::check_of(id) else {
        return;
    };
    if state.phase != Phase::Checking {
        return;
    }
    let left =
        crate::effects::process::carrying_prefix(check_run::CHECK_VARIABLE, &format!("{id}."));
    crate::effects::process::terminate(left, Duration::from_millis(200));
    scratch::remove_left(task);
    let running = !crate::ops::task::reread(&task.placement)
        .map_or(task.record.status, |record| record.status)
        .is_terminal();
    if running && task.record.mode == crate::domain::spec::Mode::Interactive {
        return;
    }
    let Ok(plan) = plan_of(task) else {
        return;
    };
    let round = state.next_round();
    let log = task
        .placement
        .task_dir
        .join("checks")
        .join(format!("{round}.log"));
    let mut verdict = unfinished(&plan, round, &log);
    verdict.error = Some(KILLED.to_string());
    verdict.at = crate::effects::clock::now_rfc3339();
    let _ = store::append_line(&log, format!("cuekit: {KILLED}").as_bytes());
    state.verdicts.push(verdict);
    state.phase = Phase::Failed;
    let _ = save(task, &state);
}

/// The verdict of a check whose runner was killed.
const KILLED: &str = "the check's runner was killed";

/// One round: the scratch checkout, then each command until one fails. Returns the verdict
/// and the last bytes of the deciding command's output.
fn run_round(task: &Task, plan: &CheckPlan, round: u32, log: &Path) -> (Verdict, Vec<u8>) {
    let mut verdict = unfinished(plan, round, log);
    let fail = |mut verdict: Verdict, err: Error| {
        let _ = store::append_line(log, format!("cuekit: {}", err.message).as_bytes());
        verdict.error = Some(err.message);
        verdict.at = crate::effects::clock::now_rfc3339();
        (verdict, Vec::new())
    };
    let scratch = match scratch::make(task, plan, round) {
        Ok(scratch) => scratch,
        Err(err) => return fail(verdict, err),
    };
    verdict.protected_edits = scratch.edits.clone();
    verdict.commit = Some(scratch.commit.clone());
    verdict.review_paths = scratch.review.clone();
    if !verdict.protected_edits.is_empty() {
        let paths: Vec<String> = verdict
            .protected_edits
            .iter()
            .map(|e| format!("{} ({:?})", e.path, e.edit).to_lowercase())
            .collect();
        let _ = store::append_line(
            log,
            format!(
                "cuekit: restored from the base for this check: {}",
                paths.join(", ")
            )
            .as_bytes(),
        );
    }
    let mut tail = Vec::new();
    let marker = format!("{}.{round}.{}", task.record.id, std::process::id());
    let policy = task.sandbox_policy();
    let mut counts = Vec::new();
    for command in &plan.run {
        let from = count::log_len(log);
        let ran = match run_command(task, &policy, &scratch.tree, plan, command, log, &marker) {
            Ok(ran) => ran,
            Err(err) => return fail(verdict, err),
        };
        verdict.command = command.clone();
        verdict.exit_code = ran.exit_code;
        verdict.timed_out = ran.timed_out;
        counts.push(count::reported(log, from, ran.printed));
        tail = ran.tail;
        if ran.exit_code != Some(0) {
            break;
        }
    }
    verdict.passed = verdict.exit_code == Some(0) && !verdict.timed_out;
    if verdict.passed {
        drop(scratch);
        count::judge(task, plan, &mut verdict, &counts, log);
    }
    verdict.at = crate::effects::clock::now_rfc3339();
    (verdict, tail)
}

/// Runs one of the check's commands over a scratch checkout (`tree`), in the task's sandbox
/// policy when it has one, its output appended to `log`: for a round's check and for the
/// base's test count alike.
pub(super) fn run_command(
    task: &Task,
    policy: &crate::domain::sandbox::Policy,
    tree: &Path,
    plan: &CheckPlan,
    command: &str,
    log: &Path,
    marker: &str,
) -> Result<check_run::Ran> {
    let sandboxed = crate::ops::sandbox::wrap_check(
        policy,
        &task.record.id,
        &task.placement.task_dir,
        tree,
        Path::new(&task.placement.socket.0),
        command,
    )?;
    check_run::run(&CheckRun {
        command: &sandboxed,
        cwd: tree,
        timeout: Duration::from_secs(plan.timeout_secs),
        log,
        log_limit: check::LOG_LIMIT,
        marker,
        without_secrets: policy.mode == crate::domain::sandbox::SandboxMode::Bwrap,
    })
}
