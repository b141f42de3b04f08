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

/// The most reports of one task a look records: a child flooding its drop delays no timeout,
/// ending or other task by more than this many writes. The rest wait for the next look.
pub(crate) const DROP_BATCH: usize = 16;

/// The most entries of a drop a look lists: a folder of a million files costs a look no more
/// than this many.
const DROP_LISTING: usize = 256;

/// The longest a look spends recording one task's drops (each is a synced write): past it,
/// the rest of the batch waits for the next look.
const DROP_TIME: std::time::Duration = std::time::Duration::from_millis(200);

/// How old an unfinished drop (`.<name>.tmp`, renamed into place by `cuekit report` at once)
/// must be before a look removes it as litter.
const STALE_TEMPORARY: std::time::Duration = std::time::Duration::from_secs(60);

/// Records the reports a sandboxed task dropped, oldest first, and removes them: at most
/// [`DROP_BATCH`] a look and for [`DROP_TIME`], from at most [`DROP_LISTING`] entries
/// listed. Only this task's
/// sandbox can write its drop (it is bound into no other), which is the proof a pane check
/// gives elsewhere; a file that is not a report is removed unread.
pub(crate) fn take_dropped(task: &crate::ops::task::Task, dir: &Path) {
    let began = std::time::Instant::now();
    for path in next_batch(dir) {
        if began.elapsed() > DROP_TIME {
            break;
        }
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

/// The drops a look takes, oldest first (their names start with the time they were made), of
/// the first [`DROP_LISTING`] entries listed; litter among those (not a report, or a report's
/// temporary left for [`STALE_TEMPORARY`]) is removed unread, so a flood of it never hides a
/// report from later looks.
fn next_batch(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for entry in entries.take(DROP_LISTING).flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".json") && !name.starts_with('.') {
            names.push(path);
        } else if !(name.starts_with('.') && name.ends_with(".tmp")) || stale(&path) {
            // Anything else a child made there is never a report (a folder only when empty:
            // removing a tree has no bound; a child that fills its drop so loses its own reports).
            let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir(&path));
        }
    }
    names.sort();
    names.truncate(DROP_BATCH);
    names
}

fn stale(path: &Path) -> bool {
    path.symlink_metadata()
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_none_or(|age| age > STALE_TEMPORARY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_takes_a_bounded_batch_oldest_first_and_removes_litter() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..40 {
            std::fs::write(dir.path().join(format!("{i:04}-1.json")), "{}").unwrap();
        }
        std::fs::write(dir.path().join("junk"), "x").unwrap();
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        // A report being written right now stays.
        std::fs::write(dir.path().join(".0999-1.tmp"), "{").unwrap();
        let batch = next_batch(dir.path());
        assert_eq!(batch.len(), DROP_BATCH);
        assert!(batch[0].ends_with("0000-1.json"), "{batch:?}");
        assert!(batch.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(!dir.path().join("junk").exists());
        assert!(!dir.path().join("empty").exists());
        assert!(dir.path().join(".0999-1.tmp").exists());
    }
}
