use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::judge::{Refreshed, refresh};
use super::task::{Task, open};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::launch::EXIT_CODE_FILE;
use crate::domain::status::Status;
use crate::effects::store::{self, TaskRecord};
use crate::ops::task::route::{Route, route};
use crate::ops::task::view::TaskView;

/// The sentinel is a file, so noticing an exit costs one `stat` per pending task per tick:
/// a fine tick keeps `wait` within tens of milliseconds of the child's exit.
const SENTINEL_TICK: Duration = Duration::from_millis(10);
/// Panes that vanish without a sentinel, cancels by other processes, due timeouts and screens
/// are looked at by a full refresh at this pace.
const FULL_REFRESH_EVERY: Duration = Duration::from_millis(250);
/// How soon a task with a sentinel but a live pane is looked at again.
const SENTINEL_SETTLE: Duration = Duration::from_millis(40);
/// A child must be seen needing a human, its screen unchanged, for this long before `--until
/// input-required` returns, so a screen caught between two frames of a redraw does not end the
/// wait.
const ATTENTION_SETTLE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitUntil {
    /// The task has ended.
    Ended,
    /// The task has ended or its child waits on a human (a dialog, or idle at its prompt).
    InputRequired,
    /// The task has ended or its child made a report since the wait began.
    Report,
    /// The task has ended, or its interactive child's turn has: it idles at its prompt and its
    /// answer can be read. A child on a dialog (a permission, login or trust screen) is still
    /// in its turn: the wait says what it waits on and goes on. Batch and ACP tasks: `Ended`.
    Turn,
}

impl WaitUntil {
    /// The value of `cuekit wait --until` that asks for this.
    pub fn flag(self) -> &'static str {
        match self {
            WaitUntil::Ended => "ended",
            WaitUntil::InputRequired => "input-required",
            WaitUntil::Report => "report",
            WaitUntil::Turn => "turn",
        }
    }
}

#[derive(Debug, Clone)]
pub struct WaitRequest {
    pub task_ids: Vec<String>,
    /// Return when the first task is done instead of all of them.
    pub any: bool,
    pub timeout: Option<Duration>,
    pub until: WaitUntil,
}

#[derive(Debug, Clone)]
pub struct WaitOutcome {
    pub tasks: Vec<TaskView>,
    pub timed_out: bool,
    /// The wait's time ran out while the tasks' host did not answer: why (its tasks read
    /// `unknown`, reason `host_unreachable`).
    pub unreachable: Option<Error>,
}

/// Where a wait stands, for a live line: told after each full refresh.
#[derive(Debug, Clone)]
pub struct WaitTick {
    pub elapsed: Duration,
    pub running: usize,
    pub ended: usize,
    /// The latest write to an unfinished task's transcript.
    pub last_activity: Option<SystemTime>,
}

/// What a wait tells its watcher while it goes on.
#[derive(Debug)]
pub enum WaitNews<'a> {
    /// Where it stands, after each full refresh.
    Tick(&'a WaitTick),
    /// The tasks' host did not answer: the wait asks again, never taking it for an ending.
    HostUnreachable(&'a Error),
    /// A child in its turn waits on a human (a dialog: its reason and hint say which), told
    /// once each time it starts to; the wait goes on (`--until turn`).
    WaitsOnHuman(&'a TaskView),
}

pub fn wait(request: &WaitRequest, cwd: &Path) -> Result<WaitOutcome> {
    wait_watching(request, cwd, &mut |_| {})
}

/// [`wait`], telling `watch` how it goes. A host's tasks are waited on by their host. A race
/// is waited on as its candidates, and decided before the wait returns.
pub fn wait_watching(
    request: &WaitRequest,
    cwd: &Path,
    watch: &mut dyn FnMut(WaitNews),
) -> Result<WaitOutcome> {
    let races: Vec<&String> = request
        .task_ids
        .iter()
        .filter(|id| crate::domain::race::is_race_id(id))
        .collect();
    if races.is_empty() {
        return wait_for_tasks(request, cwd, watch);
    }
    // A race whose submit was cut short is completed with the candidates it registered first.
    super::reap::reap_orphans();
    for race in &races {
        refuse_incomplete(race)?;
    }
    let candidates = WaitRequest {
        task_ids: crate::effects::store::race::expand(&request.task_ids)?,
        ..request.clone()
    };
    let outcome = wait_for_tasks(&candidates, cwd, watch)?;
    if !outcome.timed_out {
        for race in races {
            super::race::settle(race, cwd)?;
        }
    }
    Ok(outcome)
}

/// A race whose submit has not finished (still making its candidates, or cut short by an
/// older cuekit that left no mark of who ran it) cannot be decided yet: waiting on it would
/// read its few (or no) candidates as the whole field.
fn refuse_incomplete(race: &str) -> Result<()> {
    let record = crate::effects::store::race::load(race)?;
    if record.complete {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::InvalidState,
        format!(
            "race {race} is not wholly submitted (its submit still runs, or was cut short \
             before cuekit recorded who ran it): it cannot be decided; its candidates so far: {}",
            match record.candidates.is_empty() {
                true => "none".to_string(),
                false => record.candidates.join(", "),
            }
        ),
    )
    .with_hint(
        "wait on those tasks by id, or remove them (`cuekit rm`), and submit the race again",
    ))
}

fn wait_for_tasks(
    request: &WaitRequest,
    cwd: &Path,
    watch: &mut dyn FnMut(WaitNews),
) -> Result<WaitOutcome> {
    if let Route::Host(host) = route(&request.task_ids)? {
        return super::remote::wait_on_host(&host, request, cwd, watch);
    }
    let started = Instant::now();
    let watch_records = request.until == WaitUntil::Report;
    let tasks = request
        .task_ids
        .iter()
        .map(|id| open(id, cwd))
        .collect::<Result<Vec<_>>>()?;
    let dirs: Vec<PathBuf> = tasks.iter().map(|t| t.placement.task_dir.clone()).collect();
    // Taken before each read of the records, so a report written after the read is noticed.
    let mut stamps = watch_records.then(|| record_stamps(&dirs));
    // Reports made before the wait began do not end it.
    let reports_before: Vec<u64> = tasks.iter().map(|t| report_seq(&t.record)).collect();
    super::judge::look_after(&tasks);
    let mut refreshed = refresh(tasks)?;
    // Since when each task has been seen needing a human, without a break, and the screen
    // that showed it.
    let mut attention_since: Vec<Option<(Instant, Option<u64>)>> =
        vec![None; request.task_ids.len()];
    // The dialog each task was last told to wait on (`--until turn`).
    let mut told: Vec<Option<String>> = vec![None; request.task_ids.len()];
    loop {
        let (views, screens) = match request.until {
            WaitUntil::InputRequired | WaitUntil::Turn => {
                let (views, screens) = refreshed.views_and_screens(None);
                (Some(views), screens)
            }
            WaitUntil::Ended | WaitUntil::Report => (None, Default::default()),
        };
        // What each task's screen showed, so a child is taken to wait on a human only once its
        // screen has held still (an animated screen caught between frames is not a prompt).
        let shown: Vec<Option<u64>> = refreshed
            .tasks
            .iter()
            .map(|task| {
                let pane = refreshed.pane(task).ok().flatten()?;
                let screen = screens.get(&(task.placement.socket.clone(), pane.pane_id.clone()))?;
                Some(crate::domain::transition::screen_hash(screen))
            })
            .collect();
        let settled = refreshed
            .tasks
            .iter()
            .map(|task| &task.record)
            .enumerate()
            .filter(|(i, record)| {
                let needs_human = views
                    .as_ref()
                    .is_some_and(|v| turn_over(request.until, &v[*i]));
                let since = &mut attention_since[*i];
                *since = match *since {
                    Some((at, screen)) if needs_human && screen == shown[*i] => Some((at, screen)),
                    _ if needs_human => Some((Instant::now(), shown[*i])),
                    _ => None,
                };
                let reported =
                    request.until == WaitUntil::Report && report_seq(record) > reports_before[*i];
                record.status.is_terminal()
                    || reported
                    || since.is_some_and(|(at, _)| at.elapsed() >= ATTENTION_SETTLE)
            })
            .count();
        let done = if request.any {
            settled > 0
        } else {
            settled == refreshed.tasks.len()
        };
        let timed_out = request
            .timeout
            .is_some_and(|limit| started.elapsed() >= limit);
        if done || timed_out {
            let mut tasks = views.unwrap_or_else(|| refreshed.views());
            super::schedule::explain(&mut tasks, true);
            return Ok(WaitOutcome {
                tasks,
                timed_out: !done,
                unreachable: None,
            });
        }
        if let Some(views) = views.as_ref().filter(|_| request.until == WaitUntil::Turn) {
            tell_dialogs(views, &mut told, watch);
        }
        watch(WaitNews::Tick(&tick(&refreshed, started)));
        wait_for_change(
            &refreshed,
            &dirs,
            stamps.as_deref(),
            started,
            request.timeout,
        );
        stamps = watch_records.then(|| record_stamps(&dirs));
        let tasks = reload(&refreshed.tasks)?;
        super::judge::look_after(&tasks);
        refreshed = refresh(tasks)?;
    }
}

/// Whether a task's view ends a wait of `until` that is not an ending: `input-required`
/// takes any wait on a human, `turn` only a child idle at its prompt.
fn turn_over(until: WaitUntil, view: &TaskView) -> bool {
    let idle = crate::domain::attention::Attention::IdleAtPrompt.as_str();
    match until {
        WaitUntil::InputRequired => view.status == Status::InputRequired,
        WaitUntil::Turn => {
            view.mode == Some(crate::domain::spec::Mode::Interactive)
                && view.status == Status::InputRequired
                && view.reason.as_deref() == Some(idle)
        }
        WaitUntil::Ended | WaitUntil::Report => false,
    }
}

/// Tells `watch` of each task that has come to wait on a dialog since the last look.
fn tell_dialogs(views: &[TaskView], told: &mut [Option<String>], watch: &mut dyn FnMut(WaitNews)) {
    for (view, told) in views.iter().zip(told.iter_mut()) {
        let interactive = view.mode == Some(crate::domain::spec::Mode::Interactive);
        let dialog = (interactive
            && view.status == Status::InputRequired
            && !turn_over(WaitUntil::Turn, view))
        .then(|| view.reason.clone().unwrap_or_default());
        if dialog.is_some() && dialog != *told {
            watch(WaitNews::WaitsOnHuman(view));
        }
        *told = dialog;
    }
}

/// Re-reads the tasks' records and panes, so endings written by other processes (a cancel) are seen. A
/// task removed meanwhile (`cuekit rm`, which takes only ended tasks) keeps the ending this wait
/// saw; one whose ending it never saw ends the wait with `task_not_found`, saying so.
fn reload(tasks: &[Task]) -> Result<Vec<Task>> {
    tasks
        .iter()
        .map(|task| match super::task::reread(&task.placement) {
            // Another attempt may run another agent (a failover, a hand-off): its placement is
            // the registry's now.
            Ok(record) if record.started_at != task.record.started_at => {
                let placement = store::placement(&task.record.id)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| task.placement.clone());
                Ok(Task {
                    pane: store::pane_start(&task.record.id).or_else(|| task.pane.clone()),
                    record: super::task::reread(&placement).unwrap_or(record),
                    placement,
                })
            }
            // The pane too: a retried task starts each attempt in a pane of its own.
            Ok(record) => Ok(Task {
                pane: store::pane_start(&task.record.id).or_else(|| task.pane.clone()),
                record,
                placement: task.placement.clone(),
            }),
            Err(err) if !removed(&task.record.id) => Err(err),
            Err(_) if task.record.status.is_terminal() => Ok(task.clone()),
            Err(_) => Err(Error::new(
                ErrorCode::TaskNotFound,
                format!(
                    "task {} was removed (`cuekit rm`) while this wait ran, before it saw the \
                     task end",
                    task.record.id
                ),
            )
            .with_hint(
                "it had ended (rm takes only ended tasks), but its ending went with its record; \
                 `cuekit events --all` still shows the transitions the monitor announced",
            )),
        })
        .collect()
}

/// Whether the registry has forgotten the task. `rm` removes the task directory first and the
/// registry entry just after: a record seen gone is given a moment for the entry to follow.
fn removed(task_id: &str) -> bool {
    let gone = || matches!(store::placement(task_id), Ok(None));
    let deadline = Instant::now() + Duration::from_secs(1);
    while !gone() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(SENTINEL_TICK);
    }
    true
}

/// Sleeps until a sentinel appears or a full refresh is due (or the wait's own timeout); with
/// `stamps`, also when a task record has been rewritten since they were taken (a report is
/// written to it): a `stat` per task per tick, like the sentinels.
fn wait_for_change(
    refreshed: &Refreshed,
    dirs: &[PathBuf],
    stamps: Option<&[Option<SystemTime>]>,
    started: Instant,
    timeout: Option<Duration>,
) {
    let since = Instant::now();
    // A sentinel already there beside a running task: its pane had not ended at the last look
    // (it was about to, or the child wrote the file itself). Looked at again soon, not at
    // every tick.
    let settling = refreshed.tasks.iter().any(|t| sentinel_appeared(&t.record));
    let refresh_every = if settling {
        SENTINEL_SETTLE
    } else {
        FULL_REFRESH_EVERY
    };
    while since.elapsed() < refresh_every && timeout.is_none_or(|limit| started.elapsed() < limit) {
        std::thread::sleep(SENTINEL_TICK);
        if !settling && refreshed.tasks.iter().any(|t| sentinel_appeared(&t.record)) {
            return;
        }
        if stamps.is_some_and(|stamps| record_stamps(dirs) != stamps) {
            return;
        }
    }
}

/// When each task's `task.json` was last replaced.
fn record_stamps(dirs: &[PathBuf]) -> Vec<Option<SystemTime>> {
    dirs.iter()
        .map(|dir| {
            std::fs::metadata(dir.join(store::RECORD_FILE))
                .and_then(|meta| meta.modified())
                .ok()
        })
        .collect()
}

fn tick(refreshed: &Refreshed, started: Instant) -> WaitTick {
    let records = || refreshed.tasks.iter().map(|t| &t.record);
    let ended = records().filter(|r| r.status.is_terminal()).count();
    WaitTick {
        elapsed: started.elapsed(),
        running: refreshed.tasks.len() - ended,
        ended,
        last_activity: records()
            .filter(|r| !r.status.is_terminal())
            .filter_map(|r| {
                std::fs::metadata(crate::effects::store::transcript_path(r))
                    .ok()?
                    .modified()
                    .ok()
            })
            .max(),
    }
}

fn report_seq(record: &TaskRecord) -> u64 {
    record.last_report.as_ref().map_or(0, |r| r.seq)
}

fn sentinel_appeared(record: &TaskRecord) -> bool {
    !record.status.is_terminal() && record.task_dir.join(EXIT_CODE_FILE).exists()
}
