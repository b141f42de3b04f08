//! A task going on with another agent (a failover on a rate limit, a hand-off): the attempt's
//! ending is recorded in the plan, the registry names the new agent (so its per-agent limit
//! holds the start back), and the next start, in the same work dir, tells the new agent the
//! recap ([`crate::domain::recap`]) instead of the prompt. What carries over: the work dir,
//! the check and its rounds, the budget, the dependents (they wait on the task, which has not
//! ended), and the sandbox, re-planned for the new agent at its start.

use std::time::{Duration, SystemTime};

use crate::domain::error::Result;
use crate::domain::failover::Fallback;
use crate::domain::recap::{self, ChangedFile, RecapInput};
use crate::domain::status::Status;
use crate::effects::store::{self, schedule, schedule::Plan, schedule::Switch};
use crate::ops::task::Task;

/// How the attempt that ends is recorded.
pub(crate) struct Ended<'a> {
    pub reason: &'a str,
    pub exit_code: Option<i32>,
    /// The wait the agent asked for (its limit's reset), if it named one.
    pub reset: Option<Duration>,
}

/// Whether `next` may take over `task`: a task that asks for approvals inside a sandbox goes
/// only to an agent whose sandbox needs are verified (else it fails closed).
pub(crate) fn may_take(task: &Task, next: &Fallback) -> bool {
    let spec = store::kept_spec(&task.record.id).unwrap_or_else(|_| task.record.spec.clone());
    let sandboxed = task
        .placement
        .facts
        .as_ref()
        .and_then(|facts| facts.sandbox.as_ref())
        .is_some_and(|policy| policy.mode == crate::domain::sandbox::SandboxMode::Bwrap);
    !(sandboxed
        && crate::ops::sandbox::asks_for_approvals(&spec)
        && !crate::ops::sandbox::VERIFIED_AGENTS.contains(&next.agent.as_str()))
}

/// Queues the task's next attempt on `next`: the running attempt's ending goes into the plan,
/// the record says `queued` (with `hint`), the registry and the kept spec name the new agent.
/// `Ok(None)`: the look was at an attempt another has followed since (nothing is written).
pub(crate) fn queue_switch(
    task: &Task,
    plan: Plan,
    ended: &Ended,
    next: &Fallback,
    message: Option<String>,
    hint: &str,
) -> Result<Option<Task>> {
    let plan = journal(task, plan, ended, next, message);
    commit_switch(task, &plan, ended, hint)
}

/// The plan with the running attempt's ending and the switch to `next` in it (written by
/// [`commit_switch`], or first by a hand-off, before it ends the attempt).
pub(crate) fn journal(
    task: &Task,
    mut plan: Plan,
    ended: &Ended,
    next: &Fallback,
    message: Option<String>,
) -> Plan {
    let now = crate::effects::clock::now_rfc3339();
    let resets = ended.reset.map(|wait| {
        let at = humantime::format_rfc3339_seconds(SystemTime::now() + wait).to_string();
        at.get(11..16).unwrap_or(&at).to_string()
    });
    let from = task.record.spec.agent_kind.clone();
    let from_model = task.record.spec.model.clone();
    if plan.attempts.is_empty() {
        plan.attempts.push(schedule::Attempt {
            started_at: task.record.created_at.clone(),
            agent: Some(from.clone()),
            model: from_model.clone(),
            ..Default::default()
        });
    }
    if let Some(last) = plan.attempts.last_mut().filter(|a| a.ended_at.is_none()) {
        last.ended_at = Some(now);
        last.reason = Some(ended.reason.to_string());
        last.exit_code = ended.exit_code;
        last.resets = resets;
        last.agent.get_or_insert_with(|| from.clone());
    }
    plan.not_before = None;
    plan.switch = Some(Switch {
        agent: next.agent.clone(),
        model: next.model.clone(),
        from,
        from_model,
        reason: ended.reason.to_string(),
        message,
    });
    plan
}

/// Carries out a switch the plan holds (its last attempt ended, `plan.switch` the next
/// agent). The plan is written first and the record's `queued` last, so a process killed at
/// any instant leaves either a task still `running` whose plan holds the decision (the next
/// look finishes it: [`finish_pending`]) or a task queued with its mark — never one `queued`
/// that the scheduler does not know of.
pub(crate) fn commit_switch(
    task: &Task,
    plan: &Plan,
    ended: &Ended,
    hint: &str,
) -> Result<Option<Task>> {
    let id = &task.record.id;
    let Some(next) = plan.switch.as_ref().map(|switch| Fallback {
        agent: switch.agent.clone(),
        model: switch.model.clone(),
    }) else {
        return Ok(None);
    };
    let fresh = crate::ops::task::reread(&task.placement)?;
    if fresh.status != Status::Running || fresh.started_at != task.record.started_at {
        return Ok(None);
    }
    schedule::save_plan(id, plan)?;
    name_agent(task, &next)?;
    // The scheduler leaves a mark alone while the record says `running`.
    schedule::enqueue(id)?;
    let mut queued = false;
    let record = store::update(&task.placement.task_dir, |record| {
        if record.status != Status::Running || record.started_at != task.record.started_at {
            return Ok(false);
        }
        record.status = Status::Queued;
        record.reason = Some(ended.reason.to_string());
        record.exit_code = ended.exit_code;
        record.hint = Some(hint.to_string());
        record.spec.agent_kind = next.agent.clone();
        record.spec.model = next.model.clone();
        queued = true;
        Ok(true)
    })?;
    if !queued {
        return Ok(None);
    }
    schedule::free_slot(id);
    schedule::close_gate(id);
    crate::ops::background::monitor_lock::ensure_scheduler();
    let mut task = task.clone();
    task.record = record;
    Ok(Some(task))
}

/// A switch decided for the attempt that ended but cut short before the record said
/// `queued` (its process was killed): the plan's last attempt is ended and holds the
/// switch. `Some`: it is carried out now, as decided.
pub(crate) fn finish_pending(task: &Task, plan: &Plan) -> Option<Result<Option<Task>>> {
    let switch = plan.switch.as_ref()?;
    let last = plan.attempts.last().filter(|a| a.ended_at.is_some())?;
    let n = plan.attempts.len();
    let hint = format!(
        "attempt {n} ended {} on {}; attempt {} goes on with {} in the same work dir, told a \
         recap",
        switch.reason,
        switch.from,
        n + 1,
        Fallback {
            agent: switch.agent.clone(),
            model: switch.model.clone(),
        }
    );
    let ended = Ended {
        reason: &switch.reason,
        exit_code: last.exit_code,
        reset: None,
    };
    Some(commit_switch(task, plan, &ended, &hint))
}

/// The registry's agent and the kept spec's agent and model become the new agent's; the
/// agent session is the new agent's to make.
pub(super) fn name_agent(task: &Task, next: &Fallback) -> Result<()> {
    let id = &task.record.id;
    let mut spec = store::kept_spec(id)?;
    spec.agent_kind = next.agent.clone();
    spec.model = next.model.clone();
    spec.session_id = None;
    spec.resume_session = None;
    store::keep_spec(id, &spec)?;
    let Some(mut placement) = store::placement(id)? else {
        return Ok(());
    };
    if let Some(facts) = placement.facts.as_mut() {
        facts.agent = next.agent.clone();
        facts.agent_session_id = None;
    }
    store::stage_placement(&placement)?.commit()
}

/// What the recap is rendered from, read from what cuekit recorded: the kept spec, the result
/// its event filter wrote, the report it took, the check's verdict and log, git's view of the
/// work dir, the transcript's end.
pub(crate) fn recap_of(task: &Task, switch: &Switch) -> String {
    let record = &task.record;
    let kept = store::kept_spec(&record.id).unwrap_or_else(|_| record.spec.clone());
    let objective = match kept.context.as_deref().filter(|c| !c.trim().is_empty()) {
        Some(context) => format!("{}\n\nContext:\n{context}", kept.objective.trim_end()),
        None => kept.objective.clone(),
    };
    let answer = crate::ops::result::outcome::written_final_text(&record.task_dir);
    let reports = store::reports_of(&record.id);
    let check = store::check_of(&record.id);
    let verdict = check.as_ref().and_then(|state| state.verdicts.last());
    let check_tail = verdict
        .map(|v| tail_of(&record.task_dir.join(&v.log)))
        .unwrap_or_default();
    let changed: Vec<ChangedFile> = crate::ops::work::diff::changed_files(task)
        .unwrap_or_default()
        .into_iter()
        .map(|file| ChangedFile {
            path: file.path,
            added: file.insertions,
            removed: file.deletions,
        })
        .collect();
    let log = crate::ops::judge::attempt::transcript_end(record);
    let ended = if switch.reason == "handed_off" {
        "handed off by the user".to_string()
    } else {
        switch.reason.clone()
    };
    recap::render(&RecapInput {
        objective: &objective,
        previous_agent: &switch.from,
        previous_model: switch.from_model.as_deref(),
        ended: &ended,
        message: switch.message.as_deref(),
        last_answer: answer.as_deref(),
        reports: &reports,
        verdict: verdict.map(|v| (v, check_tail.as_str())),
        changed: &changed,
        log_tail: &log,
    })
}

/// The last 16 KiB of a log cuekit wrote in the task folder, its controls removed.
fn tail_of(path: &std::path::Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = store::open_own(path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut raw = Vec::new();
    let _ = file.take(16 * 1024).read_to_end(&mut raw);
    crate::domain::check::output_tail(&raw)
}

/// The new agent's session (`None`: it has none cuekit chose) and whether its stdout is an
/// event stream, in the registry.
pub(super) fn record_session(
    task_id: &str,
    session: Option<&str>,
    event_stream: bool,
) -> Result<()> {
    let Some(mut placement) = store::placement(task_id)? else {
        return Ok(());
    };
    if let Some(facts) = placement.facts.as_mut() {
        facts.agent_session_id = session.map(String::from);
        facts.event_stream = Some(event_stream);
    }
    store::stage_placement(&placement)?.commit()
}

/// A sandboxed task's kept environment re-planned for its next agent (`switch.agent`): the
/// names the previous agent alone was given — the secret-named variables of its `auth_env`,
/// its configured `adapters.<agent>.env` — unset, the next agent's own key variables (kept at
/// submit or by the hand-off, [`store::schedule::keys_path`]) and configured variables added.
/// Never both agents' secrets. An unsandboxed task's environment is the submitter's whole, as
/// its first start had it.
pub(crate) fn replan_env(
    task: &Task,
    switch: &store::schedule::Switch,
    config: &crate::effects::config::Config,
) -> Result<()> {
    if !task.in_bubblewrap() {
        return Ok(());
    }
    let id = &task.record.id;
    let next = crate::domain::adapter::lookup(&switch.agent)?;
    let Some(path) = store::schedule::env_path(id) else {
        return Ok(());
    };
    let Ok(kept) = store::read_small(&path) else {
        // No kept environment: the start says so.
        return Ok(());
    };
    let configured = config.env(next.kind());
    let mut unset: Vec<String> = Vec::new();
    if let Ok(previous) = crate::domain::adapter::lookup(&switch.from) {
        unset.extend(
            previous
                .auth_env
                .iter()
                .filter(|name| !next.auth_env.contains(name))
                .filter(|name| crate::domain::sandbox::looks_secret(name, ""))
                .map(|name| name.to_string()),
        );
        unset.extend(
            config
                .env(previous.kind())
                .into_keys()
                .filter(|name| !configured.contains_key(name)),
        );
    }
    let mut add = store::schedule::agent_keys(id)
        .remove(next.kind())
        .unwrap_or_default();
    add.extend(configured.into_iter().map(|(name, s)| (name, s.value)));
    let text =
        crate::domain::failover::env_for_next_agent(&String::from_utf8_lossy(&kept), &unset, add);
    store::schedule::write_private(&path, text.as_bytes())
}
