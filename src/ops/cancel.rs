use std::path::Path;
use std::time::Duration;

use super::judge::{cancelled, end_processes, record_ending, stop};
use super::task::Task;
use super::task::{Found, find, untrusted_error};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::store;
use crate::ops::task::route::{Route, route};
use crate::ops::task::view::TaskView;

/// Cancels running tasks; for tasks that already ended, records their real ending and removes
/// what is left of them (their session, any process that outlived the pane).
///
/// A registered task whose record is gone (its directory was deleted) still has its processes
/// ended, from what the registry recorded at submit. An untrusted record is refused.
///
/// A host's tasks are cancelled by their host's cuekit, and its views read back.
pub fn cancel(task_ids: &[String], cwd: &Path, grace: Duration) -> Result<Vec<TaskView>> {
    let task_ids = &crate::effects::store::race::expand(task_ids)?;
    if let Route::Host(host) = route(task_ids)? {
        let mut words = vec!["--json".to_string(), "cancel".to_string()];
        words.extend(task_ids.iter().cloned());
        words.push(format!("--grace={}ms", grace.as_millis()));
        let views: Vec<TaskView> = super::remote::reply(&host, &words, None, cwd)?;
        return Ok(views.into_iter().map(|view| view.on_host(&host)).collect());
    }
    // Every id is checked before anything is stopped.
    let targets = task_ids
        .iter()
        .map(|id| match find(id, cwd)? {
            Found::Untrusted { id, why, .. } => Err(untrusted_error(&id, &why)),
            acceptable => Ok(acceptable),
        })
        .collect::<Result<Vec<_>>>()?;
    targets
        .into_iter()
        .filter_map(|found| match found {
            Found::Trusted(task) => {
                // An ACP turn is ended by the protocol first (its stop reason `cancelled`);
                // the ending is recorded and the processes ended all the same.
                if !task.record.status.is_terminal() {
                    super::acp::cancel(&task);
                }
                let kept = (*task).clone();
                Some(match stop(*task, cancelled(), grace) {
                    Ok(task) => Ok(TaskView::from(&task.record)),
                    Err(err) if err.code == ErrorCode::Io => stop_without_room(kept, grace, err),
                    Err(err) => Err(err),
                })
            }
            Found::Unreadable {
                placement,
                pane,
                error,
            } => {
                let survivors = end_processes(&placement, pane.as_ref(), None, grace);
                let mut view = TaskView::unreadable(&placement, &error);
                view.survivors = Some(survivors);
                Some(Ok(view))
            }
            Found::Untrusted { .. } => None,
        })
        .collect()
}

/// A cancel whose ending could not be written (a full disk under the task's folder): the task
/// is stopped all the same, its processes first, and the ending is noted in the registry, to be
/// recorded by the next look once there is room (before that look judges the ended pane). If
/// even the note cannot be written, the processes are still ended: a task that keeps running
/// because a disk is full is the worse outcome.
fn stop_without_room(task: Task, grace: Duration, err: Error) -> Result<TaskView> {
    match store::load(&task.placement.task_dir) {
        // Not for want of room: the task ended meanwhile, or its record cannot be read.
        Ok(record) if record.status.is_terminal() => return Err(err),
        Err(_) => return Err(err),
        Ok(_) => {}
    }
    let noted = store::intent::note_cancel(&task.record.id).is_ok();
    let survivors = end_processes(&task.placement, task.pane.as_ref(), None, grace);
    // Room again already (or never short of it for the record itself)?
    if let Ok(task) = record_ending(task.clone(), cancelled()) {
        store::intent::clear_cancel(&task.record.id);
        let mut view = TaskView::from(&task.record);
        view.survivors = Some(survivors);
        return Ok(view);
    }
    let ending = cancelled();
    let mut view = TaskView::from(&task.record);
    view.status = ending.status;
    view.reason = ending.reason;
    view.survivors = Some(survivors);
    view.hint = Some(if noted {
        format!(
            "its processes were ended; the ending could not be written ({}) and is recorded at the next look once there is room",
            err.message
        )
    } else {
        format!(
            "its processes were ended; the ending could not be written anywhere ({}): a look once there is room judges the ended pane",
            err.message
        )
    });
    view.warnings
        .push("the cancel is not on record yet: the disk is full".into());
    Ok(view)
}
