//! `cuekit handoff ID --agent K [--model M] [message]` (MCP `handoff_task`): the running
//! attempt ends gracefully (its uncommitted work stays in the work dir) and the next attempt
//! runs on agent K, told the recap and the user's message. Built on the failover's switch
//! (`schedule::switch`), so it carries over what a failover carries over.

use std::path::Path;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::failover::Fallback;
use crate::domain::status::Status;
use crate::effects::store::{schedule, schedule::Plan};
use crate::ops::schedule::switch;
use crate::ops::task::view::TaskView;

/// What a hand-off asks, from every face.
#[derive(Debug, Clone, Default)]
pub struct HandoffRequest {
    pub id: String,
    pub agent: String,
    pub model: Option<String>,
    /// The user's words for the next agent, after the recap.
    pub message: Option<String>,
}

/// Hands a running task to another agent: queued for its next attempt on `agent`, its
/// current attempt's processes ended (SIGTERM, then SIGKILL after the grace).
pub fn handoff(request: &HandoffRequest, cwd: &Path) -> Result<TaskView> {
    let task = crate::ops::task::open(&request.id, cwd)?;
    refuse_inside(&task)?;
    if task.placement.host.is_some() {
        return Err(Error::invalid_input(format!(
            "task {} runs on a host: hand it off there",
            request.id
        )));
    }
    let word = match &request.model {
        Some(model) => format!("{}:{model}", request.agent),
        None => request.agent.clone(),
    };
    let next: Fallback = crate::ops::schedule::parse_fallback(&word)
        .map_err(|err| Error::invalid_input(err.message.replace("--fallback", "--agent")))?
        .remove(0);
    if !switch::may_take(&task, &next) {
        return Err(Error::new(
            ErrorCode::SandboxUnavailable,
            format!(
                "task {} asks for approvals in a sandbox verified for {} only: {} may not take it",
                request.id,
                crate::ops::sandbox::VERIFIED_AGENTS.join(", "),
                next.agent
            ),
        )
        .with_hint("hand it to a verified agent, or cancel it and submit anew"));
    }
    refuse_untrusted_agent_files(&task, &next.agent)?;
    let record = &task.record;
    let plan = schedule::plan(&record.id).unwrap_or_else(|| Plan {
        queued_at: record.created_at.clone(),
        attempts: vec![schedule::Attempt {
            started_at: record
                .started_at
                .clone()
                .unwrap_or(record.created_at.clone()),
            agent: Some(record.spec.agent_kind.clone()),
            model: record.spec.model.clone(),
            ..Default::default()
        }],
        ..Plan::default()
    });
    // A task submitted without a plan kept no environment for a later start: this call's.
    let env_path = schedule::env_path(&record.id).expect("a task id names a path");
    if !env_path.exists() {
        let config = crate::effects::config::Config::load(&record.cwd)?;
        let adapter = crate::domain::adapter::lookup(&next.agent)?;
        let env = crate::ops::submit::prepare::env_file_text(
            &record.id,
            adapter,
            &config,
            task.in_bubblewrap(),
        );
        schedule::write_private(&env_path, env.as_bytes())?;
    }
    if task.in_bubblewrap() {
        // The next agent's own key variables, from this caller's environment unless the
        // submit kept them: its sandboxed start gets those, not the previous agent's.
        crate::ops::submit::prepare::keep_agent_keys(
            &record.id,
            &[record.spec.agent_kind.as_str(), next.agent.as_str()],
        )?;
    }
    let n = plan.attempts.len().max(1);
    let hint = format!(
        "attempt {n} handed off by the user from {} to {next}; attempt {} starts once its \
         processes are gone, told a recap",
        record.spec.agent_kind,
        n + 1
    );
    let ended = switch::Ended {
        reason: "handed_off",
        exit_code: None,
        reset: None,
    };
    let plan = switch::journal(&task, plan, &ended, &next, request.message.clone());
    let not_running = |status: Status| {
        Error::new(
            ErrorCode::InvalidState,
            format!(
                "task {} is {}: only a running task is handed off",
                request.id,
                status.as_str()
            ),
        )
        .with_hint("`cuekit retry ID` starts an ended task again; a queued one waits its turn")
    };
    let fresh = crate::ops::task::reread(&task.placement)?;
    if fresh.status != Status::Running || fresh.started_at != record.started_at {
        return Err(not_running(fresh.status));
    }
    // The decision is in the plan before the attempt is ended: a hand-off killed from here on
    // is carried out by the look that judges the attempt's ending (`switch::finish_pending`).
    schedule::save_plan(&record.id, &plan)?;
    crate::ops::judge::end_processes(
        &task.placement,
        task.pane.as_ref(),
        None,
        crate::effects::process::DEFAULT_GRACE,
    );
    let queued = match switch::commit_switch(&task, &plan, &ended, &hint)? {
        Some(queued) => queued,
        None => {
            // A look at the ended attempt may have carried the hand-off out first.
            let mut queued = task.clone();
            queued.record = crate::ops::task::reread(&task.placement)?;
            if queued.record.status != Status::Queued {
                return Err(not_running(queued.record.status));
            }
            queued
        }
    };
    let _ = crate::ops::schedule::start_due();
    let record = crate::ops::task::reread(&queued.placement).unwrap_or(queued.record);
    let mut view = TaskView::from(&record);
    view.queue = crate::ops::schedule::explain_one(&record);
    Ok(view)
}

/// Refuses a hand-off asked from inside the task's own process tree (its child, or a process
/// it left), from every face: which agent (and model) runs next, with your credentials, is the
/// parent's word, as a steer or an approval is.
fn refuse_inside(task: &crate::ops::task::Task) -> Result<()> {
    let id = &task.record.id;
    if crate::ops::task::task_of_process(std::process::id()).as_deref() == Some(id.as_str()) {
        return Err(Error::new(
            ErrorCode::InsideTask,
            format!(
                "this runs inside task {id}'s own pane: a child never hands itself to another agent"
            ),
        )
        .with_hint("the parent (or you) runs `cuekit handoff ID`, from outside the task"));
    }
    Ok(())
}

/// Whether the task `id`'s next attempt would run unguarded: an agent with its permission
/// bypass (the task asks for no approvals) outside cuekit's sandbox, or the `command` agent
/// outside it — whatever it is told runs as you. The web asks the terminal's code before a
/// hand-off or a retry of such a task, as `/new` does for such a submit (verification round,
/// reach V7).
pub fn next_attempt_runs_unguarded(id: &str, cwd: &Path) -> Result<bool> {
    let task = crate::ops::task::open(id, cwd)?;
    if task.in_bubblewrap() {
        return Ok(false);
    }
    let spec = crate::effects::store::kept_spec(&task.record.id)
        .unwrap_or_else(|_| task.record.spec.clone());
    Ok(spec.agent_kind == "command" || !crate::ops::sandbox::asks_for_approvals(&spec))
}

/// The next agent's own project files that run code ([`crate::domain::adapter::project_files`])
/// must be trusted, as at submit: a hand-off to Claude Code where the task's folder holds an
/// untrusted `.claude/settings.json` is refused with `config_untrusted` before anything ends
/// (verification round, reach V2).
fn refuse_untrusted_agent_files(task: &crate::ops::task::Task, agent: &str) -> Result<()> {
    let cwd = &task.record.cwd;
    let (start, top, trusted_top) = match task.worktree() {
        Some(worktree) => {
            let dir = cwd
                .strip_prefix(&worktree.repo_root)
                .map_or_else(|_| worktree.path.clone(), |sub| worktree.path.join(sub));
            let start = if dir.is_dir() {
                dir
            } else {
                worktree.path.clone()
            };
            (start, worktree.path.clone(), worktree.repo_root.clone())
        }
        None => (cwd.clone(), cwd.clone(), cwd.clone()),
    };
    crate::effects::project::agent_files::refuse_untrusted(agent, &start, &top, &trusted_top)
}
