use std::path::Path;
use std::time::Duration;

use super::judge::{cancelled, end_processes, stop};
use super::route::{Route, route};
use super::task::{Found, find, untrusted_error};
use super::view::TaskView;
use crate::error::Result;

/// Cancels running tasks; for tasks that already ended, records their real ending and removes
/// what is left of them (their session, any process that outlived the pane).
///
/// A registered task whose record is gone (its directory was deleted) still has its processes
/// ended, from what the registry recorded at submit. An untrusted record is refused.
///
/// A host's tasks are cancelled by their host's cuekit, and its views read back.
pub fn cancel(task_ids: &[String], cwd: &Path, grace: Duration) -> Result<Vec<TaskView>> {
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
                Some(stop(*task, cancelled(), grace).map(|task| TaskView::from(&task.record)))
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
