//! Teams: a label on tasks, so a parent can fan one job out and then follow, steer, stop and
//! read the members together. There is no team record: the members are the registered tasks
//! carrying the label, whichever directory each works in.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::steer::SteerReceipt;
use super::submit::{SubmitOutcome, SubmitRequest};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::spec::Mode;
use crate::domain::status::Status;
use crate::effects::store::TaskRecord;
use crate::effects::team::TeamSpec;
use crate::ops::result::outcome::TaskResult;
use crate::ops::task::view::TaskView;

fn members(name: &str) -> Result<Vec<TaskRecord>> {
    crate::effects::team::check_name(name)?;
    // Only tasks the registry vouches for: an untrusted record cannot join a team, and one
    // unreadable record does not stop the others.
    let mut records = Vec::new();
    for found in super::task::scan_registry()? {
        if let super::task::Found::Trusted(task) = found
            && task.record.team.as_deref() == Some(name)
        {
            records.push(task.record);
        }
    }
    if records.is_empty() {
        return Err(
            Error::new(ErrorCode::TaskNotFound, format!("no task in team '{name}'")).with_hint(
                "submit into a team with `cuekit submit --team NAME …` or `cuekit team submit`",
            ),
        );
    }
    records.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(records)
}

/// The ids of a team's members, oldest first; an empty team is `task_not_found`.
pub fn team_ids(name: &str) -> Result<Vec<String>> {
    Ok(members(name)?.into_iter().map(|r| r.id).collect())
}

/// The members' views, oldest first (as `list` shows them, with live progress).
pub fn team_list(name: &str, cwd: &Path) -> Result<Vec<TaskView>> {
    super::status(&team_ids(name)?, cwd)
}

/// A member that waits on someone: its screen says so, or its last report is `blocked`.
#[derive(Debug, Clone, Serialize)]
pub struct Waiting {
    pub id: String,
    /// `blocked` (from its report) or the input_required reason read off its screen.
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TeamSummary {
    pub team: String,
    pub total: usize,
    /// Members per status (`running`, `input_required`, `completed`, …).
    pub counts: BTreeMap<&'static str, usize>,
    /// Members that wait on a human or on the parent.
    pub waiting: Vec<Waiting>,
    pub tasks: Vec<TaskView>,
}

pub fn team_status(name: &str, cwd: &Path) -> Result<TeamSummary> {
    let tasks = super::status(&team_ids(name)?, cwd)?;
    let mut counts = BTreeMap::new();
    for task in &tasks {
        *counts.entry(task.status.as_str()).or_default() += 1;
    }
    let waiting = tasks
        .iter()
        .filter_map(|task| {
            if task.status == Status::InputRequired {
                Some(Waiting {
                    id: task.id.clone(),
                    reason: task.reason.clone().unwrap_or_default(),
                    message: task.hint.clone(),
                })
            } else if task.blocked && !task.status.is_terminal() {
                Some(Waiting {
                    id: task.id.clone(),
                    reason: "blocked".into(),
                    message: task.last_report.as_ref().map(|r| r.message.clone()),
                })
            } else {
                None
            }
        })
        .collect();
    Ok(TeamSummary {
        team: name.to_string(),
        total: tasks.len(),
        counts,
        waiting,
        tasks,
    })
}

/// The same message to every running interactive member, one receipt each. Members that
/// ended or run in batch mode are left out; a team with none to steer is `invalid_state`.
pub fn team_steer(name: &str, cwd: &Path, message: &str) -> Result<Vec<SteerReceipt>> {
    let targets: Vec<TaskView> = super::status(&team_ids(name)?, cwd)?
        .into_iter()
        .filter(|task| !task.status.is_terminal() && task.mode == Some(Mode::Interactive))
        .collect();
    if targets.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("team '{name}' has no running interactive member to steer"),
        )
        .with_hint("see the members with `cuekit status --team NAME`"));
    }
    targets
        .iter()
        .map(|task| super::steer(&task.id, cwd, message))
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct TeamResult {
    pub team: String,
    pub results: Vec<TaskResult>,
}

pub fn team_result(name: &str, cwd: &Path) -> Result<TeamResult> {
    let results = team_ids(name)?
        .iter()
        .map(|id| super::result(id, cwd))
        .collect::<Result<Vec<_>>>()?;
    Ok(TeamResult {
        team: name.to_string(),
        results,
    })
}

#[derive(Debug, Clone, Serialize)]
pub struct TeamSubmitted {
    pub team: String,
    pub tasks: Vec<SubmitOutcome>,
}

/// Submits every member into team `name`. All roles and agents are checked before the first
/// member starts; a member that still fails to start stops the rest, and the error names the
/// members already running (they carry the label, so `cancel --team` reaches them).
///
/// The spec is the repository's word: a member that runs the `command` agent (its own words
/// as the program) starts only from a spec the user trusted (`cuekit trust SPEC`), as the keys
/// of a project file that run code do.
pub fn team_submit(name: &str, spec: &TeamSpec, cwd: &Path) -> Result<TeamSubmitted> {
    crate::effects::team::check_name(name)?;
    let members = spec.team.members.clone();
    let max_parallel = spec.team.max_parallel;
    let team_budget = spec
        .team
        .budget
        .map(|budget| crate::effects::store::Budget {
            team_tokens: Some(budget.tokens),
            ..Default::default()
        });
    if members.is_empty() {
        return Err(Error::invalid_input("the team spec lists no members")
            .with_hint("list at least one `- objective: …`"));
    }
    // Members that carry code of the spec's own (a program to run) need the spec trusted,
    // whatever agent they end with: checked on the spec's words first, and again below on the
    // agent each member resolves to (the user's `defaults.agent: command` makes a member with
    // no `agent` run its `argv`).
    let commands: Vec<usize> = members
        .iter()
        .enumerate()
        .filter(|(_, member)| member_runs_code(member))
        .map(|(index, _)| index)
        .collect();
    refuse_untrusted_members(spec, &commands)?;
    // A member works inside the folder the team is submitted from: the spec is the
    // repository's word, and may not send an agent with its bypass flag into another project.
    let root = crate::effects::project::Root::new(cwd)?;
    let dirs = members
        .iter()
        .enumerate()
        .map(|(index, member)| {
            member
                .cwd
                .as_deref()
                .map(|dir| root.subdir(dir))
                .transpose()
                .map_err(|err| member_error(err, index, &[]))
        })
        .collect::<Result<Vec<_>>>()?;
    let fallbacks = members
        .iter()
        .enumerate()
        .map(|(index, member)| {
            member
                .fallback
                .as_ref()
                .map(|list| super::schedule::parse_fallback(&list.join(",")))
                .transpose()
                .map_err(|err| member_error(err, index, &[]))
        })
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = members.iter().filter_map(|m| m.name.clone()).collect();
    let links: Vec<Links> = members
        .iter()
        .map(|member| Links {
            name: member.name.clone(),
            after: member.after.clone(),
            context_from: member.context_from.clone(),
            base_member: member.base.clone().filter(|base| names.contains(base)),
        })
        .collect();
    let members: Vec<SubmitRequest> = members
        .into_iter()
        .zip(dirs)
        .zip(fallbacks)
        .map(|((member, dir), fallback)| SubmitRequest {
            agent: member.agent,
            objective: member.objective,
            context: member.context,
            constraints: member.constraints,
            model: member.model,
            mode: member.mode,
            approval_mode: member.approval_mode,
            cwd: dir,
            timeout: member.timeout.map(|t| t.0),
            argv: member.argv,
            role: member.role,
            team: Some(name.to_string()),
            // A race is the user's to start (`submit --best-of`), never a spec member's.
            race: None,
            // A base that names a member is that member's branch tip, once it exists.
            worktree: member.worktree.or(member
                .base
                .as_ref()
                .filter(|b| names.contains(b))
                .map(|_| true)),
            base: member.base.filter(|base| !names.contains(base)),
            // The spec is the project's word: its permission choices may only tighten.
            asked_by: super::submit::Asker::Delegate,
            scheduling: super::schedule::Scheduling {
                team_max: max_parallel,
                fallback,
                ..Default::default()
            },
            budget: team_budget.clone(),
            // The rest is the user's to ask, never a spec's.
            dangerously_skip_permissions: None,
            stream_events: None,
            resume_from: None,
            provider_profile: None,
            dry_run: false,
            branch: None,
            id: None,
            once: None,
            host: None,
            sandbox: super::sandbox::SandboxRequest::default(),
            wake_parent: false,
            // Code of the spec's own: the spec was proven trusted above.
            check: member.check.map(|check| super::submit::CheckRequest {
                run: check.run,
                rounds: check.rounds,
                timeout: check.timeout.map(|t| t.0),
                protect: check.protect,
                keep_open: check.keep_open,
            }),
        })
        .collect();
    // A dry run of each is the whole check (role, agent, mode, model, directory), with
    // nothing started.
    for (index, member) in members.iter().enumerate() {
        let check = SubmitRequest {
            dry_run: true,
            ..member.clone()
        };
        let checked = super::submit(check, cwd).map_err(|err| member_error(err, index, &[]))?;
        if let SubmitOutcome::DryRun { agent_kind, .. } = &checked
            && agent_kind == "command"
        {
            refuse_untrusted_members(spec, &[index])?;
        }
    }
    let mut tasks = Vec::new();
    let mut started = Vec::new();
    // Members come in dependency order: each `after` names a member submitted already.
    let mut ids_by_name = std::collections::HashMap::new();
    for (index, (mut member, links)) in members.into_iter().zip(links).enumerate() {
        let id_of = |name: &String| ids_by_name.get(name).cloned();
        member.scheduling.after = links.after.iter().filter_map(id_of).collect();
        member.scheduling.context_from = links.context_from.as_ref().and_then(id_of);
        member.scheduling.base_from = links.base_member.as_ref().and_then(id_of);
        let member_name = links.name;
        let outcome =
            super::submit(member, cwd).map_err(|err| member_error(err, index, &started))?;
        if let SubmitOutcome::Submitted(task) = &outcome {
            if team_budget.is_some() {
                crate::effects::store::schedule::join_team_budget(name, &task.id)
                    .map_err(|err| member_error(err, index, &started))?;
            }
            started.push(task.id.clone());
            if let Some(member_name) = member_name {
                ids_by_name.insert(member_name, task.id.clone());
            }
        }
        tasks.push(outcome);
    }
    Ok(TeamSubmitted {
        team: name.to_string(),
        tasks,
    })
}

/// Whether a member's own words name code to run: the `command` agent, a program (`argv`)
/// for whichever agent it ends with, or a check.
fn member_runs_code(member: &crate::effects::team::TeamMember) -> bool {
    member.agent.as_deref() == Some("command") || !member.argv.is_empty() || member.check.is_some()
}

/// `config_untrusted` when `members` (indexes) is not empty and the spec's bytes are not the
/// ones the user trusted.
fn refuse_untrusted_members(spec: &TeamSpec, members: &[usize]) -> Result<()> {
    if members.is_empty() || spec.trust == crate::effects::trust::TrustState::Trusted {
        return Ok(());
    }
    let numbers: Vec<String> = members
        .iter()
        .map(|index| (index + 1).to_string())
        .collect();
    Err(Error::new(
        ErrorCode::ConfigUntrusted,
        format!(
            "{} is {} and its members {} run code of the spec's own (the command agent, an argv or a check)",
            spec.path.display(),
            spec.trust.as_str(),
            numbers.join(", ")
        ),
    )
    .with_hint(format!(
        "read the spec; if you trust it, run `cuekit trust {}`",
        crate::domain::launch::single_quote(&spec.path.to_string_lossy()).unwrap_or_default()
    )))
}

/// How a member is tied to the members before it, by name.
struct Links {
    name: Option<String>,
    after: Vec<String>,
    context_from: Option<String>,
    /// Its `base`, when that names a member.
    base_member: Option<String>,
}

fn member_error(err: Error, index: usize, started: &[String]) -> Error {
    let hint = if started.is_empty() {
        err.hint.unwrap_or_else(|| "nothing was started".into())
    } else {
        format!(
            "already running: {} (end them with `cuekit cancel --team NAME`)",
            started.join(", ")
        )
    };
    Error::new(err.code, format!("member {}: {}", index + 1, err.message)).with_hint(hint)
}

/// A team spec file as `cuekit team submit --spec FILE` names it: read through the project
/// door, with the trust its bytes have now.
pub fn read_team_spec(file: &Path) -> Result<TeamSpec> {
    let bytes = crate::effects::project::files::read_named(file)?;
    let path = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let trust = crate::effects::trust::state(&path, &bytes);
    let text = String::from_utf8(bytes).map_err(|err| {
        Error::invalid_input(format!(
            "the team spec in {} is not UTF-8 text (the byte at offset {} is not valid UTF-8)",
            file.display(),
            err.utf8_error().valid_up_to()
        ))
        .with_hint("convert it to UTF-8 first, e.g. `iconv -f LATIN1 -t UTF-8 FILE`")
    })?;
    let team = crate::effects::team::parse_team_spec(&text, &file.display().to_string())?;
    Ok(TeamSpec { path, team, trust })
}
