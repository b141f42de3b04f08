//! The library operations both front ends (CLI, and later MCP) call. No logic lives only in
//! a front end: they parse, call one of these, and render the result.

mod attach;
mod cancel;
mod init;
mod logs;
mod refresh;
mod report;
mod result;
mod steer;
mod stream;
mod submit;
mod team;
mod view;
mod wait;
mod watchdog;

pub use attach::attach;
pub use cancel::{DEFAULT_GRACE, cancel};
pub use init::{InitOutcome, init};
pub use logs::{follow_logs, read_logs};
pub use refresh::{list, status};
pub use report::{ReportRequest, report};
pub use result::{TaskResult, result};
pub use steer::{SteerReceipt, steer};
pub use stream::run_event_filter;
pub use submit::{SubmitOutcome, SubmitRequest, submit};
pub use team::{
    TeamResult, TeamSubmitted, TeamSummary, team_ids, team_list, team_result, team_status,
    team_steer, team_submit,
};
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

/// Appends one line to the task's `events.jsonl`. A single `write` of a whole line (the file
/// is opened for appending) keeps lines from different processes from interleaving.
pub(crate) fn append_event(task_dir: &Path, line: &[u8]) -> Result<()> {
    use std::io::Write;
    let path = task_dir.join(store::EVENTS_FILE);
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line);
    bytes.push(b'\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(&bytes))
        .map_err(|err| crate::error::Error::io("append to", &path, err))
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
