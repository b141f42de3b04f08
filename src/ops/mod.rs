//! The library operations both front ends (CLI, and later MCP) call. No logic lives only in
//! a front end: they parse, call one of these, and render the result.

mod attach;
mod cancel;
mod diff;
mod init;
mod logs;
mod merge;
mod refresh;
mod remove;
mod result;
mod steer;
mod stream;
mod submit;
mod view;
mod wait;
mod watchdog;

pub use attach::attach;
pub use cancel::{DEFAULT_GRACE, cancel};
pub use diff::{TaskDiff, diff};
pub use init::{InitOutcome, init};
pub use logs::{follow_logs, read_logs};
pub use merge::merge;
pub use refresh::{list, status};
pub use remove::{Outcome, PruneFilter, Removal, prune, remove};
pub use result::{TaskResult, result};
pub use steer::{SteerReceipt, steer};
pub use stream::run_event_filter;
pub use submit::{SubmitOutcome, SubmitRequest, submit};
pub use view::TaskView;
pub use wait::{WaitOutcome, WaitRequest, WaitUntil, wait};
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

pub(crate) fn transcript_path(record: &TaskRecord) -> PathBuf {
    record.task_dir.join(store::TRANSCRIPT_FILE)
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
