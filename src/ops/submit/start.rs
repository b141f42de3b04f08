//! Stage 5, start: the task takes its slot and its pane is started — the one tmux call, run
//! while the record and the registry entry are written and synced. Both are put in place only
//! once the session exists (stage 6), so no reader ever sees a running task without its pane;
//! the pane itself waits for the registry entry before it starts the agent.

use super::admit::Scheduled;
use super::check::Checked;
use super::create::{Created, Undo};
use crate::domain::error::{Error, Result};
use crate::domain::status::Status;
use crate::effects::store::{self, PaneStart, Staged, schedule};
use crate::ops::submit::prepare::{parse_new_pane, spawn_pane};

/// A started pane, its record and registry entry staged for the commit.
pub(super) struct Started {
    pub record_file: Staged,
    pub placement_file: Staged,
    pub pane: Option<PaneStart>,
}

pub(super) fn start(
    checked: &Checked,
    created: &mut Created,
    scheduled: Scheduled,
    undo: &Undo,
) -> Result<Started> {
    let id = checked.id();
    let resolved = &checked.resolved;
    // Counted against the caps from before its pane exists.
    crate::ops::schedule::take_slot(
        id,
        &resolved.spec.agent_kind,
        resolved.request.team.as_deref(),
    )
    .map_err(|err| undo.undo(err))?;
    if let Some(plan) = resolved
        .plan
        .as_ref()
        .filter(|_| scheduled == Scheduled::Retried)
    {
        let mut plan = plan.clone();
        plan.attempts.push(schedule::Attempt {
            started_at: created.record.created_at.clone(),
            ended_at: None,
            reason: None,
            exit_code: None,
            agent: Some(resolved.spec.agent_kind.clone()),
            model: resolved.spec.model.clone(),
            transcript_from: std::fs::metadata(&created.files.transcript)
                .ok()
                .map(|meta| meta.len()),
            ..Default::default()
        });
        schedule::save_plan(id, &plan).map_err(|err| undo.undo(err))?;
    }
    let launch = spawn_pane(
        &checked.placement,
        &checked.agent_dir,
        &resolved.config,
        resolved.config.height().value,
        &created.files.script,
        &created.files.transcript,
    )
    .map_err(|err| undo.undo(err))?;
    // The two syncs run side by side (the filesystem can commit them together).
    let record = &created.record;
    let staged = std::thread::scope(|scope| {
        let record_file = scope.spawn(|| store::stage_record(record));
        let placement_file = store::stage_placement(&checked.placement);
        let record_file = record_file.join().expect("staging a file does not panic");
        Ok::<_, Error>((record_file?, placement_file?))
    });
    let answer = launch.finish();
    let (record_file, placement_file) = staged.map_err(|err| undo.undo(err))?;
    match answer {
        Ok(stdout) => Ok(Started {
            record_file,
            placement_file,
            pane: parse_new_pane(&stdout),
        }),
        Err(err) => {
            drop((record_file, placement_file));
            Err(launch_failed(checked, created, err, undo))
        }
    }
}

/// A pane that did not start: the record of what was attempted is kept (the task never
/// started), and the error is the caller's.
fn launch_failed(checked: &Checked, created: &mut Created, err: Error, undo: &Undo) -> Error {
    let id = checked.id();
    let _ = std::fs::remove_file(&created.files.env);
    let record = &mut created.record;
    record.status = Status::Failed;
    record.reason = Some("launch_failed".into());
    record.hint = Some(err.message.clone());
    record.ended_at = Some(crate::effects::clock::now_rfc3339());
    // The worktree goes with the failed launch (the guard removes it): the record must not
    // point at it.
    record.worktree = None;
    let kept = store::record_lifecycle(id, &store::Lifecycle::of(record))
        .and_then(|_| store::save(record))
        .and_then(|_| store::stage_placement(&checked.placement)?.commit());
    if let Err(unkept) = kept {
        return undo.undo(unkept);
    }
    schedule::free_slot(id);
    store::remove_pending(id);
    err
}
