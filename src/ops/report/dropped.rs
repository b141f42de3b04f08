//! Reports of a child that cannot reach cuekit: inside a sandbox neither its pane nor its
//! record is in sight, so `cuekit report` drops the report into the task's drop directory
//! (the one place of cuekit's the sandbox may write) and the next look records it, before any
//! ending it may precede. Also the one write of a report, for `cuekit report` and the drop.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::report::{Report, ReportKind, ReportRequest};
use crate::effects::store;

/// Writes a report proven the task's own into its record and log, under the record's lock.
pub(super) fn record_report(
    task: &crate::ops::task::Task,
    kind: ReportKind,
    message: String,
    data: Option<Value>,
) -> Result<Report> {
    let task_id = &task.record.id;
    let ended = || {
        Error::new(
            ErrorCode::InvalidState,
            format!("task {task_id} has ended: it takes no more reports"),
        )
    };
    let mut written = None;
    store::update(&task.placement.task_dir, |current| {
        if current.status.is_terminal() {
            return Err(ended());
        }
        let report = Report {
            seq: current.last_report.as_ref().map_or(0, |r| r.seq) + 1,
            kind,
            message,
            data,
            at: crate::effects::clock::now_rfc3339(),
        };
        // The log first: a report in the record is always also in the log. The registry's
        // copy is the one a dependency reads: a record the child rewrote says nothing there.
        crate::effects::store::append_event(&current.task_dir, &report.event_line())?;
        store::record_report(task_id, &report)?;
        current.last_report = Some(report.clone());
        written = Some(report);
        Ok(true)
    })?;
    Ok(written.expect("the update ran"))
}

/// Inside a sandbox, where neither the pane nor the record can be reached: the report is
/// dropped into the task's drop directory (`dir`, the one place of cuekit's the sandbox may
/// write), for the monitor to record.
pub fn drop_report(dir: &Path, request: &ReportRequest) -> Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{nanos}-{}", std::process::id());
    let temporary = dir.join(format!(".{name}.tmp"));
    let bytes = serde_json::to_vec(request).expect("requests serialize");
    std::fs::write(&temporary, bytes).map_err(|err| Error::io("write", &temporary, err))?;
    let dropped = dir.join(format!("{name}.json"));
    std::fs::rename(&temporary, &dropped).map_err(|err| Error::io("write", &dropped, err))
}

/// The largest report a drop may hold.
const DROP_LIMIT: u64 = 64 * 1024;

/// Records the reports a sandboxed task dropped, oldest first, and removes them. Only this
/// task's sandbox can write its drop (it is bound into no other), which is the proof a pane
/// check gives elsewhere; a file that is not a report is removed unread.
pub(crate) fn take_dropped(task: &crate::ops::task::Task, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    names.sort();
    for path in names {
        // Opened once, without following a link or blocking (a FIFO swapped in after the
        // listing is refused by its type, never waited on), and read up to the limit.
        let request = store::read_limited(&path, DROP_LIMIT)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<ReportRequest>(&bytes).ok());
        let _ = std::fs::remove_file(&path);
        if let Some(request) = request {
            let message = request.message.trim().to_string();
            if !message.is_empty() {
                let _ = record_report(task, request.kind, message, request.data);
            }
        }
    }
}
