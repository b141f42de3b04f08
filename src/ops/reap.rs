//! Undoing submits that never finished. A submit writes a pending entry before it asks tmux
//! for the pane and removes it once the task is recorded; an entry whose submitter no longer
//! runs was cut short (killed, or an error it could not clean up after). Its pane, if tmux
//! made one, has started nothing (`launch.sh` waits for the registry entry, and gives up when
//! the pending entry goes), so undoing it is: end the session, remove the task directory that
//! submit created and the worktree and branch it made (if git lists them as made), forget the
//! entry. Every refresh and every listing does this first; it costs one directory read.
//!
//! A killed submit's tmux client outlives it by a few milliseconds and may create the session
//! after an undo ended it (leaving a pane that fails, its script gone, in a session nobody
//! owns): the undo waits for that client first.

use std::time::{Duration, Instant};

use crate::effects::store::{self, Pending};
use crate::effects::tmux::{Tmux, args};

/// How long an undo waits for a killed submit's tmux client (it answers in milliseconds; a
/// server that hangs must not hang every listing).
const CLIENT_WAIT: Duration = Duration::from_secs(2);
/// How long an undo waits for a killed submit's git (a `worktree add` or a submodule's
/// clone it left running) to finish before it ends it: git cut short leaves its locks behind.
const GIT_WAIT: Duration = Duration::from_secs(20);

/// Undoes every pending submit whose submitter is gone; returns the ids undone. Then the races
/// such a submit left part-made are finished or forgotten ([`finish_races`]).
pub fn reap_orphans() -> Vec<String> {
    let undone = store::pending_submits()
        .into_iter()
        .filter(|pending| !submitter_runs(pending))
        .filter_map(undo)
        .collect();
    finish_races();
    undone
}

/// A `submit --best-of` killed part-way: its candidates that were registered run on as
/// ordinary tasks, so the race is completed with them (and decided as any race is, by the
/// monitor, `wait` or `result`); one with none is forgotten. Never a race whose submit runs.
fn finish_races() {
    for mark in crate::effects::store::race::submitting() {
        let running = crate::effects::process::start_ticks(mark.pid)
            .is_some_and(|ticks| mark.start.is_none_or(|start| start == ticks));
        if !running {
            let _ = finish_race(&mark.race);
        }
    }
}

fn finish_race(race: &str) -> crate::domain::error::Result<()> {
    use crate::effects::store::race as races;
    let _decider = races::lock(race)?;
    let mut record = match races::load(race) {
        Ok(record) => record,
        Err(_) => {
            races::done_submitting(race);
            return Ok(());
        }
    };
    if !record.complete {
        let mut candidates: Vec<(String, String)> = store::registered_ids()?
            .into_iter()
            .filter_map(|id| {
                let placement = store::placement(&id).ok().flatten()?;
                let facts = placement.facts?;
                (facts.race.as_deref() == Some(race)).then(|| (placement.created_at.clone(), id))
            })
            .collect();
        candidates.sort();
        if candidates.is_empty() {
            races::remove(race)?;
            races::done_submitting(race);
            return Ok(());
        }
        record.candidates = candidates.into_iter().map(|(_, id)| id).collect();
        record.repo = super::race::repo_of(&record.candidates);
        record.complete = true;
        races::save(&record)?;
    }
    races::done_submitting(race);
    Ok(())
}

fn submitter_runs(pending: &Pending) -> bool {
    crate::effects::process::start_ticks(pending.submitter_pid)
        .is_some_and(|ticks| pending.submitter_start.is_none_or(|start| start == ticks))
}

fn undo(pending: Pending) -> Option<String> {
    let placement = &pending.placement;
    if matches!(store::placement(&placement.id), Ok(Some(_))) {
        // Recorded: the submit finished all but forgetting its pending entry.
        store::remove_pending(&placement.id);
        return None;
    }
    let creating = |pid: &u32| crate::effects::process::is_alive(*pid);
    let clients =
        crate::effects::process::clients_with_arguments(&["new-session", &placement.session]);
    let deadline = Instant::now() + CLIENT_WAIT;
    while clients.iter().any(creating) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    // A client still at it past the wait (a server slow to answer) is the dead submit's own
    // and would make the session after this undo ended it: it is ended first, by its pid
    // alone (its process group may be the caller's shell), and waited for.
    let lingering: Vec<u32> = clients.iter().copied().filter(creating).collect();
    if !lingering.is_empty() {
        for pid in &lingering {
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
        }
        let deadline = Instant::now() + CLIENT_WAIT;
        while lingering.iter().any(creating) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    // tmux ends the pane's processes with the session; a pane that was gated never started
    // the agent, and anything that did start carries the task's id.
    let _ = Tmux::new(placement.socket.clone()).run(&args::kill_session(&placement.session));
    crate::effects::process::terminate(
        crate::effects::process::task_processes(&placement.id, None),
        crate::effects::process::DEFAULT_GRACE,
    );
    if placement.task_dir.ends_with(&placement.id) {
        let _ = std::fs::remove_dir_all(&placement.task_dir);
    }
    // The worktree is made after the pending entry: it may or may not exist, and the git
    // making it may outlive the submit.
    if let Some(worktree) = placement.facts.as_ref().and_then(|f| f.worktree.as_ref()) {
        let making = || {
            crate::effects::process::carrying(
                crate::effects::git::SUBMITTING_VARIABLE,
                &placement.id,
            )
        };
        let deadline = Instant::now() + GIT_WAIT;
        while !making().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        crate::effects::process::terminate(making(), crate::effects::process::DEFAULT_GRACE);
        // The pane may have started before the submit died: a checkout holding work stays
        // (`doctor` lists it), whatever is not its work goes.
        if crate::effects::git::cleanup::abandoned_work(worktree).is_empty() {
            crate::effects::git::create::remove_abandoned(worktree);
        }
    }
    // Its slot, anything a queued submit kept for the scheduler, its kept spec and state.
    store::unregister(&placement.id);
    store::remove_pending(&placement.id);
    Some(placement.id.clone())
}
