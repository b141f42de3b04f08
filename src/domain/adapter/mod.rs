//! Agent adapters: per-agent data plus a pure launch builder. Everything else — launch
//! script, tmux, transcript, status, steering — is shared, so adding an agent is one file
//! here and one line in [`ADAPTERS`].

pub mod acp;
mod antigravity;
mod claude;
mod codex;
mod command;
mod copilot;
pub mod faults;
mod gemini;
mod jcode;
mod opencode;
mod pi;
pub mod project_files;
mod qwen;
pub mod session_name;

use std::time::Duration;

use serde::Serialize;

pub use gemini::{
    GEMINI_APPROVAL_MODES, STDIN_PROMPT_NOTE as GEMINI_STDIN_PROMPT_NOTE,
    build_gemini_launch_command,
};

/// How long `doctor` waits for an agent's `--version`: some take seconds to start.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

use crate::domain::attention::ScreenRules;
use crate::domain::error::{Error, Result};
use crate::domain::spec::{Mode, TaskSpec};

/// What a parent may do with this agent's tasks, named as the adapter design names them.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Capabilities {
    pub agent_kind: &'static str,
    pub supports_steering: bool,
    pub supports_attach: bool,
    pub supports_model_selection: bool,
    pub supports_artifacts: bool,
    pub supports_live_progress: bool,
    pub default_mode: Mode,
    pub supported_modes: &'static [Mode],
}

impl LaunchCommand {
    /// A command of plain words (no event stream), as most adapters build it.
    pub(crate) fn from_words(words: Vec<String>, warnings: Vec<String>) -> LaunchCommand {
        LaunchCommand {
            command: words.join(" "),
            warnings,
            event_stream: false,
            agent_at: None,
        }
    }
}

impl Capabilities {
    /// A pane agent with the usual abilities: interactive (default) and batch, steerable and
    /// attachable, a model to choose, its work left in its directory, no live progress.
    pub const fn pane_agent(agent_kind: &'static str) -> Capabilities {
        Capabilities {
            agent_kind,
            supports_steering: true,
            supports_attach: true,
            supports_model_selection: true,
            supports_artifacts: true,
            supports_live_progress: false,
            default_mode: Mode::Interactive,
            supported_modes: &[Mode::Interactive, Mode::Batch],
        }
    }
}

/// The agent command line for `launch.sh`, and anything the caller should be told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchCommand {
    pub command: String,
    pub warnings: Vec<String>,
    /// The command prints the agent's event stream on stdout, to be piped through cuekit's
    /// event filter (events.jsonl, progress, result.json, a readable pane).
    pub event_stream: bool,
    /// Where in `command` the agent's own program word starts, when the command runs something
    /// else first (an ACP task's client): a sandbox goes around the agent only. `None`: the
    /// whole command is the agent's.
    pub agent_at: Option<usize>,
}

/// Why an agent exited with a given code, in words a parent can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitReason {
    pub code: i32,
    pub reason: &'static str,
    pub hint: &'static str,
}

#[derive(Debug)]
pub struct Adapter {
    pub capabilities: Capabilities,
    pub default_bin: &'static str,
    pub available_models: &'static [&'static str],
    /// Exit codes with a documented meaning for this agent.
    /// The texts that make a failed attempt a passing fault (`rate_limited`, `transient`).
    pub faults: &'static faults::Faults,
    pub exit_reasons: &'static [ExitReason],
    /// Variables removed from the pane's environment for interactive runs (e.g. `CI`, which
    /// makes some CLIs run headless even on a TTY).
    pub interactive_unset_env: &'static [&'static str],
    /// Pause between typed text and Enter: some TUIs turn a fast Enter into a newline.
    pub steer_enter_delay: Duration,
    /// The same pause after a pasted (multi-line or long) message.
    pub paste_enter_delay: Duration,
    /// tmux key names sent before a steering message (e.g. to clear a half-typed line).
    pub steer_pre_keys: &'static [&'static str],
    /// How to read this agent's screen: dialogs, busy and ready markers, the input line.
    pub screen: ScreenRules,
    /// The pane command for interactive and batch tasks (an ACP task's is [`Adapter::launch`]'s).
    pub build_launch: fn(&TaskSpec, Mode, &str) -> Result<LaunchCommand>,
    /// How the agent speaks the Agent Client Protocol, where it does (`--mode acp`).
    pub acp: Option<&'static acp::AcpLaunch>,
    /// What the agent needs of HOME inside a sandbox (`--sandbox`): its settings, shown
    /// read-only, and the state it writes.
    pub sandbox: &'static crate::domain::sandbox::Needs,
    /// Its own sandbox flag (`--sandbox agent`), where it has one.
    pub own_sandbox_flag: Option<&'static str>,
    /// The task's words are the program and its arguments (the `command` agent): no prompt is
    /// rendered and there is no fixed binary to look for.
    pub runs_argv: bool,
    /// The agent's approval modes (`approval_mode` values it takes; each replaces the bypass
    /// flag). Empty: the agent has none.
    pub approval_modes: &'static [&'static str],
    /// How to install the agent, for `doctor` and `agent_not_found` hints.
    pub install_hint: &'static str,
    /// Whether credentials are configured, judged without running the agent or the network.
    pub auth_probe: fn() -> AuthProbe,
    /// What the agent prints before its session id when it exits (`agy --conversation=`), for
    /// a task whose session cuekit did not name and no stream reported: the id is the word
    /// after the last one in the transcript.
    pub resume_hint: Option<&'static str>,
    /// The environment variables the agent's credentials can come from: what an MCP client
    /// must hand `cuekit mcp` (it hands an MCP server no secret it was not told to).
    pub auth_env: &'static [&'static str],
}

/// What `doctor` can tell about an agent's credentials without side effects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthProbe {
    /// Configured, and how (e.g. "GEMINI_API_KEY is set").
    Configured(String),
    /// Nothing found; the hint says how to set it up.
    Missing(String),
    /// Configured (`how`) for a login the agent's service no longer serves; `hint` says what
    /// works now.
    NotServed { how: String, hint: String },
}

/// Builders of interactive and batch commands are never asked for an ACP one: [`Adapter::launch`]
/// builds those for every agent from its [`acp::AcpLaunch`].
pub(crate) const ACP_IS_BUILT_APART: &str = "an ACP launch is built by adapter::acp";

/// Every agent cuekit can run; the first is the default.
pub static ADAPTERS: &[&Adapter] = &[
    &gemini::GEMINI,
    &claude::CLAUDE,
    &codex::CODEX,
    &opencode::OPENCODE,
    &pi::PI,
    &jcode::JCODE,
    &qwen::QWEN,
    &copilot::COPILOT,
    &antigravity::ANTIGRAVITY,
    &command::COMMAND,
];

/// What `cuekit adapters` reports: the capabilities, as the adapter design names them, plus
/// models and how the agent is launched.
#[derive(Debug, Clone, Serialize)]
pub struct AdapterInfo {
    #[serde(flatten)]
    pub capabilities: Capabilities,
    /// How `--mode acp` starts the agent, where it can.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acp: Option<&'static acp::AcpLaunch>,
    pub available_models: &'static [&'static str],
    pub default_bin: &'static str,
    pub install_hint: &'static str,
}

impl Adapter {
    pub fn info(&self) -> AdapterInfo {
        let mut capabilities = self.capabilities.clone();
        capabilities.supported_modes = self.modes();
        AdapterInfo {
            capabilities,
            acp: self.acp,
            available_models: self.available_models,
            default_bin: self.default_bin,
            install_hint: self.install_hint,
        }
    }

    pub fn kind(&self) -> &'static str {
        self.capabilities.agent_kind
    }

    pub fn supports(&self, mode: Mode) -> bool {
        self.modes().contains(&mode)
    }

    /// The run modes: the adapter's own, and `acp` where the agent speaks the protocol.
    pub fn modes(&self) -> &'static [Mode] {
        match self.acp {
            Some(_) => &[Mode::Interactive, Mode::Batch, Mode::Acp],
            None => self.capabilities.supported_modes,
        }
    }

    /// Capabilities of one task: a batch task cannot be steered whatever the agent can do.
    pub fn task_capabilities(&self, mode: Mode) -> Capabilities {
        let mut capabilities = self.capabilities.clone();
        capabilities.supported_modes = self.modes();
        capabilities.supports_steering &= mode != Mode::Batch;
        capabilities.supports_live_progress |= mode == Mode::Acp;
        capabilities
    }

    /// The launch command of a task in `mode`; `client` is the cuekit binary as a shell word,
    /// which an ACP task runs in its pane.
    pub fn launch(
        &self,
        spec: &TaskSpec,
        mode: Mode,
        bin: &str,
        client: &str,
    ) -> Result<LaunchCommand> {
        match (mode, self.acp) {
            (Mode::Acp, Some(acp)) => acp::build_acp_launch(self, acp, spec, bin, client),
            (Mode::Acp, None) => Err(Error::invalid_input(format!(
                "agent '{}' has no acp mode (it does not speak the Agent Client Protocol)",
                self.kind()
            ))
            .with_hint("`cuekit adapters` lists each agent's modes")),
            _ => (self.build_launch)(spec, mode, bin),
        }
    }

    /// The documented reason for an exit code of a task in `mode`, falling back to shell
    /// conventions. An ACP task's code is its client's first.
    pub fn exit_reason(&self, mode: Mode, code: i32) -> Option<ExitReason> {
        let client = if mode == Mode::Acp {
            acp::ACP_EXIT_REASONS
        } else {
            &[]
        };
        client
            .iter()
            .chain(self.exit_reasons)
            .chain(SHELL_EXIT_REASONS)
            .find(|reason| reason.code == code)
            .copied()
    }
}

static SHELL_EXIT_REASONS: &[ExitReason] = &[
    ExitReason {
        code: 126,
        reason: "agent_not_executable",
        hint: "the agent binary exists but cannot be executed; check its permissions",
    },
    ExitReason {
        code: 127,
        reason: "agent_not_found",
        hint: "the agent binary was not found on the pane's PATH; install it or set its path",
    },
    ExitReason {
        code: 137,
        reason: "killed",
        hint: "the agent was killed with SIGKILL (out of memory or an outside kill)",
    },
    ExitReason {
        code: 143,
        reason: "terminated",
        hint: "the agent was terminated with SIGTERM from outside cuekit",
    },
];

pub fn lookup(kind: &str) -> Result<&'static Adapter> {
    ADAPTERS
        .iter()
        .copied()
        .find(|adapter| adapter.kind() == kind)
        .ok_or_else(|| {
            let known: Vec<&str> = ADAPTERS.iter().map(|a| a.kind()).collect();
            Error::invalid_input(format!("unknown agent '{kind}'"))
                .with_hint(format!("known agents: {}", known.join(", ")))
        })
}

/// The task's prompt, refused when there is nothing in it.
pub(crate) fn prompt_of(spec: &TaskSpec) -> Result<String> {
    let prompt = crate::domain::spec::render_prompt(spec);
    if prompt.trim().is_empty() {
        return Err(
            Error::invalid_input("the task has an empty objective").with_hint(
                "say what the agent should do, e.g. `cuekit submit 'fix the failing test'`",
            ),
        );
    }
    Ok(prompt)
}

/// `<flag> '<model>'`: a model starting with `-` would be read as a flag, so it is refused; one
/// the adapter does not list is passed through with a warning (the CLIs accept new names).
pub(crate) fn model_arg(
    adapter: &Adapter,
    flag: &str,
    model: &str,
    warnings: &mut Vec<String>,
) -> Result<String> {
    if model.is_empty() || model.starts_with('-') {
        return Err(
            Error::invalid_input(format!("invalid model name '{model}'")).with_hint(format!(
                "models {} knows: {}",
                adapter.kind(),
                adapter.available_models.join(", ")
            )),
        );
    }
    if !adapter.available_models.is_empty() && !adapter.available_models.contains(&model) {
        warnings.push(format!(
            "model '{model}' is not one cuekit knows for {}; passing it through unchanged",
            adapter.kind()
        ));
    }
    Ok(format!(
        "{flag} {}",
        crate::domain::launch::single_quote(model)?
    ))
}

/// The approval mode to pass, if it is one of `valid`; a warning for any other value.
pub(crate) fn approval_mode<'a>(
    spec: &'a TaskSpec,
    valid: &[&str],
    kind: &str,
    warnings: &mut Vec<String>,
) -> Option<&'a str> {
    match spec.approval_mode.as_deref() {
        Some(mode) if valid.contains(&mode) => Some(mode),
        Some(other) => {
            warnings.push(if valid.is_empty() {
                format!("{kind} has no approval modes; approval_mode '{other}' is ignored")
            } else {
                format!(
                    "approval_mode '{other}' is not one of {}; ignored, permissions follow dangerously_skip_permissions",
                    valid.join(", ")
                )
            });
            None
        }
        None => None,
    }
}

/// The first of `names` set to a non-empty value in the environment.
pub fn env_set(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find(|name| std::env::var(name).is_ok_and(|value| !value.is_empty()))
        .map(|name| name.to_string())
}

/// `$HOME/<relative>`, if that file exists.
pub(crate) fn home_file(relative: &str) -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from(std::env::var_os("HOME")?).join(relative);
    path.is_file().then_some(path)
}

/// Quotes a binary path only when it needs it, so the usual `gemini …` reads naturally.
pub fn shell_word_for_bin(bin: &str) -> Result<String> {
    let plain = !bin.is_empty()
        && bin
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./+@%=:,".contains(c));
    if plain {
        Ok(bin.to_string())
    } else {
        crate::domain::launch::single_quote(bin)
    }
}

/// A screen of tests/fixtures/screens/.
#[cfg(test)]
pub(crate) fn screen_fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/screens/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// The launch command an adapter builds for `objective` in `mode`, after `edit` of the spec.
#[cfg(test)]
pub(crate) fn built(
    adapter: &Adapter,
    objective: &str,
    mode: Mode,
    edit: impl FnOnce(&mut TaskSpec),
) -> String {
    let mut spec = TaskSpec {
        agent_kind: adapter.kind().into(),
        objective: objective.into(),
        ..TaskSpec::default()
    };
    edit(&mut spec);
    (adapter.build_launch)(&spec, mode, adapter.default_bin)
        .unwrap()
        .command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_tasks_are_never_steerable() {
        let gemini = lookup("gemini").unwrap();
        assert!(
            gemini
                .task_capabilities(Mode::Interactive)
                .supports_steering
        );
        assert!(!gemini.task_capabilities(Mode::Batch).supports_steering);
    }

    #[test]
    fn unknown_agent_names_the_known_ones() {
        let err = lookup("nope").unwrap_err();
        assert_eq!(err.code, crate::domain::error::ErrorCode::InvalidInput);
        assert!(err.hint.unwrap().contains("gemini"));
    }

    #[test]
    fn exit_reasons_fall_back_to_shell_conventions() {
        let gemini = lookup("gemini").unwrap();
        assert_eq!(
            gemini.exit_reason(Mode::Interactive, 41).unwrap().reason,
            "auth_missing"
        );
        assert_eq!(
            gemini.exit_reason(Mode::Interactive, 127).unwrap().reason,
            "agent_not_found"
        );
        assert!(gemini.exit_reason(Mode::Interactive, 3).is_none());
    }

    #[test]
    fn an_acp_tasks_code_is_its_clients_whatever_the_agent() {
        let qwen = lookup("qwen").unwrap();
        assert_eq!(
            qwen.exit_reason(Mode::Acp, 41).unwrap().reason,
            "auth_missing"
        );
        assert_eq!(
            qwen.exit_reason(Mode::Acp, 64).unwrap().reason,
            "acp_protocol_error"
        );
        assert!(qwen.exit_reason(Mode::Interactive, 64).is_none());
        assert_eq!(qwen.exit_reason(Mode::Acp, 137).unwrap().reason, "killed");
    }

    #[test]
    fn bin_is_quoted_only_when_needed() {
        assert_eq!(
            shell_word_for_bin("/opt/bin/gemini").unwrap(),
            "/opt/bin/gemini"
        );
        assert_eq!(
            shell_word_for_bin("/my dir/gemini").unwrap(),
            "'/my dir/gemini'"
        );
    }
}
