//! Stage 1, resolve: the request read against the configuration, the role, the resumed task
//! and the adapter, into the spec of the task and the mode it runs in. Nothing is written.

use std::path::{Path, PathBuf};

use super::request::{Asker, SubmitOutcome, SubmitRequest};
use crate::domain::adapter::{self, Adapter, LaunchCommand};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::spec::{Mode, TaskSpec};
use crate::effects::config::{Autonomy, Config, Permissions, Setting};
use crate::effects::role::{Role, Roles};
use crate::effects::store::TaskRecord;
use crate::effects::store::schedule::Plan;
use crate::ops::submit::prepare::{base_from, with_answer_of};

/// The request resolved: what runs, where, in which mode.
pub(super) struct Resolved {
    pub request: SubmitRequest,
    /// The directory the agent works in (the caller's, `--cwd`, or the resumed task's).
    pub cwd: PathBuf,
    pub config: Config,
    pub adapter: &'static Adapter,
    pub spec: TaskSpec,
    pub mode: Mode,
    /// The agent's program, as configured or the adapter's default.
    pub bin: String,
    /// The task whose agent session this one continues.
    pub resumed_id: Option<String>,
    /// What the scheduler is asked (dependencies, caps, retries), if anything.
    pub plan: Option<Plan>,
    /// What was asked but does not apply, for the record.
    pub warnings: Vec<String>,
}

pub(super) fn resolve(request: SubmitRequest, caller_cwd: &Path) -> Result<Resolved> {
    let resumed = request
        .resume_from
        .as_deref()
        .map(|id| crate::ops::task::open(id, caller_cwd))
        .transpose()?
        .map(|task| task.record);
    let cwd = working_dir(&request, resumed.as_ref(), caller_cwd)?;
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
        resumed.as_ref(),
        role.as_ref(),
    )?)?;
    config.refuse_untrusted(adapter.kind())?;
    let (mut spec, mut warnings) = resolve_spec(&request, &config, adapter, role.as_ref());
    let request = with_role_check(request, role.as_ref(), &mut warnings);
    warnings.extend(fail_closed(&mut spec, adapter));
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
    let mut plan = crate::ops::schedule::plan_for(&request.scheduling, &config)?;
    if let Some(plan) = plan.as_mut() {
        plan.branch = request.branch.clone();
    }
    let mode = mode_of(
        &request,
        &mut spec,
        adapter,
        &config,
        plan.as_ref(),
        resumed.as_ref(),
    )?;
    let bin = config
        .bin(adapter.kind())
        .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
    Ok(Resolved {
        cwd,
        config,
        adapter,
        spec,
        mode,
        bin,
        resumed_id: resumed.map(|record| record.id),
        plan,
        warnings,
        request,
    })
}

/// `--dry-run`: the launch command the request resolves to, and nothing started.
pub(super) fn dry_run(resolved: Resolved) -> Result<SubmitOutcome> {
    let Resolved {
        adapter,
        spec,
        mode,
        bin,
        warnings,
        ..
    } = resolved;
    let LaunchCommand {
        command,
        warnings: launch_warnings,
        ..
    } = adapter.launch(&spec, mode, &bin, &client_word()?)?;
    check_argv_limit(&spec, adapter, &command)?;
    Ok(SubmitOutcome::DryRun {
        agent_kind: adapter.kind().to_string(),
        mode,
        launch_command: command,
        warnings: warnings.into_iter().chain(launch_warnings).collect(),
    })
}

/// The directory the agent works in, made absolute and proven to exist.
fn working_dir(
    request: &SubmitRequest,
    resumed: Option<&TaskRecord>,
    caller_cwd: &Path,
) -> Result<PathBuf> {
    let requested_cwd = request
        .cwd
        .clone()
        .or_else(|| resumed.map(|r| r.cwd.clone()))
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
    Ok(cwd)
}

/// The mode the task runs in, and an ACP task's session settings in its spec.
fn mode_of(
    request: &SubmitRequest,
    spec: &mut TaskSpec,
    adapter: &Adapter,
    config: &Config,
    plan: Option<&Plan>,
    resumed: Option<&TaskRecord>,
) -> Result<Mode> {
    // A task that waits for others, or that the queue may hold, runs to its end by itself
    // unless a mode was asked for (an ACP one ends with its first turn unless told
    // otherwise): a pipeline must not stop at an idle prompt.
    let in_pipeline = plan.is_some_and(|plan| {
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
                .filter(|_| overwrites)
                .map(crate::ops::acp::load_not_before),
        });
    } else if request.once.is_some() {
        return Err(
            Error::invalid_input("--once applies only to a task in acp mode")
                .with_hint("add --mode acp"),
        );
    }
    Ok(mode)
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
    let source = crate::ops::task::open(&from, cwd)?;
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
pub(crate) fn fail_closed(spec: &mut TaskSpec, adapter: &adapter::Adapter) -> Option<String> {
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
/// task's work: the commit its last passing check ran on for a checked task, else its branch
/// tip, its uncommitted work committed first ([`base_from`]). From an ended task it is
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
    let source = crate::ops::task::open(&from, cwd)?;
    let Some(worktree) = source.worktree().cloned() else {
        return Err(Error::invalid_input(format!(
            "--base-from: task {from} has no worktree of its own to start from"
        ))
        .with_hint("name a task submitted with --worktree"));
    };
    request.worktree = Some(true);
    inherit_sandbox(&mut request, &source, &from)?;
    if source.record.status.is_terminal() {
        request.base = Some(base_from(&source, &worktree)?);
        request.scheduling.base_from = None;
    } else if !request.scheduling.after.contains(&from) {
        request.scheduling.after.push(from);
    }
    Ok(request)
}

/// A checkout that starts from a sandboxed task's work holds what that child wrote (a
/// `Makefile` target `worktree.setup` runs, a hook, a tool's config): the task built on it is
/// sandboxed too, its setup and its agent inside. Asked to run it otherwise (`--sandbox=none`,
/// `--sandbox=agent`), the submit is refused with what a merge of that work would ask to have
/// reviewed: once merged after review, the work is the user's to build on.
fn inherit_sandbox(
    request: &mut SubmitRequest,
    source: &crate::ops::task::Task,
    from: &str,
) -> Result<()> {
    use crate::domain::sandbox::SandboxMode;
    if !source.in_bubblewrap() {
        return Ok(());
    }
    match request.sandbox.mode {
        None | Some(SandboxMode::Bwrap) => {
            request.sandbox.mode = Some(SandboxMode::Bwrap);
            Ok(())
        }
        Some(_) => {
            let review = crate::ops::work::diff::changed_files(source)
                .map(|files| {
                    let changed: Vec<crate::effects::git::review::Changed> = files
                        .iter()
                        .map(|file| crate::effects::git::review::Changed {
                            path: file.path.clone(),
                            mode: (file.status != "D").then(|| "100644".to_string()),
                        })
                        .collect();
                    crate::effects::git::review::policy_paths(&changed)
                })
                .unwrap_or_default();
            let listed = if review.is_empty() {
                "its work".to_string()
            } else {
                format!("its work ({})", review.join(", "))
            };
            Err(Error::new(
                ErrorCode::MergeReview,
                format!(
                    "--base-from: task {from} ran in a sandbox, and {listed} would run \
                     unsandboxed in this task's checkout: its worktree.setup and its agent"
                ),
            )
            .with_hint(format!(
                "submit it with --sandbox, or read the work (`cuekit diff {from}`), merge it \
                 (`cuekit merge {from} --yes`) and submit from there"
            )))
        }
    }
}

/// The agent session of an earlier task, for `--resume-from`.
fn resumable_session(earlier: &TaskRecord) -> Result<String> {
    crate::ops::result::agent_session(earlier).ok_or_else(|| {
        Error::invalid_input(format!(
            "task {} has no known agent session to resume",
            earlier.id
        ))
        .with_hint("only tasks whose session is known (Gemini; an interactive Claude Code or Qwen Code task, whose session cuekit chose; agy, an interactive agy once it exited) can be resumed")
    })
}

/// The cuekit binary as a shell word: an ACP task's pane runs it as the protocol's client.
pub(super) fn client_word() -> Result<String> {
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
pub(super) fn check_argv_limit(
    spec: &TaskSpec,
    adapter: &adapter::Adapter,
    command: &str,
) -> Result<()> {
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

/// A task that names no check takes its role's, from the user's own profile (or a built-in
/// one): a project's profile is the repository's word, and a check is code it would run, so
/// it is left out with a warning.
fn with_role_check(
    mut request: SubmitRequest,
    role: Option<&Role>,
    warnings: &mut Vec<String>,
) -> SubmitRequest {
    let Some((check, source)) = role.and_then(|role| role.check.clone()) else {
        return request;
    };
    if request.check.is_some() {
        return request;
    }
    if let crate::effects::role::RoleSource::Project(path) = &source {
        warnings.push(format!(
            "the project's role profile {} names a check, which runs code: it is not used \
             (pass --check, or set check.run in a trusted .cuekit.yaml)",
            path.display()
        ));
        return request;
    }
    if let Some(run) = check.run.filter(|run| !run.is_empty()) {
        request.check = Some(super::CheckRequest {
            run,
            rounds: check.rounds,
            timeout: check.timeout.map(|t| t.0),
            protect: check.protect.unwrap_or_default(),
            keep_open: false,
        });
    }
    request
}
