//! Bringing records up to date: the sentinel files, plus at most one `list-panes -a` per tmux
//! server however many tasks there are, and for interactive tasks their screens, captured a
//! few hundred per tmux invocation.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;
use std::time::SystemTime;

use super::view::TaskView;
use crate::adapter;
use crate::attention;
use crate::error::{ErrorCode, Result};
use crate::launch::{EXIT_CODE_FILE, parse_sentinel};
use crate::spec::Mode;
use crate::status::{Ending, Observation, Status, Verdict, judge};
use crate::store::{self, TaskRecord};
use crate::tmux::{PaneIndex, PaneInfo, Socket, Tmux};

/// The tasks' views, with live progress for running tasks that stream events (a file read
/// each, which `list` leaves out).
pub fn status(task_ids: &[String], cwd: &Path) -> Result<Vec<TaskView>> {
    let refreshed = refresh(super::open_all(task_ids, cwd)?)?;
    let mut views = refreshed.views();
    for (view, record) in views.iter_mut().zip(&refreshed.records) {
        if record.event_stream && !record.status.is_terminal() {
            view.progress = super::stream::read_progress(&record.task_dir);
        }
    }
    Ok(views)
}

/// This project's tasks (nearest `.cuekit/tasks` above `cwd`), or every registered task.
pub fn list(all: bool, cwd: &Path) -> Result<Vec<TaskView>> {
    Ok(refresh_listed(all, cwd)?.views())
}

/// The records `list` shows, brought up to date, oldest first.
pub(crate) fn refresh_listed(all: bool, cwd: &Path) -> Result<Refreshed> {
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
    let mut refreshed = refresh(records)?;
    refreshed.records.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(refreshed)
}

/// Records after a refresh, with the pane snapshots that judged them.
pub(crate) struct Refreshed {
    pub records: Vec<TaskRecord>,
    snapshots: HashMap<Socket, Option<PaneIndex>>,
}

impl Refreshed {
    pub fn pane(&self, record: &TaskRecord) -> Option<&PaneInfo> {
        let placement = record.tmux.as_ref()?;
        let panes = self.snapshots.get(&placement.socket)?.as_ref()?;
        find_pane(record, panes)
    }

    /// Views of the records; a running interactive task whose child waits on a human is shown
    /// as `input_required` with the reason read off its screen.
    pub fn views(&self) -> Vec<TaskView> {
        self.views_and_screens(None).0
    }

    /// [`Self::views`], and the screens read for them by pane id. The screen of `also` (a task
    /// id) rides in the same capture even when nothing else needs it (a batch task), so a
    /// dashboard's preview costs no tmux call of its own.
    pub fn views_and_screens<'a>(
        &'a self,
        also: Option<&str>,
    ) -> (Vec<TaskView>, HashMap<String, String>) {
        let live_pane = |r: &'a TaskRecord| self.pane(r).filter(|p| !p.dead).map(|p| (r, p));
        let mut watched: Vec<(&TaskRecord, &PaneInfo)> = self
            .records
            .iter()
            .filter(|r| r.status == Status::Running && r.mode == Mode::Interactive)
            .filter_map(live_pane)
            .collect();
        if let Some(extra) = self
            .records
            .iter()
            .find(|r| Some(r.id.as_str()) == also && r.mode != Mode::Interactive)
            .filter(|r| r.status == Status::Running)
            .and_then(live_pane)
        {
            watched.push(extra);
        }
        let mut by_socket: HashMap<&Socket, Vec<(&str, usize)>> = HashMap::new();
        for (record, pane) in &watched {
            let socket = &record.tmux.as_ref().expect("has a pane").socket;
            by_socket
                .entry(socket)
                .or_default()
                .push((&pane.pane_id, pane.height));
        }
        let screens: HashMap<String, String> = by_socket
            .into_iter()
            .flat_map(|(socket, panes)| Tmux::new(socket.clone()).capture_screens(&panes))
            .collect();
        let views = self
            .records
            .iter()
            .map(|record| {
                let mut view = TaskView::from(record);
                if record.mode != Mode::Interactive {
                    return view;
                }
                let pane = self.pane(record);
                let screen = pane
                    .and_then(|pane| Some((screens.get(&pane.pane_id)?, pane.history_lines > 0)));
                let rules = adapter::lookup(&record.spec.agent_kind).map(|a| &a.screen);
                if let (Some((screen, scrolled)), Ok(rules)) = (screen, rules)
                    && let Some(attention) = attention::detect(rules, screen, scrolled)
                {
                    view.status = Status::InputRequired;
                    view.reason = Some(attention.as_str().to_string());
                    view.hint = Some(attention.hint().to_string());
                }
                view
            })
            .collect();
        (views, screens)
    }
}

pub(crate) fn read_sentinel(record: &TaskRecord) -> Option<i32> {
    let content = std::fs::read_to_string(record.task_dir.join(EXIT_CODE_FILE)).ok()?;
    parse_sentinel(&content)
}

/// Judges every running record and records each ending (or enforces a due timeout).
pub(crate) fn refresh(records: Vec<TaskRecord>) -> Result<Refreshed> {
    // Panes are looked at first and sentinels after (see `Observation`); tasks whose sentinel
    // is already there need no tmux call at all.
    let needs_panes = records
        .iter()
        .filter(|r| !r.status.is_terminal() && read_sentinel(r).is_none())
        .filter_map(|r| r.tmux.as_ref().map(|t| t.socket.clone()));
    let mut snapshots: HashMap<Socket, Option<PaneIndex>> = HashMap::new();
    for socket in needs_panes {
        if let Entry::Vacant(entry) = snapshots.entry(socket) {
            let panes = snapshot(entry.key())?;
            entry.insert(panes);
        }
    }
    let now = SystemTime::now();
    let records = records
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
            let stream = (record.event_stream && sentinel == Some(0))
                .then(|| super::result::stream_report(&record));
            let seen = Observation {
                pane,
                sentinel,
                now,
                stream,
            };
            match judge(&record, adapter, &seen) {
                Verdict::Unchanged => Ok(record),
                Verdict::Ended(ending) => record_ending(&record.task_dir, ending),
                Verdict::TimeoutDue => super::cancel::stop(&record, timed_out()),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Refreshed { records, snapshots })
}

/// One snapshot of a server's panes; `None` when tmux itself is missing.
pub(crate) fn snapshot(socket: &Socket) -> Result<Option<PaneIndex>> {
    match Tmux::new(socket.clone()).panes() {
        Ok(panes) => Ok(Some(PaneIndex::new(panes))),
        Err(err) if err.code == ErrorCode::TmuxUnavailable => Ok(None),
        Err(err) => Err(err),
    }
}

/// The task's pane in a snapshot.
pub(crate) fn find_pane<'a>(record: &TaskRecord, panes: &'a PaneIndex) -> Option<&'a PaneInfo> {
    panes.get(&record.tmux.as_ref()?.session)
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
