//! Bringing records up to date: the sentinel files, plus at most one `list-panes -a` per tmux
//! server however many tasks there are.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;
use std::time::SystemTime;

use super::view::TaskView;
use crate::adapter;
use crate::error::{ErrorCode, Result};
use crate::launch::{EXIT_CODE_FILE, parse_sentinel};
use crate::status::{Ending, Observation, Status, Verdict, judge};
use crate::store::{self, TaskRecord};
use crate::tmux::{PaneInfo, Socket, Tmux};

pub fn status(task_ids: &[String], cwd: &Path) -> Result<Vec<TaskView>> {
    let records = refresh(super::open_all(task_ids, cwd)?)?;
    Ok(records.iter().map(TaskView::from).collect())
}

/// This project's tasks (nearest `.cuekit/tasks` above `cwd`), or every registered task.
pub fn list(all: bool, cwd: &Path) -> Result<Vec<TaskView>> {
    let dirs = if all {
        store::registered_tasks()?
    } else {
        match store::project_tasks_root(cwd) {
            Some(root) => std::fs::read_dir(&root)
                .map_err(|err| crate::error::Error::io("read", &root, err))?
                .flatten()
                .filter(|entry| store::is_task_id(&entry.file_name().to_string_lossy()))
                .map(|entry| entry.path())
                .filter(|dir| dir.join(store::RECORD_FILE).is_file())
                .collect(),
            None => Vec::new(),
        }
    };
    let records = dirs
        .iter()
        .map(|dir| store::load(dir))
        .collect::<Result<Vec<_>>>()?;
    let mut records = refresh(records)?;
    records.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(records.iter().map(TaskView::from).collect())
}

pub(crate) fn read_sentinel(record: &TaskRecord) -> Option<i32> {
    let content = std::fs::read_to_string(record.task_dir.join(EXIT_CODE_FILE)).ok()?;
    parse_sentinel(&content)
}

/// Judges every running record and records each ending (or enforces a due timeout).
pub(crate) fn refresh(records: Vec<TaskRecord>) -> Result<Vec<TaskRecord>> {
    // Panes are looked at first and sentinels after (see `Observation`); tasks whose sentinel
    // is already there need no tmux call at all.
    let needs_panes = records
        .iter()
        .filter(|r| !r.status.is_terminal() && read_sentinel(r).is_none())
        .filter_map(|r| r.tmux.as_ref().map(|t| t.socket.clone()));
    let mut snapshots: HashMap<Socket, Option<Vec<PaneInfo>>> = HashMap::new();
    for socket in needs_panes {
        if let Entry::Vacant(entry) = snapshots.entry(socket) {
            let panes = snapshot(entry.key())?;
            entry.insert(panes);
        }
    }
    let now = SystemTime::now();
    records
        .into_iter()
        .map(|record| {
            if record.status.is_terminal() {
                return Ok(record);
            }
            let panes = record
                .tmux
                .as_ref()
                .and_then(|t| snapshots.get(&t.socket))
                .and_then(Option::as_ref);
            let sentinel = read_sentinel(&record);
            if sentinel.is_none() && panes.is_none() {
                // tmux cannot be asked: nothing can be concluded about a live pane.
                return Ok(record);
            }
            let pane = panes.and_then(|panes| find_pane(&record, panes));
            let adapter = adapter::lookup(&record.spec.agent_kind)?;
            match judge(
                &record,
                adapter,
                &Observation {
                    pane,
                    sentinel,
                    now,
                },
            ) {
                Verdict::Unchanged => Ok(record),
                Verdict::Ended(ending) => record_ending(&record.task_dir, ending),
                Verdict::TimeoutDue => super::cancel::stop(&record, timed_out()),
            }
        })
        .collect()
}

/// One snapshot of a server's panes; `None` when tmux itself is missing.
pub(crate) fn snapshot(socket: &Socket) -> Result<Option<Vec<PaneInfo>>> {
    match Tmux::new(socket.clone()).panes() {
        Ok(panes) => Ok(Some(panes)),
        Err(err) if err.code == ErrorCode::TmuxUnavailable => Ok(None),
        Err(err) => Err(err),
    }
}

pub(crate) fn find_pane<'a>(record: &TaskRecord, panes: &'a [PaneInfo]) -> Option<&'a PaneInfo> {
    let tmux = record.tmux.as_ref()?;
    panes
        .iter()
        .find(|pane| pane.pane_id == tmux.pane_id && pane.session == tmux.session)
}

/// Writes an ending unless another process recorded one first (the first ending wins).
pub(crate) fn record_ending(task_dir: &Path, ending: Ending) -> Result<TaskRecord> {
    store::update(task_dir, |record| {
        if record.status.is_terminal() {
            return Ok(false);
        }
        record.status = ending.status;
        record.reason = ending.reason;
        record.hint = ending.hint;
        record.exit_code = ending.exit_code;
        record.ended_at = Some(super::now_rfc3339());
        Ok(true)
    })
}

pub(crate) fn timed_out() -> Ending {
    Ending {
        status: Status::TimedOut,
        reason: Some("timeout".into()),
        hint: Some(
            "the task ran past its --timeout and was stopped; raise the timeout or split the task"
                .into(),
        ),
        exit_code: None,
    }
}
