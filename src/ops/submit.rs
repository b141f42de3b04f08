use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::view::TaskView;
use crate::adapter::{self, LaunchCommand};
use crate::config::{Config, Permissions, Setting};
use crate::error::{Error, ErrorCode, Result};
use crate::git;
use crate::launch::{ENV_FILE, render_env_file, render_launch_script};
use crate::spec::{Mode, TaskSpec};
use crate::status::Status;
use crate::store::{self, TaskRecord, TmuxPlacement, WorktreeRecord};
use crate::tmux::{Socket, Tmux, args};

/// What a parent asks for. Every `None` is filled from the configuration, then the adapter.
#[derive(Debug, Clone, Default)]
pub struct SubmitRequest {
    pub agent: Option<String>,
    pub objective: String,
    pub context: Option<String>,
    pub constraints: Vec<String>,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub approval_mode: Option<String>,
    pub dangerously_skip_permissions: Option<bool>,
    /// Where the agent works; by default the resumed task's directory, else the caller's.
    pub cwd: Option<PathBuf>,
    pub timeout: Option<Duration>,
    /// `Some(false)` runs a batch task with plain-text output instead of the event stream.
    pub stream_events: Option<bool>,
    /// An earlier task whose agent session this one continues.
    pub resume_from: Option<String>,
    /// jcode's provider profile (else `adapters.jcode.provider_profile`).
    pub provider_profile: Option<String>,
    /// For the `command` agent: the program and its arguments (the objective names the task).
    pub argv: Vec<String>,
    pub dry_run: bool,
    /// Run in a new git worktree on a new branch (else `defaults.worktree`, else no).
    pub worktree: Option<bool>,
    /// The worktree's base (default: the caller's current branch, or `HEAD`).
    pub base: Option<String>,
    /// The worktree's branch (default: `worktree.branch_prefix` and the task id).
    pub branch: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum SubmitOutcome {
    DryRun {
        agent_kind: String,
        mode: Mode,
        launch_command: String,
        warnings: Vec<String>,
    },
    Submitted(Box<TaskView>),
}

/// The task spec with the configuration applied (flag > project file > user file > built-in).
fn resolve_spec(
    request: &SubmitRequest,
    config: &Config,
    resumed: Option<&TaskRecord>,
) -> TaskSpec {
    let agent_kind = request
        .agent
        .clone()
        .or_else(|| resumed.map(|r| r.spec.agent_kind.clone()))
        .unwrap_or_else(|| config.agent().value);
    let value = |setting: Option<Setting<String>>| setting.map(|s| s.value);
    // The adapter design's safety rule: `permissions: prompt` turns the bypass off for tasks
    // that did not ask for it explicitly.
    let configured_bypass = config
        .permissions(&agent_kind)
        .map(|p| p.value == Permissions::Bypass);
    TaskSpec {
        objective: request.objective.clone(),
        context: request.context.clone(),
        constraints: request.constraints.clone(),
        model: request
            .model
            .clone()
            .or_else(|| value(config.model(&agent_kind))),
        mode: request.mode.or_else(|| config.mode().map(|s| s.value)),
        approval_mode: request
            .approval_mode
            .clone()
            .or_else(|| value(config.approval_mode(&agent_kind))),
        dangerously_skip_permissions: request.dangerously_skip_permissions.or(configured_bypass),
        stream_events: request.stream_events,
        session_id: None,
        resume_session: None,
        provider_profile: request
            .provider_profile
            .clone()
            .or_else(|| value(config.provider_profile(&agent_kind))),
        argv: request.argv.clone(),
        agent_kind,
    }
}

/// The agent session of an earlier task, for `--resume-from`.
fn resumable_session(earlier: &TaskRecord) -> Result<String> {
    super::result::agent_session(earlier).ok_or_else(|| {
        Error::invalid_input(format!(
            "task {} has no known agent session to resume",
            earlier.id
        ))
        .with_hint("only tasks whose agent reported a session (Gemini) can be resumed")
    })
}

pub fn submit(request: SubmitRequest, caller_cwd: &Path) -> Result<SubmitOutcome> {
    let resumed = request
        .resume_from
        .as_deref()
        .map(|id| super::open(id, caller_cwd))
        .transpose()?;
    let requested_cwd = request
        .cwd
        .clone()
        .or_else(|| resumed.as_ref().map(|r| r.cwd.clone()))
        .unwrap_or_else(|| caller_cwd.to_path_buf());
    let cwd = std::fs::canonicalize(&requested_cwd)
        .ok()
        .filter(|dir| dir.is_dir())
        .ok_or_else(|| {
            Error::invalid_input(format!(
                "working directory {} does not exist",
                requested_cwd.display()
            ))
            .with_hint("pass an existing directory with --cwd")
        })?;
    let config = Config::load(&cwd)?;
    let mut spec = resolve_spec(&request, &config, resumed.as_ref());
    let adapter = adapter::lookup(&spec.agent_kind)?;
    if !adapter.runs_argv {
        spec.argv.clear();
    }
    if let Some(earlier) = &resumed {
        if earlier.spec.agent_kind != spec.agent_kind {
            return Err(Error::invalid_input(format!(
                "task {} ran {}, not {}: a session continues only with the same agent",
                earlier.id, earlier.spec.agent_kind, spec.agent_kind
            )));
        }
        spec.resume_session = Some(resumable_session(earlier)?);
    }
    let mode = spec.mode.unwrap_or(adapter.capabilities.default_mode);
    if !adapter.supports(mode) {
        return Err(Error::invalid_input(format!(
            "agent '{}' has no {} mode",
            adapter.kind(),
            mode.as_str()
        )));
    }
    let bin = config
        .bin(adapter.kind())
        .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
    if request.dry_run {
        let LaunchCommand {
            command, warnings, ..
        } = (adapter.build_launch)(&spec, mode, &bin)?;
        return Ok(SubmitOutcome::DryRun {
            agent_kind: adapter.kind().to_string(),
            mode,
            launch_command: command,
            warnings,
        });
    }
    let use_worktree = request
        .worktree
        .or_else(|| config.worktree_default().map(|s| s.value))
        .unwrap_or(false);
    if !use_worktree && (request.base.is_some() || request.branch.is_some()) {
        return Err(Error::invalid_input(
            "--base and --branch only apply to a task in its own worktree",
        )
        .with_hint("add --worktree (or set defaults.worktree: true)"));
    }
    let id = store::new_task_id();
    let plan = if use_worktree {
        Some(git::create::plan(&git::create::Request {
            cwd: &cwd,
            task_id: &id,
            base: request.base.as_deref(),
            branch: request.branch.as_deref(),
            dir_template: &config.worktree_dir().value,
            branch_prefix: &config.branch_prefix().value,
        })?)
    } else {
        None
    };
    // Named after the task, so cuekit knows the agent's session without asking it.
    if spec.resume_session.is_none() {
        spec.session_id = Some(id.clone());
    }
    let LaunchCommand {
        command,
        warnings,
        event_stream,
    } = (adapter.build_launch)(&spec, mode, &bin)?;
    // The command agent's program is the task's own first word, found by the pane's shell.
    if !adapter.runs_argv && crate::which::find_on_path(&bin).is_none() {
        return Err(Error::new(
            ErrorCode::AgentNotFound,
            format!("the {} binary '{bin}' is not on PATH", adapter.kind()),
        )
        .with_hint(format!(
            "to install: {}; or set adapters.{}.bin; `cuekit doctor` checks every agent",
            adapter.install_hint,
            adapter.kind()
        )));
    }
    let agent_session_id = command
        .contains("--session-id")
        .then(|| spec.session_id.clone())
        .flatten()
        .or_else(|| spec.resume_session.clone());

    // Trust hook (issue 11): `worktree.setup` runs code; a value whose source is a project file
    // (`Source::Project`) must pass the trust check here, before anything is created.
    let setup = plan
        .as_ref()
        .and_then(|_| config.worktree_setup())
        .map(|s| s.value);
    let created = match &plan {
        Some(plan) => {
            let includes = git::include::Includes {
                copy: config.worktree_copy().map(|s| s.value).unwrap_or_default(),
                symlink: config
                    .worktree_symlink()
                    .map(|s| s.value)
                    .unwrap_or_default(),
            };
            git::create::create(plan, &includes)?;
            Some(CreatedWorktree(Some(plan.clone())))
        }
        None => None,
    };
    let agent_dir = plan.as_ref().map_or_else(|| cwd.clone(), |p| p.agent_dir());

    let task_dir = store::task_dir(&cwd, &id);
    // Owner-only: prompts and transcripts may hold private code.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&task_dir)
        .map_err(|err| Error::io("create", &task_dir, err))?;
    let unset_env = match mode {
        Mode::Interactive => adapter.interactive_unset_env,
        Mode::Batch => &[],
    };
    let event_filter = if event_stream {
        Some(std::env::current_exe().map_err(|err| {
            Error::new(
                ErrorCode::Io,
                format!("cannot find the cuekit binary: {err}"),
            )
        })?)
    } else {
        None
    };
    let prompt = if adapter.runs_argv {
        spec.argv.join(" ")
    } else {
        crate::spec::render_prompt(&spec)
    };
    write_private(
        &task_dir.join(crate::launch::PROMPT_FILE),
        prompt.as_bytes(),
    )?;
    let script_path = task_dir.join(store::LAUNCH_FILE);
    let script = render_launch_script(
        &id,
        &command,
        unset_env,
        &task_dir,
        event_filter.as_deref(),
        setup.as_deref(),
    )?;
    std::fs::write(&script_path, script).map_err(|err| Error::io("write", &script_path, err))?;
    let env_path = task_dir.join(ENV_FILE);
    // The submitter's environment, then the adapter's configured `env`, then the task id.
    let inherited = std::env::vars().filter(|(name, _)| name != "CUEKIT_TASK_ID");
    let configured = config
        .env(adapter.kind())
        .into_iter()
        .map(|(name, s)| (name, s.value));
    let env_file = render_env_file(
        inherited
            .chain(configured)
            .chain([("CUEKIT_TASK_ID".to_string(), id.clone())]),
    );
    write_private(&env_path, env_file.as_bytes())?;
    let transcript = task_dir.join(store::TRANSCRIPT_FILE);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&transcript)
        .map_err(|err| Error::io("create", &transcript, err))?;

    let socket = Socket(config.socket().value);
    let height = config.height().value;
    let session = args::session_name(&id);
    let mut record = TaskRecord {
        id: id.clone(),
        spec,
        mode,
        cwd: cwd.clone(),
        task_dir: task_dir.clone(),
        launch_command: command,
        status: Status::Running,
        reason: None,
        hint: None,
        exit_code: None,
        warnings,
        tmux: Some(TmuxPlacement {
            socket: socket.clone(),
            session: session.clone(),
            height,
        }),
        created_at: super::now_rfc3339(),
        ended_at: None,
        timeout_secs: request
            .timeout
            .or_else(|| config.timeout().map(|s| s.value))
            .map(|t| t.as_secs().max(1)),
        event_stream,
        agent_session_id,
        resumed_from: resumed.map(|r| r.id),
        worktree: plan.map(|plan| WorktreeRecord {
            repo_root: plan.repo_root,
            path: plan.path,
            branch: plan.branch,
            base_ref: plan.base_ref,
            base_commit: plan.base_commit,
            merged_tip: None,
        }),
    };
    // The one tmux call runs while the record and the registry entry are written and synced;
    // both are put in place only once the session exists, so no reader ever sees a running
    // task without its pane.
    let launch = Tmux::new(socket).spawn(&args::new_task_session(&args::NewTaskSession {
        session: &session,
        cwd: &agent_dir,
        width: config.width().value,
        height,
        history_limit: config.history_limit().value,
        script: &script_path,
        transcript: &transcript,
    }))?;
    let staged = (
        store::stage_record(&record)?,
        store::stage_registration(&id, &task_dir)?,
    );
    if let Err(err) = launch.finish() {
        drop(staged);
        let _ = std::fs::remove_file(&env_path);
        // Keep the record of what was attempted; the task never started.
        record.status = Status::Failed;
        record.reason = Some("launch_failed".into());
        record.hint = Some(err.message.clone());
        record.ended_at = Some(super::now_rfc3339());
        // The worktree goes with the failed launch (the guard removes it): the record must
        // not point at it.
        record.worktree = None;
        store::save(&record)?;
        store::register(&id, &task_dir)?;
        return Err(err);
    }
    staged.0.commit()?;
    staged.1.commit()?;
    if let Some(mut created) = created {
        created.keep();
    }
    if record.timeout_secs.is_some() {
        super::watchdog::spawn(&task_dir)?;
    }
    Ok(SubmitOutcome::Submitted(Box::new(TaskView::from(&record))))
}

/// A worktree this submit created, removed again unless the task started.
struct CreatedWorktree(Option<git::create::Plan>);

impl CreatedWorktree {
    fn keep(&mut self) {
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

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|err| Error::io("write", path, err))
}
