//! Stage 6, commit: the task goes on record — its pane, its lifecycle, its record and its
//! registry entry, in that order — and the monitor (or, for a queued task, the scheduler)
//! takes it from here.

use super::check::Checked;
use super::create::{Created, Undo};
use super::request::SubmitOutcome;
use super::start::Started;
use crate::domain::error::Result;
use crate::effects::store::{self, schedule};
use crate::ops::task::view::{QueueView, TaskView};

pub(super) fn commit(
    checked: &Checked,
    mut created: Created,
    started: Started,
    undo: &Undo,
) -> Result<SubmitOutcome> {
    let id = checked.id();
    if let Some(pane) = &started.pane {
        // Before the registry entry, which the pane waits for to start the agent: the agent
        // never ends before its pane is on record (only that pane's exit status is the
        // task's). Best effort: without it, the pane is known by its session alone, and its
        // exit status is not taken for `completed`.
        let _ = store::record_pane_start(id, pane);
    }
    // Where the task stands is the registry's, on record before anything names the task.
    let committed = store::record_lifecycle(id, &store::Lifecycle::of(&created.record))
        .and_then(|_| started.record_file.commit())
        .and_then(|_| started.placement_file.commit());
    if let Err(err) = committed {
        store::unregister(id);
        return Err(undo.undo(err));
    }
    store::remove_pending(id);
    if let Some(worktree) = created.worktree.as_mut() {
        worktree.keep();
    }
    // Endings, timeouts and transitions are the monitor's from here, whoever watches or not.
    crate::ops::background::monitor_lock::ensure_running(&checked.placement.socket);
    Ok(SubmitOutcome::Submitted(Box::new(TaskView::from(
        &created.record,
    ))))
}

/// Puts a task into the queue: its record (`queued`), its plan and its registry entry, all
/// synced; the scheduler starts it.
pub(super) fn queue(
    checked: &Checked,
    mut created: Created,
    plan: &schedule::Plan,
    waits: QueueView,
) -> Result<SubmitOutcome> {
    let record = &mut created.record;
    let id = record.id.clone();
    record.hint = Some(queued_hint(&waits));
    schedule::save_plan(&id, plan)?;
    // Marked before it is registered: a queue mark without a registry entry is ignored (and
    // swept), a registered task without its mark would wait for ever.
    schedule::enqueue(&id)?;
    store::record_lifecycle(&id, &store::Lifecycle::of(record))?;
    store::stage_record(record)?.commit()?;
    store::stage_placement(&checked.placement)?.commit()?;
    store::remove_pending(&id);
    if let Some(worktree) = created.worktree.as_mut() {
        worktree.keep();
    }
    crate::ops::background::monitor_lock::ensure_scheduler();
    let mut view = TaskView::from(&created.record);
    view.queue = Some(Box::new(waits));
    Ok(SubmitOutcome::Submitted(Box::new(view)))
}

/// Why a new task waits, in its record.
fn queued_hint(waits: &QueueView) -> String {
    if !waits.waiting_for.is_empty() {
        return format!(
            "queued: starts once {} completed",
            waits.waiting_for.join(", ")
        );
    }
    match &waits.limit {
        Some(limit) => format!("queued: at the limit ({limit}); starts when a slot frees"),
        None => "queued: starts when a slot frees".to_string(),
    }
}
