//! Best-of-N races (`submit --best-of N`): one request makes N candidates, each a checked task
//! in a checkout of its own, taking the agents and models given in turn. The race's id (`r_…`)
//! is accepted by `status`, `wait`, `cancel`, `rm` (its candidates), `result`, `merge` and
//! `diff`. When it can be decided ([`settle`]), the pick ([`crate::domain::race::pick`]) names
//! the winner; the losers' work is kept at refs of the race and their checkouts removed.

mod settle;
mod view;

use std::path::Path;

use serde::Serialize;

pub(crate) use settle::on_ending;
pub use settle::settle;
pub use view::{CandidatesDiff, RaceResult, diff_candidates, merge_race, race_result};

use super::submit::{SubmitOutcome, SubmitRequest};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::race::{in_turn, is_race_id};
use crate::effects::store::race::{self as store, RaceRecord};

/// The most candidates one race may have.
pub const MAX_CANDIDATES: u32 = 16;

/// `submit --best-of N` (MCP `best_of`).
#[derive(Debug, Clone)]
pub struct RaceRequest {
    /// What every candidate is asked; its `agent` and `model` stand where the lists are empty.
    pub task: SubmitRequest,
    pub best_of: u32,
    /// Taken in turn, candidate by candidate.
    pub agents: Vec<String>,
    pub models: Vec<String>,
    /// Decide at the first candidate that passes (the others are cancelled).
    pub first: bool,
    /// Merge the winner at once when it passed and conflicts with nothing.
    pub merge: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RaceSubmitted {
    pub race: String,
    pub candidates: Vec<SubmitOutcome>,
}

/// Submits every candidate. A candidate that cannot start stops the race: the others are
/// cancelled, and the error says so.
pub fn submit_race(request: RaceRequest, cwd: &Path) -> Result<RaceSubmitted> {
    refuse_unraceable(&request)?;
    let race = store::new_race_id();
    let mut record = RaceRecord {
        id: race.clone(),
        created_at: crate::effects::clock::now_rfc3339(),
        objective: request.task.objective.lines().next().unwrap_or("").into(),
        candidates: Vec::new(),
        repo: None,
        first: request.first,
        merge: request.merge,
        complete: false,
        decision: None,
    };
    if !request.task.dry_run {
        // Marked first: a submit killed from here on leaves a mark the next listing finishes
        // or undoes the race by ([`crate::ops::reap`]).
        store::mark_submitting(&race)?;
        store::save(&record)?;
    }
    // The candidates are submitted at once, each on a thread of its own: a submit mostly
    // waits on git and tmux, so the race costs little more than its slowest candidate.
    let outcomes: Vec<Result<SubmitOutcome>> = std::thread::scope(|scope| {
        let submits: Vec<_> = (0..request.best_of as usize)
            .map(|index| {
                let candidate = SubmitRequest {
                    agent: in_turn(&request.agents, index).or_else(|| request.task.agent.clone()),
                    model: in_turn(&request.models, index).or_else(|| request.task.model.clone()),
                    worktree: Some(true),
                    race: Some(race.clone()),
                    ..request.task.clone()
                };
                scope.spawn(move || super::submit(candidate, cwd))
            })
            .collect();
        submits
            .into_iter()
            .map(|submit| submit.join().expect("a candidate's submit never panics"))
            .collect()
    });
    record.candidates = outcomes
        .iter()
        .filter_map(|outcome| match outcome {
            Ok(SubmitOutcome::Submitted(task)) => Some(task.id.clone()),
            _ => None,
        })
        .collect();
    if let Some((index, failed)) = outcomes
        .iter()
        .enumerate()
        .find_map(|(index, outcome)| outcome.as_ref().err().map(|err| (index, err.clone())))
    {
        let stopped = stop_started(&record, cwd, index, failed);
        store::done_submitting(&race);
        return Err(stopped);
    }
    let candidates: Vec<SubmitOutcome> = outcomes.into_iter().flatten().collect();
    record.repo = repo_of(&record.candidates);
    if !request.task.dry_run {
        record.complete = true;
        store::save(&record)?;
        store::done_submitting(&race);
        // Candidates that ended already (a quick one) found the race incomplete: it is
        // decided now if it can be. The race runs whatever this look says: a failed look is
        // taken again by the monitor, `wait` or `result`.
        let _ = settle(&race, cwd);
    }
    Ok(RaceSubmitted { race, candidates })
}

/// The repository the candidates' checkouts come from (the first one's), where the race keeps
/// its refs.
pub(crate) fn repo_of(candidates: &[String]) -> Option<std::path::PathBuf> {
    let facts = crate::effects::store::placement(candidates.first()?)
        .ok()
        .flatten()?
        .facts?;
    Some(facts.worktree?.repo_root)
}

fn refuse_unraceable(request: &RaceRequest) -> Result<()> {
    let task = &request.task;
    let refused = |why: &str, hint: &str| Err(Error::invalid_input(why).with_hint(hint));
    if !(2..=MAX_CANDIDATES).contains(&request.best_of) {
        return refused(
            &format!(
                "--best-of takes 2 to {MAX_CANDIDATES} candidates, not {}",
                request.best_of
            ),
            "for one task, submit without --best-of",
        );
    }
    if task.host.is_some() {
        return refused(
            "a race runs its candidates on this machine",
            "drop --host, or run the race on the host (`ssh HOST cuekit submit --best-of …`)",
        );
    }
    if task.id.is_some() || task.branch.is_some() {
        return refused(
            "each candidate of a race gets an id and a branch of its own",
            "drop --id and --branch",
        );
    }
    if task.worktree == Some(false) {
        return refused(
            "each candidate of a race works in a checkout of its own",
            "drop --no-worktree",
        );
    }
    Ok(())
}

/// A candidate that could not start: the others are cancelled and the race forgotten, so
/// nothing of it is left running.
fn stop_started(record: &RaceRecord, cwd: &Path, index: usize, err: Error) -> Error {
    let started = record.candidates.clone();
    if !started.is_empty() {
        let _ = super::cancel(&started, cwd, crate::effects::process::DEFAULT_GRACE);
    }
    let _ = store::remove(&record.id);
    let hint = if started.is_empty() {
        err.hint.unwrap_or_else(|| "nothing was started".into())
    } else {
        format!(
            "the candidates that started were cancelled: {} (`cuekit rm` them)",
            started.join(", ")
        )
    };
    Error::new(
        err.code,
        format!("candidate {}: {}", index + 1, err.message),
    )
    .with_hint(hint)
}

/// The race's record, refused for an id that is not a race's.
fn load(race: &str) -> Result<RaceRecord> {
    if !is_race_id(race) {
        return Err(Error::new(
            ErrorCode::TaskNotFound,
            format!("'{race}' is not a race id"),
        )
        .with_hint(
            "a race id is r_ and 12 hex digits, as `cuekit submit --best-of N` printed it",
        ));
    }
    store::load(race)
}

/// After its candidates were removed (`rm RACE`): the refs it kept and its record go too.
pub(crate) fn forget(race: &str, repo: Option<&Path>) -> Result<()> {
    if let Some(repo) = repo {
        let git = crate::effects::git::Git::new(repo);
        let refs = git.run([
            "for-each-ref",
            "--format=%(refname)",
            &crate::domain::race::refs_prefix(race),
        ])?;
        for name in refs.lines().filter(|line| !line.is_empty()) {
            git.run(["update-ref", "-d", name])?;
        }
    }
    store::remove(race)
}
