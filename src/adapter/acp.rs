//! How each agent speaks the Agent Client Protocol, as data, and the one pure builder of an ACP
//! task's launch command: cuekit's own client (`cuekit __acp`) runs in the pane and starts the
//! agent with its ACP command on the client's pipes.

use serde::Serialize;

use super::{Adapter, LaunchCommand};
use crate::error::Result;
use crate::launch::{PROMPT_VARIABLE, single_quote};
use crate::spec::TaskSpec;

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
    })
}
