use std::path::Path;
use std::time::Duration;

use super::refresh::{find_pane, record_ending, snapshot};
use super::view::TaskView;
use crate::error::Result;
use crate::process::terminate_tree;
use crate::status::{Ending, Status};
use crate::store::TaskRecord;
use crate::tmux::{Tmux, args};

/// How long an agent gets to exit on SIGTERM before SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

/// Cancels running tasks; for tasks that already ended, removes their leftover tmux session.
pub fn cancel(task_ids: &[String], cwd: &Path, grace: Duration) -> Result<Vec<TaskView>> {
    let records = super::open_all(task_ids, cwd)?;
    records
        .iter()
        .map(|record| {
            let ending = Ending {
                status: Status::Cancelled,
                reason: Some("cancelled".into()),
                hint: Some("cancelled by the parent with `cuekit cancel`".into()),
                exit_code: None,
            };
            stop_with_grace(record, ending, grace).map(|record| TaskView::from(&record))
        })
        .collect()
}

pub(crate) fn stop(record: &TaskRecord, ending: Ending) -> Result<TaskRecord> {
    stop_with_grace(record, ending, DEFAULT_GRACE)
}

/// Records the ending first, then ends the process tree and the session. Recording first is
/// what keeps an agent that exits 0 on SIGTERM (Gemini) from reading as completed.
fn stop_with_grace(record: &TaskRecord, ending: Ending, grace: Duration) -> Result<TaskRecord> {
    let updated = record_ending(&record.task_dir, ending)?;
    let Some(placement) = &record.tmux else {
        return Ok(updated);
    };
    let tmux = Tmux::new(placement.socket.clone());
    if let Some(panes) = snapshot(&placement.socket)?
        && let Some(pane) = find_pane(record, &panes)
    {
        // The pid is only trusted while its pane is alive; a dead pane's pid may be reused.
        if !pane.dead {
            terminate_tree(pane.pane_pid, grace);
        }
        // Gone already is fine: another cancel may have raced us.
        let _ = tmux.run(&args::kill_session(&placement.session));
    }
    Ok(updated)
}
