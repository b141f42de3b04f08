//! A task's check (`--check`): the plan a submit records, the loop its batch launch runs
//! around the agent (`launch`), and the check itself (`run`): a scratch checkout of the
//! child's work with its protected paths restored from the base (`scratch`), the commands run
//! there, the verdict recorded in the registry and, on a failure with rounds left, the fix
//! message for the child.

mod count;
mod leftovers;
mod run;
mod scratch;
mod settings;
mod turn;

use std::time::Duration;

use crate::domain::adapter::{Adapter, LaunchCommand};
use crate::domain::check::{self, CheckPlan};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::spec::{Mode, TaskSpec};

pub use run::{CheckOutcome, check_from_launch, check_now};
pub(crate) use run::{hold_for_removal, reap_killed_runner, verdict_pending};
pub(crate) use turn::{abandoned, after_turn};

/// A check as asked for; what is left open comes from the defaults in `domain::check`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckRequest {
    /// Commands run with `/bin/sh -c`, in order.
    pub run: Vec<String>,
    /// Fix rounds after a failed check (default 2).
    pub rounds: Option<u32>,
    /// The limit on each command (default 10 minutes).
    pub timeout: Option<Duration>,
    /// Globs restored from the base before the check (default: the test folders and runner
    /// configuration of the ecosystems found at the base's root).
    pub protect: Vec<String>,
    /// An interactive child whose check passed is left at its prompt instead of told to quit.
    pub keep_open: bool,
}

/// The plan of the check the submit asks for, else of the configured one (`check:`; a
/// project file's applies only once trusted: `check.run` runs code). A configured check that
/// cannot be kept for this task is left out with a warning; one asked for is refused.
pub(crate) fn plan_for(
    asked: Option<&CheckRequest>,
    configured: Option<crate::effects::config::CheckSettings>,
    task: Checked,
    warnings: &mut Vec<String>,
) -> Result<Option<CheckPlan>> {
    if asked.is_some() {
        return plan_of(asked, task);
    }
    let Some(configured) = configured else {
        return Ok(None);
    };
    let request = CheckRequest {
        run: configured.run,
        rounds: configured.rounds,
        timeout: configured.timeout,
        protect: configured.protect,
        keep_open: false,
    };
    match plan_of(Some(&request), task) {
        Ok(plan) => Ok(plan),
        Err(err) => {
            warnings.push(format!(
                "the configured check does not run for this task: {}",
                err.message
            ));
            Ok(None)
        }
    }
}

/// The task a check is planned for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked<'a> {
    pub agent: &'a str,
    pub mode: Mode,
    pub own_checkout: bool,
    /// Sandboxed by the agent's own flag (`--sandbox=agent`), which no shell has.
    pub agent_sandbox: bool,
}

/// The plan of a check as asked, refused where it cannot be kept: a batch or ACP task, or an
/// interactive one of an agent cuekit knows how to tell to exit, in a checkout of its own, is
/// checked so far (a sandboxed one's check runs in its sandbox policy).
fn plan_of(request: Option<&CheckRequest>, task: Checked) -> Result<Option<CheckPlan>> {
    let Checked {
        agent,
        mode,
        own_checkout,
        agent_sandbox,
    } = task;
    let Some(request) = request else {
        return Ok(None);
    };
    let refuse = |what: &str, hint: &str| {
        Err(Error::invalid_input(format!("--check {what}")).with_hint(hint.to_string()))
    };
    if request
        .run
        .iter()
        .any(|c| c.trim().is_empty() || c.contains('\0'))
    {
        return refuse(
            "needs a command (not empty, no NUL byte)",
            "give the command to run, e.g. --check 'make test'",
        );
    }
    if request.timeout.is_some_and(|t| t < Duration::from_secs(1)) {
        return Err(Error::invalid_input(
            "--check-timeout must be at least 1s: a check with no time to run fails every time",
        )
        .with_hint("give the check time to run, e.g. --check-timeout 10m (the default)"));
    }
    if let Some(glob) = request
        .protect
        .iter()
        .find(|g| !check::protect_glob_can_match(g))
    {
        return Err(Error::invalid_input(format!(
            "--check-protect {glob:?} can never match a path of the checkout (empty, or with a \
             `.` or `..` part), and it replaces the default protection: the tests would go unprotected"
        ))
        .with_hint(
            "give paths relative to the repository's top, e.g. --check-protect 'tests/**'; leave \
             it out for the defaults",
        ));
    }
    let interactive = mode == Mode::Interactive && check::quit_words(agent).is_some();
    if mode == Mode::Interactive && !interactive {
        return refuse(
            &format!("is built so far for interactive gemini tasks, not interactive {agent} tasks"),
            "submit with --mode batch or --mode acp",
        );
    }
    if agent_sandbox {
        return refuse(
            "cannot run in the agent's own sandbox (`--sandbox=agent`): no shell has its flag, and \
             the check runs the child's code",
            "use --sandbox (bubblewrap), where the check runs in the task's own sandbox policy",
        );
    }
    if !own_checkout {
        return refuse(
            "needs a task with a checkout of its own: the check runs on its work against its base",
            "add --worktree",
        );
    }
    Ok(Some(CheckPlan {
        run: request.run.clone(),
        rounds: request.rounds.unwrap_or(check::DEFAULT_ROUNDS),
        timeout_secs: request
            .timeout
            .unwrap_or(Duration::from_secs(check::DEFAULT_TIMEOUT_SECS))
            .as_secs()
            .max(1),
        protect: request.protect.clone(),
        keep_open: request.keep_open,
    }))
}

/// The launch command of a checked batch task: the agent's `command`, then the check; on a
/// failure with rounds left, the agent's session resumed with the fix message on stdin
/// ([`check::batch_loop`]). Refused where a fix round cannot reach the same child.
#[allow(clippy::too_many_arguments)]
pub(crate) fn around(
    command: &str,
    plan: &CheckPlan,
    task_id: &str,
    task_dir: &std::path::Path,
    adapter: &Adapter,
    spec: &TaskSpec,
    bin: &str,
    session: Option<&str>,
    client: &str,
    sandbox: &dyn Fn(LaunchCommand) -> Result<LaunchCommand>,
) -> Result<String> {
    let continuation = if plan.rounds == 0 {
        None
    } else {
        let session = session.ok_or_else(|| no_fix_rounds(adapter))?;
        let mut again = spec.clone();
        again.resume_session = Some(session.to_string());
        again.session_id = None;
        again.objective = "The fix message is given on standard input.".into();
        again.context = None;
        again.constraints.clear();
        again.role_instructions = None;
        again.report_hint = false;
        // In the task's sandbox, as its first run.
        let launch = sandbox(adapter.launch(&again, Mode::Batch, bin, client)?)?;
        if !launch
            .command
            .contains(&format!("\"${}\"", crate::domain::launch::PROMPT_VARIABLE))
        {
            return Err(no_fix_rounds(adapter));
        }
        Some(launch.command)
    };
    check::batch_loop(
        command,
        continuation.as_deref(),
        client,
        task_id,
        &task_dir.join(check::FIX_FILE),
    )
}

/// The start of [`no_fix_rounds`]'s message.
const NO_FIX_ROUNDS: &str = "a fix round of a batch ";

fn no_fix_rounds(adapter: &Adapter) -> Error {
    Error::new(
        ErrorCode::InvalidInput,
        format!(
            "{NO_FIX_ROUNDS}{} task cannot be given to the same child: a fix round gives the \
             failing check's output to the child that made the work, and cuekit resumes a batch \
             session with the message on stdin only for gemini so far",
            adapter.kind()
        ),
    )
    .with_hint("use --check-rounds 0 (the first verdict is final) or --agent gemini")
}

/// Whether `err` is [`around`]'s refusal of fix rounds that cannot reach the same child.
pub(crate) fn is_no_fix_rounds(err: &Error) -> bool {
    err.code == ErrorCode::InvalidInput && err.message.starts_with(NO_FIX_ROUNDS)
}
