//! `cuekit report`: a child tells its parent how it stands. Accepted only from inside the
//! task's own pane, and only while the task runs.

pub(crate) mod dropped;

use std::path::Path;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::report::{Report, ReportRequest};
use crate::effects::process::descends_from;
use crate::effects::store;

/// Records a report for `task_id` made by process `caller_pid`.
///
/// The id comes from the pane's `CUEKIT_TASK_ID`, which any process can set; what makes the
/// report the task's own is that `caller_pid` descends from the task's pane process, as the
/// kernel tells it. The report is written under the record's lock, so it never lands on a task
/// whose ending was recorded first.
pub fn report(
    task_id: &str,
    caller_pid: u32,
    request: ReportRequest,
    cwd: &Path,
) -> Result<Report> {
    let message = request.message.trim().to_string();
    if message.is_empty() {
        return Err(Error::invalid_input("the report has no message")
            .with_hint("say it in words, e.g. `cuekit report --blocked \"need the API key\"`"));
    }
    // The agent starts only once its task is recorded (see `launch.sh`), so a report never
    // comes before its record.
    let task = crate::ops::task::open(task_id, cwd)?;
    let refreshed = crate::ops::judge::refresh(vec![task])?;
    let task = &refreshed.tasks[0];
    let record = &task.record;
    let ended = || {
        Error::new(
            ErrorCode::InvalidState,
            format!("task {task_id} has ended: it takes no more reports"),
        )
        .with_hint("reports are for running tasks; read what it did with `cuekit result <id>`")
    };
    if record.status.is_terminal() {
        return Err(ended());
    }
    let Some(pane) = refreshed.pane(task)?.filter(|pane| !pane.dead) else {
        return Err(ended());
    };
    if !descends_from(caller_pid, pane.pane_pid) {
        return Err(Error::new(
            ErrorCode::NotTaskPane,
            format!("this process does not run in the pane of task {task_id}"),
        )
        .with_hint(
            "`cuekit report` is for a child inside its own task's pane, where CUEKIT_TASK_ID is set",
        ));
    }
    crate::ops::report::dropped::record_report(task, request.kind, message, request.data)
}

/// Every report of a task, oldest first, from its `events.jsonl`.
pub(crate) fn read_reports(task_dir: &Path) -> Result<Vec<Report>> {
    let path = task_dir.join(store::EVENTS_FILE);
    let file = match store::open_own(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io("read", &path, err)),
    };
    let mut reports = Vec::new();
    // Streamed, each line bounded: the log is the child's to write.
    store::for_each_line(file, |line| {
        if let Some(report) = Report::from_event_line(&String::from_utf8_lossy(line)) {
            reports.push(report);
        }
    })
    .map_err(|err| Error::io("read", &path, err))?;
    Ok(reports)
}
