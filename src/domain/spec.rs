//! What the parent asked for, independent of how any agent is launched.

use serde::{Deserialize, Serialize};

use crate::domain::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The agent's own TUI on a TTY: attachable and steerable.
    Interactive,
    /// A single-shot headless run: attachable, not steerable.
    Batch,
    /// The agent speaks the Agent Client Protocol with cuekit's client, which runs in the pane:
    /// attachable (the client renders the session) and steered over the protocol.
    Acp,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Interactive => "interactive",
            Mode::Batch => "batch",
            Mode::Acp => "acp",
        }
    }

    pub fn parse(value: &str) -> Result<Mode> {
        match value {
            "interactive" => Ok(Mode::Interactive),
            "batch" => Ok(Mode::Batch),
            "acp" => Ok(Mode::Acp),
            other => Err(Error::invalid_input(format!(
                "unknown mode '{other}'; expected 'interactive', 'batch' or 'acp'"
            ))),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    pub agent_kind: String,
    pub objective: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Agent-specific approval mode (Gemini: default | auto_edit | yolo | plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<String>,
    /// `None` means "not said": the adapter default (bypass on) applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dangerously_skip_permissions: Option<bool>,
    /// Batch runs print a structured event stream where the agent can (`None`: yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_events: Option<bool>,
    /// The agent session to start under a chosen id, so cuekit knows it without asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// An earlier agent session to continue instead of starting a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_session: Option<String>,
    /// jcode's provider profile (`--provider-profile`); other agents have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_profile: Option<String>,
    /// For the `command` agent: the program and its arguments, word for word.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// The role (agent profile) the task was submitted with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The role's instructions as resolved at submit time, so the record explains the prompt
    /// even after the profile file changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_instructions: Option<String>,
    /// Tell the child how to report back with `cuekit report` (tasks in a team or with a role).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub report_hint: bool,
    /// An ACP task's own settings (`--mode acp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acp: Option<crate::domain::acp::policy::AcpSpec>,
}

impl TaskSpec {
    /// Bypass is on unless the caller explicitly opted out (adapter design).
    pub fn skips_permissions(&self) -> bool {
        self.dangerously_skip_permissions.unwrap_or(true)
    }
}

/// The paragraph that tells a child how to talk back to its parent; short, because it is read
/// by every child of a team on every run.
pub const REPORT_HINT: &str = "Reporting back: you run as a cuekit task, and your parent reads \
your reports. If you are blocked and need something from it (a decision, access, a missing \
input), run `cuekit report --blocked \"what you need\"` in your shell; on long work, \
`cuekit report --progress \"where you are\"` now and then; when you finish, \
`cuekit report --done \"what you did\"` (or `--failed \"why\"`).";

/// The prompt a child agent receives: the objective first, then the optional parts as
/// labelled sections, so a human reading the transcript sees the same structure. The role's
/// instructions come before the constraints, so the task's own rules are read last.
pub fn render_prompt(spec: &TaskSpec) -> String {
    let mut prompt = spec.objective.trim_end().to_string();
    if let Some(context) = spec.context.as_deref().map(str::trim_end)
        && !context.is_empty()
    {
        prompt.push_str("\n\nContext:\n");
        prompt.push_str(context);
    }
    if let Some(instructions) = spec.role_instructions.as_deref().map(str::trim)
        && !instructions.is_empty()
    {
        let role = spec.role.as_deref().unwrap_or("assigned");
        prompt.push_str(&format!("\n\nInstructions for your role ({role}):\n"));
        prompt.push_str(instructions);
    }
    if !spec.constraints.is_empty() {
        prompt.push_str("\n\nConstraints:");
        for constraint in &spec.constraints {
            prompt.push_str("\n- ");
            prompt.push_str(constraint.trim());
        }
    }
    if spec.report_hint {
        prompt.push_str("\n\n");
        prompt.push_str(REPORT_HINT);
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objective_alone_is_the_prompt() {
        let spec = TaskSpec {
            objective: "fix the build\n".into(),
            ..TaskSpec::default()
        };
        assert_eq!(render_prompt(&spec), "fix the build");
    }

    #[test]
    fn context_and_constraints_become_sections() {
        let spec = TaskSpec {
            objective: "fix the build".into(),
            context: Some("CI fails on main".into()),
            constraints: vec!["no new deps".into(), " keep tests green ".into()],
            ..TaskSpec::default()
        };
        assert_eq!(
            render_prompt(&spec),
            "fix the build\n\nContext:\nCI fails on main\n\nConstraints:\n- no new deps\n- keep tests green"
        );
    }

    #[test]
    fn role_instructions_come_before_constraints_and_the_report_hint_last() {
        let spec = TaskSpec {
            objective: "review the PR".into(),
            constraints: vec!["be brief".into()],
            role: Some("reviewer".into()),
            role_instructions: Some("Read the diff.\n".into()),
            report_hint: true,
            ..TaskSpec::default()
        };
        assert_eq!(
            render_prompt(&spec),
            format!(
                "review the PR\n\nInstructions for your role (reviewer):\nRead the diff.\n\n\
                 Constraints:\n- be brief\n\n{REPORT_HINT}"
            )
        );
    }

    #[test]
    fn permissions_bypass_defaults_on() {
        let mut spec = TaskSpec::default();
        assert!(spec.skips_permissions());
        spec.dangerously_skip_permissions = Some(false);
        assert!(!spec.skips_permissions());
    }
}
