//! The sandbox's effects: which policy a submit gets, whether bubblewrap can make a namespace
//! here (before anything starts: never silently unsandboxed), a launch wrapped in it, and the
//! `__scope` it runs under. What of the disk one task's sandbox shows is [`plan`], found at
//! submit and handed to the pure builder in `domain::sandbox`.

use std::path::{Path, PathBuf};

use crate::domain::adapter::{Adapter, LaunchCommand};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::sandbox::{self, Network, Plan, Policy, SandboxMode};
use crate::domain::spec::Mode;
use crate::effects::config::Config;
use crate::effects::store::WorktreePlacement;

mod after;
mod net;
mod plan;
mod sockets;

pub(crate) use after::{after_end, tidy as tidy_after};

pub use net::{probe_stack, run_net, stack as network_stack};
pub(crate) use plan::{check_work_dir, scope};

/// What a submit asks of the sandbox (`--sandbox`, `--no-network`, MCP `sandbox`, `network`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxRequest {
    pub mode: Option<SandboxMode>,
    pub network: Option<Network>,
}

/// The task's policy: the user's own flags decide; an MCP client's or a team spec's
/// (`delegated`) may only tighten the config's, as a project file may.
pub(crate) fn policy(request: SandboxRequest, delegated: bool, config: &Config) -> Result<Policy> {
    let configured = config.sandbox();
    let pick = |asked: Option<SandboxMode>| match (asked, delegated) {
        (Some(asked), false) => asked,
        (asked, true) => asked.unwrap_or_default().max(configured.mode),
        (None, false) => configured.mode,
    };
    let mode = pick(request.mode);
    let network = match (request.network, delegated) {
        (Some(asked), false) => asked,
        (asked, _) => asked.unwrap_or_default().max(configured.network),
    };
    if request.network == Some(Network::Off) && mode != SandboxMode::Bwrap {
        return Err(Error::invalid_input(
            "--no-network needs the bubblewrap sandbox, which makes the network namespace",
        )
        .with_hint("add --sandbox (bwrap)"));
    }
    Ok(Policy {
        mode,
        network: if mode == SandboxMode::Bwrap {
            network
        } else {
            Network::On
        },
        read: configured.read,
        write: configured.write,
    })
}

/// Agents whose sandbox needs are verified by a real run (tests/integration/sandbox.rs): a task
/// of theirs that asks for approvals is sandboxed unless the user's own `--sandbox=none` says
/// otherwise.
pub const VERIFIED_AGENTS: &[&str] = &["gemini"];

/// How a task's approvals hold, decided at submit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Approvals {
    /// The agent asks nobody (its bypass is on).
    None,
    /// Asked, inside a sandbox: the child cannot reach what answers them.
    Binding,
    /// Asked, and sandboxed only because it asks (the user said nothing of a sandbox).
    SandboxedForThem,
    /// Asked of an unsandboxed task: a child running as the user can answer them itself.
    Advisory,
}

impl Approvals {
    /// What the submit says of it, if anything.
    pub(crate) fn warning(self) -> Option<&'static str> {
        match self {
            Approvals::SandboxedForThem => Some(
                "sandboxed (bubblewrap) because it asks for approvals, which only a sandbox makes \
                 binding; --sandbox=none runs it as you, its approvals then advisory",
            ),
            Approvals::Advisory => Some(
                "its approvals are advisory: unsandboxed, the child runs as you and could answer \
                 them itself; --sandbox makes them binding",
            ),
            Approvals::None | Approvals::Binding => None,
        }
    }
}

/// Whether the agent asks a person before it acts: its bypass switched off, or an approval
/// mode that asks (`default`, `auto_edit`).
pub(crate) fn asks_for_approvals(spec: &crate::domain::spec::TaskSpec) -> bool {
    !spec.skips_permissions()
        || matches!(spec.approval_mode.as_deref(), Some("default" | "auto_edit"))
}

/// Who chose a task's sandbox mode, as far as a task that asks for approvals goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chooser {
    /// The submit's own `--sandbox=…` (a delegate's, MCP or a team spec, counts for nothing).
    pub asked: Option<SandboxMode>,
    pub delegated: bool,
    /// `sandbox.mode` in the user's own file.
    pub user_file: Option<SandboxMode>,
}

/// Sandboxes a task that asks for approvals, of an agent whose sandbox is verified, unless the
/// user (on the command line, or in their own file; never a delegate or a project) chose none;
/// says how its approvals then hold.
pub(crate) fn for_approvals(
    policy: &mut Policy,
    chooser: Chooser,
    asks: bool,
    agent: &str,
) -> Approvals {
    if !asks {
        return Approvals::None;
    }
    if policy.mode == SandboxMode::Bwrap {
        return Approvals::Binding;
    }
    let said = match chooser.asked.filter(|_| !chooser.delegated) {
        Some(asked) => Some(asked),
        None => chooser.user_file,
    };
    let chose_none = said == Some(SandboxMode::None);
    if policy.mode == SandboxMode::None && !chose_none && VERIFIED_AGENTS.contains(&agent) {
        policy.mode = SandboxMode::Bwrap;
        return Approvals::SandboxedForThem;
    }
    Approvals::Advisory
}

fn unavailable(why: impl Into<String>, hint: impl Into<String>) -> Error {
    Error::new(ErrorCode::SandboxUnavailable, why.into()).with_hint(hint.into())
}

/// How long bubblewrap's probe may take.
const PROBE_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether bubblewrap is here and can make its namespaces for this user, as a sandbox needs
/// them: `Err` names the cause.
pub fn probe() -> Result<PathBuf> {
    let bwrap = crate::effects::which::find_on_path("bwrap").ok_or_else(|| {
        unavailable(
            "bubblewrap (bwrap) is not installed",
            "install it (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap), or submit without --sandbox",
        )
    })?;
    let output = crate::effects::bounded::Bounded::new(&bwrap, PROBE_WITHIN)
        .args(sandbox::PROBE)
        .run()
        .map_err(|err| match err {
            crate::effects::bounded::RunError::Start { source, .. } => {
                unavailable(format!("bwrap cannot run: {source}"), "check its install")
            }
            other => unavailable(other.to_string(), "check its install"),
        })?;
    if output.success() {
        return Ok(bwrap);
    }
    let said = String::from_utf8_lossy(&output.stderr.bytes())
        .trim()
        .to_string();
    let hint = if said.contains("uid map")
        || said.contains("user namespace")
        || said.contains("Operation not permitted")
        || said.contains("Permission denied")
    {
        "this kernel or its AppArmor policy forbids unprivileged user namespaces: \
         sysctl kernel.unprivileged_userns_clone=1 (Debian), or \
         kernel.apparmor_restrict_unprivileged_userns=0 / an AppArmor profile for bwrap (Ubuntu 24.04)"
    } else {
        "run `bwrap --ro-bind / / /bin/true` to see why"
    };
    Err(unavailable(
        format!("bubblewrap cannot make a sandbox here: {said}"),
        hint,
    ))
}

/// `cuekit __scope -- BWRAP …`: enters the abstract-socket scope ([`crate::effects::scope`])
/// and becomes the command. Returns only when either fails: the launch then finds no status
/// from bubblewrap, and the task ends `sandbox_failed`, never unscoped.
pub fn run_scoped(command: &[std::ffi::OsString]) -> Result<()> {
    let failed = |what: &str, err: std::io::Error| {
        unavailable(
            format!("the sandbox's socket scope: {what}: {err}"),
            "run `cuekit doctor`; --no-network cuts the sockets off without the scope",
        )
    };
    let (program, args) = command
        .split_first()
        .ok_or_else(|| Error::invalid_input("__scope needs a command after --"))?;
    let args = sandbox::without_gone_covers(args, |path| path.symlink_metadata().is_ok());
    crate::effects::scope::enter().map_err(|err| failed("landlock", err))?;
    let err = crate::effects::spawn::become_program(program, &args);
    Err(failed("exec", err))
}

/// What one task's sandbox is made of.
pub(crate) struct Subject<'a> {
    pub id: &'a str,
    pub task_dir: &'a Path,
    /// What the agent works on, writable: its worktree, or the submit's directory.
    pub work_dir: &'a Path,
    /// Where it starts (the same place in its worktree as the submit's directory).
    pub start_dir: &'a Path,
    pub worktree: Option<&'a WorktreePlacement>,
    pub adapter: &'a Adapter,
    pub mode: Mode,
    /// The agent's binary as configured (found on PATH).
    pub bin: &'a str,
    /// cuekit's own tmux socket, never reachable inside.
    pub tmux_socket: &'a Path,
    /// Whether the sandbox starts in a pane, so after the tmux server made its socket.
    pub server_first: bool,
}

/// The launch command with the task's sandbox around the agent: bubblewrap's words (or the
/// agent's own flag) put in; unchanged without a sandbox. `setup` (`worktree.setup`) comes back
/// wrapped in the same bubblewrap sandbox, else as it is.
pub(crate) fn wrap(
    launch: LaunchCommand,
    policy: &Policy,
    subject: &Subject,
    setup: Option<&str>,
) -> Result<(LaunchCommand, Option<String>)> {
    let setup = setup.map(String::from);
    match policy.mode {
        SandboxMode::None => Ok((launch, setup)),
        SandboxMode::Agent => {
            let flag = subject.adapter.own_sandbox_flag.ok_or_else(|| {
                unavailable(
                    format!("{} has no sandbox of its own", subject.adapter.kind()),
                    "use --sandbox bwrap, which works for every agent",
                )
            })?;
            let at = launch.agent_at.unwrap_or(0);
            let program_end = at + first_word_len(&launch.command[at..]);
            let mut command = launch.command.clone();
            command.insert_str(program_end, &format!(" {flag}"));
            Ok((LaunchCommand { command, ..launch }, setup))
        }
        SandboxMode::Bwrap => {
            let bwrap = probe()?;
            let mut launch = launch;
            let plan = with_stack(plan::plan(policy, subject)?, &mut launch.warnings);
            launch
                .warnings
                .extend(plan::unwritable_warning(&plan, subject));
            let words = sandbox::bwrap_words(&bwrap.to_string_lossy(), &plan);
            let inner = sandbox::inner_words(&plan);
            let filter = keystroke_filter()?;
            let command = match launch.agent_at {
                Some(at) => sandbox::wrap_agent_words(
                    &launch.command,
                    at,
                    &words,
                    &inner,
                    filter.as_deref(),
                )?,
                None => sandbox::wrap_shell(
                    &launch.command,
                    &words,
                    &inner,
                    subject.task_dir,
                    filter.as_deref(),
                )?,
            };
            // `worktree.setup` runs on the task's checkout, which may hold another child's
            // work (`--base-from`): inside the same sandbox as the agent.
            let setup = setup
                .map(|setup| sandbox::wrap_command(&setup, &words, &inner, filter.as_deref()))
                .transpose()?;
            Ok((LaunchCommand { command, ..launch }, setup))
        }
    }
}

/// A check command (`--check`) of a task in bubblewrap, in the task's own sandbox policy:
/// the scratch checkout writable in place of the task's checkout, the shell its program. A
/// task without bubblewrap (none, or the agent's own flag, which no shell has) runs it as is.
pub(crate) fn wrap_check(
    policy: &Policy,
    id: &str,
    task_dir: &Path,
    scratch: &Path,
    tmux_socket: &Path,
    command: &str,
) -> Result<String> {
    if policy.mode != SandboxMode::Bwrap {
        return Ok(command.to_string());
    }
    let bwrap = probe()?;
    let subject = Subject {
        id,
        task_dir,
        work_dir: scratch,
        start_dir: scratch,
        worktree: None,
        adapter: crate::domain::adapter::lookup("command")?,
        mode: Mode::Batch,
        bin: "sh",
        tmux_socket,
        server_first: false,
    };
    let plan = with_stack(plan::plan(policy, &subject)?, &mut Vec::new());
    // The scratch checkout was made just now, for this run: the child's to write.
    if plan.run_as.is_some() {
        crate::effects::owner::hand_over_tree(scratch)?;
    }
    let words = sandbox::bwrap_words(&bwrap.to_string_lossy(), &plan);
    let inner = sandbox::inner_words(&plan);
    sandbox::wrap_command(command, &words, &inner, keystroke_filter()?.as_deref())
}

/// The plan with the network stack of this machine, when the task keeps its network: a
/// namespace of its own, whose abstract sockets are its own too. Without a stack the sandbox
/// shares the machine's network, and `warnings` say what that leaves open.
fn with_stack(mut plan: Plan, warnings: &mut Vec<String>) -> Plan {
    if plan.network == Network::Off {
        return plan;
    }
    match net::stack() {
        Ok(stack) => plan.stack = Some(stack),
        Err(why) => {
            warnings.push(why.to_string());
            warnings.extend(plan::unscoped_warning(&plan).map(String::from));
        }
    }
    plan
}

/// The file holding [`sandbox::keystroke_filter`] (in cuekit's data dir, written once), or
/// `None` on an architecture it is not written for.
fn keystroke_filter() -> Result<Option<PathBuf>> {
    let Some(program) = sandbox::keystroke_filter() else {
        return Ok(None);
    };
    let path = crate::effects::store::data_dir()
        .ok_or_else(|| unavailable("no data directory for the sandbox's filter", "set HOME"))?
        .join("seccomp-keystrokes.bpf");
    if crate::effects::store::read_small(&path).ok().as_deref() != Some(program.as_slice()) {
        if let Some(dir) = path.parent() {
            crate::effects::store::create_private_dir(dir)?;
        }
        crate::effects::store::write_atomic(&path, &program)?;
    }
    Ok(Some(path))
}

/// The length of the shell word a command starts with (its program, single-quoted or plain).
fn first_word_len(command: &str) -> usize {
    let mut quoted = false;
    let mut escaped = false;
    for (at, c) in command.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !quoted => escaped = true,
            '\'' => quoted = !quoted,
            ' ' if !quoted => return at,
            _ => {}
        }
    }
    command.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_that_asks_for_approvals_is_sandboxed_unless_the_user_says_none() {
        let by =
            |asked: Option<SandboxMode>, delegated: bool, user_file: Option<SandboxMode>| Chooser {
                asked,
                delegated,
                user_file,
            };
        let none = Some(SandboxMode::None);
        let decide = |chooser: Chooser, asks: bool, agent: &str| {
            let mut policy = Policy::default();
            let said = for_approvals(&mut policy, chooser, asks, agent);
            (said, policy.mode)
        };
        let (sandboxed, open) = (SandboxMode::Bwrap, SandboxMode::None);
        assert_eq!(
            decide(by(None, false, None), true, "gemini"),
            (Approvals::SandboxedForThem, sandboxed)
        );
        // The user's own --sandbox=none, or their file's, is theirs to give; a delegate's is not.
        assert_eq!(
            decide(by(none, false, None), true, "gemini"),
            (Approvals::Advisory, open)
        );
        assert_eq!(
            decide(by(None, false, none), true, "gemini"),
            (Approvals::Advisory, open)
        );
        assert_eq!(
            decide(by(none, true, None), true, "gemini"),
            (Approvals::SandboxedForThem, sandboxed)
        );
        // An agent whose sandbox is not verified by a real run is left as asked, and said so.
        assert_eq!(
            decide(by(None, false, None), true, "codex"),
            (Approvals::Advisory, open)
        );
        // Nothing asked of a person: nothing changes.
        assert_eq!(
            decide(by(None, false, None), false, "gemini"),
            (Approvals::None, open)
        );
        let mut policy = Policy {
            mode: SandboxMode::Bwrap,
            ..Policy::default()
        };
        let said = for_approvals(&mut policy, by(None, false, None), true, "gemini");
        assert_eq!(said, Approvals::Binding);
    }

    #[test]
    fn the_program_word_ends_at_the_first_unquoted_space() {
        assert_eq!(first_word_len("'gem ini' -y"), 9);
        assert_eq!(first_word_len("gemini -y"), 6);
        assert_eq!(first_word_len("'it'\\''s' -y"), 9);
        assert_eq!(first_word_len("gemini"), 6);
    }
}
