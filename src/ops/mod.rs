//! The library operations both front ends (CLI, and later MCP) call. No logic lives only in
//! a front end: they parse, call one of these, and render the result.

mod attach;
mod board;
mod cancel;
mod init;
mod logs;
mod refresh;
mod result;
mod steer;
mod stream;
mod submit;
mod view;
mod wait;
mod watchdog;

pub use attach::{attach, attach_and_return, attach_opens_popup};
pub use board::{Board, BoardRow, Preview, board};
pub use cancel::{DEFAULT_GRACE, cancel};
pub use init::{InitOutcome, init};
pub use logs::{follow_logs, read_logs};
pub use refresh::{list, status};
pub use result::{TaskResult, result};
pub use steer::{SteerReceipt, steer};
pub use stream::run_event_filter;
pub use submit::{SubmitOutcome, SubmitRequest, submit};
pub use view::TaskView;
pub use wait::{WaitOutcome, WaitRequest, WaitTick, WaitUntil, wait, wait_watching};
pub use watchdog::run_watchdog;

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::store::{self, TaskRecord};

/// A task found by id: where it lives and what its record says.
pub(crate) fn open(task_id: &str, cwd: &Path) -> Result<TaskRecord> {
    let dir = store::resolve(task_id, cwd)?;
    store::load(&dir)
}

pub(crate) fn open_all(task_ids: &[String], cwd: &Path) -> Result<Vec<TaskRecord>> {
    task_ids.iter().map(|id| open(id, cwd)).collect()
}

/// Every registered task's id and objective, newest first, read from the records alone (no
/// tmux): what shell completion offers.
pub fn known_tasks() -> Vec<(String, String)> {
    let mut records: Vec<TaskRecord> = store::registered_tasks()
        .unwrap_or_default()
        .iter()
        .filter_map(|dir| store::load(dir).ok())
        .collect();
    records.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    records
        .into_iter()
        .map(|record| (record.id, record.spec.objective))
        .collect()
}

pub(crate) fn transcript_path(record: &TaskRecord) -> PathBuf {
    record.task_dir.join(store::TRANSCRIPT_FILE)
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
