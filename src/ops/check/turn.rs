//! An interactive child idle at its prompt after a turn, with a check to pass: the monitor
//! starts its check here. On a failure with rounds left the child is steered the fix message
//! (one message, its receipt recorded in `events.jsonl`); once the check decided (passed, or
//! failed with no round left) it is told to exit, and its ending follows the verdict; one kept
//! open (`--keep-open`) stays at its prompt after a pass, and each later turn is checked again.

use crate::domain::check::{Phase, quit_words};
use crate::domain::error::Result;
use crate::effects::store;
use crate::ops::task::Task;

/// Whether `task`'s check was left `checking` by a runner that died: none holds its lock.
pub(crate) fn abandoned(task: &Task) -> bool {
    matches!(super::run::state_between_runs(task), Some(Some(state)) if state.phase == Phase::Checking)
}

/// Checks `task`'s work after its turn, and tells the child what follows.
pub(crate) fn after_turn(task: &Task) -> Result<()> {
    let record = &task.record;
    let Some(quit) = quit_words(&record.spec.agent_kind) else {
        return Ok(());
    };
    let plan = super::run::plan_of(task)?;
    // A check runs (its runner holds the task's check lock). One whose runner died (a monitor
    // killed mid-check) holds nothing and left `checking`: the work is checked again, below.
    let Some(state) = super::run::state_between_runs(task) else {
        return Ok(());
    };
    let (round, passed, what, message) = match state.as_ref().map(|state| state.phase) {
        // Decided, and idle again: the quit did not take (typed too early?); again.
        Some(Phase::Passed | Phase::Failed)
            if !(plan.keep_open && state.as_ref().is_some_and(|s| s.phase == Phase::Passed)) =>
        {
            let last = state.as_ref().and_then(|s| s.verdicts.last());
            (
                last.map_or(0, |v| v.round),
                last.is_some_and(|v| v.passed),
                "quit",
                Some(quit.to_string()),
            )
        }
        // Its first turn, a fix round's, or (kept open) a turn after a pass: checked.
        _ => {
            let outcome = super::run::check(task, &plan, true)?;
            let (what, message) = match outcome.message {
                Some(message) => ("fix", Some(message)),
                // Kept open: the parent ends it.
                None if outcome.verdict.passed && plan.keep_open => ("nothing", None),
                None => ("quit", Some(quit.to_string())),
            };
            (outcome.verdict.round, outcome.verdict.passed, what, message)
        }
    };
    let receipt = message
        .as_deref()
        .map(|message| crate::ops::steer(&record.id, &record.cwd, message))
        .transpose();
    let line = serde_json::json!({
        "type": "cuekit_check",
        "round": round,
        "passed": passed,
        "sent": what,
        "receipt": receipt.as_ref().ok().and_then(Option::as_ref).map(|r| r.receipt),
        "error": receipt.as_ref().err().map(|e| e.message.clone()),
        "at": crate::effects::clock::now_rfc3339(),
    });
    let _ = store::append_event(&record.task_dir, line.to_string().as_bytes());
    receipt.map(|_| ())
}
