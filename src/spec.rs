//! What the parent asked for, independent of how any agent is launched.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The agent's own TUI on a TTY: attachable and steerable.
    Interactive,
    /// A single-shot headless run: attachable, not steerable.
    Batch,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Interactive => "interactive",
            Mode::Batch => "batch",
        }
    }

    pub fn parse(value: &str) -> Result<Mode> {
        match value {
            "interactive" => Ok(Mode::Interactive),
            "batch" => Ok(Mode::Batch),
            other => Err(Error::invalid_input(format!(
                "unknown mode '{other}'; expected 'interactive' or 'batch'"
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
}

impl TaskSpec {
    /// Bypass is on unless the caller explicitly opted out (adapter design).
    pub fn skips_permissions(&self) -> bool {
        self.dangerously_skip_permissions.unwrap_or(true)
    }
}

/// The prompt a child agent receives: the objective first, then the optional parts as
/// labelled sections, so a human reading the transcript sees the same structure.
pub fn render_prompt(spec: &TaskSpec) -> String {
    let mut prompt = spec.objective.trim_end().to_string();
    if let Some(context) = spec.context.as_deref().map(str::trim_end)
        && !context.is_empty()
    {
        prompt.push_str("\n\nContext:\n");
        prompt.push_str(context);
    }
    if !spec.constraints.is_empty() {
        prompt.push_str("\n\nConstraints:");
        for constraint in &spec.constraints {
            prompt.push_str("\n- ");
            prompt.push_str(constraint.trim());
        }
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
    fn permissions_bypass_defaults_on() {
        let mut spec = TaskSpec::default();
        assert!(spec.skips_permissions());
        spec.dangerously_skip_permissions = Some(false);
        assert!(!spec.skips_permissions());
    }
}
