//! The team spec `cuekit team submit NAME --spec FILE` reads: a YAML list of members, each what
//! one `cuekit submit` would say, or a mapping `{max_parallel, members}` whose members may name
//! the members they run after (`after: [implement]`), so one spec is a pipeline. A mistake is an
//! error naming file, line and column, and nothing is started.

use std::path::PathBuf;

use serde::Deserialize;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::spec::Mode;
use crate::effects::config::DurationText;

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
    /// Run this member in its own git worktree (see `submit --worktree`), from `base`: a git
    /// ref, or a member's name (its branch tip once it completed, as `--base-from`).
    pub worktree: Option<bool>,
    pub base: Option<String>,
    /// The member's name, for other members' `after`.
    pub name: Option<String>,
    /// Members (by name) that must have completed before this one starts.
    #[serde(default)]
    pub after: Vec<String>,
    /// A member (by name) whose answer goes into this one's prompt; it runs after it.
    pub context_from: Option<String>,
    /// The member's check (`submit --check`): code of the spec's own, so the spec must be
    /// trusted.
    pub check: Option<TeamCheck>,
    /// The agents (`K` or `K:MODEL`) the member goes on with when its agent is rate limited
    /// (see `submit --fallback`).
    pub fallback: Option<Vec<String>>,
}

/// A member's `check: {run, rounds, timeout, protect}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamCheck {
    pub run: Vec<String>,
    pub rounds: Option<u32>,
    pub timeout: Option<DurationText>,
    #[serde(default)]
    pub protect: Vec<String>,
    #[serde(default)]
    pub keep_open: bool,
}

/// The mapping form of a spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TeamFile {
    /// At most this many members run at once; the others wait `queued`.
    max_parallel: Option<u32>,
    budget: Option<TeamBudget>,
    members: Vec<TeamMember>,
}

/// What the members may spend together (each member's usage as its agent reports it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamBudget {
    pub tokens: u64,
}

/// A spec's members, in an order where each comes after the members it names, and its cap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Team {
    pub max_parallel: Option<u32>,
    pub budget: Option<TeamBudget>,
    pub members: Vec<TeamMember>,
}

/// A team spec as read: its members, the file they came from and whether the user trusts that
/// exact content (members that run the `command` agent need it).
#[derive(Debug, Clone)]
pub struct TeamSpec {
    pub path: std::path::PathBuf,
    pub team: Team,
    pub trust: crate::effects::trust::TrustState,
}

/// Parses a team spec; `label` names the file in errors.
pub fn parse_team_spec(text: &str, label: &str) -> Result<Team> {
    if let Some((line, column)) =
        crate::domain::yaml_depth::too_deep(text, crate::domain::yaml_depth::MAX_DEPTH)
    {
        return Err(Error::new(
            ErrorCode::InvalidInput,
            format!(
                "{label}:{line}:{column}: {}",
                crate::domain::yaml_depth::message()
            ),
        ));
    }
    // The form is told by the document's root; each form is then read from the text itself,
    // so a mistake keeps its line and column.
    let mapping = matches!(
        serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text),
        Ok(serde_yaml_ng::Value::Mapping(_))
    );
    let located = |err: serde_yaml_ng::Error| {
        let (line, column) = err.location().map_or((1, 1), |at| (at.line(), at.column()));
        let message = err.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message);
        Error::new(
            ErrorCode::InvalidInput,
            format!("{label}:{line}:{column}: {message}"),
        )
        .with_hint(
            "a team spec is a YAML list of members (`- objective: …` with optional name, after, \
             context_from, role, agent, model, mode, approval_mode, cwd, context, constraints, \
             timeout, argv, worktree, base), or a mapping `{max_parallel: N, budget: {tokens: N}, members: [...]}`",
        )
    };
    let team = if mapping {
        let file: TeamFile = serde_yaml_ng::from_str(text).map_err(located)?;
        Team {
            max_parallel: file.max_parallel,
            budget: file.budget,
            members: file.members,
        }
    } else {
        Team {
            max_parallel: None,
            budget: None,
            members: serde_yaml_ng::from_str(text).map_err(located)?,
        }
    };
    if let Some(index) = team
        .members
        .iter()
        .position(|m| m.objective.trim().is_empty())
    {
        return Err(Error::invalid_input(format!(
            "{label}: member {} has an empty objective",
            index + 1
        ))
        .with_hint("say what each member should do"));
    }
    if team.max_parallel == Some(0) {
        return Err(Error::invalid_input(format!(
            "{label}: max_parallel must be at least 1"
        )));
    }
    Ok(Team {
        members: in_dependency_order(team.members, label)?,
        ..team
    })
}

/// The members ordered so that each follows those it names in `after`: an unknown or repeated
/// name, or a cycle, is refused.
fn in_dependency_order(members: Vec<TeamMember>, label: &str) -> Result<Vec<TeamMember>> {
    let mut names = std::collections::HashSet::new();
    for member in &members {
        if let Some(name) = &member.name
            && !names.insert(name.clone())
        {
            return Err(Error::invalid_input(format!(
                "{label}: two members are named '{name}'"
            )));
        }
    }
    // A member's `context_from`, and a `base` that names a member, make it wait for that one.
    let mut members = members;
    for member in &mut members {
        let base_member = member.base.clone().filter(|base| names.contains(base));
        for from in [member.context_from.clone(), base_member]
            .into_iter()
            .flatten()
        {
            if !member.after.contains(&from) {
                member.after.push(from);
            }
        }
    }
    for member in &members {
        if let Some(unknown) = member.after.iter().find(|a| !names.contains(*a)) {
            return Err(Error::invalid_input(format!(
                "{label}: member '{}' runs after '{unknown}', which no member is named",
                member.name.as_deref().unwrap_or(&member.objective)
            ))
            .with_hint(format!("give that member `name: {unknown}`")));
        }
    }
    let mut placed: Vec<TeamMember> = Vec::with_capacity(members.len());
    let mut left = members;
    while !left.is_empty() {
        let ready = left.iter().position(|member| {
            member.after.iter().all(|after| {
                placed
                    .iter()
                    .any(|p| p.name.as_deref() == Some(after.as_str()))
            })
        });
        let Some(ready) = ready else {
            let names: Vec<&str> = left.iter().filter_map(|m| m.name.as_deref()).collect();
            return Err(Error::invalid_input(format!(
                "{label}: the members {} run after each other in a cycle",
                names.join(", ")
            ))
            .with_hint("each `after` must name a member that does not, in turn, wait on it"));
        };
        placed.push(left.remove(ready));
    }
    Ok(placed)
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
        .unwrap()
        .members;
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].role.as_deref(), Some("worker"));
        assert_eq!(
            members[0].timeout.unwrap().0,
            std::time::Duration::from_secs(600)
        );
        assert_eq!(members[1].mode, Some(Mode::Batch));
    }

    #[test]
    fn the_mapping_form_is_a_pipeline_in_dependency_order() {
        let team = parse_team_spec(
            "max_parallel: 2\nmembers:\n\
             - {name: review, after: [test], objective: review it}\n\
             - {name: implement, objective: write it}\n\
             - {name: test, after: [implement], objective: test it}\n",
            "team.yaml",
        )
        .unwrap();
        assert_eq!(team.max_parallel, Some(2));
        let order: Vec<&str> = team
            .members
            .iter()
            .map(|m| m.name.as_deref().unwrap())
            .collect();
        assert_eq!(order, ["implement", "test", "review"]);
        let cycle = parse_team_spec(
            "members:\n- {name: a, after: [b], objective: x}\n- {name: b, after: [a], objective: y}\n",
            "t.yaml",
        )
        .unwrap_err();
        assert!(cycle.message.contains("cycle"), "{}", cycle.message);
        let unknown =
            parse_team_spec("members:\n- {after: [nobody], objective: x}\n", "t.yaml").unwrap_err();
        assert!(unknown.message.contains("'nobody'"), "{}", unknown.message);
        let located =
            parse_team_spec("members:\n- objective: x\n  budgett: 1\n", "t.yaml").unwrap_err();
        assert!(
            located.message.starts_with("t.yaml:3:3:"),
            "{}",
            located.message
        );
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
