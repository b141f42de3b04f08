//! Stage 2, check: everything that can refuse the task is decided before anything is
//! written — its id, trust for a worktree, the sandbox and where the task works, the launch
//! command and its argv limit, the agent's program, the parent to wake — and where it will be
//! placed is worked out.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::request::{Asker, SubmitRequest};
use super::resolve::{Resolved, check_argv_limit, client_word};
use crate::domain::adapter::LaunchCommand;
use crate::domain::adapter::session_name::session_name;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::sandbox::SandboxMode;
use crate::domain::spec::Mode;
use crate::effects::config::Config;
use crate::effects::git;
use crate::effects::store::{self, Placement, TaskFacts};
use crate::effects::tmux::{Socket, args};
use crate::ops::sandbox::{self, Approvals};
use crate::ops::task::view::TaskView;

/// A task that passed every check, with where it goes.
pub(super) struct Checked {
    pub resolved: Resolved,
    /// Its worktree or repository of its own, to be made (none: it works in `cwd`).
    pub worktree: Option<git::create::Plan>,
    /// Sandboxed in a git repository: the worktree is a repository of its own.
    pub own_repo: bool,
    /// The launch command, sandbox included.
    pub command: String,
    pub event_stream: bool,
    /// `worktree.setup`, as the pane runs it (inside the sandbox for a sandboxed task).
    pub setup: Option<String>,
    /// Where the agent starts: `cwd`, or the same place in the worktree.
    pub agent_dir: PathBuf,
    /// The registry entry the task will have.
    pub placement: Placement,
    /// Every warning for the record: the policy's, the sandbox's, the launch's.
    pub warnings: Vec<String>,
}

impl Checked {
    pub fn id(&self) -> &str {
        &self.placement.id
    }

    pub fn facts(&self) -> &TaskFacts {
        self.placement
            .facts
            .as_deref()
            .expect("a new task has its facts")
    }
}

/// What a caller-chosen id turns out to be, or a new task checked.
pub(super) enum Identified {
    New(Box<Checked>),
    /// The task a submit of this very request started: a retry whose first answer was lost.
    Again(Box<TaskView>),
}

pub(super) fn check(mut resolved: Resolved) -> Result<Identified> {
    let request = &resolved.request;
    let config = &resolved.config;
    let use_worktree =
        use_worktree(request, config)? || check_makes_worktree(request, &resolved.cwd, config)?;
    let digest = request_digest(request, &resolved.cwd);
    let id = match request.id.clone() {
        Some(id) => match chosen_id(id, &resolved.cwd, &digest)? {
            Chosen::Fresh(id) => id,
            Chosen::Again(view) => return Ok(Identified::Again(view)),
        },
        None => store::new_task_id(),
    };
    let (policy, approvals) = sandbox_of(&resolved)?;
    // A sandboxed task in a git repository works in a repository of its own: nothing of the
    // user's `.git` is in its reach (docs/guides/sandbox.md).
    let own_repo = policy.mode == SandboxMode::Bwrap
        && (use_worktree || git::toplevel(&resolved.cwd).is_some());
    if own_repo && !use_worktree {
        config.refuse_untrusted_worktree()?;
    }
    let worktree = if use_worktree || own_repo {
        Some(git::create::plan(&git::create::Request {
            cwd: &resolved.cwd,
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
    let worktree = worktree.filter(|_| request.scheduling.base_from.is_none());
    // Named after the task, so cuekit knows the agent's session without asking it.
    if resolved.spec.resume_session.is_none() {
        resolved.spec.session_id = Some(id.clone());
    }
    let launch = launch_of(&resolved)?;
    let agent_session_id = launch
        .command
        .contains("--session-id")
        .then(|| resolved.spec.session_id.clone())
        .flatten()
        .map(|chosen| session_name(&resolved.spec.agent_kind, &chosen))
        .or_else(|| resolved.spec.resume_session.clone());
    let event_stream = launch.event_stream;
    let mut warnings = std::mem::take(&mut resolved.warnings);
    warnings.extend(looser_than_policy(&resolved.request, &policy));
    let agent_dir = worktree
        .as_ref()
        .map_or_else(|| resolved.cwd.clone(), |plan| plan.agent_dir());
    let worktree_placement = worktree.as_ref().map(git::create::Plan::placement);
    let work_dir = worktree_placement
        .as_ref()
        .map_or(&resolved.cwd, |w| &w.path);
    sandbox::check_work_dir(&policy, work_dir)?;
    let task_dir = tasks_dir_in(&resolved.cwd)?.join(&id);
    let socket = match own_task_server() {
        Some(socket) => socket,
        None => Socket(resolved.config.socket().value).resolve()?,
    };
    let subject = sandbox::Subject {
        id: &id,
        task_dir: &task_dir,
        work_dir,
        start_dir: &agent_dir,
        worktree: worktree_placement.as_ref(),
        adapter: resolved.adapter,
        mode: resolved.mode,
        bin: &resolved.bin,
        tmux_socket: Path::new(&socket.0),
        server_first: true,
    };
    // `worktree.setup` runs code: an untrusted project file's was refused above and is not
    // in its layer. A sandboxed task runs it inside its sandbox.
    let setup = use_worktree
        .then(|| resolved.config.worktree_setup())
        .flatten()
        .map(|s| s.value);
    let (
        LaunchCommand {
            command,
            warnings: launch_warnings,
            ..
        },
        setup,
    ) = sandbox::wrap(launch, &policy, &subject, setup.as_deref())
        .map_err(|err| approvals_hint(err, approvals))?;
    let (command, check) = with_check(
        &resolved,
        command,
        CheckSubject {
            id: &id,
            task_dir: &task_dir,
            sandbox: (&policy, &subject),
            own_checkout: worktree_placement.is_some(),
            session: agent_session_id.as_deref(),
        },
        &mut warnings,
    )?;
    warnings.extend(approvals.warning().map(String::from));
    warnings.extend(launch_warnings);
    socket.ensure_dir()?;
    let submitted_from = crate::effects::notify::SubmittedFrom::from_env().or_else(own_task_pane);
    let placement = Placement {
        session: args::session_name(&id),
        created_at: crate::effects::clock::now_rfc3339(),
        timeout_secs: resolved
            .request
            .timeout
            .or_else(|| resolved.config.timeout().map(|s| s.value))
            .map(|t| t.as_secs().max(1)),
        host: None,
        facts: Some(Box::new(TaskFacts {
            cwd: resolved.cwd.clone(),
            agent: resolved.spec.agent_kind.clone(),
            mode: resolved.mode,
            team: resolved.request.team.clone(),
            race: resolved.request.race.clone(),
            agent_session_id,
            wake_parent: parent_to_wake(
                &resolved.request,
                &resolved.config,
                submitted_from.as_ref(),
            )?,
            submitted_from,
            worktree: worktree_placement,
            request_digest: Some(digest),
            acp_socket: acp_socket(&id, resolved.mode)?,
            budget: resolved.request.budget.clone(),
            sandbox: (policy.mode != SandboxMode::None).then_some(policy),
            event_stream: Some(event_stream),
            check,
        })),
        legacy: false,
        id,
        task_dir,
        socket,
    };
    Ok(Identified::New(Box::new(Checked {
        resolved,
        worktree,
        own_repo,
        command,
        event_stream,
        setup,
        agent_dir,
        placement,
        warnings,
    })))
}

/// Whether the task gets a worktree of its own; `--base` and `--branch` need one, and a
/// project file's worktree keys that run code need the file trusted.
fn use_worktree(request: &SubmitRequest, config: &Config) -> Result<bool> {
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
    Ok(use_worktree)
}

/// `--check` without `--worktree` in a git repository: a check runs on a checkout of the
/// task's own, so the task gets one rather than a refusal (`--no-worktree` still refuses, and
/// so does a folder outside git, where there is no base to check against).
fn check_makes_worktree(request: &SubmitRequest, cwd: &Path, config: &Config) -> Result<bool> {
    if request.check.is_none() || request.worktree == Some(false) || git::toplevel(cwd).is_none() {
        return Ok(false);
    }
    config.refuse_untrusted_worktree()?;
    Ok(true)
}

/// What a task's check depends on, besides the request and its config.
struct CheckSubject<'a> {
    id: &'a str,
    task_dir: &'a Path,
    /// The task's sandbox, which a fix round's continuation runs in too.
    sandbox: (&'a crate::domain::sandbox::Policy, &'a sandbox::Subject<'a>),
    own_checkout: bool,
    session: Option<&'a str>,
}

/// The task's check (asked for, else configured) and its launch command inside the check's
/// loop; the command as it is without one.
fn with_check(
    resolved: &Resolved,
    command: String,
    task: CheckSubject,
    warnings: &mut Vec<String>,
) -> Result<(String, Option<crate::domain::check::CheckPlan>)> {
    let configured = resolved.config.check();
    // Fix rounds someone asked for (the flag, else the file), not the default.
    let rounds_asked = match resolved.request.check.as_ref() {
        Some(asked) => asked.rounds.is_some(),
        None => configured.as_ref().is_some_and(|c| c.rounds.is_some()),
    };
    let mut check = crate::ops::check::plan_for(
        resolved.request.check.as_ref(),
        configured,
        crate::ops::check::Checked {
            agent: resolved.adapter.kind(),
            mode: resolved.mode,
            own_checkout: task.own_checkout,
            agent_sandbox: task.sandbox.0.mode == SandboxMode::Agent,
        },
        warnings,
    )?;
    if check.is_none() && resolved.request.race.is_some() {
        return Err(Error::invalid_input(
            "a race picks its winner by a check, and none was given or configured",
        )
        .with_hint("add --check CMD (e.g. --check 'make test'), or set check.run in the config"));
    }
    // A batch task's launch runs its check; an interactive task's is the monitor's.
    let command = match check.as_mut().filter(|_| resolved.mode == Mode::Batch) {
        Some(plan) => {
            let around = |plan: &crate::domain::check::CheckPlan| {
                crate::ops::check::around(
                    &command,
                    plan,
                    task.id,
                    task.task_dir,
                    resolved.adapter,
                    &resolved.spec,
                    &resolved.bin,
                    task.session,
                    &client_word()?,
                    &|launch| Ok(sandbox::wrap(launch, task.sandbox.0, task.sandbox.1, None)?.0),
                )
            };
            match around(plan) {
                // The default rounds only: this agent's first verdict is final, and it says
                // what a fix round would need. Rounds asked for are refused as before.
                Err(err) if !rounds_asked && crate::ops::check::is_no_fix_rounds(&err) => {
                    plan.rounds = 0;
                    warnings.push(format!(
                        "its check's first verdict is final (no fix round): {}",
                        err.message
                    ));
                    around(plan)?
                }
                other => other?,
            }
        }
        None => command,
    };
    Ok((command, check))
}

/// The sandbox the policy gives this task, and whether it was chosen for its approvals.
pub(super) fn sandbox_of(
    resolved: &Resolved,
) -> Result<(crate::domain::sandbox::Policy, Approvals)> {
    let request = &resolved.request;
    let delegated = matches!(request.asked_by, Asker::Delegate);
    let mut policy = sandbox::policy(request.sandbox, delegated, &resolved.config)?;
    let approvals = sandbox::for_approvals(
        &mut policy,
        sandbox::Chooser {
            asked: request.sandbox.mode,
            delegated,
            user_file: resolved.config.user_sandbox_mode(),
        },
        sandbox::asks_for_approvals(&resolved.spec),
        resolved.adapter.kind(),
    );
    Ok((policy, approvals))
}

/// The agent's launch command, refused where it could not start or could not be judged: a
/// prompt past the argv limit, a budget without usage reports, a missing bridge or program.
fn launch_of(resolved: &Resolved) -> Result<LaunchCommand> {
    let Resolved {
        adapter,
        spec,
        mode,
        bin,
        request,
        ..
    } = resolved;
    let (adapter, mode) = (*adapter, *mode);
    let launch = adapter.launch(spec, mode, bin, &client_word()?)?;
    check_argv_limit(spec, adapter, &launch.command)?;
    if request.budget.is_some() && !(launch.event_stream || mode == Mode::Acp) {
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
    if !adapter.runs_argv && !bridged && crate::effects::which::find_on_path(bin).is_none() {
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
    Ok(launch)
}

/// A delegate's looser sandbox is not taken (tighten only): say so, as for permissions.
fn looser_than_policy(
    request: &SubmitRequest,
    policy: &crate::domain::sandbox::Policy,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if !matches!(request.asked_by, Asker::Delegate) {
        return warnings;
    }
    if let Some(mode) = request.sandbox.mode.filter(|mode| *mode < policy.mode) {
        warnings.push(format!(
            "sandbox '{}' from the request is looser than your policy ('{}'); ignored",
            mode.as_str(),
            policy.mode.as_str()
        ));
    }
    if request
        .sandbox
        .network
        .is_some_and(|network| network < policy.network)
    {
        warnings
            .push("network on from the request is looser than your policy (off); ignored".into());
    }
    warnings
}

/// A sandbox that cannot be made for a task sandboxed for its approvals says how to run it
/// without one.
fn approvals_hint(err: Error, approvals: Approvals) -> Error {
    match approvals {
        Approvals::SandboxedForThem => {
            let hint = err.hint.clone().unwrap_or_default();
            err.with_hint(format!(
                "this task asks for approvals, which only a sandbox makes binding: {hint}; \
                 or pass --sandbox=none to run it as you (its approvals then advisory)"
            ))
        }
        _ => err,
    }
}

/// An ACP task's control socket: its place, decided now, kept in the registry.
fn acp_socket(id: &str, mode: Mode) -> Result<Option<PathBuf>> {
    if mode != Mode::Acp {
        return Ok(None);
    }
    crate::effects::acp::control::socket_path(id)
        .map(Some)
        .ok_or_else(|| {
            Error::new(ErrorCode::Io, "no folder for the ACP task's control socket")
                .with_hint("set XDG_RUNTIME_DIR (or HOME)")
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
            let views = crate::ops::status(std::slice::from_ref(&id), cwd)?;
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
    match crate::ops::background::wake::identify(from) {
        Ok(parent) => Ok(Some(parent)),
        Err(err) if request.wake_parent => Err(err),
        Err(_) => Ok(None),
    }
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
    crate::ops::task::task_of_process(std::process::id())
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

/// `<cwd>/.cuekit/tasks`, made if missing, proven to be real folders of the project: a
/// repository that ships `.cuekit` as a link would otherwise have the submitter's prompt and
/// environment written wherever it points; and folders no other user can change (see
/// `store::prove_tasks_folder`). `.cuekit/.gitignore` is written on the first submit.
pub(super) fn tasks_dir_in(cwd: &Path) -> Result<PathBuf> {
    let root = crate::effects::project::Root::new(cwd)?;
    let relative = Path::new(store::TASKS_SUBDIR);
    let tasks = root.prove_no_links(relative)?;
    store::create_private_dir(&tasks)?;
    let tasks = root.prove_real_dir(relative)?;
    // Nobody else may be able to swap the folder a task's launch script is run from.
    store::prove_tasks_folder(&tasks)?;
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
pub(super) fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, bytes))
}
