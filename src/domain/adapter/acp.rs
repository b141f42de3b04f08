//! How each agent speaks the Agent Client Protocol, as data, and the one pure builder of an ACP
//! task's launch command: cuekit's own client (`cuekit __acp`) runs in the pane and starts the
//! agent with its ACP command on the client's pipes.

use serde::Serialize;

use super::{Adapter, ExitReason, LaunchCommand};
use crate::domain::acp::session::exit;
use crate::domain::error::Result;
use crate::domain::launch::{PROMPT_VARIABLE, single_quote};
use crate::domain::spec::TaskSpec;

/// What the exit status of cuekit's ACP client means: it is the task's exit code, whichever agent
/// runs behind it (an agent's own code passes through when it dies on its own).
pub static ACP_EXIT_REASONS: &[ExitReason] = &[
    ExitReason {
        code: exit::AUTH_MISSING,
        reason: "auth_missing",
        hint: "the agent answered ACP's \"authentication required\": sign it in (or set its API \
               key) and submit again; its words are in `cuekit logs <id>`",
    },
    ExitReason {
        code: exit::PROTOCOL,
        reason: "acp_protocol_error",
        hint: "the agent speaks another ACP version or answered no session; check its version \
               against `docs/guides/acp.md`, the exchange is in the task's events.jsonl",
    },
    ExitReason {
        code: exit::CANCELLED,
        reason: "cancelled",
        hint: "the ACP client was ended by a signal",
    },
];

/// An agent's ACP command and what cuekit needs to drive it.
#[derive(Debug, Clone, Serialize)]
pub struct AcpLaunch {
    /// The program when it is not the adapter's own binary (a bridge such as
    /// `claude-agent-acp`); `None` runs the adapter's binary.
    pub program: Option<&'static str>,
    /// Arguments that put the program into ACP mode (`--acp`, `acp`).
    pub args: &'static [&'static str],
    /// The option that chooses the model on the command line, where the program has one; else
    /// the model is chosen with `session/set_model` once the session exists.
    pub model_flag: Option<&'static str>,
    /// cuekit's approval modes (`--approval-mode`) and the agent's ACP mode ids they become
    /// (`session/set_mode`).
    pub modes: &'static [(&'static str, &'static str)],
    /// Environment the agent runs with in ACP mode (e.g. one process instead of a relaunch, so
    /// the whole agent ends with its client).
    pub env: &'static [(&'static str, &'static str)],
    /// `session/load` started in the same minute as the session it loads destroys that session:
    /// the agent names its session file by the minute it started and the id, and the loading
    /// process starts a file of that name afresh (Gemini CLI 0.61.0). The client then waits for
    /// the next minute before loading.
    pub load_overwrites_same_minute: bool,
    /// The version verified against, and how.
    pub verified: &'static str,
}

impl AcpLaunch {
    /// The ACP mode id for a cuekit approval mode.
    pub fn mode_id(&self, approval_mode: &str) -> Option<&'static str> {
        self.modes
            .iter()
            .find(|(ours, _)| *ours == approval_mode)
            .map(|(_, theirs)| *theirs)
    }
}

/// `'cuekit' __acp [options] -- <agent program> <ACP args> [model]`, where `client` is the
/// cuekit binary as a shell word. The client reads the first prompt from the prompt file, so a
/// prompt of any size never touches a command line.
pub fn build_acp_launch(
    adapter: &Adapter,
    acp: &AcpLaunch,
    spec: &TaskSpec,
    bin: &str,
    client: &str,
) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    let mut parts = vec![
        client.to_string(),
        "__acp".to_string(),
        format!("--prompt-file \"${PROMPT_VARIABLE}\""),
    ];
    let options = spec.acp.clone().unwrap_or_default();
    if options.once {
        parts.push("--once".to_string());
    }
    if let Some(epoch) = options.load_not_before {
        parts.push(format!("--load-not-before {epoch}"));
    }
    if spec.skips_permissions() {
        parts.push("--bypass".to_string());
    }
    for (kind, decision) in &options.permissions {
        parts.push(format!("--allow={}:{}", kind.as_str(), decision.as_str()));
    }
    if let Some(approval) = spec.approval_mode.as_deref() {
        match acp.mode_id(approval) {
            Some(id) => parts.push(format!("--session-mode {}", single_quote(id)?)),
            None => warnings.push(format!(
                "{} has no ACP mode for approval_mode '{approval}'; ignored",
                adapter.kind()
            )),
        }
    }
    if let Some(session) = spec.resume_session.as_deref() {
        parts.push(format!("--load-session {}", single_quote(session)?));
    }
    let model = spec.model.as_deref();
    if let (Some(model), None) = (model, acp.model_flag) {
        parts.push(format!("--session-model {}", single_quote(model)?));
    }
    for (name, value) in acp.env {
        parts.push(format!(
            "--env {}",
            single_quote(&format!("{name}={value}"))?
        ));
    }
    parts.push("--".to_string());
    let agent_at = parts.join(" ").len() + 1;
    parts.push(match acp.program {
        Some(program) => super::shell_word_for_bin(program)?,
        None => super::shell_word_for_bin(bin)?,
    });
    parts.extend(acp.args.iter().map(|arg| arg.to_string()));
    if let (Some(model), Some(flag)) = (model, acp.model_flag) {
        parts.push(super::model_arg(adapter, flag, model, &mut warnings)?);
    }
    Ok(LaunchCommand {
        command: parts.join(" "),
        warnings,
        event_stream: false,
        agent_at: Some(agent_at),
    })
}
