//! The team spec `cuekit team submit NAME --spec FILE` reads: a YAML list of members, each what
//! one `cuekit submit` would say. A mistake is an error naming file, line and column, and
//! nothing is started.

use std::path::PathBuf;

use serde::Deserialize;

use crate::config::DurationText;
use crate::error::{Error, ErrorCode, Result};
use crate::spec::Mode;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamMember {
    /// What this member should do.
    pub objective: String,
    pub role: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub approval_mode: Option<String>,
    /// Where the member works; relative to the directory `team submit` runs in.
    pub cwd: Option<PathBuf>,
    pub context: Option<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
    pub timeout: Option<DurationText>,
    /// For the `command` agent: the program and its arguments.
    #[serde(default)]
    pub argv: Vec<String>,
    /// Run this member in its own git worktree (see `submit --worktree`), from `base`.
    pub worktree: Option<bool>,
    pub base: Option<String>,
}

/// A team spec as read: its members, the file they came from and whether the user trusts that
/// exact content (members that run the `command` agent need it).
#[derive(Debug, Clone)]
pub struct TeamSpec {
    pub path: std::path::PathBuf,
    pub members: Vec<TeamMember>,
    pub trust: crate::trust::TrustState,
}

/// Parses a team spec; `label` names the file in errors.
pub fn parse_team_spec(text: &str, label: &str) -> Result<Vec<TeamMember>> {
    let members: Vec<TeamMember> = serde_yaml_ng::from_str(text).map_err(|err| {
        let (line, column) = err.location().map_or((1, 1), |at| (at.line(), at.column()));
        let message = err.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message);
        Error::new(
            ErrorCode::InvalidInput,
            format!("{label}:{line}:{column}: {message}"),
        )
        .with_hint(
            "a team spec is a YAML list of members: `- objective: …` with optional role, agent, \
             model, mode, approval_mode, cwd, context, constraints, timeout, argv",
        )
    })?;
    if let Some(index) = members.iter().position(|m| m.objective.trim().is_empty()) {
        return Err(Error::invalid_input(format!(
            "{label}: member {} has an empty objective",
            index + 1
        ))
        .with_hint("say what each member should do"));
    }
    Ok(members)
}

/// Team names are shown in tables and typed in shells: keep them plain.
pub fn check_name(name: &str) -> Result<()> {
    let plain = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !name.starts_with(['-', '.']);
    if plain {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "'{name}' is not a team name: use up to 64 letters, digits, '-', '_' and '.'"
        ))
        .with_hint("e.g. --team review-pr-42"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_members_parses() {
        let members = parse_team_spec(
            "- objective: fix the parser\n  role: worker\n  timeout: 10m\n\
             - objective: review it\n  role: reviewer\n  agent: claude-code\n  mode: batch\n",
            "team.yaml",
        )
        .unwrap();
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].role.as_deref(), Some("worker"));
        assert_eq!(
            members[0].timeout.unwrap().0,
            std::time::Duration::from_secs(600)
        );
        assert_eq!(members[1].mode, Some(Mode::Batch));
    }

    #[test]
    fn mistakes_are_located() {
        let err =
            parse_team_spec("- objective: a\n- objective: b\n  rol: x\n", "t.yaml").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert!(
            err.message
                .starts_with("t.yaml:3:3: .[1]: unknown field `rol`, expected one of"),
            "{}",
            err.message
        );
        let err = parse_team_spec("objective: not a list\n", "t.yaml").unwrap_err();
        assert!(err.message.starts_with("t.yaml:1:1:"), "{}", err.message);
        let err = parse_team_spec("- objective: '  '\n", "t.yaml").unwrap_err();
        assert!(err.message.contains("member 1 has an empty objective"));
    }
}
