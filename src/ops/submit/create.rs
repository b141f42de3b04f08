//! Stage 4, create: the task's pending entry (from here on, whatever stops the submit is undone
//! by the next cuekit call, see `reap`), its worktree or repository of its own, its folder and
//! files, and its record — each undone again if a later stage fails.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::admit::Scheduled;
use super::check::{Checked, write_new};
use crate::domain::adapter;
use crate::domain::error::{Error, Result};
use crate::domain::launch::StartGate;
use crate::domain::spec::{Mode, TaskSpec};
use crate::domain::status::Status;
use crate::effects::config::Config;
use crate::effects::git;
use crate::effects::store::{self, Placement, TaskRecord, TmuxPlacement, schedule};
use crate::effects::tmux::{Socket, Tmux, args};
use crate::ops::submit::prepare::{env_file_text, includes, launch_script, write_private};

/// What this submit made, on disk.
pub(super) struct Created {
    pub record: TaskRecord,
    pub files: TaskFiles,
    pub worktree: Option<CreatedWorktree>,
}

/// Undoes a submit that stopped once its pending entry was written: its session, its folder,
/// its queue files and the pending entry go.
pub(super) struct Undo {
    id: String,
    socket: Socket,
    session: String,
    task_dir: PathBuf,
}

impl Undo {
    pub fn of(placement: &Placement) -> Undo {
        Undo {
            id: placement.id.clone(),
            socket: placement.socket.clone(),
            session: placement.session.clone(),
            task_dir: placement.task_dir.clone(),
        }
    }

    pub fn undo(&self, err: Error) -> Error {
        let _ = Tmux::new(self.socket.clone()).run(&args::kill_session(&self.session));
        let _ = std::fs::remove_dir_all(&self.task_dir);
        store::unregister(&self.id);
        store::remove_pending(&self.id);
        err
    }
}

pub(super) fn create(checked: &mut Checked, scheduled: Scheduled, undo: &Undo) -> Result<Created> {
    let id = checked.id().to_string();
    store::write_pending(&checked.placement)?;
    // A caller-chosen id, checked before: a submit of the same id may have finished since.
    if checked.resolved.request.id.is_some() && store::placement(&id)?.is_some() {
        store::remove_pending(&id);
        return Err(Error::invalid_input(format!("task {id} already exists")));
    }
    let worktree = match &checked.worktree {
        Some(plan) => {
            let _marked = git::Submitting::mark(&id);
            let included = includes(&checked.resolved.config, checked.own_repo);
            if let Err(err) = git::create::create(plan, &included) {
                store::remove_pending(&id);
                return Err(err);
            }
            Some(CreatedWorktree(Some(plan.clone())))
        }
        None => None,
    };
    refuse_untrusted_agent_files(checked).map_err(|err| undo.undo(err))?;
    let task_dir = &checked.placement.task_dir;
    create_task_dir(task_dir).map_err(|err| undo.undo(err))?;
    if let Some(plan) = &checked.worktree {
        // The user's excludes as they are before the child runs: its removal trusts these and
        // the base's `.gitignore` files, never rules the child wrote.
        git::ignore_rules::keep_user_excludes(&plan.repo_root, &plan.common_dir, task_dir)
            .map_err(|err| undo.undo(err))?;
    }
    let resolved = &checked.resolved;
    let files = write_task_files(
        &id,
        task_dir,
        &resolved.spec,
        resolved.adapter,
        resolved.mode,
        &checked.command,
        checked.event_stream,
        &resolved.config,
        checked.setup.as_deref(),
        scheduled,
        checked.placement.in_bubblewrap(),
    )
    .map_err(|err| undo.undo(err))?;
    if let Some(plan) = resolved
        .plan
        .as_ref()
        .filter(|plan| !plan.fallback.is_empty())
        && scheduled != Scheduled::No
        && checked.placement.in_bubblewrap()
    {
        // A sandboxed start gets its own agent's key variables only: each fallback's are kept
        // for the start that runs it.
        let mut agents = vec![resolved.spec.agent_kind.as_str()];
        agents.extend(plan.fallback.iter().map(|next| next.agent.as_str()));
        crate::ops::submit::prepare::keep_agent_keys(&id, &agents).map_err(|err| undo.undo(err))?;
    }
    Ok(Created {
        record: record_of(checked, scheduled),
        files,
        worktree,
    })
}

/// A file the agent's own CLI loads from the task's folder and that runs code (Qwen's
/// `.qwen/settings.json`, `opencode.json`, pi's `.pi/extensions/`) must be trusted first, like a
/// `.cuekit.yaml` key that runs code: read in the checkout the agent will start in, trusted by
/// its place in the user's own.
fn refuse_untrusted_agent_files(checked: &Checked) -> Result<()> {
    let (top, trusted_top) = match &checked.worktree {
        Some(plan) => (plan.path.clone(), plan.repo_root.clone()),
        None => (checked.agent_dir.clone(), checked.agent_dir.clone()),
    };
    crate::effects::project::agent_files::refuse_untrusted(
        &checked.resolved.spec.agent_kind,
        &checked.agent_dir,
        &top,
        &trusted_top,
    )
}

/// The new task's `task.json`.
fn record_of(checked: &mut Checked, scheduled: Scheduled) -> TaskRecord {
    let facts = checked.facts().clone();
    let placement = &checked.placement;
    let resolved = &checked.resolved;
    TaskRecord {
        id: placement.id.clone(),
        spec: resolved.spec.clone(),
        mode: resolved.mode,
        cwd: resolved.cwd.clone(),
        task_dir: placement.task_dir.clone(),
        launch_command: std::mem::take(&mut checked.command),
        status: if scheduled == Scheduled::Queued {
            Status::Queued
        } else {
            Status::Running
        },
        reason: None,
        hint: None,
        exit_code: None,
        warnings: std::mem::take(&mut checked.warnings),
        tmux: Some(TmuxPlacement {
            socket: placement.socket.clone(),
            session: placement.session.clone(),
            height: resolved.config.height().value,
        }),
        created_at: placement.created_at.clone(),
        ended_at: None,
        started_at: None,
        timeout_secs: placement.timeout_secs,
        event_stream: checked.event_stream,
        agent_session_id: facts.agent_session_id,
        resumed_from: resolved.resumed_id.clone(),
        submitted_from: facts.submitted_from,
        sandbox: facts.sandbox,
        team: resolved.request.team.clone(),
        last_report: None,
        worktree: checked
            .worktree
            .as_ref()
            .map(|plan| (&plan.placement()).into()),
        check: facts
            .check
            .as_ref()
            .map(|plan| crate::domain::check::CheckState::new(plan.rounds)),
    }
}

/// The task directory, new and owner-only (prompts and transcripts may hold private code), with a
/// `.gitignore` of its own: a child that runs `git add -A` must not commit cuekit's files,
/// whatever `.cuekit/.gitignore` the repository ships (the deepest ignore file decides).
fn create_task_dir(task_dir: &Path) -> Result<()> {
    store::create_task_folder(task_dir)?;
    write_new(
        &task_dir.join(".gitignore"),
        b"# Written by cuekit: this task's files are never part of the project.\n*\n",
    )
    .map_err(|err| Error::io("write", &task_dir.join(".gitignore"), err))
}

pub(super) struct TaskFiles {
    pub script: PathBuf,
    pub env: PathBuf,
    pub transcript: PathBuf,
}

/// `prompt.txt`, `launch.sh`, the submitter's environment, an empty transcript. A task the
/// scheduler starts later has its script and environment in the user's registry instead
/// ([`Scheduled`]): nothing a project folder holds is run hours later.
#[allow(clippy::too_many_arguments)]
fn write_task_files(
    id: &str,
    task_dir: &Path,
    spec: &TaskSpec,
    adapter: &adapter::Adapter,
    mode: Mode,
    command: &str,
    event_stream: bool,
    config: &Config,
    setup: Option<&str>,
    scheduled: Scheduled,
    bubblewrapped: bool,
) -> Result<TaskFiles> {
    let prompt = if adapter.runs_argv {
        spec.argv.join(" ")
    } else {
        crate::domain::spec::render_prompt(spec)
    };
    let prompt_file = task_dir.join(crate::domain::launch::PROMPT_FILE);
    write_private(&prompt_file, prompt.as_bytes())?;
    if bubblewrapped {
        crate::effects::owner::show_prompt(task_dir, &prompt_file)?;
    }
    store::keep_spec(id, spec)?;
    let env_file = env_file_text(id, adapter, config, bubblewrapped);
    // In the data dir, which every sandbox hides: a task folder lies in a project's
    // `.cuekit/`, where a child could read it before the pane deletes it.
    let env_path = schedule::pane_env_path(id).expect("the pending entry was written");
    // A task started now waits for its registry entry; a queued one for the scheduler's gate.
    let registered = store::registry_dir()
        .expect("the pending entry was written")
        .join(id);
    let pending = store::data_dir()
        .expect("the pending entry was written")
        .join("pending")
        .join(id);
    let scheduled_gate = crate::ops::schedule::gate_paths(id)?;
    let gate = match scheduled {
        Scheduled::Queued => scheduled_gate.gate(),
        Scheduled::No | Scheduled::Retried => StartGate {
            registered: &registered,
            pending: &pending,
        },
    };
    let script = launch_script(
        id,
        task_dir,
        command,
        adapter,
        mode,
        event_stream,
        gate,
        setup,
    )?;
    let script_path = match scheduled {
        Scheduled::No | Scheduled::Retried => {
            let script_path = task_dir.join(store::LAUNCH_FILE);
            write_private(&script_path, script.as_bytes())?;
            schedule::write_private(&env_path, env_file.as_bytes())?;
            script_path
        }
        Scheduled::Queued => {
            let script_path = schedule::launch_path(id).expect("the pending entry was written");
            schedule::write_private(&script_path, script.as_bytes())?;
            script_path
        }
    };
    if scheduled != Scheduled::No {
        // Each later start takes its environment from here.
        let kept = schedule::env_path(id).expect("the pending entry was written");
        schedule::write_private(&kept, env_file.as_bytes())?;
    }
    let transcript = task_dir.join(store::TRANSCRIPT_FILE);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&transcript)
        .map_err(|err| Error::io("create", &transcript, err))?;
    Ok(TaskFiles {
        script: script_path,
        env: env_path,
        transcript,
    })
}

/// A worktree this submit created, removed again unless the task started.
pub(super) struct CreatedWorktree(Option<git::create::Plan>);

impl CreatedWorktree {
    pub fn keep(&mut self) {
        self.0 = None;
    }
}

impl Drop for CreatedWorktree {
    fn drop(&mut self) {
        if let Some(plan) = self.0.take() {
            git::create::remove_created(&plan);
        }
    }
}
