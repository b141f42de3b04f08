//! Reading and finishing a race: `result RACE` (a row per candidate, the winner and why),
//! `merge RACE [--candidate ID]` and `diff RACE --candidates A,B`.

use std::path::Path;

use serde::Serialize;

use super::settle::{candidate, not_a_candidate, settle};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::race::{Candidate, Pick};
use crate::effects::git::merge::{Merged, Strategy};
use crate::effects::git::{Git, diff};
use crate::effects::store::race::RaceRecord;

#[derive(Debug, Clone, Serialize)]
pub struct RaceResult {
    pub race: String,
    pub objective: String,
    /// `running` until decided, then `decided` (a candidate passed) or `failed` (none did).
    pub state: &'static str,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pick: Option<Pick>,
    /// As they stood at the pick (live while the race runs).
    pub candidates: Vec<Candidate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cancelled: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The race as it stands; a race that can be decided is decided first (its candidates are
/// looked at, so an ending nobody recorded yet counts).
pub fn race_result(race: &str, cwd: &Path) -> Result<RaceResult> {
    let record = current(race, cwd)?;
    let mut result = RaceResult {
        race: record.id,
        objective: record.objective,
        state: "running",
        created_at: record.created_at,
        decided_at: None,
        pick: None,
        candidates: Vec::new(),
        cancelled: Vec::new(),
        kept: Vec::new(),
        merged: None,
        problems: Vec::new(),
    };
    match record.decision {
        None => {
            result.candidates = record
                .candidates
                .iter()
                .map(|id| crate::ops::task::open(id, cwd).map(|task| candidate(&task)))
                .collect::<Result<Vec<_>>>()?;
        }
        Some(decision) => {
            result.state = if decision.pick.winner.is_some() {
                "decided"
            } else {
                "failed"
            };
            result.decided_at = Some(decision.at);
            result.pick = Some(decision.pick);
            result.candidates = decision.candidates;
            result.cancelled = decision.cancelled;
            result.kept = decision.kept;
            result.merged = decision.merged;
            result.problems = decision.problems;
        }
    }
    Ok(result)
}

/// The race after a look at its candidates (which records endings) and a decision if due.
fn current(race: &str, cwd: &Path) -> Result<RaceRecord> {
    let record = super::load(race)?;
    if record.decision.is_none() {
        crate::ops::status(&record.candidates, cwd)?;
    }
    settle(race, cwd)
}

/// Merges the race's winner, or the candidate named (which overrides the pick).
pub fn merge_race(
    race: &str,
    candidate: Option<&str>,
    cwd: &Path,
    strategy: Strategy,
    into: Option<&str>,
    reviewed: bool,
) -> Result<Merged> {
    let record = current(race, cwd)?;
    let id = match (candidate, &record.decision) {
        (Some(id), _) if record.candidates.iter().any(|c| c == id) => id.to_string(),
        (Some(id), _) => return Err(not_a_candidate(&record, id)),
        (None, Some(decision)) => decision.pick.winner.clone().ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidState,
                format!("no candidate of race {race} passed its check"),
            )
            .with_hint(format!(
                "read them with `cuekit result {race}`; merge one anyway with --candidate ID"
            ))
        })?,
        (None, None) => {
            return Err(Error::new(
                ErrorCode::InvalidState,
                format!("race {race} is not decided yet"),
            )
            .with_hint(format!(
                "wait for it (`cuekit wait {race}`), or merge one now with --candidate ID"
            )));
        }
    };
    crate::ops::merge(&id, cwd, strategy, into, reviewed)
}

/// Two candidates' work compared: what `to` has that `from` has not.
#[derive(Debug, Clone, Serialize)]
pub struct CandidatesDiff {
    pub race: String,
    pub from: String,
    pub to: String,
    pub stat: diff::DiffStat,
    pub files: Vec<diff::FileDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

/// `diff RACE --candidates A,B`: B's work against A's (each the commit its passing check ran
/// on, else read on git's safe paths from its checkout, or its branch once the checkout was
/// removed).
pub fn diff_candidates(
    race: &str,
    from: &str,
    to: &str,
    cwd: &Path,
    with_patch: bool,
) -> Result<CandidatesDiff> {
    let record = super::load(race)?;
    let mut trees = Vec::new();
    let mut repo = None;
    for id in [from, to] {
        if !record.candidates.iter().any(|c| c == id) {
            return Err(not_a_candidate(&record, id));
        }
        let task = crate::ops::task::open(id, cwd)?;
        let worktree = crate::ops::work::diff::worktree_of(&task)?;
        trees.push(crate::ops::work::checked::result_tree(&task)?);
        repo = Some(worktree.repo_root.clone());
    }
    let git = Git::new(repo.expect("two candidates were read"));
    let files = diff::files(&git, &trees[0], &trees[1])?;
    let patch = with_patch
        .then(|| diff::patch(&git, &trees[0], &trees[1]))
        .transpose()?;
    Ok(CandidatesDiff {
        race: record.id,
        from: from.to_string(),
        to: to.to_string(),
        stat: diff::stat(&files),
        files,
        patch,
    })
}
