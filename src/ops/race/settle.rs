//! Deciding a race, once: when every candidate ended (or, with `--first`, one passed), the
//! pick names the winner; candidates still running are cancelled; each loser's work is
//! committed and kept at `refs/cuekit/races/<race>/<id>` and its checkout removed; with
//! `--merge` the winner goes into the target. Nothing passed: every candidate is kept.
//!
//! The candidates' monitor looks when it announces an ending (unattended, whoever recorded
//! it), and so do `wait`, `result` and `merge` of the race; one process decides at a time,
//! under the race's lock. A look that finds the lock held asks its holder to look once more,
//! so the last ending is never missed.

use std::path::Path;
use std::sync::Mutex;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::race::{Candidate, decidable, kept_ref, pick};
use crate::domain::status::Status;
use crate::effects::git::Git;
use crate::effects::git::checkout::Checkout;
use crate::effects::store::race::{self as store, Decision, RaceRecord};
use crate::ops::task::Task;

/// The races this process is deciding now: a look from within a decision (a monitor thread
/// while its process decides the same race) leaves it to the decision under way.
static DECIDING: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Deciding(String);

impl Deciding {
    fn enter(race: &str) -> Option<Deciding> {
        let mut deciding = DECIDING.lock().unwrap_or_else(|e| e.into_inner());
        if deciding.iter().any(|r| r == race) {
            return None;
        }
        deciding.push(race.to_string());
        Some(Deciding(race.to_string()))
    }
}

impl Drop for Deciding {
    fn drop(&mut self) {
        let mut deciding = DECIDING.lock().unwrap_or_else(|e| e.into_inner());
        deciding.retain(|r| r != &self.0);
    }
}

/// A candidate's ending was announced: its race is decided if it can be now. Never fails the
/// monitor; a race left undecided is decided by the next look, `wait` or `result`.
///
/// It waits for a decider at work (a `wait` or `result` of the race in another process): the
/// monitor's thread that called it announces the decision next, and a decision taken elsewhere
/// while this look left the race to it was never announced (it runs beside the monitor's
/// ticks, which do not wait for it).
pub(crate) fn on_ending(task: &Task) {
    let Some(facts) = task.placement.facts.as_ref() else {
        return;
    };
    if let Some(race) = &facts.race {
        let _ = look(race, &facts.cwd);
    }
}

/// Decides `race` if it can be now, waiting for a decider at work; returns its record.
pub fn settle(race: &str, cwd: &Path) -> Result<RaceRecord> {
    look(race, cwd)?;
    store::load(race)
}

/// Decides `race` if it can be now. The first try waits for a decider at work, and so sees its
/// outcome; a look again after a decision (a candidate ended meanwhile) does not wait: a holder
/// then is another look, which decides with what it finds.
fn look(race: &str, cwd: &Path) -> Result<()> {
    let Some(_deciding) = Deciding::enter(race) else {
        return Ok(());
    };
    let mut wait_for_lock = true;
    loop {
        store::ask_again(race)?;
        let lock = if wait_for_lock {
            Some(store::lock(race)?)
        } else {
            store::try_lock(race)?
        };
        // Held: its holder sees the request and looks again.
        let Some(lock) = lock else { return Ok(()) };
        store::take_again(race);
        decide(race, cwd)?;
        drop(lock);
        if !store::asked_again(race) {
            return Ok(());
        }
        wait_for_lock = false;
    }
}

fn decide(race: &str, cwd: &Path) -> Result<()> {
    let mut record = store::load(race)?;
    if record.decision.is_some() || !record.complete {
        return Ok(());
    }
    let tasks = record
        .candidates
        .iter()
        .map(|id| crate::ops::task::open(id, cwd))
        .collect::<Result<Vec<Task>>>()?;
    // Decidable is told from the registry alone; the diffs are read only for a pick.
    let ended: Vec<Candidate> = tasks.iter().map(standing).collect();
    if !decidable(record.first, &ended) {
        return Ok(());
    }
    let mut candidates: Vec<Candidate> = tasks.iter().map(candidate).collect();
    let mut decision = Decision {
        at: crate::effects::clock::now_rfc3339(),
        pick: pick(&candidates),
        candidates: Vec::new(),
        cancelled: Vec::new(),
        kept: Vec::new(),
        merged: None,
        problems: Vec::new(),
    };
    if let Some(winner) = decision.pick.winner.clone() {
        let running: Vec<String> = candidates
            .iter()
            .filter(|c| !c.ended())
            .map(|c| c.id.clone())
            .collect();
        if !running.is_empty() {
            match crate::ops::cancel(&running, cwd, crate::effects::process::DEFAULT_GRACE) {
                Ok(_) => decision.cancelled = running.clone(),
                Err(err) => decision.problems.push(format!("cancel: {}", err.message)),
            }
            for candidate in &mut candidates {
                if decision.cancelled.contains(&candidate.id) {
                    candidate.status = Status::Cancelled.as_str().to_string();
                }
            }
        }
        // A loser still running (its cancel failed) keeps its checkout: nothing is removed
        // under a live process.
        let live: Vec<String> = running
            .into_iter()
            .filter(|id| !decision.cancelled.contains(id))
            .collect();
        for task in tasks
            .iter()
            .filter(|t| t.record.id != winner && !live.contains(&t.record.id))
        {
            match keep_and_remove(task, race) {
                Ok((kept, unsaved)) => {
                    decision.kept.push(kept);
                    if !unsaved.is_empty() {
                        let what: Vec<String> = unsaved.iter().map(ToString::to_string).collect();
                        decision.problems.push(format!(
                            "{}: its checkout is kept, it holds what the race's ref does not: {}",
                            task.record.id,
                            what.join("; ")
                        ));
                    }
                }
                Err(err) => decision
                    .problems
                    .push(format!("{}: {}", task.record.id, err.message)),
            }
        }
        if record.merge {
            decision.merged = Some(merge_winner(&winner, cwd));
        }
    }
    decision.candidates = candidates;
    record.decision = Some(decision);
    store::save(&record)
}

/// What a candidate did, read from the registry (its status and check) and its checkout.
pub(super) fn candidate(task: &Task) -> Candidate {
    // A candidate that passed is weighed by the commit its check ran on: work it changed
    // after the check (a shrink, a rewrite) counts for nothing.
    let stat = crate::ops::work::diff::result_stat(task);
    Candidate {
        diff_lines: stat.as_ref().map(|s| s.insertions + s.deletions),
        files_changed: stat.as_ref().map(|s| s.files as u64),
        tokens: crate::ops::background::stream::read_progress(&task.record.task_dir)
            .and_then(|p| p.tokens),
        ..standing(task)
    }
}

/// Where a candidate stands by the registry alone (its status and check), without its diff
/// or usage.
fn standing(task: &Task) -> Candidate {
    let record = &task.record;
    let check = record.check.as_ref();
    let ended = record.status.is_terminal();
    Candidate {
        id: record.id.clone(),
        agent: record.spec.agent_kind.clone(),
        model: record.spec.model.clone(),
        status: record.status.as_str().to_string(),
        passed: record.status == Status::Completed
            && check.is_some_and(|c| c.phase == crate::domain::check::Phase::Passed),
        fix_rounds: check.map_or(0, |c| c.fix_rounds),
        review_paths: check
            .and_then(|c| c.verdicts.last())
            .map(|v| v.review_paths.clone())
            .unwrap_or_default(),
        diff_lines: None,
        files_changed: None,
        tokens: None,
        ended_at: if ended {
            Some(record.ended_at.clone().unwrap_or_default())
        } else {
            None
        },
    }
}

/// Commits a loser's uncommitted work onto its branch, keeps the commit its passing check ran
/// on (else that tip) at the race's ref, then removes its checkout (its branch stays: `merge
/// RACE --candidate` can still take it) unless its inventory finds work the branch does not hold
/// (a submodule's, a side branch's, a stash): that is returned, and the checkout stays.
fn keep_and_remove(
    task: &Task,
    race: &str,
) -> Result<(String, Vec<crate::effects::git::inventory::Unsaved>)> {
    let worktree = crate::ops::work::diff::worktree_of(task)?;
    let checkout = Checkout {
        placed: worktree,
        scratch: &task.record.task_dir,
    };
    let tip = crate::effects::git::merge::commit_work(
        &checkout,
        &format!(
            "cuekit race {race}: candidate {}'s uncommitted work",
            task.record.id
        ),
    )?;
    let kept = crate::ops::work::checked::commit(task).unwrap_or_else(|| tip.clone());
    let name = kept_ref(race, &task.record.id);
    Git::new(&worktree.repo_root).run(["update-ref", &name, &kept])?;
    let unsaved = crate::effects::git::cleanup::remove_saved_checkout(&checkout, &tip)?;
    Ok((name, unsaved))
}

/// `--merge`: the winner into the branch checked out in its repository, unless that
/// conflicts or needs a review; either way, what happened in words.
fn merge_winner(winner: &str, cwd: &Path) -> String {
    match crate::ops::merge(winner, cwd, crate::ops::MergeStrategy::Merge, None, false) {
        Ok(merged) => format!("{winner} merged into {} at {}", merged.target, merged.head),
        Err(err) => format!(
            "{winner} not merged: {}{}",
            err.message,
            err.hint.map(|h| format!(" ({h})")).unwrap_or_default()
        ),
    }
}

/// A race id that is not a race's, or a candidate that is not one of its.
pub(super) fn not_a_candidate(race: &RaceRecord, id: &str) -> Error {
    Error::new(
        ErrorCode::InvalidInput,
        format!("{id} is not a candidate of race {}", race.id),
    )
    .with_hint(format!(
        "its candidates: {} (`cuekit result {}`)",
        race.candidates.join(", "),
        race.id
    ))
}
