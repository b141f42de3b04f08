//! The library operations every front end (CLI, MCP) calls. No logic lives only in a front
//! end: they parse, call one of these, and render the result.
//!
//! `task` finds tasks and holds the trust boundary; `judge` is the one place that judges them
//! and records their endings; the other operations build on those two, never the reverse.

mod attach;
mod cancel;
mod diff;
mod init;
mod judge;
mod list;
mod logs;
mod merge;
mod outcome;
mod reap;
mod remove;
mod result;
mod steer;
mod stream;
mod submit;
mod task;
mod view;
mod wait;
mod watchdog;

pub use crate::process::DEFAULT_GRACE;
pub use attach::attach;
pub use cancel::cancel;
pub use diff::{TaskDiff, diff};
pub use init::{InitOutcome, init};
pub use judge::run_stopper;
pub use list::{list, status};
pub use logs::{follow_logs, read_logs};
pub use merge::merge;
pub use outcome::TaskResult;
pub use reap::reap_orphans;
pub use remove::{PruneFilter, Removal, RemovalOutcome, prune, remove};
pub use result::result;
pub use steer::{SteerReceipt, steer};
pub use stream::run_event_filter;
pub use submit::{SubmitOutcome, SubmitRequest, submit};
pub use view::TaskView;
pub use wait::{WaitOutcome, WaitRequest, WaitUntil, wait};
pub use watchdog::run_watchdog;

use std::path::PathBuf;

use crate::store::{self, TaskRecord};

pub(crate) fn transcript_path(record: &TaskRecord) -> PathBuf {
    record.task_dir.join(store::TRANSCRIPT_FILE)
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
