//! The library operations every front end (CLI, MCP) calls. No logic lives only in a front
//! end: they parse, call one of these, and render the result.
//!
//! `task` finds tasks and holds the trust boundary; `judge` is the one place that judges them
//! and records their endings; the other operations build on those two, never the reverse.
//! Each operation on task ids asks `route` first where they are, and takes a host's to
//! `remote`: a front end calls the same operation for a task here or on a host.

mod acp;
mod attach;
mod attempt;
mod board;
mod budget;
mod cancel;
mod conflicts;
mod diff;
mod events;
mod init;
mod judge;
mod list;
mod logs;
mod merge;
mod monitor;
mod monitor_lock;
mod outcome;
mod prepare;
mod reap;
mod remote;
mod remove;
mod report;
mod report_drop;
mod result;
mod route;
mod sandbox;
mod schedule;
mod steer;
pub(crate) mod stream;
mod submit;
mod task;
mod team;
mod trust;
mod view;
mod wait;
mod wake;
pub mod web_access;

pub use crate::process::DEFAULT_GRACE;
pub use crate::report::ReportRequest;
pub use acp::{Approval, approve, approve_by};
pub use attach::{attach, attach_and_return, attach_opens_popup};
pub use board::{Board, BoardRow, Preview, attention_order, board, host_board};
pub use cancel::cancel;
pub use conflicts::{Conflict, Conflicts, conflicts};
pub use diff::{TaskDiff, diff};
pub use events::{EventScope, events, next_events};
pub use init::{InitOutcome, init};
pub use judge::{ScreenCache, run_stopper};
pub use list::{list, status};
pub use logs::{follow_logs, read_logs, tail_logs};
pub use merge::merge;
pub use monitor::run_monitor;
pub use outcome::{RESULT_FILE, TaskResult, written_final_text};
pub use reap::reap_orphans;
pub use remote::{HostError, HostReport, Installed, host_install, hosts};
pub use remove::{PruneFilter, Removal, RemovalOutcome, prune, remove};
pub use report::report;
pub use report_drop::drop_report;
pub use result::result;
pub use route::finishes_without_caller;
pub use sandbox::{SandboxRequest, probe as probe_sandbox};
pub use schedule::{QueueSummary, Scheduling, queue_summary, retry, run_scheduler, start_due};
pub use steer::{SessionControl, SteerReceipt, steer, steer_control};
pub use stream::run_event_filter;
pub use submit::{Asker, SubmitOutcome, SubmitRequest, submit};
pub use task::{task_of_process, task_pane_leader};
pub use team::{
    TeamResult, TeamSubmitted, TeamSummary, team_ids, team_list, team_result, team_status,
    team_steer, team_submit,
};
pub use trust::trust;
pub use view::{QueueView, TaskView};
pub use wait::{WaitNews, WaitOutcome, WaitRequest, WaitTick, WaitUntil, wait, wait_watching};

use std::path::{Path, PathBuf};

use crate::store::{self, TaskRecord};

/// Every registered task's id and objective, newest first, read from the records alone (no
/// tmux): what shell completion offers. Only tasks the registry vouches for.
pub fn known_tasks() -> Vec<(String, String)> {
    let mut records: Vec<TaskRecord> = task::scan_registry()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|found| match found {
            task::Found::Trusted(task) => Some(task.record),
            _ => None,
        })
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

/// Appends one line to the task's `events.jsonl` (see [`store::append_line`]).
pub(crate) fn append_event(task_dir: &Path, line: &[u8]) -> crate::error::Result<()> {
    store::append_line(&task_dir.join(store::EVENTS_FILE), line)
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
