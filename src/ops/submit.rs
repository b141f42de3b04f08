use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::prepare::{
    env_file_text, includes, launch_script, parse_new_pane, tip_of, with_answer_of, write_private,
};
use super::view::TaskView;
use crate::domain::adapter::{self, LaunchCommand};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::launch::{ENV_FILE, StartGate};
use crate::domain::spec::{Mode, TaskSpec};
use crate::domain::status::Status;
use crate::effects::config::{Autonomy, Config, Permissions, Setting};
use crate::effects::git;
use crate::effects::role::{Role, Roles};
use crate::effects::store::{self, Placement, TaskFacts, TaskRecord, TmuxPlacement, schedule};
use crate::effects::tmux::{Socket, Tmux, args};

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
    /// A role (agent profile): its defaults fill what the request leaves open, its
    /// instructions go into the prompt.
    pub role: Option<String>,
    /// A team label: the task can then be listed, waited on, steered and cancelled with its team.
    pub team: Option<String>,
    pub dry_run: bool,
    /// Run in a new git worktree on a new branch (else `defaults.worktree`, else no).
    pub worktree: Option<bool>,
    /// The worktree's base (default: the caller's current branch, or `HEAD`).
    pub base: Option<String>,
    /// The worktree's branch (default: `worktree.branch_prefix` and the task id).
    pub branch: Option<String>,
    /// The task's id, chosen by the caller: a cuekit on another machine registers a host's task
    /// before asking the host, so a reply lost on the way never leaves a task it does not know.
    /// Else a fresh one.
    pub id: Option<String>,
    /// Who chose the permission settings above: a delegate's may tighten the user's policy,
    /// never loosen it.
    pub asked_by: Asker,
    /// ACP: end the session after the first turn that ends with `end_turn`.
    pub once: Option<bool>,
    /// Run the task on this configured host (its `cwd` is then a directory there).
    pub host: Option<String>,
    /// Dependencies, priority, retries, `--now`: what the scheduler is asked.
    pub scheduling: super::schedule::Scheduling,
    /// `--max-tokens`, `--max-turns`: the usage past which the task is stopped.
    pub budget: Option<store::Budget>,
    /// `--sandbox`, `--no-network` (MCP `sandbox`, `network`).
    pub sandbox: super::sandbox::SandboxRequest,
    /// `--wake-parent`: type a line into the submitting agent's pane when the task ends or
    /// waits on a human (an error when the submitter is no such agent).
    pub wake_parent: bool,
}

/// Who asks for a task, as far as its permissions go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Asker {
    /// The user at the command line: their flags set the policy.
    #[default]
    User,
    /// An MCP client or a team spec (a file of the project's): may ask for less autonomy than
    /// the user's policy, never for more.
    Delegate,
}

/// Untagged; read back from a host's JSON too (`ops::remote` tells the two apart by `id`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum SubmitOutcome {
    Submitted(Box<TaskView>),
    DryRun {
        agent_kind: String,
        mode: Mode,
        launch_command: String,
        warnings: Vec<String>,
    },
}

/// The agent a request runs: flag, else the resumed task's, else the role's, else the config's.
///
/// The `command` agent runs the task's own words: a project's role or team spec may not choose
/// it (they are the repository's word), nor an untrusted project file (its `defaults.agent` is
/// then withheld, and a submit that would have used it is refused).
fn agent_kind(
    request: &SubmitRequest,
    config: &Config,
    resumed: Option<&TaskRecord>,
    role: Option<&Role>,
) -> Result<String> {
    if let Some(agent) = request
        .agent
        .clone()
        .or_else(|| resumed.map(|r| r.spec.agent_kind.clone()))
    {
        return Ok(agent);
    }
    if let Some(role) = role
        && let Some(agent) = &role.agent
    {
        let from_project = role
            .layers
            .iter()
            .any(|layer| matches!(layer, crate::effects::role::RoleSource::Project(_)));
        if agent == "command" && from_project {
            return Err(Error::new(
                ErrorCode::ConfigUntrusted,
                format!(
                    "the project's role '{}' chooses the command agent, which runs the task's own words",
                    role.name
                ),
            )
            .with_hint("pass `--agent command` yourself if that is what you want"));
        }
        return Ok(agent.clone());
    }
    config.refuse_untrusted_agent()?;
    Ok(config.agent().value)
}

/// The task spec with the role and the configuration applied (flag > role > project file >
/// user file > built-in), and warnings for what was asked but does not apply.
///
/// Permissions are a tighten-only policy: the user's own settings (and their command-line
/// flags) set the most autonomy an agent gets; a delegate's request (MCP, a team spec) and a
/// project's role may ask for less, never for more.
fn resolve_spec(
    request: &SubmitRequest,
    config: &Config,
    adapter: &adapter::Adapter,
    role: Option<&Role>,
) -> (TaskSpec, Vec<String>) {
    let agent_kind = adapter.kind().to_string();
    // A role's model is meant for the role's agent: another agent chosen by flag keeps its own.
    let role_model = role
        .filter(|r| r.agent.as_ref().is_none_or(|agent| *agent == agent_kind))
        .and_then(|r| r.model.clone());
    let value = |setting: Option<Setting<String>>| setting.map(|s| s.value);
    let autonomy_of = |mode: &str| {
        if adapter.approval_modes.contains(&mode) {
            Autonomy::of_approval_mode(mode)
        } else {
            Autonomy::Bypass
        }
    };
    let delegated = request.asked_by == Asker::Delegate;
    // What the request itself asks for is the most autonomy any less specific source (a role,
    // a project or user file) may add: the user's `--no-skip-permissions` is not undone by a
    // file's `approval_mode: yolo`. A valid approval mode decides over the bypass flag in every
    // adapter's builder, so it decides here too. A delegate's choice only ever lowers the
    // user's files' ceiling; the user's own flag replaces it.
    let asked = request
        .approval_mode
        .as_deref()
        .filter(|mode| adapter.approval_modes.contains(mode))
        .map(Autonomy::of_approval_mode)
        .or_else(|| {
            request
                .dangerously_skip_permissions
                .map(Autonomy::of_bypass)
        });
    let files_allow = config.policy(adapter).allowed;
    let ceiling = asked.map(|asked| {
        if delegated {
            asked.min(files_allow)
        } else {
            asked
        }
    });
    let policy = config.policy_under(adapter, ceiling);
    let mut warnings = config.warnings_under(adapter, &policy);
    let mut within = |asked: Option<String>, who: &str| {
        let mode = asked?;
        if crate::effects::config::class::within(autonomy_of(&mode), policy.allowed) {
            return Some(mode);
        }
        warnings.push(format!(
            "approval_mode '{mode}' from {who} allows more than your policy ({:?}); ignored",
            policy.allowed
        ));
        None
    };
    let requested_approval = if delegated {
        within(request.approval_mode.clone(), "the request")
    } else {
        request.approval_mode.clone()
    };
    let role_from_project = role.is_some_and(|r| {
        r.layers
            .iter()
            .any(|layer| matches!(layer, crate::effects::role::RoleSource::Project(_)))
    });
    let role_approval = role.and_then(|r| r.approval_mode.clone());
    let role_approval = if role_from_project {
        within(role_approval, "the project's role")
    } else if ceiling.is_some() {
        within(role_approval, "the role")
    } else {
        role_approval
    };
    let approval_mode = requested_approval
        .or(role_approval)
        .or_else(|| value(policy.approval_mode));
    let requested_bypass = match request.dangerously_skip_permissions {
        Some(true) if delegated && files_allow != Autonomy::Bypass => {
            warnings.push(format!(
                "the request's dangerously_skip_permissions allows more than your policy ({files_allow:?}); ignored"
            ));
            None
        }
        asked => asked,
    };
    // The adapter design's safety rule: `permissions: prompt` turns the bypass off for tasks
    // that did not ask for it explicitly.
    let configured_bypass = policy.permissions.map(|p| p.value == Permissions::Bypass);
    let spec = TaskSpec {
        objective: request.objective.clone(),
        context: request.context.clone(),
        constraints: request.constraints.clone(),
        model: request
            .model
            .clone()
            .or(role_model)
            .or_else(|| value(config.model(&agent_kind))),
        mode: request
            .mode
            .or_else(|| role.and_then(|r| r.mode))
            .or_else(|| config.mode().map(|s| s.value)),
        approval_mode,
        dangerously_skip_permissions: requested_bypass.or(configured_bypass),
        stream_events: request.stream_events,
        session_id: None,
        resume_session: None,
        provider_profile: request
            .provider_profile
            .clone()
            .or_else(|| value(config.provider_profile(&agent_kind))),
        argv: request.argv.clone(),
        role: role.map(|r| r.name.clone()),
        role_instructions: role
            .map(|r| r.instructions.clone())
            .filter(|text| !text.is_empty()),
        // A child sent with a role or into a team is one a parent wants to hear from.
        report_hint: role.is_some() || request.team.is_some(),
        acp: None,
        agent_kind,
    };
    (spec, warnings)
}

/// `--context-from`: an ended task's answer goes into the context now; one still running (or
/// queued) becomes a dependency, and its answer is taken at this task's start.
fn take_context_from(mut request: SubmitRequest, cwd: &Path) -> Result<SubmitRequest> {
    let Some(from) = request.scheduling.context_from.clone() else {
        return Ok(request);
    };
    let source = super::task::open(&from, cwd)?;
    if source.placement.host.is_some() {
        return Err(Error::invalid_input(format!(
            "--context-from: task {from} runs on a host; its answer is read on this machine only"
        )));
    }
    if source.record.status.is_terminal() {
        request.context = Some(with_answer_of(request.context.as_deref(), &from)?);
        request.scheduling.context_from = None;
    } else if !request.scheduling.after.contains(&from) {
        request.scheduling.after.push(from);
    }
    Ok(request)
}

/// An approval mode the agent cannot express (it has none, or not that one) is never dropped
/// into its full bypass: the task runs with its bypass off instead, and the warning says so.
/// (`yolo` asks for the bypass itself.)
fn fail_closed(spec: &mut TaskSpec, adapter: &adapter::Adapter) -> Option<String> {
    let asked = spec.approval_mode.clone()?;
    if asked == "yolo" || adapter.approval_modes.contains(&asked.as_str()) || adapter.runs_argv {
        return None;
    }
    spec.approval_mode = None;
    spec.dangerously_skip_permissions = Some(false);
    Some(format!(
        "{} cannot take approval_mode '{asked}': it runs without its permission bypass instead",
        adapter.kind()
    ))
}

/// `--base-from`: the task runs in a worktree of its own that starts from another worktree
/// task's branch tip, that task's uncommitted work committed first. From an ended task it is
/// made now; from one still running (or queued), once that one completed (it becomes a
/// dependency) and this one starts.
fn take_base_from(mut request: SubmitRequest, cwd: &Path) -> Result<SubmitRequest> {
    let Some(from) = request.scheduling.base_from.clone() else {
        return Ok(request);
    };
    if request.base.is_some() {
        return Err(Error::invalid_input(
            "--base-from and --base both name where the worktree starts",
        )
        .with_hint("give one of them"));
    }
    let source = super::task::open(&from, cwd)?;
    let Some(worktree) = source.worktree().cloned() else {
        return Err(Error::invalid_input(format!(
            "--base-from: task {from} has no worktree of its own to start from"
        ))
        .with_hint("name a task submitted with --worktree"));
    };
    request.worktree = Some(true);
    if source.record.status.is_terminal() {
        tip_of(&source, &worktree)?;
        request.base = Some(worktree.base_name());
        request.scheduling.base_from = None;
    } else if !request.scheduling.after.contains(&from) {
        request.scheduling.after.push(from);
    }
    Ok(request)
}

/// The agent session of an earlier task, for `--resume-from`.
fn resumable_session(earlier: &TaskRecord) -> Result<String> {
    super::result::agent_session(earlier).ok_or_else(|| {
        Error::invalid_input(format!(
            "task {} has no known agent session to resume",
            earlier.id
        ))
        .with_hint("only tasks whose agent reported a session (Gemini, agy; an interactive agy once it exited) can be resumed")
    })
}

/// What a caller-chosen id turns out to be.
enum Chosen {
    /// No task has it yet.
    Fresh(String),
    /// The task a submit of this very request started: a retry whose first answer was lost.
    Again(Box<TaskView>),
}

/// A caller's id for a new task: of the documented shape, and of no other task cuekit knows
/// here. The same request again (`digest`) is answered with the task it started.
fn chosen_id(id: String, cwd: &Path, digest: &str) -> Result<Chosen> {
    let fresh = "leave the id out, and cuekit picks a fresh one";
    if !store::is_task_id(&id) {
        return Err(Error::invalid_input(format!(
            "'{id}' is not a task id (t_ and 12 lowercase hex digits)"
        ))
        .with_hint(fresh));
    }
    if let Some(placement) = store::placement(&id)? {
        let same = placement
            .facts
            .as_ref()
            .and_then(|facts| facts.request_digest.as_deref())
            == Some(digest);
        if same {
            let views = super::status(std::slice::from_ref(&id), cwd)?;
            if let Some(view) = views.into_iter().next() {
                return Ok(Chosen::Again(Box::new(view)));
            }
        }
        return Err(Error::invalid_input(format!(
            "task {id} already exists, submitted with another request"
        ))
        .with_hint(fresh));
    }
    if store::task_dir(cwd, &id).exists() {
        return Err(Error::invalid_input(format!("task {id} already exists")).with_hint(fresh));
    }
    Ok(Chosen::Fresh(id))
}

/// A digest of everything a submit was asked, with the directory it resolved to: equal for a
/// retry of the same request, different for any other.
fn request_digest(request: &SubmitRequest, cwd: &Path) -> String {
    use sha2::{Digest, Sha256};
    let asked = serde_json::json!({
        "agent": request.agent,
        "objective": request.objective,
        "context": request.context,
        "constraints": request.constraints,
        "model": request.model,
        "mode": request.mode.map(Mode::as_str),
        "approval_mode": request.approval_mode,
        "skip_permissions": request.dangerously_skip_permissions,
        "cwd": cwd,
        "timeout": request.timeout.map(|t| t.as_millis() as u64),
        "stream_events": request.stream_events,
        "resume_from": request.resume_from,
        "provider_profile": request.provider_profile,
        "argv": request.argv,
        "role": request.role,
        "team": request.team,
        "worktree": request.worktree,
        "base": request.base,
        "branch": request.branch,
        "delegated": request.asked_by == Asker::Delegate,
    });
    Sha256::digest(asked.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The agent to wake: asked for with `--wake-parent` (which fails when the submitter is no
/// agent in a tmux pane), or by `notify: [parent]` in the user's own file (a project's file
/// never makes cuekit type into anyone's pane), which wakes whoever it can.
fn parent_to_wake(
    request: &SubmitRequest,
    config: &Config,
    from: Option<&crate::effects::notify::SubmittedFrom>,
) -> Result<Option<crate::effects::notify::ParentAgent>> {
    let notify = config.notify();
    let configured = !matches!(notify.source, crate::effects::config::Source::Project(_))
        && notify
            .value
            .contains(&crate::effects::config::NotifyChannel::Parent);
    if !request.wake_parent && !configured {
        return Ok(None);
    }
    match super::wake::identify(from) {
        Ok(parent) => Ok(Some(parent)),
        Err(err) if request.wake_parent => Err(err),
        Err(_) => Ok(None),
    }
}

/// Starts a task here, or with `request.host` on that host (see `remote::submit_on_host`). A
/// relative `cwd` is the caller's: here under `caller_cwd`, on a host as the host takes it.
pub fn submit(request: SubmitRequest, caller_cwd: &Path) -> Result<SubmitOutcome> {
    if let Some(host) = &request.host {
        // Ids name tasks of this machine; a host's tasks wait on its own.
        if !request.scheduling.after.is_empty() || request.scheduling.context_from.is_some() {
            return Err(Error::invalid_input(format!(
                "--after and --context-from name tasks of this machine, not of host {host}"
            ))
            .with_hint("submit the pipeline on one machine (all on the host, or all here)"));
        }
        if request.wake_parent {
            return Err(Error::invalid_input(format!(
                "--wake-parent types into a pane of this machine, which host {host} cannot reach"
            ))
            .with_hint("wait for the host's task with `cuekit wait` instead"));
        }
        // `*` or `a,b`: the first of them with a free slot (see `remote::place`).
        let host = if host == "*" || host.contains(',') {
            super::remote::place(host, caller_cwd)?
        } else {
            host.clone()
        };
        return super::remote::submit_on_host(&host, &request, caller_cwd);
    }
    let resumed = request
        .resume_from
        .as_deref()
        .map(|id| super::task::open(id, caller_cwd))
        .transpose()?;
    let requested_cwd = request
        .cwd
        .clone()
        .or_else(|| resumed.as_ref().map(|r| r.record.cwd.clone()))
        .unwrap_or_else(|| caller_cwd.to_path_buf());
    let cwd = std::fs::canonicalize(caller_cwd.join(&requested_cwd))
        .ok()
        .filter(|dir| dir.is_dir())
        .ok_or_else(|| {
            Error::invalid_input(format!(
                "working directory {} does not exist",
                requested_cwd.display()
            ))
            .with_hint("pass an existing directory with --cwd")
        })?;
    // Records are JSON text: a path that is not UTF-8 could not be written down.
    if cwd.to_str().is_none() {
        return Err(Error::invalid_input(format!(
            "working directory {} is not UTF-8",
            cwd.display()
        ))
        .with_hint("run the task in a directory whose path is UTF-8 (rename it, or pass --cwd)"));
    }
    let config = Config::load(&cwd)?;
    let request = take_context_from(request, &cwd)?;
    let request = take_base_from(request, &cwd)?;
    if let Some(team) = &request.team {
        crate::effects::team::check_name(team)?;
    }
    let role = request
        .role
        .as_deref()
        .map(|name| Roles::for_cwd(&cwd).resolve(name))
        .transpose()?;
    let adapter = adapter::lookup(&agent_kind(
        &request,
        &config,
        resumed.as_ref().map(|r| &r.record),
        role.as_ref(),
    )?)?;
    config.refuse_untrusted(adapter.kind())?;
    let (mut spec, mut policy_warnings) = resolve_spec(&request, &config, adapter, role.as_ref());
    policy_warnings.extend(fail_closed(&mut spec, adapter));
    if !adapter.runs_argv {
        spec.argv.clear();
    }
    if let Some(earlier) = resumed.as_ref().map(|r| &r.record) {
        if earlier.spec.agent_kind != spec.agent_kind {
            return Err(Error::invalid_input(format!(
                "task {} ran {}, not {}: a session continues only with the same agent",
                earlier.id, earlier.spec.agent_kind, spec.agent_kind
            )));
        }
        spec.resume_session = Some(resumable_session(earlier)?);
    }
    let mut sched_plan = super::schedule::plan_for(&request.scheduling, &config)?;
    if let Some(plan) = sched_plan.as_mut() {
        plan.branch = request.branch.clone();
    }
    // A task that waits for others, or that the queue may hold, runs to its end by itself
    // unless a mode was asked for (an ACP one ends with its first turn unless told
    // otherwise): a pipeline must not stop at an idle prompt.
    let in_pipeline = sched_plan.as_ref().is_some_and(|plan| {
        !plan.after.is_empty()
            || ((!plan.limits.is_empty() || plan.team_max.is_some()) && !request.scheduling.now)
    });
    // A budget is judged from reported usage, which a batch run has.
    if spec.mode.is_none()
        && (in_pipeline || request.budget.is_some())
        && adapter.supports(Mode::Batch)
    {
        spec.mode = Some(Mode::Batch);
    }
    let mode = spec.mode.unwrap_or(adapter.capabilities.default_mode);
    if !adapter.supports(mode) {
        return Err(Error::invalid_input(format!(
            "agent '{}' has no {} mode",
            adapter.kind(),
            mode.as_str()
        )));
    }
    if mode == Mode::Acp {
        let overwrites = adapter
            .acp
            .is_some_and(|acp| acp.load_overwrites_same_minute);
        spec.acp = Some(crate::domain::acp::policy::AcpSpec {
            once: request.once.unwrap_or(in_pipeline),
            permissions: config.acp_permissions(),
            load_not_before: resumed
                .as_ref()
                .filter(|_| overwrites)
                .map(|earlier| super::acp::load_not_before(&earlier.record)),
        });
    } else if request.once.is_some() {
        return Err(
            Error::invalid_input("--once applies only to a task in acp mode")
                .with_hint("add --mode acp"),
        );
    }
    let bin = config
        .bin(adapter.kind())
        .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
    if request.dry_run {
        let LaunchCommand {
            command, warnings, ..
        } = adapter.launch(&spec, mode, &bin, &client_word()?)?;
        check_argv_limit(&spec, adapter, &command)?;
        return Ok(SubmitOutcome::DryRun {
            agent_kind: adapter.kind().to_string(),
            mode,
            launch_command: command,
            warnings: policy_warnings.into_iter().chain(warnings).collect(),
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
    if use_worktree {
        config.refuse_untrusted_worktree()?;
    }
    let digest = request_digest(&request, &cwd);
    let id = match request.id.clone() {
        Some(id) => match chosen_id(id, &cwd, &digest)? {
            Chosen::Fresh(id) => id,
            // A retry of a submit whose answer was lost: the task it started, not a second one.
            Chosen::Again(view) => return Ok(SubmitOutcome::Submitted(view)),
        },
        None => store::new_task_id(),
    };
    let mut sandbox = super::sandbox::policy(
        request.sandbox,
        matches!(request.asked_by, Asker::Delegate),
        &config,
    )?;
    let approvals = super::sandbox::for_approvals(
        &mut sandbox,
        super::sandbox::Chooser {
            asked: request.sandbox.mode,
            delegated: matches!(request.asked_by, Asker::Delegate),
            user_file: config.user_sandbox_mode(),
        },
        super::sandbox::asks_for_approvals(&spec),
        adapter.kind(),
    );
    // A sandboxed task in a git repository works in a repository of its own: nothing of the
    // user's `.git` is in its reach (docs/guides/sandbox.md).
    let own_repo = sandbox.mode == crate::domain::sandbox::SandboxMode::Bwrap
        && (use_worktree || git::toplevel(&cwd).is_some());
    if own_repo && !use_worktree {
        config.refuse_untrusted_worktree()?;
    }
    let plan = if use_worktree || own_repo {
        Some(git::create::plan(&git::create::Request {
            cwd: &cwd,
            task_id: &id,
            base: request.base.as_deref(),
            branch: request.branch.as_deref(),
            dir_template: &config.worktree_dir().value,
            branch_prefix: &config.branch_prefix().value,
            own_repo,
        })?)
    } else {
        None
    };
    // A worktree that starts from a task not ended yet is made at this task's start (every
    // name was checked above, against the repository as it is now).
    let plan = plan.filter(|_| request.scheduling.base_from.is_none());
    // Named after the task, so cuekit knows the agent's session without asking it.
    if spec.resume_session.is_none() {
        spec.session_id = Some(id.clone());
    }
    let launch = adapter.launch(&spec, mode, &bin, &client_word()?)?;
    let event_stream = launch.event_stream;
    check_argv_limit(&spec, adapter, &launch.command)?;
    if request.budget.is_some() && !(event_stream || mode == Mode::Acp) {
        return Err(Error::invalid_input(format!(
            "a {} task of {} reports no usage, so --max-tokens and --max-turns cannot be judged",
            mode.as_str(),
            adapter.kind()
        ))
        .with_hint(
            "run it in batch mode with its event stream (`--mode batch`) or in acp mode; \
             --timeout bounds any task",
        ));
    }
    // An ACP bridge (claude-agent-acp, codex-acp, pi-acp) is the program the pane starts.
    if let Some(bridge) = adapter
        .acp
        .filter(|_| mode == Mode::Acp)
        .and_then(|acp| acp.program)
        && crate::effects::which::find_on_path(bridge).is_none()
    {
        return Err(Error::new(
            ErrorCode::AgentNotFound,
            format!(
                "the {} ACP bridge '{bridge}' is not on PATH",
                adapter.kind()
            ),
        )
        .with_hint(
            "docs/guides/acp.md names each agent's ACP command and the npm package of each bridge",
        ));
    }
    // The command agent's program is the task's own first word, found by the pane's shell.
    let bridged = mode == Mode::Acp && adapter.acp.is_some_and(|acp| acp.program.is_some());
    if !adapter.runs_argv && !bridged && crate::effects::which::find_on_path(&bin).is_none() {
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
    let agent_session_id = launch
        .command
        .contains("--session-id")
        .then(|| spec.session_id.clone())
        .flatten()
        .or_else(|| spec.resume_session.clone());

    let delegated = matches!(request.asked_by, Asker::Delegate);
    // A delegate's looser sandbox is not taken (tighten only): say so, as for permissions.
    if delegated {
        if let Some(mode) = request.sandbox.mode.filter(|mode| *mode < sandbox.mode) {
            policy_warnings.push(format!(
                "sandbox '{}' from the request is looser than your policy ('{}'); ignored",
                mode.as_str(),
                sandbox.mode.as_str()
            ));
        }
        if request
            .sandbox
            .network
            .is_some_and(|network| network < sandbox.network)
        {
            policy_warnings.push(
                "network on from the request is looser than your policy (off); ignored".into(),
            );
        }
    }
    let agent_dir = plan.as_ref().map_or_else(|| cwd.clone(), |p| p.agent_dir());
    let worktree_placement = plan.as_ref().map(git::create::Plan::placement);
    let work_dir = worktree_placement.as_ref().map_or(&cwd, |w| &w.path);
    super::sandbox::check_work_dir(&sandbox, work_dir)?;
    let task_dir = tasks_dir_in(&cwd)?.join(&id);
    let socket = match own_task_server() {
        Some(socket) => socket,
        None => Socket(config.socket().value).resolve()?,
    };
    let subject = super::sandbox::Subject {
        id: &id,
        task_dir: &task_dir,
        work_dir,
        start_dir: &agent_dir,
        worktree: worktree_placement.as_ref(),
        adapter,
        mode,
        bin: &bin,
        tmux_socket: Path::new(&socket.0),
    };
    // `worktree.setup` runs code: an untrusted project file's was refused above and is not
    // in its layer. A sandboxed task runs it inside its sandbox.
    let setup = use_worktree
        .then(|| config.worktree_setup())
        .flatten()
        .map(|s| s.value);
    let (
        LaunchCommand {
            command,
            warnings: launch_warnings,
            ..
        },
        setup,
    ) = super::sandbox::wrap(launch, &sandbox, &subject, setup.as_deref()).map_err(|err| {
        match approvals {
            super::sandbox::Approvals::SandboxedForThem => {
                let hint = err.hint.clone().unwrap_or_default();
                err.with_hint(format!(
                    "this task asks for approvals, which only a sandbox makes binding: {hint}; \
                 or pass --sandbox=none to run it as you (its approvals then advisory)"
                ))
            }
            _ => err,
        }
    })?;
    let warnings: Vec<String> = policy_warnings
        .into_iter()
        .chain(approvals.warning().map(String::from))
        .chain(launch_warnings)
        .collect();

    socket.ensure_dir()?;
    let session = args::session_name(&id);
    let created_at = super::now_rfc3339();
    let timeout_secs = request
        .timeout
        .or_else(|| config.timeout().map(|s| s.value))
        .map(|t| t.as_secs().max(1));
    let submitted_from = crate::effects::notify::SubmittedFrom::from_env().or_else(own_task_pane);
    let wake_parent = parent_to_wake(&request, &config, submitted_from.as_ref())?;
    let acp_socket = if mode == Mode::Acp {
        Some(
            crate::effects::acp::control::socket_path(&id).ok_or_else(|| {
                Error::new(ErrorCode::Io, "no folder for the ACP task's control socket")
                    .with_hint("set XDG_RUNTIME_DIR (or HOME)")
            })?,
        )
    } else {
        None
    };
    let sandboxed = (sandbox.mode != crate::domain::sandbox::SandboxMode::None).then_some(sandbox);
    let placement = Placement {
        id: id.clone(),
        task_dir: task_dir.clone(),
        socket: socket.clone(),
        session: session.clone(),
        created_at: created_at.clone(),
        timeout_secs,
        host: None,
        facts: Some(Box::new(TaskFacts {
            cwd: cwd.clone(),
            agent: spec.agent_kind.clone(),
            mode,
            team: request.team.clone(),
            agent_session_id: agent_session_id.clone(),
            submitted_from: submitted_from.clone(),
            worktree: worktree_placement,
            request_digest: Some(digest),
            acp_socket,
            budget: request.budget.clone(),
            wake_parent,
            sandbox: sandboxed.clone(),
            event_stream: Some(event_stream),
        })),
        legacy: false,
    };
    // Decided under the scheduler's lock, held until the task is on record: racing submits
    // never both take the last slot.
    let admission = super::schedule::admit(
        sched_plan.as_ref(),
        &spec.agent_kind,
        request.team.as_deref(),
        request.scheduling.now,
    )?;
    let scheduled = match (&admission, &sched_plan) {
        (super::schedule::Admission::Queue(..), _) => Scheduled::Queued,
        (_, Some(plan)) if plan.retry.is_some() => Scheduled::Retried,
        _ => Scheduled::No,
    };
    // From here on, whatever stops this submit is undone by the next cuekit call (see
    // `reap`): the pending entry names what it is creating, its worktree included.
    store::write_pending(&placement)?;
    // A caller-chosen id, checked before: a submit of the same id may have finished since.
    if request.id.is_some() && store::placement(&id)?.is_some() {
        store::remove_pending(&id);
        return Err(Error::invalid_input(format!("task {id} already exists")));
    }
    let mut created = match &plan {
        Some(plan) => {
            let _marked = git::Submitting::mark(&id);
            if let Err(err) = git::create::create(plan, &includes(&config, own_repo)) {
                store::remove_pending(&id);
                return Err(err);
            }
            Some(CreatedWorktree(Some(plan.clone())))
        }
        None => None,
    };
    let undo = |err: Error| {
        let _ = Tmux::new(socket.clone()).run(&args::kill_session(&session));
        let _ = std::fs::remove_dir_all(&task_dir);
        schedule::forget(&id);
        store::remove_pending(&id);
        err
    };
    create_task_dir(&task_dir).map_err(undo)?;
    let files = write_task_files(
        &id,
        &task_dir,
        &spec,
        adapter,
        mode,
        &command,
        event_stream,
        &config,
        setup.as_deref(),
        scheduled,
    )
    .map_err(undo)?;
    let height = config.height().value;
    let mut record = TaskRecord {
        id: id.clone(),
        spec,
        mode,
        cwd: cwd.clone(),
        task_dir: task_dir.clone(),
        launch_command: command,
        status: if scheduled == Scheduled::Queued {
            Status::Queued
        } else {
            Status::Running
        },
        reason: None,
        hint: None,
        exit_code: None,
        warnings,
        tmux: Some(TmuxPlacement {
            socket: socket.clone(),
            session: session.clone(),
            height,
        }),
        created_at,
        ended_at: None,
        started_at: None,
        timeout_secs,
        event_stream,
        agent_session_id,
        resumed_from: resumed.map(|r| r.record.id),
        submitted_from,
        sandbox: sandboxed,
        team: request.team.clone(),
        last_report: None,
        worktree: plan.as_ref().map(|plan| (&plan.placement()).into()),
    };
    // Held until the task is on record (the end of this function).
    let _decision = match admission {
        super::schedule::Admission::Queue(queued) => {
            let (plan, waits) = *queued;
            return queue(record, &placement, &plan, waits, created).map_err(undo);
        }
        super::schedule::Admission::Start(lock) => lock,
    };
    // Counted against the caps from before its pane exists.
    super::schedule::take_slot(&id, &record.spec.agent_kind, request.team.as_deref())
        .map_err(undo)?;
    if let Some(plan) = sched_plan
        .as_ref()
        .filter(|_| scheduled == Scheduled::Retried)
    {
        let mut plan = plan.clone();
        plan.attempts.push(store::schedule::Attempt {
            started_at: record.created_at.clone(),
            ended_at: None,
            reason: None,
            exit_code: None,
        });
        schedule::save_plan(&id, &plan).map_err(undo)?;
    }
    // The one tmux call runs while the record and the registry entry are written and synced;
    // both are put in place only once the session exists, so no reader ever sees a running
    // task without its pane. The pane itself waits for the registry entry before it starts
    // the agent.
    let launch = Tmux::new(socket.clone())
        .spawn_session(&args::new_task_session(&args::NewTaskSession {
            session: &session,
            owner: &store::data_dir().unwrap_or_default(),
            cwd: &agent_dir,
            width: config.width().value,
            height,
            history_limit: config.history_limit().value,
            script: &files.script,
            transcript: &files.transcript,
        }))
        .map_err(undo)?;
    // The two syncs run side by side (the filesystem can commit them together).
    let staged = std::thread::scope(|scope| {
        let record_file = scope.spawn(|| store::stage_record(&record));
        let placement_file = store::stage_placement(&placement);
        let record_file = record_file.join().expect("staging a file does not panic");
        Ok::<_, Error>((record_file?, placement_file?))
    });
    let answer = launch.finish();
    let staged = match staged {
        Ok(staged) => staged,
        Err(err) => return Err(undo(err)),
    };
    let pane = match answer {
        Ok(stdout) => parse_new_pane(&stdout),
        Err(err) => {
            drop(staged);
            let _ = std::fs::remove_file(&files.env);
            // Keep the record of what was attempted; the task never started.
            record.status = Status::Failed;
            record.reason = Some("launch_failed".into());
            record.hint = Some(err.message.clone());
            record.ended_at = Some(super::now_rfc3339());
            // The worktree goes with the failed launch (the guard removes it): the record must
            // not point at it.
            record.worktree = None;
            store::record_lifecycle(&id, &store::Lifecycle::of(&record))
                .and_then(|_| store::save(&record))
                .and_then(|_| store::stage_placement(&placement)?.commit())
                .map_err(undo)?;
            schedule::free_slot(&id);
            store::remove_pending(&id);
            return Err(err);
        }
    };
    let (record_file, placement_file) = staged;
    if let Some(pane) = &pane {
        // Before the registry entry, which the pane waits for to start the agent: the agent
        // never ends before its pane is on record (only that pane's exit status is the
        // task's). Best effort: without it, the pane is known by its session alone, and its
        // exit status is not taken for `completed`.
        let _ = store::record_pane_start(&id, pane);
    }
    // Where the task stands is the registry's, on record before anything names the task.
    let committed = store::record_lifecycle(&id, &store::Lifecycle::of(&record))
        .and_then(|_| record_file.commit())
        .and_then(|_| placement_file.commit());
    if let Err(err) = committed {
        store::unregister(&id);
        return Err(undo(err));
    }
    store::remove_pending(&id);
    if let Some(created) = created.as_mut() {
        created.keep();
    }
    // Endings, timeouts and transitions are the monitor's from here, whoever watches or not.
    super::monitor_lock::ensure_running(&socket);
    Ok(SubmitOutcome::Submitted(Box::new(TaskView::from(&record))))
}

/// For a submit from inside a task without `CUEKIT_TMUX_SOCKET` (a task's environment carries
/// no tmux socket: `launch.sh` drops it with `TMUX`), the task's own server, from the
/// registry: a nested parent's children run beside it.
fn own_task_server() -> Option<Socket> {
    if std::env::var_os(crate::effects::tmux::SOCKET_ENV).is_some_and(|value| !value.is_empty()) {
        return None;
    }
    let id = own_task()?;
    let placement = store::placement(&id).ok()??;
    (placement.host.is_none() && placement.socket.0.starts_with('/')).then_some(placement.socket)
}

/// The task this submit runs inside, by the kernel's word; looked for only where a task's pane
/// left its id in the environment (a submit of the user's costs no look at the registry).
fn own_task() -> Option<String> {
    std::env::var_os(crate::effects::process::TASK_ID_VARIABLE)?;
    super::task::task_of_process(std::process::id())
}

/// The pane of the task this submit runs inside, from the registry: a task's environment has
/// no `TMUX` or `TMUX_PANE` (a child must not reach its own pane through tmux), so a nested
/// parent is found by the kernel's word (`task_of_process`) instead.
fn own_task_pane() -> Option<crate::effects::notify::SubmittedFrom> {
    let id = own_task()?;
    let placement = store::placement(&id).ok()??;
    if placement.host.is_some() || !placement.socket.0.starts_with('/') {
        return None;
    }
    Some(crate::effects::notify::SubmittedFrom {
        socket: placement.socket.0.clone(),
        pane: store::pane_start(&id)?.pane_id,
    })
}

/// Puts a task into the queue: its record (`queued`), its plan and its registry entry, all
/// synced; the scheduler starts it.
fn queue(
    mut record: TaskRecord,
    placement: &Placement,
    plan: &store::schedule::Plan,
    waits: super::view::QueueView,
    mut created: Option<CreatedWorktree>,
) -> Result<SubmitOutcome> {
    let id = record.id.clone();
    record.hint = Some(queued_hint(&waits));
    schedule::save_plan(&id, plan)?;
    // Marked before it is registered: a queue mark without a registry entry is ignored (and
    // swept), a registered task without its mark would wait for ever.
    schedule::enqueue(&id)?;
    store::record_lifecycle(&id, &store::Lifecycle::of(&record))?;
    store::stage_record(&record)?.commit()?;
    store::stage_placement(placement)?.commit()?;
    store::remove_pending(&id);
    if let Some(created) = created.as_mut() {
        created.keep();
    }
    super::monitor_lock::ensure_scheduler();
    let mut view = TaskView::from(&record);
    view.queue = Some(Box::new(waits));
    Ok(SubmitOutcome::Submitted(Box::new(view)))
}

/// Why a new task waits, in its record.
fn queued_hint(waits: &super::view::QueueView) -> String {
    if !waits.waiting_for.is_empty() {
        return format!(
            "queued: starts once {} completed",
            waits.waiting_for.join(", ")
        );
    }
    match &waits.limit {
        Some(limit) => format!("queued: at the limit ({limit}); starts when a slot frees"),
        None => "queued: starts when a slot frees".to_string(),
    }
}

/// The cuekit binary as a shell word: an ACP task's pane runs it as the protocol's client.
fn client_word() -> Result<String> {
    let exe = std::env::current_exe().map_err(|err| {
        Error::new(
            ErrorCode::Io,
            format!("cannot find the cuekit binary: {err}"),
        )
    })?;
    adapter::shell_word_for_bin(&exe.to_string_lossy())
}

/// Linux refuses to start a program with an argument over 128 KiB (`MAX_ARG_STRLEN`, the NUL
/// included): refused before anything starts, rather than ending as "Argument list too long".
const MAX_ARGV_WORD: usize = 128 * 1024 - 1;

/// A prompt that goes on the agent's command line must fit in one argv word (with a little room
/// for an attached `--prompt=`); a launch that reads the prompt file has no such limit.
fn check_argv_limit(spec: &TaskSpec, adapter: &adapter::Adapter, command: &str) -> Result<()> {
    let reads_prompt_file =
        command.contains(&format!("\"${}\"", crate::domain::launch::PROMPT_VARIABLE));
    let longest = if adapter.runs_argv {
        spec.argv.iter().map(String::len).max().unwrap_or(0)
    } else if reads_prompt_file {
        0
    } else {
        crate::domain::spec::render_prompt(spec).len() + 32
    };
    if longest <= MAX_ARGV_WORD {
        return Ok(());
    }
    Err(Error::invalid_input(format!(
        "the {} is {longest} bytes: {} takes it as one command-line word, and Linux limits a \
         word to 128 KiB",
        if adapter.runs_argv {
            "longest argument"
        } else {
            "prompt"
        },
        adapter.kind()
    ))
    .with_hint(
        "shorten it, or put the material in a file and name the file in the prompt; \
         Gemini in batch mode (`--mode batch`) reads prompts of any size from stdin",
    ))
}

/// `<cwd>/.cuekit/tasks`, made if missing, proven to be real folders of the project: a
/// repository that ships `.cuekit` as a link would otherwise have the submitter's prompt and
/// environment written wherever it points. `.cuekit/.gitignore` is written on the first submit.
fn tasks_dir_in(cwd: &Path) -> Result<PathBuf> {
    let root = crate::effects::project::Root::new(cwd)?;
    let relative = Path::new(store::TASKS_SUBDIR);
    let tasks = root.prove_no_links(relative)?;
    store::create_private_dir(&tasks)?;
    let tasks = root.prove_real_dir(relative)?;
    let ignore = root.path().join(".cuekit").join(".gitignore");
    if std::fs::symlink_metadata(&ignore).is_err() {
        // Another submit may race this one: whichever writes first wins, both write the same.
        let _ = write_new(
            &ignore,
            b"# Written by cuekit: its task files are never part of the project.\n*\n",
        );
    }
    Ok(tasks)
}

/// The task directory, owner-only (prompts and transcripts may hold private code), with a
/// `.gitignore` of its own: a child that runs `git add -A` must not commit cuekit's files,
/// whatever `.cuekit/.gitignore` the repository ships (the deepest ignore file decides).
fn create_task_dir(task_dir: &Path) -> Result<()> {
    store::create_private_leaf(task_dir)?;
    write_new(
        &task_dir.join(".gitignore"),
        b"# Written by cuekit: this task's files are never part of the project.\n*\n",
    )
    .map_err(|err| Error::io("write", &task_dir.join(".gitignore"), err))
}

fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, bytes))
}

struct TaskFiles {
    script: PathBuf,
    env: PathBuf,
    transcript: PathBuf,
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
) -> Result<TaskFiles> {
    let prompt = if adapter.runs_argv {
        spec.argv.join(" ")
    } else {
        crate::domain::spec::render_prompt(spec)
    };
    write_private(
        &task_dir.join(crate::domain::launch::PROMPT_FILE),
        prompt.as_bytes(),
    )?;
    let env_file = env_file_text(id, adapter.kind(), config);
    let env_path = task_dir.join(ENV_FILE);
    // A task started now waits for its registry entry; a queued one for the scheduler's gate.
    let registered = store::registry_dir()
        .expect("the pending entry was written")
        .join(id);
    let pending = store::data_dir()
        .expect("the pending entry was written")
        .join("pending")
        .join(id);
    let scheduled_gate = super::schedule::gate_paths(id)?;
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
            write_private(&env_path, env_file.as_bytes())?;
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

/// Whether the scheduler starts the task (now or later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheduled {
    /// Started by this submit, never again.
    No,
    /// Started by this submit; a retry may start it again.
    Retried,
    /// Queued: the scheduler starts it.
    Queued,
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
